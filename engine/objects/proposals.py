"""The graph-write proposal of organize and deep, as the model submits it.

Field limits that a schema can express live here (so the model sees them in the tool schema and
a violation comes back naming the field); rules that need the store live in graph_write.py.
Every text field is `Text`: a lone UTF-16 surrogate (which JSON's \\ud800 escapes can carry)
or a NUL is refused as a correction here, as events and core files refuse them, instead of
failing the batch when SQLite cannot encode the text (or its text functions stop at the NUL);
so is any other control character but newline and tab (a terminal escape, a carriage return),
which would otherwise be stored, written into the vault and printed to terminals.
The models are strict: an unknown field is refused, and so is a field name that is not text (a
correction names the field, so the name must be sendable) or that holds a secret-looking value
(the correction would echo it). Secret values in the texts themselves are refused by the mode
(graph_write.check_write_secrets), which knows every field's path.
"""

from __future__ import annotations

import functools
import re
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from ..secrets.detector import find_secret
from ..timeline.fragments import find_lone_surrogate

# C0 controls but tab and newline, and the C1 controls: terminal escapes (ESC [31m), carriage
# returns that overwrite a line, none of which a memory's text needs; they would be stored,
# written into vault files and printed to terminals as they are. (DEL is neither C0 nor C1 and
# drives no terminal: allowed, as before.)
_CONTROL = re.compile(r"[\x01-\x08\x0b-\x1f\x80-\x9f]")


def _plain_text(value: str) -> str:
    if find_lone_surrogate(value) is not None:
        raise ValueError("holds a lone UTF-16 surrogate (U+D800-U+DFFF), which is not text")
    if "\x00" in value:
        raise ValueError("holds a NUL character, which text in memory may not")
    control = _CONTROL.search(value)
    if control:
        code = ord(control.group())
        raise ValueError(
            f"holds the control character U+{code:04X} ({_control_name(code)}) at char "
            f"{control.start()}: text in memory may hold newlines and tabs but no other control "
            "characters (no terminal escapes); write the text without it")
    return value


def without_controls(value: Any) -> Any:
    """`value` (text, or lists and dicts of it) with each control character _plain_text
    refuses turned into a space: for a writer that copies raw event text (the builtin model)."""
    if isinstance(value, str):
        return _CONTROL.sub(" ", value)
    if isinstance(value, list):
        return [without_controls(item) for item in value]
    if isinstance(value, dict):
        return {key: without_controls(item) for key, item in value.items()}
    return value


def _control_name(code: int) -> str:
    names = {0x1B: "ESC", 0x0D: "carriage return", 0x08: "backspace",
             0x0B: "vertical tab", 0x0C: "form feed", 0x07: "bell", 0x9B: "CSI"}
    return names.get(code, "a C1 control" if code >= 0x80 else "a C0 control")


Text = Annotated[str, AfterValidator(_plain_text)]

ObjectType = Literal["person", "task", "todo", "schedule", "knowledge", "project", "credential"]
Label = Literal["member_of", "related_to", "assigned_to", "depends_on", "about", "supersedes",
                "knows"]
CoreName = Literal["AGENTS.md", "SOUL.md", "USER.md"]
Outcome = Literal["continue", "linked", "archive_only"]
# objects/states.py ALL_STATES (tests/test_object_state.py keeps the two alike); which state
# fits which type is checked with the store (graph_write), naming the valid ones.
State = Literal["scheduled", "moved", "cancelled", "done", "open", "dropped"]


class Strict(BaseModel):
    """A tool's arguments: no unknown fields, no field name that is not text."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _text_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        # The schema's own field names are fixed text and none looks like a secret (a test
        # keeps it so): only a name the schema does not declare needs either check. Most
        # proposals have none, so the common case is one set lookup per key.
        names = _field_names(cls)
        unknown = [key for key in data if key not in names]
        if not unknown:
            return data
        if any(isinstance(key, str) and find_lone_surrogate(key) is not None for key in unknown):
            raise ValueError("a field name holds a lone UTF-16 surrogate, which is not text")
        # A refused field's name is echoed in the correction: a secret as a key must not be.
        for key in unknown:
            kind = find_secret(key) if isinstance(key, str) else None
            if kind:
                raise ValueError(f"a field name holds what looks like {kind}; field names "
                                 "are fixed by the schema")
        return data


@functools.cache
def _field_names(model: type[BaseModel]) -> frozenset[str]:
    """A model's declared field names, gathered once per class (read for every key of every
    proposal item)."""
    return frozenset(model.model_fields)


class ObjectWrite(Strict):
    """Create or replace one object's profile (the whole profile: unchanged fields repeated)."""

    # The type prefix is a closed set: said as a pattern the server's grammar enforces (the
    # engine's own check, with its field-named corrections, stays the authority).
    id: Text = Field(min_length=3, max_length=140, description="type:slug, e.g. person:zhang-wei",
                     json_schema_extra={"pattern": f"^({'|'.join(get_args(ObjectType))}):.+$"})
    name: Text = Field(min_length=1, max_length=200)
    aliases: list[Text] = Field(default_factory=list, max_length=32)
    summary: Text = Field(default="", max_length=400)
    body: Text = Field(default="", max_length=16_000)
    cues: list[Text] = Field(default_factory=list, max_length=32,
                            description="future questions this object answers")
    status: Literal["candidate", "active", "archived"] | None = Field(
        default=None, description="lifecycle only; a new project must be candidate")
    state: State | None = Field(
        default=None,
        description="schedule: scheduled | moved | cancelled | done; todo: open | done | "
                    "dropped; no other type has one. Set it when a plan is cancelled, moved or "
                    "done, or a todo done or dropped; omitted keeps the stored state")


class RelationWrite(Strict):
    src: Text = Field(max_length=140)
    label: Label
    dst: Text = Field(max_length=140)


class EvidenceWrite(Strict):
    """Cite chars [start, end) of the claimed event's page as evidence for an object."""

    object_id: Text = Field(max_length=140)
    event_id: int
    start: int = Field(ge=0)
    end: int = Field(gt=0)


class CoreWrite(Strict):
    name: CoreName
    content: Text = Field(max_length=200_000)


class Disposition(Strict):
    """How the claimed event ends this batch."""

    event_id: int
    outcome: Outcome
    progress: Text | None = Field(default=None, max_length=2_000,
                                 description="continue: what is done and what is next")
    reason: Text | None = Field(default=None, max_length=1_000,
                               description="archive_only: why nothing durable is in it")


class Merge(Strict):
    """deep: fold `loser` into `survivor`; the loser stays readable and redirects."""

    loser: Text = Field(max_length=140)
    survivor: Text = Field(max_length=140)


class OrganizeProposal(Strict):
    """Arguments of commit_organize."""

    objects: list[ObjectWrite] = Field(default_factory=list, max_length=32)
    relations: list[RelationWrite] = Field(default_factory=list, max_length=64)
    evidence: list[EvidenceWrite] = Field(default_factory=list, max_length=256)
    core_files: list[CoreWrite] = Field(default_factory=list, max_length=3)
    events: list[Disposition] = Field(default_factory=list, max_length=1,
                                      description="exactly one disposition for the claimed event")


class LegacyArchive(Strict):
    """deep: archive one legacy long-sentence relation, writing its standard short-label
    relation in the same commit (the model chooses the label; no program guesses it)."""

    src: Text = Field(max_length=140)
    legacy_label: Text = Field(min_length=1, max_length=2_000,
                               description="the legacy row's label, exactly as shown in links")
    dst: Text = Field(max_length=140)
    label: Label = Field(description="the standard relation written in its place, src -> dst")


class ReviewProposal(Strict):
    """Arguments of commit_review (deep)."""

    reviewed: list[Text] = Field(max_length=4, description="every id of this batch, confirmed")
    objects: list[ObjectWrite] = Field(default_factory=list, max_length=32)
    relations: list[RelationWrite] = Field(default_factory=list, max_length=64)
    merges: list[Merge] = Field(default_factory=list, max_length=4)
    core_files: list[CoreWrite] = Field(default_factory=list, max_length=3)
    archive_relations: list[LegacyArchive] = Field(
        default_factory=list, max_length=64,
        description="legacy relations to archive, each replaced by a standard relation")
