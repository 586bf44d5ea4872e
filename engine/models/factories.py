"""The factories of the providers memvault ships, registered in pyproject.toml under the
`memvault_providers` entry points (registry.py) exactly as a third party's would be."""

from __future__ import annotations

from ..base.config import Config
from .base import Provider
from .spec import ProviderSpec


def builtin(config: Config, spec: ProviderSpec) -> Provider:
    """The offline rules (`builtin-rules-1`): nothing to configure."""
    from .builtin import BuiltinProvider  # the rules load only when a batch needs them

    return BuiltinProvider()


def openai(config: Config, spec: ProviderSpec) -> Provider:
    """An OpenAI-compatible endpoint: the spec's model, base URL and key variable, the rest from
    memvault.toml's [model] and [batch]."""
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
