"""Providers register through the `memvault_providers` entry points: memvault's own two, and a
third party's installed beside it, which jobs then run on without memvault being edited."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import write_config
from memvault import Memory
from memvault.home.runs import job_provider
from memvault.models.base import ProviderError
from memvault.models.registry import GROUP, load_factory, provider_names
from memvault.models.spec import ProviderSpec, build_provider
from memvault.timeline.events import NewEvent

# A third party's package: its provider answers like the builtin (so the batch commits) and
# counts its calls, so the test sees that the job ran on it and not on the builtin.
PLUGIN = '''
from memvault.models.builtin import BuiltinProvider

CALLS = []


class EchoRules(BuiltinProvider):
    name = "echo-rules"

    def __init__(self, model):
        self.model = model or "echo-1"

    def complete(self, messages, tools, max_output_tokens, deadline_s=None):
        CALLS.append(self.model)
        return super().complete(messages, tools, max_output_tokens, deadline_s)


def build(config, spec):
    return EchoRules(spec.model)


def broken(config, spec):
    raise AssertionError("never built: its module does not import")
'''


def install_plugin(root: Path, entries: str) -> None:
    """A distribution on sys.path as pip would leave it: the module and its dist-info."""
    (root / "echo_rules_plugin.py").write_text(PLUGIN)
    info = root / "echo_rules_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-rules-plugin\n"
                                   "Version: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{entries}")


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site"
    root.mkdir()
    install_plugin(root, "echo = echo_rules_plugin:build\n"
                         "gone = no_such_plugin_module:build\n")
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    yield root
    sys.modules.pop("echo_rules_plugin", None)


def test_memvaults_own_providers_are_registered_as_entry_points() -> None:
    assert {"builtin", "openai"} <= set(provider_names())
    assert callable(load_factory("builtin"))


@pytest.mark.timeout(120)
def test_a_third_partys_provider_runs_the_jobs_that_name_it(home: Path, plugin: Path) -> None:
    assert "echo" in provider_names()
    with Memory.open(home) as mem:
        mem.append_events([NewEvent("TODO: renew the passport by Friday")])
        run = mem.organize(model="echo:echo-7", wait=True)
        assert run.provider == "echo"
        assert [o["name"] for o in mem.list_objects("todo")] == ["renew the passport"]
    plugin_module = sys.modules["echo_rules_plugin"]
    assert plugin_module.CALLS and set(plugin_module.CALLS) == {"echo-7"}


def test_the_configured_provider_may_be_a_third_partys(home: Path, plugin: Path) -> None:
    write_config(home, '[model]\nprovider = "echo"\n')
    with Memory.open(home) as mem:
        receipt = mem.organize()
        assert job_provider(mem, receipt["job_id"]) == "echo"


def test_an_unknown_provider_is_refused_naming_the_registered_ones(home: Path) -> None:
    write_config(home, '[model]\nprovider = "gpt"\n')
    with Memory.open(home) as mem:
        with pytest.raises(ProviderError, match=r"unknown provider 'gpt' \(builtin, openai"):
            mem.organize()
        assert mem.status()["jobs"] == {}


def test_a_provider_whose_package_does_not_import_fails_naming_it(home: Path,
                                                                    plugin: Path) -> None:
    with pytest.raises(ProviderError, match="'gone' .*could not be loaded: ModuleNotFoundError"):
        load_factory("gone")
    with Memory.open(home) as mem, pytest.raises(ProviderError, match="could not be loaded"):
        build_provider(mem.config, ProviderSpec("gone"))
