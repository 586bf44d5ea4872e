"""The settings of a memory home as typed, frozen dataclasses: `settings.batch.timeout_s`.

One source of truth: each setting's type, default, allowed range and description are declared
here, once, by `setting(...)` (a setting with choices has a Literal type naming them).
config.py's SETTINGS table (what memvault.toml is checked against and written from, in this
order) is generated from these classes, and `Config.settings` is an instance holding a home's
values. A new setting is a new field here, nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

T = TypeVar("T")


Provider = str  # a registered provider's name (models/registry.py): checked when chosen
ToolMode = Literal["native", "json_schema"]  # how tools are offered to the model
SchemaFormat = Literal["json_schema", "json_object"]


def setting(default: T, doc: str, lo: float | None = None, hi: float | None = None,
            form: tuple[str, str] | None = None) -> T:
    """A settings field: `default`, what it does and its allowed range `lo`–`hi`, for the
    table config.py generates (which takes the choices of a Literal field from its type).
    `form` is a text setting's shape: (how memvault.toml describes it, the regular
    expression a value must match)."""
    return field(default=default, metadata={"doc": doc, "lo": lo, "hi": hi, "form": form})


@dataclass(frozen=True)
class TimeSettings:
    """[time]: how local times are read."""

    timezone: str = setting(
        "",
        "IANA zone for 'local' times (nightly run, naive inputs); '' = system",
    )


@dataclass(frozen=True)
class TimelineSettings:
    """[timeline]: the hot timeline as an agent views it."""

    view_max_bytes: int = setting(
        350_000,
        "bytes of hot timeline one view may carry",
        1_000, 50_000_000,
    )


@dataclass(frozen=True)
class CompactSettings:
    """[compact]: when and how much of the hot timeline is compacted."""

    nodes_per_batch: int = setting(8, "hot nodes a compact batch covers at most", 2, 8)
    threshold_tokens: int = setting(
        250_000,
        "estimated tokens of hot timeline that start a compact job",
        1_000, 10_000_000,
    )
    target_ratio: float = setting(
        0.6,
        "a threshold job stops under this share of the threshold",
        0.1, 0.95,
    )
    max_age_hours: int = setting(
        24,
        "before the nightly run, raw turns on the hot timeline longer than this are compacted "
        "and organized (0 = off)",
        0, 720,
    )


@dataclass(frozen=True)
class OrganizeSettings:
    """[organize]: the pages and claims of an organize batch."""

    page_chars: int = setting(8_000, "chars of one event an organize batch reads", 256, 8_000)
    page_min_chars: int = setting(256, "smallest page after shrinking", 256, 8_000)
    claim_budget_bytes: int = setting(
        96_000,
        "bytes one claim may transfer to the model",
        24_000, 200_000,
    )
    progress_max_chars: int = setting(2_000, "chars of saved progress on continue", 1, 2_000)
    reason_max_chars: int = setting(1_000, "chars of an archive_only reason", 1, 1_000)


@dataclass(frozen=True)
class DeepSettings:
    """[deep]: the nightly deep review."""

    objects_per_batch: int = setting(4, "objects a deep batch reviews at most", 1, 4)
    nightly_at: str = setting(
        "02:50",
        "local time of the nightly deep review (HH:MM)",
        form=("HH:MM, 00:00–23:59", r"^(?:[01]?[0-9]|2[0-3]):[0-5][0-9]$"),
    )
    quiet_minutes: int = setting(5, "minutes without conversation before the nightly run", 0, 240)


@dataclass(frozen=True)
class ObjectsSettings:
    """[objects]: the size of an object's text."""

    body_max_chars: int = setting(16_000, "chars of an object body", 1, 16_000)
    summary_max_chars: int = setting(400, "chars of an object summary", 1, 400)


@dataclass(frozen=True)
class GraphSettings:
    """[graph]: what one proposal may write."""

    max_objects: int = setting(32, "objects one proposal may write", 1, 32)
    max_relations: int = setting(64, "relations one proposal may write", 1, 64)
    max_core_files: int = setting(3, "core files one proposal may write", 0, 3)
    max_proposal_bytes: int = setting(
        900_000,
        "a proposal must stay under this size",
        1_000, 900_000,
    )


@dataclass(frozen=True)
class ModelSettings:
    """[model]: the model provider and its limits."""

    provider: Provider = setting("builtin", "model provider")
    name: str = setting("", "model name for the openai provider")
    base_url: str = setting("", "OpenAI-compatible base URL ('' = $OPENAI_BASE_URL)")
    api_key_env: str = setting("OPENAI_API_KEY", "environment variable holding the API key")
    tool_mode: ToolMode = setting("native", "how tools are offered")
    schema_format: SchemaFormat = setting(
        "json_schema",
        "how tool_mode json_schema sends the schema: OpenAI's json_schema, or json_object with "
        "a schema (llama-cpp-python's server)",
    )
    max_output_tokens: int = setting(32_768, "output tokens asked for first", 256, 131_072)
    max_output_tokens_cap: int = setting(
        131_072,
        "output tokens a truncation retry grows to",
        256, 131_072,
    )
    context_tokens: int = setting(1_000_000, "the model's context window", 2_048, 10_000_000)


@dataclass(frozen=True)
class BatchSettings:
    """[batch]: the time, rounds and corrections of one batch."""

    timeout_s: int = setting(300, "seconds one batch may take", 5, 3_600)
    max_rounds: int = setting(16, "tool rounds one batch may take", 1, 16)
    max_corrections: int = setting(3, "field-level corrections before a batch fails", 0, 3)


@dataclass(frozen=True)
class WorkerSettings:
    """[worker]: leases, polls, retries and pauses of the background worker."""

    lease_extra_s: int = setting(60, "lease = batch.timeout_s + this", 10, 3_600)
    poll_s: float = setting(2.0, "seconds between worker polls", 0.05, 60.0)
    max_failed_claims: int = setting(
        5,
        "consecutive failed claims before a batch is terminal",
        1, 5,
    )
    backoff_s: float = setting(10.0, "first retry delay, doubled each failure", 0.0, 3_600.0)
    cooldown_s: int = setting(
        3_600,
        "pause of automatic jobs after an automatic failure",
        0, 86_400,
    )
    hourly_s: int = setting(3_600, "seconds between hourly organize checks", 60, 86_400)


@dataclass(frozen=True)
class ContextSettings:
    """[context]: the resident directory an agent is given."""

    directory_max_entries: int = setting(200, "objects listed in the resident directory", 0, 10_000)
    directory_max_bytes: int = setting(24_000, "bytes of the resident directory", 0, 1_000_000)


@dataclass(frozen=True)
class ServiceSettings:
    """[service]: how `memvault serve` listens and stops."""

    socket: str = setting(
        "memvault.sock",
        "Unix socket `memvault serve` listens on (relative: inside the home)",
    )
    port: int = setting(
        8_765,
        "loopback TCP port `memvault serve` listens on by default",
        1, 65_535,
    )
    token_env: str = setting(
        "MEMVAULT_TOKEN",
        "environment variable holding the bearer token HTTP clients must send; unset = the "
        "home's service.token (TCP; a Unix socket needs none)",
    )
    api_connections: int = setting(4, "SQLite connections the API lends to concurrent calls", 1, 64)
    projector_interval_s: float = setting(
        10.0,
        "seconds between vault projection heartbeats in `memvault serve` and `memvault mcp`",
        1.0, 3_600.0,
    )
    shutdown_grace_s: float = setting(
        30.0,
        "seconds a stop waits for the batch in flight before leaving it to its lease",
        0.0, 3_600.0,
    )


@dataclass(frozen=True)
class VaultSettings:
    """[vault]: the Markdown projection."""

    # The reference renders at most ten objects a run: a limit that can be lowered, not raised.
    objects_per_run: int = setting(10, "objects rendered per projection run", 1, 10)
    max_links_per_file: int = setting(
        50,
        "relations/sources per file before continuation pages",
        5, 50,
    )
    core_file_max_bytes: int = setting(
        262_144,
        "largest core file imported from the vault",
        1_024, 10_000_000,
    )


@dataclass(frozen=True)
class ReplicaSettings:
    """[replica]: where `memvault replicate` ships the database (docs/devices.md)."""

    url: str = setting(
        "",
        "replica for `memvault replicate`: file:///folder, sftp://host/path or s3://bucket/path; "
        "credentials from the environment ('' = none)",
        form=("'' or a file://, sftp:// or s3:// URL", r"^$|^(?:file|sftp|s3)://\S+$"),
    )
    sftp_key_path: str = setting(
        "",
        "an sftp:// replica: the SSH private key file Litestream logs in with ('' = none)",
    )


@dataclass(frozen=True)
class Settings:
    """Every setting of a memory home, by section: `settings.batch.timeout_s`."""

    time: TimeSettings = field(default_factory=TimeSettings)
    timeline: TimelineSettings = field(default_factory=TimelineSettings)
    compact: CompactSettings = field(default_factory=CompactSettings)
    organize: OrganizeSettings = field(default_factory=OrganizeSettings)
    deep: DeepSettings = field(default_factory=DeepSettings)
    objects: ObjectsSettings = field(default_factory=ObjectsSettings)
    graph: GraphSettings = field(default_factory=GraphSettings)
    model: ModelSettings = field(default_factory=ModelSettings)
    batch: BatchSettings = field(default_factory=BatchSettings)
    worker: WorkerSettings = field(default_factory=WorkerSettings)
    context: ContextSettings = field(default_factory=ContextSettings)
    service: ServiceSettings = field(default_factory=ServiceSettings)
    vault: VaultSettings = field(default_factory=VaultSettings)
    replica: ReplicaSettings = field(default_factory=ReplicaSettings)

    @property
    def lease_s(self) -> int:
        """How long a worker's lease lasts: a batch's time limit plus worker.lease_extra_s."""
        return self.batch.timeout_s + self.worker.lease_extra_s

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> Settings:
        """The settings `values` ({'section.key': value}, already checked) give; the rest
        default."""
        by_section: dict[str, dict[str, Any]] = {}
        for name, value in values.items():
            section, _, key = name.partition(".")
            by_section.setdefault(section, {})[key] = value
        defaults = cls()
        return replace(defaults, **{
            section: replace(getattr(defaults, section), **keys)
            for section, keys in by_section.items()
        })


def declared() -> list[tuple[str, str, Any, dict[str, Any]]]:
    """(section, key, default, metadata) of every setting, in declaration order; the metadata
    holds `choices`: the values of a Literal type, else ()."""
    found = []
    for section in fields(Settings):
        kind = type(getattr(Settings(), section.name))
        hints = get_type_hints(kind)
        for f in fields(kind):
            hint = hints[f.name]
            choices = get_args(hint) if get_origin(hint) is Literal else ()
            found.append((section.name, f.name, f.default, {**f.metadata, "choices": choices}))
    return found
