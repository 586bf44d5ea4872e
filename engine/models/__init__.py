"""Model providers behind one small protocol (see base.py), chosen by name."""

from __future__ import annotations

from ..base.config import Config
from .base import Message, ModelReply, Provider, ProviderError, ToolCall, ToolSpec, Usage

__all__ = ["Message", "ModelReply", "Provider", "ProviderError", "ToolCall", "ToolSpec", "Usage",
           "make_provider"]


def make_provider(config: Config, name: str | None = None, model: str | None = None) -> Provider:
    """The provider named by `name` (else model.provider in memvault.toml)."""
    choice = name or config.settings.model.provider
    if choice == "builtin":
        from .builtin import BuiltinProvider

        return BuiltinProvider()
    if choice == "openai":
        from .openai_compat import OpenAICompatProvider

        settings = config.settings.model
        return OpenAICompatProvider(
            model=model or settings.name, base_url=settings.base_url or None,
            api_key_env=settings.api_key_env, tool_mode=settings.tool_mode,
            schema_format=settings.schema_format,
            max_output_tokens=settings.max_output_tokens_cap,
            context_tokens=settings.context_tokens, timeout_s=config.settings.batch.timeout_s,
        )
    if choice == "scripted":
        from .scripted import ScriptedProvider

        return ScriptedProvider()
    raise ProviderError(f"unknown provider {choice!r} (builtin, openai, scripted)")
