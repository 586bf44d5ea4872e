"""Providers by name: every provider, the two memvault ships included, registers through one
entry-point group, `memvault_providers`, so a third party adds one by installing a package,
without editing memvault (as llm registers even its own models through its plugin hook).

An entry point names a factory, `(config, spec) -> Provider`: it builds the provider a job's
recorded spec (spec.py) names, reading memvault.toml for whatever the spec does not say. Its
name is what `model.provider`, `--model NAME[:MODEL]` and a job's record use.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Protocol

from .base import Provider, ProviderError

if TYPE_CHECKING:
    from ..base.config import Config
    from .spec import ProviderSpec

GROUP = "memvault_providers"


class ProviderFactory(Protocol):
    """What a `memvault_providers` entry point names."""

    def __call__(self, config: Config, spec: ProviderSpec) -> Provider: ...


def registered() -> dict[str, EntryPoint]:
    """The provider entry points installed now, by name (a name registered twice: the first
    distribution's, as importlib.metadata lists them)."""
    found: dict[str, EntryPoint] = {}
    for point in entry_points(group=GROUP):
        found.setdefault(point.name, point)
    return found


def provider_names() -> list[str]:
    """The names a provider can be chosen by, sorted."""
    return sorted(registered())


def check_provider_name(name: str) -> str:
    """`name`, when a provider is registered under it; ProviderError listing them, else."""
    _entry_point(name)
    return name


def _entry_point(name: str) -> EntryPoint:
    """The entry point registered as `name`; ProviderError listing the registered, else."""
    found = registered()
    if name not in found:
        listed = ", ".join(sorted(found)) or "none: reinstall memvault (pip install -e .)"
        raise ProviderError(f"unknown provider {name!r} ({listed})")
    return found[name]


def load_factory(name: str) -> ProviderFactory:
    """The factory registered as `name`. ProviderError for an unknown name, or one whose
    entry point cannot be imported (naming it and why): never another provider instead."""
    point = _entry_point(name)
    try:
        factory = point.load()
    except Exception as exc:  # a third party's import error, whatever it is
        raise ProviderError(f"provider {name!r} ({point.value}) could not be loaded: "
                            f"{type(exc).__name__}: {exc}") from exc
    if not callable(factory):
        raise ProviderError(f"provider {name!r} ({point.value}) is not a factory")
    factory_: ProviderFactory = factory
    return factory_
