"""The tools' schemas let a model write only what the engine accepts: every closed set (object
types, relation labels, outcomes, states, core files) is an enum the server can enforce, and a
correction names the argument that was wrong, not the first one."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from memvault import ManualClock, Memory
from memvault.base.spaces import Spaces
from memvault.jobs.batch_loop import FieldError, Tool
from memvault.jobs.modes.browse import DirectoryArgs, SearchArgs, _field_named, browse_tools
from memvault.jobs.modes.compact import CompactionProposal
from memvault.objects.ids import OBJECT_TYPES
from memvault.objects.proposals import OrganizeProposal, ReviewProposal

CLOSED = {"type", "types", "label", "outcome", "status", "state"}
ARG_MODELS = [SearchArgs, DirectoryArgs, OrganizeProposal, ReviewProposal, CompactionProposal]


def closed_properties(node: Any, defs: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(name, schema) of every property named like a closed set, through $defs."""
    if isinstance(node, dict):
        if "$ref" in node:
            yield from closed_properties(defs[node["$ref"].split("/")[-1]], defs)
        for key, value in (node.get("properties") or {}).items():
            if key in CLOSED:
                yield key, value
        for value in node.values():
            if isinstance(value, dict | list):
                yield from closed_properties(value, defs)
    elif isinstance(node, list):
        for value in node:
            yield from closed_properties(value, defs)


def has_enum(node: Any) -> bool:
    if isinstance(node, dict):
        return "enum" in node or "const" in node or any(has_enum(v) for v in node.values())
    if isinstance(node, list):
        return any(has_enum(v) for v in node)
    return False


@pytest.mark.parametrize("model", ARG_MODELS, ids=lambda m: m.__name__)
def test_every_closed_set_in_a_tool_schema_is_an_enum(model):
    schema = model.model_json_schema()
    found = list(closed_properties(schema, schema.get("$defs", {})))
    assert not [name for name, prop in found if not has_enum(prop)]


def test_core_file_names_are_an_enum():
    core = OrganizeProposal.model_json_schema()["$defs"]["CoreWrite"]["properties"]["name"]
    assert core["enum"] == ["AGENTS.md", "SOUL.md", "USER.md"]


def test_browse_types_are_the_object_types():
    items = SearchArgs.model_json_schema()["properties"]["types"]["anyOf"][0]["items"]
    assert items["enum"] == list(OBJECT_TYPES)


def test_an_object_id_must_start_with_an_object_type():
    pattern = OrganizeProposal.model_json_schema()["$defs"]["ObjectWrite"]["properties"]["id"]
    assert pattern["pattern"].startswith("^(person|task|")


@pytest.fixture
def tools(tmp_path: Path) -> Iterator[dict[str, Tool]]:
    mem = Memory.open(tmp_path / "home",
                      clock=ManualClock(datetime(2026, 10, 13, 4, 0, tzinfo=UTC)))
    yield {t.name: t for t in browse_tools(mem.conn, set(), Spaces)}
    mem.close()


def test_a_bad_type_is_corrected_naming_types(tools):
    with pytest.raises(FieldError) as failure:
        tools["search_objects"].run({"query": "Aurora", "types": ["note"]})
    assert failure.value.field.startswith("types")


def test_an_engine_error_about_a_later_argument_names_it():
    args = SearchArgs(query="Aurora", types=["person"])
    assert _field_named(args, "types must be among person, task; got ['note']") == "types"
    assert _field_named(args, "the limit is too high for types") == "types"
    assert _field_named(args, "no such thing") == "query"


def test_a_missing_object_is_corrected_naming_id(tools):
    with pytest.raises(FieldError) as failure:
        tools["read_object"].run({"id": "person:nobody"})
    assert failure.value.field == "id"
