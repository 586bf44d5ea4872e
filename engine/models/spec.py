"""Which provider a job runs on, as a record a job keeps (`jobs.provider`, migration
`m011_job_provider`).

A spec names the provider and, for `openai`, the model, the base URL and the NAME of the
environment variable holding the key: never a key value, so a job row is safe to show, export
and back up. Everything else (tool mode, output caps, timeouts) is read from memvault.toml when
the provider is built. A base URL carrying a password is not recorded: `base_url` None means
"model.base_url at build time".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..base.config import Config
from ..secrets.detector import find_secret
from .base import Provider, ProviderError
from .registry import check_provider_name, load_factory


@dataclass(frozen=True)
class ProviderSpec:
    """A provider choice: `name`; for openai also `model`, `base_url` and `api_key_env`."""

    name: str
    model: str = ""
    base_url: str | None = ""  # "" = $OPENAI_BASE_URL; None = model.base_url when built
    api_key_env: str = ""

    @classmethod
    def choose(cls, config: Config, name: str | None = None,
               model: str | None = None) -> ProviderSpec:
        """The provider `name` (one registered, registry.py: `builtin`, `openai`, a third
        party's; None: model.provider), with `model` for openai (else model.name).
        ProviderError for an unknown name or an openai choice without a model, before
        anything is queued."""
        choice = check_provider_name(name or config.settings.model.provider)
        spec = cls.configured(config, choice, model)
        if spec.name == "openai" and not spec.model:
            raise ProviderError("the openai provider needs a model name (model.name or --model)")
        return spec

    @classmethod
    def configured(cls, config: Config, name: str | None = None,
                   model: str | None = None) -> ProviderSpec:
        """Like `choose`, unchecked: what automatic jobs record. A configuration that cannot
        be built (openai without model.name) is recorded as it is, so the job fails naming
        the cause instead of running on another model."""
        choice = name or config.settings.model.provider
        if choice != "openai":
            return cls(choice, model or "")
        base_url: str = config.settings.model.base_url
        return cls("openai", model or config.settings.model.name,
                   None if find_secret(base_url) else base_url, config.settings.model.api_key_env)

    @classmethod
    def parse(cls, config: Config, text: str | None) -> ProviderSpec:
        """A `--model` value: `builtin`, `openai`, `openai:MODEL` (None: the configured
        provider)."""
        name, _, model = (text or "").partition(":")
        return cls.choose(config, name or None, model or None)

    @classmethod
    def from_record(cls, record: Any) -> ProviderSpec:
        """The spec a job recorded; ProviderError when it is not one (never a guess)."""
        if not isinstance(record, dict) or not isinstance(record.get("name"), str):
            raise ProviderError(f"the job's provider record is not a provider spec: {record!r}")
        try:
            return cls(**record)
        except TypeError as exc:
            raise ProviderError(f"the job's provider record is not a spec: {exc}") from None

    def record(self) -> dict[str, Any]:
        """What a job stores (JSON): the spec's fields, never a key value."""
        return asdict(self)

    @property
    def label(self) -> str:
        """`builtin`, `openai:gpt-4o-mini`: how status and messages name it."""
        return f"{self.name}:{self.model}" if self.model else self.name


def build_provider(config: Config, spec: ProviderSpec) -> Provider:
    """The provider `spec` names, built by the factory registered under its name (registry.py),
    configured by memvault.toml for everything the spec does not say. ProviderError when it
    cannot be built (an unknown name, openai without a model)."""
    return load_factory(spec.name)(config, spec)
