"""The graph-write proposal of organize and deep, as the model submits it.

Field limits that a schema can express live here (so the model sees them in the tool schema and
a violation comes back naming the field); rules that need the store live in engine.validate.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ObjectType = Literal["person", "task", "todo", "schedule", "knowledge", "project", "credential"]
Label = Literal["member_of", "related_to", "assigned_to", "depends_on", "about", "supersedes",
                "knows"]
CoreName = Literal["AGENTS.md", "SOUL.md", "USER.md"]
Outcome = Literal["continue", "linked", "archive_only"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ObjectWrite(Strict):
    """Create or replace one object's profile (the whole profile: unchanged fields repeated)."""

    id: str = Field(min_length=3, max_length=140, description="type:slug, e.g. person:zhang-wei")
    name: str = Field(min_length=1, max_length=200)
    aliases: list[str] = Field(default_factory=list, max_length=32)
    summary: str = Field(default="", max_length=400)
    body: str = Field(default="", max_length=16_000)
    cues: list[str] = Field(default_factory=list, max_length=32,
                            description="future questions this object answers")
    status: Literal["candidate", "active", "archived"] | None = Field(
        default=None, description="lifecycle only; a new project must be candidate")


class RelationWrite(Strict):
    src: str = Field(max_length=140)
    label: Label
    dst: str = Field(max_length=140)


class EvidenceWrite(Strict):
    """Cite chars [start, end) of the claimed event's page as evidence for an object."""

    object_id: str = Field(max_length=140)
    event_id: int
    start: int = Field(ge=0)
    end: int = Field(gt=0)


class CoreWrite(Strict):
    name: CoreName
    content: str = Field(max_length=200_000)


class Disposition(Strict):
    """How the claimed event ends this batch."""

    event_id: int
    outcome: Outcome
    progress: str | None = Field(default=None, max_length=2_000,
                                 description="continue: what is done and what is next")
    reason: str | None = Field(default=None, max_length=1_000,
                               description="archive_only: why nothing durable is in it")


class Merge(Strict):
    """deep: fold `loser` into `survivor`; the loser stays readable and redirects."""

    loser: str = Field(max_length=140)
    survivor: str = Field(max_length=140)


class OrganizeProposal(Strict):
    """Arguments of commit_organize."""

    objects: list[ObjectWrite] = Field(default_factory=list, max_length=32)
    relations: list[RelationWrite] = Field(default_factory=list, max_length=64)
    evidence: list[EvidenceWrite] = Field(default_factory=list, max_length=256)
    core_files: list[CoreWrite] = Field(default_factory=list, max_length=3)
    events: list[Disposition] = Field(default_factory=list, max_length=1,
                                      description="exactly one disposition for the claimed event")


class ReviewProposal(Strict):
    """Arguments of commit_review (deep)."""

    reviewed: list[str] = Field(max_length=4, description="every id of this batch, confirmed")
    objects: list[ObjectWrite] = Field(default_factory=list, max_length=32)
    relations: list[RelationWrite] = Field(default_factory=list, max_length=64)
    merges: list[Merge] = Field(default_factory=list, max_length=4)
    core_files: list[CoreWrite] = Field(default_factory=list, max_length=3)
