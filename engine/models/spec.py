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

PROVIDERS = ("builtin", "openai")


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
        """The provider `name` (`builtin`, `openai`; None: model.provider), with
        `model` for openai (else model.name). ProviderError for an unknown name or an openai
        choice without a model, before anything is queued."""
        choice = name or config.settings.model.provider
        if choice not in PROVIDERS:
            raise ProviderError(f"unknown provider {choice!r} ({', '.join(PROVIDERS)})")
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
            return cls(choice)
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
    """The provider `spec` names, configured by memvault.toml for everything it does not say.
    ProviderError when it cannot be built (an unknown name, openai without a model)."""
    if spec.name == "builtin":
        from .builtin import BuiltinProvider

        return BuiltinProvider()
    if spec.name == "openai":
        from .openai_compat import OpenAICompatProvider

        settings = config.settings.model
        base_url = settings.base_url if spec.base_url is None else spec.base_url
        return OpenAICompatProvider(
            model=spec.model, base_url=base_url or None,
            api_key_env=spec.api_key_env or settings.api_key_env,
            tool_mode=settings.tool_mode, schema_format=settings.schema_format,
            max_output_tokens=settings.max_output_tokens_cap,
            context_tokens=settings.context_tokens, timeout_s=config.settings.batch.timeout_s,
        )
    raise ProviderError(f"unknown provider {spec.name!r} ({', '.join(PROVIDERS)})")
