"""Model providers behind one small protocol (see base.py), chosen by name or by a job's
recorded spec (spec.py)."""

from __future__ import annotations

from ..base.config import Config
from .base import Message, ModelReply, Provider, ProviderError, ToolCall, ToolSpec, Usage
from .spec import ProviderSpec, build_provider

__all__ = ["Message", "ModelReply", "Provider", "ProviderError", "ProviderSpec", "ToolCall",
           "ToolSpec", "Usage", "make_provider"]


def make_provider(config: Config, name: str | ProviderSpec | None = None,
                  model: str | None = None) -> Provider:
    """The provider named by `name` (a name, a job's spec, or None: model.provider)."""
    spec = name if isinstance(name, ProviderSpec) else ProviderSpec.choose(config, name, model)
    return build_provider(config, spec)
