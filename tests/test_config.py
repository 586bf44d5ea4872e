"""memvault.toml: written with every key and its range, validated with errors that name the key
and what is allowed; and the clock helpers time-dependent code relies on."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tomllib
import typing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from helpers import write_config
from memvault import ManualClock, Memory
from memvault.base.clock import iso, parse_time, to_micros
from memvault.base.config import (
    SETTINGS,
    Config,
    default_toml,
    load_config,
    parse_config,
    resolve_home,
)
from memvault.base.errors import ConfigError
from memvault.base.settings import Settings


def test_a_new_home_gets_a_commented_toml_with_every_key(home: Path) -> None:
    config = load_config(home, create=True)
    text = (home / "memvault.toml").read_text(encoding="utf-8")
    for setting in SETTINGS:
        assert f"# {setting.key} = " in text
        assert f"[{setting.section}]" in text
        assert setting.allowed() in text
    assert tomllib.loads(text) == {s.section: {} for s in SETTINGS}  # everything commented
    assert config.values == {}
    assert config.get("compact.nodes_per_batch") == 8
    assert config["organize.claim_budget_bytes"] == 96_000
    assert config.db_path == home / "memory.db"


def test_uncommenting_every_default_is_valid() -> None:
    keys = {s.key for s in SETTINGS}
    lines = []
    for ln in default_toml().splitlines():
        if ln.startswith("["):
            lines.append(ln)
        elif ln.startswith("# ") and ln[2:].split(" = ")[0] in keys:
            lines.append(ln[2:])
    assert len(lines) == len(SETTINGS) + len({s.section for s in SETTINGS})
    values = parse_config(tomllib.loads("\n".join(lines)))
    assert values == {s.name: s.default for s in SETTINGS}


def test_every_default_passes_the_check_alone() -> None:
    for setting in SETTINGS:
        toml = {setting.section: {setting.key: setting.default}}
        assert parse_config(toml) == {setting.name: setting.default}
    names = [s.name for s in SETTINGS]
    assert len(names) == len(set(names))


def test_an_empty_table_of_a_section_no_longer_declared_is_harmless() -> None:
    """A home written by an older memvault keeps the headers of every section it had."""
    assert parse_config({"dropped_section": {}, "compact": {}}) == {}


def test_reading_a_home_that_sets_nothing_does_not_load_the_validator(home: Path) -> None:
    """The file a home is given holds only comments: nothing to check, so read commands do not
    pay for importing the validator (bench/cli_startup.py)."""
    load_config(home, create=True)
    probe = ("import sys; from memvault.base.config import load_config; "
             f"load_config({str(home)!r}); print(sorted(m for m in sys.modules "
             "if m.startswith('pydantic')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_spec_defaults() -> None:
    defaults = {s.name: s for s in SETTINGS}
    assert defaults["compact.nodes_per_batch"].default == 8
    assert defaults["organize.page_chars"].default == 8_000
    assert defaults["organize.page_min_chars"].default == 256
    budget = defaults["organize.claim_budget_bytes"]
    assert (budget.default, budget.lo, budget.hi) == (96_000, 24_000, 200_000)
    assert defaults["deep.objects_per_batch"].default == 4
    assert defaults["objects.body_max_chars"].default == 16_000
    assert defaults["objects.summary_max_chars"].default == 400
    assert defaults["timeline.view_max_bytes"].default == 350_000
    assert defaults["model.max_output_tokens"].default == 32_768
    assert defaults["model.max_output_tokens_cap"].default == 131_072
    assert defaults["batch.timeout_s"].default == 300
    assert defaults["worker.lease_extra_s"].default == 60
    assert defaults["deep.nightly_at"].default == "02:50"


def test_set_values_are_read(home: Path) -> None:
    write_config(home, '[compact]\nnodes_per_batch = 4\n[worker]\npoll_s = 1\n'
                       '[time]\ntimezone = "Asia/Shanghai"\n')
    config = load_config(home)
    assert config["compact.nodes_per_batch"] == 4
    assert config["worker.poll_s"] == 1.0 and isinstance(config["worker.poll_s"], float)
    assert config["time.timezone"] == "Asia/Shanghai"
    with pytest.raises(KeyError):
        config.get("compact.no_such_key")


def test_the_typed_settings_and_the_table_agree() -> None:
    """Each row of the table is a field of the settings dataclasses, declared with the type of
    its default (a Literal of its choices), and each field a row, in the same order (the toml
    file's order)."""
    defaults = Settings()
    fields = [(section.name, f.name) for section in dataclasses.fields(Settings)
              for f in dataclasses.fields(getattr(defaults, section.name))]
    assert fields == [(s.section, s.key) for s in SETTINGS]
    for setting in SETTINGS:
        section = getattr(defaults, setting.section)
        declared = typing.get_type_hints(type(section))[setting.key]
        if setting.choices:
            assert typing.get_args(declared) == setting.choices, setting.name
            assert setting.default in setting.choices, setting.name
        else:
            assert declared is type(setting.default), setting.name
        assert getattr(section, setting.key) == setting.default
    with pytest.raises(dataclasses.FrozenInstanceError):
        defaults.batch.timeout_s = 5  # type: ignore[misc]  # the point: settings are read-only


def test_set_values_are_read_as_typed_settings(home: Path) -> None:
    write_config(home, '[compact]\nnodes_per_batch = 4\n[worker]\npoll_s = 1\n')
    settings = load_config(home).settings
    assert settings.compact.nodes_per_batch == 4
    assert settings.worker.poll_s == 1.0 and isinstance(settings.worker.poll_s, float)
    assert settings.compact.threshold_tokens == 250_000  # not set: the default
    assert settings.lease_s == 300 + 60
    assert load_config(home).settings.model.provider == "builtin"


def test_the_choices_of_a_setting_come_from_its_type() -> None:
    choices = {s.name: s.choices for s in SETTINGS if s.choices}
    # model.provider is any registered provider's name (models/registry.py), not a closed set
    assert choices == {"model.tool_mode": ("native", "json_schema"),
                       "model.schema_format": ("json_schema", "json_object")}


def test_the_settings_follow_a_change_of_values(home: Path) -> None:
    config = Config(home=home, values={"batch.timeout_s": 10})
    assert config.settings.batch.timeout_s == 10
    config.values["batch.timeout_s"] = 20
    assert config.settings.batch.timeout_s == 20


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[compact]\nnodes_per_batch = 9\n", "compact.nodes_per_batch = 9: allowed range 2–8"),
        ("[compact]\nnodes_per_batch = 1\n", "compact.nodes_per_batch = 1: allowed range 2–8"),
        ("[organize]\nclaim_budget_bytes = 200001\n",
         "organize.claim_budget_bytes = 200001: allowed range 24000–200000"),
        ("[organize]\nclaim_budget_bytes = 23999\n", "allowed range 24000–200000"),
        ("[vault]\nobjects_per_run = 11\n", "vault.objects_per_run = 11: allowed range 1–10"),
        ("[vault]\nobjects_per_run = 10000\n", "vault.objects_per_run = 10000: allowed range"),
        ("[compact]\nnodes_per_batch = \"8\"\n", "compact.nodes_per_batch = '8': expected int"),
        ("[compact]\nnodes_per_batch = 8.0\n", "compact.nodes_per_batch = 8.0: expected int"),
        ("[compact]\nnodes_per_batch = true\n", "compact.nodes_per_batch = True: expected int"),
        ("[compact]\ntarget_ratio = 0.99\n", "compact.target_ratio = 0.99: allowed range 0.1–0.95"),
        ("[compact]\ntarget_ratio = false\n", "compact.target_ratio = False: expected float"),
        ("[compact]\ntarget_ratio = nan\n", "compact.target_ratio = nan: allowed range 0.1–0.95"),
        ("[compact]\nthreshold_tokens = 99999999999999999999999\n",
         "compact.threshold_tokens = 99999999999999999999999: allowed range"),
        ("[compact]\nnodes_per_batch = [4]\n", "compact.nodes_per_batch = [4]: expected int"),
        ("[compact.deeper]\nkey = 1\n", "compact.deeper: unknown setting"),
        ("compact = 4\n", "compact = 4: expected a [compact] table"),
        ("[model]\nprovider = 5\n", "model.provider = 5: expected str"),
        ("[model]\nname = 5\n", "model.name = 5: expected str"),
        ("[compact]\nbogus = 1\n", "compact.bogus: unknown setting"),
        ("[nosuch]\nkey = 1\n", "nosuch.key: unknown setting"),
        ("stray = 1\n", "stray = 1: expected a [stray] table"),
        ("[organize]\npage_chars = 300\npage_min_chars = 400\n",
         "organize.page_min_chars must not exceed organize.page_chars"),
        ("[model]\nmax_output_tokens = 100000\nmax_output_tokens_cap = 50000\n",
         "model.max_output_tokens must not exceed model.max_output_tokens_cap"),
        ("[deep]\nnightly_at = \"25:00\"\n", "deep.nightly_at = '25:00': allowed HH:MM"),
        ("[deep]\nnightly_at = \"2:5\"\n", "deep.nightly_at = '2:5': allowed HH:MM"),
        ("[deep]\nnightly_at = \"noon\"\n", "deep.nightly_at = 'noon'"),
        ("[deep]\nnightly_at = \"\u00b2:50\"\n", "deep.nightly_at = '\u00b2:50': allowed HH:MM"),
        ("[time]\ntimezone = \"Mars/Olympus\"\n", "time.timezone = 'Mars/Olympus': not a known"),
        ("[time]\ntimezone = \"../../etc/passwd\"\n", "not a known IANA zone"),
    ],
)
def test_a_bad_value_names_the_key_and_what_is_allowed(
    home: Path, toml: str, message: str
) -> None:
    write_config(home, toml)
    with pytest.raises(ConfigError) as info:
        load_config(home)
    assert message in str(info.value)
    with pytest.raises(ConfigError):
        Memory.open(home)
    assert not (home / "memory.db").exists()  # refused before the database is touched


def test_a_bad_value_names_the_file_to_fix(home: Path) -> None:
    path = write_config(home, "[compact]\nnodes_per_batch = 9\n")
    with pytest.raises(ConfigError) as info:
        load_config(home)
    assert str(info.value) == f"{path}: compact.nodes_per_batch = 9: allowed range 2–8"


def test_a_file_that_is_not_toml_is_a_clear_error(home: Path) -> None:
    path = write_config(home, "[compact\nnodes_per_batch = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(home)
    assert str(path) in str(pytest.raises(ConfigError, load_config, home).value)
    path.write_bytes(b"[compact]\n# \xff\xfe\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(home)


def test_the_home_comes_from_the_argument_then_the_environment(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert resolve_home() == home.resolve()
    assert resolve_home(tmp_path / "other") == (tmp_path / "other").resolve()
    monkeypatch.delenv("MEMVAULT_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert resolve_home() == (tmp_path / "user" / ".memvault").resolve()


def test_opening_a_memory_creates_the_home_config_and_database(home: Path) -> None:
    with Memory.open(home, clock=ManualClock(datetime(2026, 1, 1, tzinfo=UTC))):
        pass
    assert (home / "memvault.toml").is_file()
    assert (home / "memory.db").is_file()


def test_an_existing_config_is_never_overwritten(home: Path) -> None:
    path = write_config(home, "# mine\n[compact]\nnodes_per_batch = 3\n")
    load_config(home, create=True)
    assert path.read_text(encoding="utf-8") == "# mine\n[compact]\nnodes_per_batch = 3\n"


# -- clock --------------------------------------------------------------------------------------


def test_manual_clock_moves_only_when_told() -> None:
    start = datetime(2026, 10, 13, 2, 49, tzinfo=timezone(timedelta(hours=8)))
    clock = ManualClock(start)
    assert clock.now() == start
    assert clock.now() == start
    assert clock.advance(minutes=1) == start + timedelta(minutes=1)
    clock.advance(hours=1, seconds=30)
    assert clock.now() == start + timedelta(hours=1, minutes=1, seconds=30)
    clock.set(start)
    assert clock.now() == start
    with pytest.raises(ValueError, match="aware"):
        ManualClock(datetime(2026, 1, 1))


def test_micros_and_iso() -> None:
    utc = datetime(1970, 1, 1, 0, 0, 1, 5, tzinfo=UTC)
    assert to_micros(utc) == 1_000_005
    cst = datetime(1970, 1, 1, 8, 0, 1, 5, tzinfo=timezone(timedelta(hours=8)))
    assert to_micros(cst) == 1_000_005
    with pytest.raises(ValueError, match="naive"):
        to_micros(datetime(1970, 1, 1))
    assert iso(datetime(2026, 10, 13, 12, 0, tzinfo=UTC)) == "2026-10-13T12:00:00+00:00"
    assert iso(utc) == "1970-01-01T00:00:01.000005+00:00"


def test_parse_time() -> None:
    cst = timezone(timedelta(hours=8))
    assert parse_time("2026-10-13T12:30:00Z") == datetime(2026, 10, 13, 12, 30, tzinfo=UTC)
    assert parse_time(" 2026-10-13T12:30:00+08:00 ").utcoffset() == timedelta(hours=8)
    naive = parse_time("2026-10-13T12:30:00", cst)
    assert naive.tzinfo is cst
    assert parse_time("2026-10-13T12:30:00").tzinfo is not None  # local zone, never naive
    with pytest.raises(ValueError, match="not an ISO 8601 time: 'tomorrow'"):
        parse_time("tomorrow")
    with pytest.raises(ValueError, match="out of range"):
        parse_time("0001-01-01T00:00:00+01:00")
