"""deep: the nightly review of every object.

At its first claim a job takes a durable snapshot of ALL live object ids (archived and
long-unmentioned ones too). Each batch reviews ≤ deep.objects_per_batch of them; the model
must confirm every reviewed id; unchanged objects are not rewritten; a failed batch does not
advance the list. Merges keep the loser readable with a redirect and a `supersedes` relation.
The claim fits organize.claim_budget_bytes: fewer objects a batch when profiles are large, then
the longest bodies cut with a marker (a cut profile must be read whole before it is rewritten).
A legacy long-sentence relation may be archived, its standard relation written in the same
commit.
deep never touches the hot timeline (it has no tool for it) and never writes SOUL.md.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel

from ...base.clock import iso
from ...base.config import Config
from ...base.spaces import EVERY_SPACE, SHARED, Spaces
from ...models.payloads import BodyCut, DeepPayload, ReviewItem
from ...objects.graph_write import (
    GraphWrite,
    WriteRules,
    WriteSummary,
    apply_write,
    validate_write,
)
from ...objects.links import object_links
from ...objects.proposals import ReviewProposal
from ...objects.records import (
    ObjectRecord,
    get_object,
    live_ids_by_space,
    live_names,
    object_spaces,
)
from ..batch_loop import FieldError, Tool
from ..claims import DeepClaim, JsonObject
from ..kinds import JobMode
from ..mode import BatchContext, Claim, Mode, Prompt, commit_tool
from ..records import Batch, Job
from .browse import browse_tools
from .organize import PAYLOAD_RESERVE, object_payload

SYSTEM = (
    "You review an agent's long-term memory objects, a few at a time. For each object given: "
    "keep it condensed and currently valid, fix stale conclusions, add standard short-label "
    "relations (also across projects), archive what is no longer relevant, merge exact "
    "duplicates (the loser stays readable and redirects). A legacy long-sentence relation "
    "(legacy = 1 in links) may be archived through archive_relations, naming the standard "
    "short-label relation that replaces it. Leave unchanged objects alone. You "
    "cannot touch the hot timeline and must not rewrite SOUL.md. Finish by calling "
    "commit_review with `reviewed` = every id you were given."
)


def normal_name(name: str) -> str:
    text = unicodedata.normalize("NFKC", name).casefold()
    return re.sub(r"[\s\-_.·・]+", "", text)


LINKS_SHOWN = 50  # links of each reviewed object in the payload
BODY_CUT_MARK = "\n…[body cut to fit the claim budget: read_object for the rest]"


@dataclass(frozen=True)
class DeepResult:
    """What a review committed: the receipt's body."""

    reviewed: tuple[str, ...]  # the claimed ids, each confirmed
    changes: WriteSummary

    def to_json(self) -> JsonObject:
        return {"reviewed": list(self.reviewed), **self.changes}


class DeepMode(Mode[DeepClaim, None, None]):
    """Claims the next objects of the job's snapshot; its prompt reads them itself (reads:
    None) and its commit reuses nothing of the prompt (prepared: None)."""

    name = JobMode.DEEP
    proposal = ReviewProposal
    claim_type = DeepClaim

    def next_claim(self, conn: sqlite3.Connection, job: Job, config: Config,
                   now: datetime) -> Claim[DeepClaim, None] | None:
        """The next unreviewed objects of the job's snapshot (taken at its first claim) that
        fit the claim budget together."""
        taken = conn.execute("SELECT 1 FROM deep_snapshot WHERE job_id = ? LIMIT 1",
                             (job.id,)).fetchone()
        if not taken:  # by space first: a batch reviews the objects of one space
            conn.executemany(
                "INSERT INTO deep_snapshot (job_id, position, object_id) VALUES (?, ?, ?)",
                ((job.id, position, object_id) for position, object_id
                 in enumerate(live_ids_by_space(conn, EVERY_SPACE), start=1)))
        rows = conn.execute(
            "SELECT position, object_id FROM deep_snapshot WHERE job_id = ?"
            " AND reviewed_at IS NULL AND batch_id IS NULL ORDER BY position LIMIT ?",
            (job.id, config.settings.deep.objects_per_batch),
        ).fetchall()
        if not rows:
            return None
        # the first object's space only (an object moved since the snapshot waits its turn;
        # one deleted since reads as shared)
        spaces = object_spaces(conn, [r["object_id"] for r in rows])
        space = spaces.get(rows[0]["object_id"], SHARED)
        rows = [r for r in rows if spaces.get(r["object_id"], SHARED) == space]
        rows = rows[:_fitting(conn, [r["object_id"] for r in rows], review_budget(config))]
        return Claim(DeepClaim(tuple(r["position"] for r in rows),
                               tuple(r["object_id"] for r in rows)))

    def shrink(self, claim: DeepClaim, config: Config) -> DeepClaim:
        """The first half of the objects (at least one)."""
        keep = max(1, len(claim.object_ids) // 2)
        return DeepClaim(claim.positions[:keep], claim.object_ids[:keep])

    def prompt(self, ctx: BatchContext[DeepClaim], reads: None = None) -> Prompt[None]:
        """The reviewed profiles (cut to the budget) and their duplicate candidates."""
        budget = review_budget(ctx.config)
        object_ids = ctx.batch.claim.object_ids
        review = fit_review([review_item(ctx.conn, i) for i in object_ids], budget)
        used = _size(review)
        related = []
        for obj in duplicate_candidates(ctx.conn, object_ids):  # of the reviewed objects' space
            item = object_payload(obj)
            cost = _size(item)
            if used + cost <= budget:
                related.append(item)
                used += cost
        # A profile sent with a cut body is not read: writing it back whole would lose the rest,
        # so it must be read in full (read_object) before it is rewritten or merged.
        ctx.read_ids.update(o["id"] for o in review + related if "body_cut" not in o)
        payload: DeepPayload = {"mode": JobMode.DEEP, "review": review, "related": related,
                                "scope": ctx.job.scope}
        return Prompt([{"role": "system", "content": SYSTEM},
                       {"role": "user", "content": json.dumps(payload, ensure_ascii=False)}])

    def tools(self, ctx: BatchContext[DeepClaim]) -> list[Tool]:
        """The browsing tools and commit_review."""
        spaces = _spaces_of(ctx.conn, list(ctx.batch.claim.object_ids))
        # one space: what it and `shared` hold; a claim that came to span several (an object
        # moved since it was claimed): `shared` alone, so no space reaches another's review
        seen = Spaces(spaces.pop() if len(spaces) == 1 else SHARED)
        return [*browse_tools(ctx.conn, ctx.read_ids, lambda: seen),
                commit_tool("commit_review", "Confirm the reviewed ids and commit any changes.",
                            ReviewProposal)]

    def apply(self, ctx: BatchContext[DeepClaim], proposal: BaseModel,
              prepared: None = None) -> DeepResult:
        """Validate and write the review's graph write; mark the claimed positions reviewed."""
        assert isinstance(proposal, ReviewProposal)
        claimed = list(ctx.batch.claim.object_ids)
        if sorted(set(proposal.reviewed)) != sorted(claimed):
            raise FieldError("reviewed", f"confirm exactly this batch's ids: {claimed}")
        write = GraphWrite(proposal.objects, proposal.relations, [], proposal.core_files,
                           proposal.merges, proposal.archive_relations)
        rules = WriteRules(ctx.read_ids, None, JobMode.DEEP, ctx.batch.id,
                           _review_space(ctx.conn, claimed, bool(proposal.core_files)))
        validated = validate_write(ctx.conn, ctx.config, write, rules,
                                   len(proposal.model_dump_json().encode()))
        changes = apply_write(ctx.conn, validated, rules, ctx.now)
        positions = ctx.batch.claim.positions
        marks = ",".join("?" * len(positions))
        ctx.conn.execute(
            f"UPDATE deep_snapshot SET reviewed_at = ?, batch_id = ? WHERE job_id = ?"
            f" AND position IN ({marks})",
            (iso(ctx.now), ctx.batch.id, ctx.job.id, *positions),
        )
        return DeepResult(tuple(claimed), changes)

    def on_terminal(self, conn: sqlite3.Connection, batch: Batch[DeepClaim],
                    now: datetime) -> None:
        """The positions stay unreviewed (marked with the terminal batch), so the job ends
        partial instead of claiming them forever."""
        positions = batch.claim.positions
        marks = ",".join("?" * len(positions))
        conn.execute(
            f"UPDATE deep_snapshot SET batch_id = ? WHERE job_id = ? AND position IN ({marks})",
            (batch.id, batch.job_id, *positions),
        )


def review_budget(config: Config) -> int:
    """Bytes the reviewed profiles and duplicate candidates may take in the claim payload."""
    return int(config.settings.organize.claim_budget_bytes) - PAYLOAD_RESERVE


def review_item(conn: sqlite3.Connection, object_id: str) -> ReviewItem:
    """One reviewed object as the payload shows it: its profile and its first 50 links."""
    return ReviewItem(**object_payload(get_object(conn, object_id)),
                      links=object_links(conn, object_id, EVERY_SPACE)[:LINKS_SHOWN])


def _size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode())


def _review_space(conn: sqlite3.Connection, object_ids: list[str],
                  writes_core: bool) -> str | None:
    """The space a review writes under (graph_write's WriteRules.space): that of its reviewed
    objects when they share one, so what it creates stays there and only a review of `shared`
    objects writes a core file (which every space reads). A review of several spaces writes
    no core file: what it read of one space must not reach the others."""
    spaces = _spaces_of(conn, object_ids)
    if len(spaces) == 1:
        return spaces.pop()
    if writes_core and spaces - {SHARED}:
        raise FieldError("core_files", "this review read objects of several spaces "
                         f"({', '.join(sorted(spaces))}): it writes no core file")
    return None


def _spaces_of(conn: sqlite3.Connection, object_ids: Sequence[str]) -> set[str]:
    """The spaces the objects belong to (one, for a claim made by next_claim)."""
    return set(object_spaces(conn, object_ids).values())


def _fitting(conn: sqlite3.Connection, object_ids: list[str], budget: int) -> int:
    """How many of the next objects (at least one) fit the claim budget together: a batch of
    large profiles claims fewer objects (the review is then also cut to fit, fit_review)."""
    used = 2  # the list's brackets
    for n, object_id in enumerate(object_ids):
        used += _size(review_item(conn, object_id)) + 2
        if used > budget:
            return max(1, n)
    return len(object_ids)


def fit_review(review: list[ReviewItem], budget: int) -> list[ReviewItem]:
    """Cut the longest bodies until the review fits `budget` bytes. A cut body ends with
    BODY_CUT_MARK and the item gets `body_cut` (chars shown, chars in all) so the model knows
    to read_object before rewriting it."""
    for item in sorted(review, key=lambda o: len(o["body"].encode()), reverse=True):
        if _size(review) <= budget:
            break
        body = item["body"]
        item["body_cut"] = BodyCut(shown_chars=len(body), total_chars=len(body),
                                   read="read_object returns the whole body; read it before "
                                        "rewriting or merging this object")
        item["body"] = body + BODY_CUT_MARK
        keep = max(0, len(body.encode()) - (_size(review) - budget))
        shown = body.encode()[:keep].decode("utf-8", "ignore")
        while True:
            item["body"] = shown + BODY_CUT_MARK
            item["body_cut"]["shown_chars"] = len(shown)
            if not shown or _size(review) <= budget:
                break
            shown = shown[: len(shown) * 9 // 10]  # JSON escapes cost more than their bytes
    return review


def duplicate_candidates(conn: sqlite3.Connection,
                         object_ids: Sequence[str]) -> list[ObjectRecord]:
    """Live objects of the same type and space whose normalised name or alias equals a reviewed
    one's (deep never merges objects of two spaces, so it is never shown one of another)."""
    wanted: dict[tuple[str, str], set[str]] = {}
    for object_id in object_ids:
        obj = get_object(conn, object_id)
        keys = {normal_name(n) for n in [obj.name, *obj.aliases] if n.strip()}
        wanted.setdefault((obj.type, obj.space), set()).update(keys)
    found: list[ObjectRecord] = []
    for (type_, space), keys in wanted.items():
        # Only names are read for the scan (it runs every batch over every object of the type);
        # a full record is built for the matches alone.
        for named in live_names(conn, type_, Spaces(space)):
            if (named.space == space and named.id not in object_ids
                    and not keys.isdisjoint(_name_keys(named.name, named.aliases))):
                found.append(get_object(conn, named.id))
    return found


@functools.lru_cache(maxsize=65_536)
def _name_keys(name: str, aliases: str) -> frozenset[str]:
    """Normalised name and aliases (a JSON list) of an object."""
    return frozenset(normal_name(n) for n in [name, *json.loads(aliases)] if n.strip())
