"""The memory home and memvault.toml: every default of docs/spec.md section 8, overridable.

A home is a folder holding `memory.db`, `vault/` and `memvault.toml`. The toml file is written
with every key and its allowed range the first time a home is created; a bad value is a
ConfigError naming the file, the key and what is allowed.

A home is private to its owner, whatever the umask: the folder (and `vault/`) 0700, every file
in it 0600 (the database holds whatever was said, API keys included). `tighten_home` narrows an
older home that other users can read.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .home_trust import check_owner, read_settings_text
from .settings import Settings, declared

DEFAULT_HOME = "~/.memvault"
CONFIG_NAME = "memvault.toml"
DB_NAME = "memory.db"
HOME_MODE = 0o700  # the home and the folders in it: the owner only
FILE_MODE = 0o600  # every file in the home
_OTHERS = 0o077  # group and other permission bits
SHOWN_PATHS = 10  # paths a notice names; the rest are counted


@dataclass(frozen=True)
class Setting:
    """One key of memvault.toml: its default, its allowed range, choices or form, and what it
    does."""

    section: str
    key: str
    default: Any
    doc: str
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    form: tuple[str, str] | None = None  # a text's shape: (its description, its pattern)

    @property
    def name(self) -> str:
        return f"{self.section}.{self.key}"

    def allowed(self) -> str:
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.lo is not None and self.hi is not None:
            return f"{self.lo:g}–{self.hi:g}"
        if self.form is not None:
            return self.form[0]
        return f"a {type(self.default).__name__}"


# Generated from settings.py's dataclasses, in their order: the one place a setting is declared.
SETTINGS: tuple[Setting, ...] = tuple(
    Setting(section, key, default, meta["doc"], meta["lo"], meta["hi"], meta["choices"],
            meta["form"])
    for section, key, default, meta in declared()
)

_BY_NAME = {s.name: s for s in SETTINGS}


@dataclass
class Config:
    """Settings of one memory home: typed as `config.settings.compact.nodes_per_batch`, or by
    name as `config["compact.nodes_per_batch"]` (tests, and tools that name a setting in text).

    `values` holds what memvault.toml sets; `settings` follows it (tests change `values`)."""

    home: Path
    values: dict[str, Any] = field(default_factory=dict)
    _settings: tuple[dict[str, Any], Settings] | None = field(
        default=None, init=False, repr=False, compare=False)

    @property
    def settings(self) -> Settings:
        """The typed settings: each value memvault.toml sets, the default for the rest."""
        if self._settings is None or self._settings[0] != self.values:
            self._settings = (dict(self.values), Settings.from_values(self.values))
        return self._settings[1]

    def get(self, name: str) -> Any:
        if name not in _BY_NAME:
            raise KeyError(name)
        return self.values.get(name, _BY_NAME[name].default)

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    @property
    def db_path(self) -> Path:
        return self.home / DB_NAME

    @property
    def vault_path(self) -> Path:
        return self.home / "vault"

    @property
    def config_path(self) -> Path:
        return self.home / CONFIG_NAME


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """--home, else $MEMVAULT_HOME, else ~/.memvault. An empty --home is refused (it would
    silently mean the current folder); an empty $MEMVAULT_HOME counts as unset."""
    if home is not None and not os.fspath(home).strip():
        raise ConfigError("the memory home is an empty path: give --home DIR (or unset it)")
    raw = home if home is not None else os.environ.get("MEMVAULT_HOME") or DEFAULT_HOME
    return Path(raw).expanduser().resolve()


def parse_config(data: dict[str, Any]) -> dict[str, Any]:
    """Validate a parsed toml document; return {'section.key': value} of what it sets.

    The checking (types, ranges, choices, forms, unknown keys) is pydantic-core's, against a
    schema generated from SETTINGS. It is imported only when the file sets a value: a home's
    file as written holds none, and read commands start faster without it
    (bench/cli_startup.py)."""
    tables = {section: table for section, table in data.items() if table != {}}
    if not tables:  # every key commented; an empty table of a dropped section is harmless
        return {}
    from pydantic_core import SchemaValidator, ValidationError

    try:
        checked = SchemaValidator(_settings_schema()).validate_python(tables)
    except ValidationError as exc:
        raise ConfigError(_explain(exc.errors()[0])) from None
    values = {f"{section}.{key}": value
              for section, table in checked.items() for key, value in table.items()}
    _check_cross(values)
    return values


def _settings_schema() -> Any:
    """pydantic-core's schema of memvault.toml: a table per section, every key optional,
    strict types (a quoted number or a boolean is no int), nothing undeclared."""
    from pydantic_core import core_schema as cs

    sections: dict[str, dict[str, Any]] = {}
    for s in SETTINGS:
        sections.setdefault(s.section, {})[s.key] = cs.typed_dict_field(
            _value_schema(s), required=False)
    return cs.typed_dict_schema(
        {section: cs.typed_dict_field(cs.typed_dict_schema(keys, extra_behavior="forbid"),
                                      required=False)
         for section, keys in sections.items()},
        extra_behavior="forbid",
    )


def _value_schema(s: Setting) -> Any:
    from pydantic_core import core_schema as cs

    if s.choices:
        return cs.literal_schema(list(s.choices))
    if isinstance(s.default, int):
        return cs.int_schema(ge=None if s.lo is None else int(s.lo),
                             le=None if s.hi is None else int(s.hi), strict=True)
    if isinstance(s.default, float):  # an int is taken as the float it equals
        return cs.float_schema(ge=s.lo, le=s.hi, strict=True, allow_inf_nan=False)
    return cs.str_schema(strict=True, pattern=s.form[1] if s.form else None)


def _explain(error: Any) -> str:
    """pydantic-core's error as memvault says it: the key, what it holds, what is allowed."""
    loc, value, kind = error["loc"], error["input"], error["type"]
    if len(loc) == 1:
        section = loc[0]
        if kind == "extra_forbidden" and isinstance(value, dict):
            return f"{section}.{next(iter(value))}: unknown setting (see the commented defaults)"
        return f"{section} = {value!r}: expected a [{section}] table"
    name = f"{loc[0]}.{loc[1]}"
    if kind == "extra_forbidden":
        return f"{name}: unknown setting (see the commented defaults)"
    setting = _BY_NAME[name]
    if kind.endswith("_type"):
        return (f"{name} = {value!r}: expected {type(setting.default).__name__}, "
                f"allowed {setting.allowed()}")
    if setting.lo is not None:
        return f"{name} = {value!r}: allowed range {setting.allowed()}"
    return f"{name} = {value!r}: allowed {setting.allowed()}"


def _check_cross(values: dict[str, Any]) -> None:
    """What no single value's type says: the order of two settings, a zone that exists."""
    def val(name: str) -> Any:
        return values.get(name, _BY_NAME[name].default)

    if val("organize.page_min_chars") > val("organize.page_chars"):
        raise ConfigError("organize.page_min_chars must not exceed organize.page_chars")
    if val("model.max_output_tokens") > val("model.max_output_tokens_cap"):
        raise ConfigError("model.max_output_tokens must not exceed model.max_output_tokens_cap")
    tz = val("time.timezone")
    if tz:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(f"time.timezone = {tz!r}: not a known IANA zone") from None


def default_toml() -> str:
    """The memvault.toml written into a new home: every key, commented, with its range."""
    lines = ["# memvault settings. Every key is shown with its default; uncomment to change.", ""]
    section = None
    for s in SETTINGS:
        if s.section != section:
            section = s.section
            lines += ["", f"[{section}]"]
        value = f'"{s.default}"' if isinstance(s.default, str) else repr(s.default)
        lines.append(f"# {s.doc}; allowed {s.allowed()}")
        lines.append(f"# {s.key} = {value}")
    return "\n".join(lines).lstrip("\n") + "\n"


def load_config(home: str | os.PathLike[str] | None = None, create: bool = False,
                allow_other_owner: bool | None = None) -> Config:
    """Read the home's memvault.toml (writing the commented defaults when `create`).

    `create` is for a writing open: a home another user owns is refused first (see
    memvault.base.home_trust), unless `allow_other_owner` (default: its environment variable).
    """
    root = resolve_home(home)
    path = root / CONFIG_NAME
    _check_layout(root)
    if create:
        check_owner(root, allow_other_owner)
        try:
            make_private_dir(root)
            if not path.exists():
                write_private_file(path, default_toml())
        except OSError as exc:
            raise ConfigError(
                f"cannot create the memory home {root}: {exc.strerror or exc}"
            ) from None
    values: dict[str, Any] = {}
    text = read_settings_text(path)  # a regular file only: a FIFO or /dev/zero never hangs
    if text is not None:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
        except RecursionError:  # tomllib recurses per nesting level: one line, no traceback
            raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None
        try:
            values = parse_config(data)
        except ConfigError as exc:  # which file to fix: the home may come from $MEMVAULT_HOME
            raise ConfigError(f"{path}: {exc}") from None
    return Config(home=root, values=values)


def make_private_dir(path: Path) -> None:
    """Create `path` (and missing parents) with the home's mode; the mode is set explicitly
    after mkdir, since mkdir's mode is narrowed by the umask only, never widened or fixed."""
    if path.is_dir():
        return
    path.mkdir(parents=True, exist_ok=True, mode=HOME_MODE)
    os.chmod(path, HOME_MODE)


def write_private_file(path: Path, text: str) -> bool:
    """Create `path` holding `text`, readable by its owner only, unless it exists; False when
    another process or thread made it first. Written aside and linked into place, so a reader
    sees no file or the whole file, never a half-written one (two first opens of a new home
    at once used to read an empty settings file or fail on the other's O_EXCL)."""
    import tempfile  # only to write a file: a read command never needs it (~2.5 ms)

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(fd, FILE_MODE)  # mkstemp makes 0600 already; never leave it wider
            f.write(text)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        os.unlink(tmp)


def append_private_line(path: Path, entry: dict[str, Any]) -> None:
    """Append `entry` as one JSON line to a log in the home (created 0600, never through a
    symlink). Raises OSError."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        out.write(json.dumps(entry, ensure_ascii=False) + "\n")


def exposed_paths(root: Path) -> list[tuple[Path, int]]:
    """(path, mode) of the home, the entries directly in it and everything under its vault
    that group or others may access.

    Symlinks are skipped (never followed: a link could point anywhere); so are entries that
    vanish while being looked at. The vault is walked too: a person's editor or a copy may
    leave a file there 0644 that a private folder alone would not keep private once moved.
    """
    found: list[tuple[Path, int]] = []
    try:
        entries = [root, *sorted(root.iterdir())]
    except OSError:
        return found
    for path in entries:
        try:
            st = path.lstat()
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            continue
        mode = stat.S_IMODE(st.st_mode)
        if mode & _OTHERS:
            found.append((path, mode))
        if path.name == "vault" and path.parent == root and stat.S_ISDIR(st.st_mode):
            found += _exposed_under(path)
    return found


def _exposed_under(folder: Path) -> list[tuple[Path, int]]:
    """(path, mode) of the entries under `folder` that group or others may access, links
    neither followed nor listed. One scandir per folder and one lstat per entry, Path objects
    only for what is found: ~50 ms for a vault of 10,000 files, ~1 ms for a few hundred."""
    found: list[tuple[Path, int]] = []
    stack = [os.fspath(folder)]
    while stack:
        try:
            entries = os.scandir(stack.pop())
        except OSError:  # vanished or unreadable meanwhile: nothing to report of it
            continue
        with entries:
            for entry in entries:
                try:
                    st_mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    continue
                if stat.S_ISLNK(st_mode):
                    continue
                if st_mode & _OTHERS:
                    found.append((Path(entry.path), stat.S_IMODE(st_mode)))
                if stat.S_ISDIR(st_mode):
                    stack.append(entry.path)
    return sorted(found)


def tighten_home(root: Path) -> str | None:
    """Take group and other permissions off the home and the entries in it; return one line
    saying what changed (None when nothing did). Never follows a symlink; a path that cannot
    be changed (another owner, a read-only filesystem) is left to `memvault check` to report."""
    changed: list[str] = []
    for path, mode in exposed_paths(root):
        new = mode & ~_OTHERS
        try:
            if path.is_symlink():  # replaced by a link since it was looked at
                continue
            os.chmod(path, new)
        except OSError:
            continue
        name = str(path) if path == root else path.relative_to(root).as_posix()
        changed.append(f"{name}: was {mode:04o}, now {new:04o}")
    if not changed:
        return None
    shown = changed[:SHOWN_PATHS]
    more = len(changed) - len(shown)
    return ("tightened permissions of " + "; ".join(shown)
            + (f"; and {more} more" if more else ""))


def _check_layout(root: Path) -> None:
    """Refuse a home whose parts are the wrong kind of thing, before anything is created:
    the home a file, memvault.toml or memory.db a folder."""
    if root.exists() and not root.is_dir():
        raise ConfigError(f"the memory home {root} is a file, not a folder")
    for name, what in ((CONFIG_NAME, "the settings file"), (DB_NAME, "the database")):
        if (root / name).is_dir():
            raise ConfigError(
                f"{root / name} is a folder where {what} belongs: move it away"
            )
