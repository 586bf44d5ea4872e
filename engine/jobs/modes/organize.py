"""organize: read each queued event page by page and write long-term objects.

A batch claims one page (≤ organize.page_chars, shrunk by byte margin or failure down to
organize.page_min_chars) of one pending event, plus related objects within the claim transfer
budget. Every batch ends the event as continue (progress saved; on the last page it must change
something), linked (whole event read, ≥1 target) or archive_only (whole event read, a reason,
no durable write, refused once any batch of the event wrote evidence, an object, a relation
or a core file). Objects, relations, evidence, page cursor, progress and outcome commit in ONE
transaction; a later failure never undoes an earlier batch. Source anti-backflow
(jobs/modes/backflow.py): an event that is wholly the memory's own output ends archive_only by the
engine at claim, and evidence citing memory output inside a page is refused as a correction.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from dataclasses import dataclass, replace
from datetime import datetime

from pydantic import BaseModel

from ...base.config import Config
from ...base.errors import NotFound
from ...base.spaces import EVERY_SPACE, SHARED, Spaces
from ...models.payloads import MemorySpan, ObjectPayload, OrganizePayload
from ...objects.graph_write import GraphWrite, WriteRules, WriteSummary, apply_write, validate_write
from ...objects.names import name_keys as name_keys  # re-exported: tests and callers use it here
from ...objects.names import named_objects
from ...objects.proposals import Disposition, OrganizeProposal, Outcome
from ...objects.provenance import Span, check_evidence, is_memory_event
from ...objects.records import ObjectRecord, event_citers, evidence_count, object_records
from ...secrets.detector import check_no_secret
from ...timeline.events import StoredEvent, event_space, get_event
from ...timeline.queue import (
    EventState,
    block_event,
    queued_event,
    queued_progress,
    record_outcome,
    waiting_events,
)
from ..batch_loop import FieldError, Tool
from ..claims import JsonObject, OrganizeClaim
from ..kinds import JobMode
from ..mode import BatchContext, Claim, CommitRefused, Mode, Prompt, commit_tool
from ..records import Batch, Job, batch_events
from .backflow import event_spans, page_spans, settle_memory_output
from .browse import browse_tools

SYSTEM = (
    "You organize an agent's long-term memory. You get one page of one raw event, the progress "
    "saved by earlier pages, and related objects (person, task, todo, schedule, knowledge, "
    "project, credential). Write only durable, currently valid facts: condensed profiles, not "
    "transcripts; unknown facts are written as unknown, never guessed. A body holds one fact a "
    "line, in the third person about its subject and dated when the day is known (\"- "
    "2023-05-08: Audrey has had her dogs for 3 years\"); greetings, questions, thanks and "
    "chatter are not facts. A plan with a day is a schedule, something to do a todo. When the "
    "page changes one (moved/postponed to, cancelled, done), rewrite that object so its "
    "current value is the new one and keep the old value as a history line, and set its "
    "`state` field (schedule: scheduled, moved, cancelled, done; todo: open, done, dropped); "
    "do not make a second object. A person named in the text is a person object, related to "
    "the speaker by knows or to what it is about by related_to/about. Relations use short "
    "labels only. Cite evidence as char ranges of this page, never inside a `memory_output` "
    "span (the memory's own answers echoed back; the words around them still count). A new "
    "project is `candidate`. A credential keeps purpose and where the secret lives, never the "
    "secret. You may search and read objects first; to rewrite an existing object you must "
    "have read it. Finish by calling commit_organize with exactly one disposition for the "
    "event: continue (more pages, with progress), linked (whole event read, cited by at least "
    "one object) or archive_only (whole event read, nothing durable, with a reason)."
)
RELATED_MAX = 200  # objects a claim considers before the byte budget
PAYLOAD_RESERVE = 4_000  # bytes kept for the payload's frame and the system prompt


def object_payload(obj: ObjectRecord) -> ObjectPayload:
    """The object's profile as a payload shows it (all of it but its redirect)."""
    return ObjectPayload(id=obj.id, type=obj.type, name=obj.name, aliases=obj.aliases,
                         summary=obj.summary, body=obj.body, cues=obj.cues, status=obj.status,
                         state=obj.state, version=obj.version, created_at=obj.created_at,
                         updated_at=obj.updated_at)


def related_objects(conn: sqlite3.Connection, event_id: int, text: str, budget: int,
                    citing: list[str] | None = None,
                    named: list[str] | None = None,
                    space: str | None = None) -> list[ObjectPayload]:
    """Objects already citing the event (`citing`, when the caller has read them), then objects
    whose name or alias occurs in the text (case-insensitive; `named`, when the caller has
    looked them up for this same text), the most specific match first (names.named_objects:
    an alias many objects share comes after a person's own name, so it cannot crowd the person
    out of the RELATED_MAX considered); each taken in that order while it fits `budget` bytes.
    Only objects of the event's own space (`space`, when the caller has read it): the only
    ones the batch may write into."""
    if citing is None:
        citing = event_citers(conn, event_id)
    if named is None:
        named = named_objects(conn, text)
    ids = list(dict.fromkeys([*citing, *named]))[:RELATED_MAX]
    # One read for all candidates (not one per object), then taken in the order above.
    records = object_records(conn, ids, live_only=True)
    if space is None:
        space = event_space(conn, event_id, EVERY_SPACE)
    chosen: list[ObjectPayload] = []
    used = 0
    for object_id in ids:
        record = records.get(object_id)
        if record is None or record.space != space:
            continue
        item = object_payload(record)
        cost = len(json.dumps(item, ensure_ascii=False).encode())
        if used + cost > budget:
            continue
        chosen.append(item)
        used += cost
    return chosen


def claimed_events(conn: sqlite3.Connection) -> set[int]:
    """The events an open batch holds (claimed, maybe waiting out a backoff)."""
    return {r["event_id"] for r in conn.execute(
        "SELECT json_extract(claim, '$.event_id') AS event_id FROM batches"
        " WHERE state = 'claimed' AND json_extract(claim, '$.event_id') IS NOT NULL")}


@dataclass
class PageReads:
    """What next_claim read of the event it claimed, in the claim's transaction (the claim's
    `reads`), for that claim's prompt built right after in the same tick. The event row never
    changes; the rest is what the graph revision the batch is claimed at stands for (a commit is
    refused once the revision moved), so the prompt reads the same as if it read them again.
    The commit always computes its own spans: it is the check, the prompt only informs."""

    event_id: int
    page: tuple[int, int]
    row: StoredEvent  # the event (events never change)
    progress: str | None
    spans: list[Span] | None = None  # its memory-output spans, when computed
    citers: list[str] | None = None  # the objects citing it, when known
    named: list[str] | None = None  # the objects its whole text names, when looked up


@dataclass(frozen=True)
class OrganizeResult:
    """What an organize commit did: the receipt's body."""

    event_id: int
    outcome: Outcome
    page: tuple[int, int]  # the chars read, [start, end)
    changes: WriteSummary

    def to_json(self) -> JsonObject:
        return {"event_id": self.event_id, "outcome": self.outcome, "page": list(self.page),
                **self.changes}


class OrganizeMode(Mode[OrganizeClaim, PageReads, None]):
    """Claims a page of an event; what claiming read of the event (reads) spares the prompt
    reading it again. The commit reuses nothing of the prompt (prepared: None)."""

    name = JobMode.ORGANIZE
    proposal = OrganizeProposal
    claim_type = OrganizeClaim

    def next_claim(self, conn: sqlite3.Connection, job: Job, config: Config,
                   now: datetime) -> Claim[OrganizeClaim, PageReads] | None:
        """The next page of the oldest waiting event no open batch holds (an unread event
        that is wholly memory output is ended here instead, and skipped)."""
        busy = claimed_events(conn)
        for waiting in waiting_events(conn):
            event_id = waiting.event_id
            if event_id in busy:
                continue
            try:
                event = get_event(conn, event_id, EVERY_SPACE)
            except NotFound:  # a queue row without its event is never claimable
                continue
            claimed = PageReads(event_id, (0, 0), event, waiting.progress)
            # Wholly the memory's own output: the engine ends it (archive_only, with a reason
            # saying so) and never shows it to the model as something to learn from.
            if waiting.page_cursor == 0 and not self._unread_settled(conn, claimed, now):
                continue
            page = self._page(event_id, event.text, waiting.page_cursor, event.chars,
                              config.settings.organize.page_chars, config)
            claimed.page = (page.page_start, page.page_end)
            return Claim(page, claimed)
        return None

    @staticmethod
    def _unread_settled(conn: sqlite3.Connection, claimed: PageReads, now: datetime) -> bool:
        """For an unread event: False when it is wholly memory output and now ended (not to
        be claimed); True when it goes to the model, keeping in `claimed` what was read."""
        event_id, event = claimed.event_id, claimed.row
        targets = event_targets(conn, event_id)
        if targets == (0, 0):
            # No targets: no evidence cites it, and (unless its provenance settles it) the
            # span check looks up what its whole text names, which the prompt can reuse.
            claimed.citers = []
            if not is_memory_event(event.source, event.kind):
                claimed.named = named_objects(conn, event.text)
        settled, claimed.spans = settle_memory_output(conn, event_id, targets, now, event,
                                                      claimed.named)
        return not settled

    def _page(self, event_id: int, text: str, start: int, chars: int, page_chars: int,
              config: Config) -> OrganizeClaim:
        budget = config.settings.organize.claim_budget_bytes - PAYLOAD_RESERVE
        floor = config.settings.organize.page_min_chars
        end = min(chars, start + page_chars)
        # Shrink by byte margin: the page alone may use at most half the budget.
        while end - start > floor and len(text[start:end].encode()) > budget // 2:
            end = start + max(floor, (end - start) // 2)
        return OrganizeClaim(event_id, start, end, end - start)

    def shrink(self, claim: OrganizeClaim, config: Config) -> OrganizeClaim:
        """Half the page (not under organize.page_min_chars), from the same start."""
        size = max(config.settings.organize.page_min_chars, claim.page_chars // 2)
        return replace(claim, page_chars=size,
                       page_end=min(claim.page_end, claim.page_start + size))

    def prompt(self, ctx: BatchContext[OrganizeClaim],
               reads: PageReads | None = None) -> Prompt[None]:
        """The page, the event's progress and the related objects (which count as read)."""
        claim = ctx.batch.claim
        claimed = reads if _reads_this_page(reads, claim) else None
        if claimed is not None:
            row, progress = claimed.row, claimed.progress
        else:
            row = get_event(ctx.conn, claim.event_id, EVERY_SPACE)
            progress = queued_progress(ctx.conn, claim.event_id)
        page_text = row.text[claim.page_start: claim.page_end]
        budget = ctx.config.settings.organize.claim_budget_bytes - PAYLOAD_RESERVE - len(
            page_text.encode())
        targets = claimed.citers if claimed is not None else None
        if targets is None:
            targets = event_citers(ctx.conn, row.id)
        # The names the claim looked up in the whole text are the page's when the page is it.
        named = (claimed.named if claimed is not None and len(page_text) == len(row.text)
                 else None)
        related = related_objects(ctx.conn, row.id, page_text, budget, targets, named,
                                  row.space)
        ctx.read_ids.update(o["id"] for o in related)  # sent in the claim = read
        payload: OrganizePayload = {
            "mode": JobMode.ORGANIZE,
            "event": {"id": row.id, "occurred_at": row.occurred_at, "source": row.source,
                      "kind": row.kind, "meta": row.meta, "chars": row.chars},
            "page": {"start": claim.page_start, "end": claim.page_end,
                     "last": claim.page_end >= row.chars, "text": page_text},
            "progress": progress,
            "targets": targets,
            "related": related,
            "scope": ctx.job.scope,
        }
        shown = _memory_output(ctx, claim, claimed.spans if claimed is not None else None,
                               row, targets)
        if shown:  # present only when the page has any
            payload["memory_output"] = shown
        return Prompt([{"role": "system", "content": SYSTEM},
                       {"role": "user", "content": json.dumps(payload, ensure_ascii=False)}])

    def tools(self, ctx: BatchContext[OrganizeClaim]) -> list[Tool]:
        """The browsing tools and commit_organize."""
        conn, event_id = ctx.conn, ctx.batch.claim.event_id

        def seen() -> Spaces:  # the event's space and shared
            return Spaces(event_space(conn, event_id, EVERY_SPACE) or SHARED)

        return [*browse_tools(ctx.conn, ctx.read_ids, seen),
                commit_tool("commit_organize", "Commit objects, relations, evidence, core files "
                            "and the event's disposition in one transaction.", OrganizeProposal)]

    def apply(self, ctx: BatchContext[OrganizeClaim], proposal: BaseModel,
              prepared: None = None) -> OrganizeResult:
        """Validate and write the proposal's graph write and the event's disposition."""
        assert isinstance(proposal, OrganizeProposal)
        claim = ctx.batch.claim
        event_id = claim.event_id
        if len(proposal.events) != 1 or proposal.events[0].event_id != event_id:
            raise FieldError("events", f"missing disposition: give exactly one, for event "
                                       f"{event_id}")
        queued = queued_event(ctx.conn, event_id, EVERY_SPACE)
        if queued is None or queued.state not in (EventState.PENDING, EventState.CONTINUE):
            raise CommitRefused(f"refused: event {event_id} is no longer waiting to be organized")
        write = GraphWrite(proposal.objects, proposal.relations, proposal.evidence,
                           proposal.core_files)
        rules = WriteRules(ctx.read_ids,
                           (event_id, claim.page_start, claim.page_end), JobMode.ORGANIZE,
                           ctx.batch.id, queued.space,
                           batch_events=functools.partial(batch_events, ctx.conn))
        validated = validate_write(ctx.conn, ctx.config, write, rules,
                                   len(proposal.model_dump_json().encode()))
        # Source anti-backflow: the memory's own output in the page is never new evidence.
        check_evidence(proposal.evidence, event_spans(ctx.conn, event_id)[0])
        had_targets = event_targets(ctx.conn, event_id)
        disposition = proposal.events[0]
        limits = ctx.config.settings.organize
        for key, limit in (("progress", limits.progress_max_chars),
                           ("reason", limits.reason_max_chars)):
            if len(getattr(disposition, key) or "") > limit:
                raise FieldError(f"events.0.{key}", f"at most {limit} chars")
            # Progress and reason are stored and shown to later batches: no secret in them.
            check_no_secret(f"events.0.{key}", getattr(disposition, key) or "")
        last = claim.page_end >= queued.chars
        _check_disposition(disposition, last, claim, event_id)
        changes = apply_write(ctx.conn, validated, rules, ctx.now)
        # Raised after the write: the commit's transaction rolls it back with the refusal.
        _check_targets(disposition, last, had_targets, changes, event_id)
        state = disposition.outcome
        record_outcome(ctx.conn, event_id, state, claim.page_end, disposition.progress,
                       disposition.reason, ctx.now)
        return OrganizeResult(event_id, state, (claim.page_start, claim.page_end), changes)

    def on_terminal(self, conn: sqlite3.Connection, batch: Batch[OrganizeClaim],
                    now: datetime) -> None:
        """Only this batch's event becomes blocked; its text and checkpoint stay."""
        block_event(conn, batch.claim.event_id, batch.id, now)


def _reads_this_page(reads: PageReads | None, claim: OrganizeClaim) -> bool:
    """Whether the claim's reads are of exactly this claim (its event and page)."""
    return reads is not None and reads.event_id == claim.event_id and reads.page == (
        claim.page_start, claim.page_end)


def _memory_output(ctx: BatchContext[OrganizeClaim], claim: OrganizeClaim,
                   spans: list[Span] | None, row: StoredEvent,
                   citers: list[str]) -> list[MemorySpan]:
    """The payload's `memory_output`: spans of the page that are memory output and cannot be
    cited. `spans`: the event's, if already computed; else computed from the event's `row` and
    `citers`, which the prompt has just read."""
    if spans is None:
        spans = event_spans(ctx.conn, claim.event_id, row=row, citing=set(citers))[0]
    return page_spans(spans, claim.page_start, claim.page_end)


def event_targets(conn: sqlite3.Connection, event_id: int) -> tuple[int, int]:
    """The durable targets the event already has, as (links, other writes): links are the
    evidence citing it and the core-file versions its committed batches wrote (what `linked`
    needs); other writes are the object versions and relations those batches wrote without
    citing the event. Both forbid `archive_only`: an earlier page may have written a core file
    or an uncited object, and the event is then not free of durable writes."""
    # The receipts of the event's committed batches count what each wrote: found through two
    # indexes (batches by event, receipts by token), never by scanning the version tables.
    row = conn.execute(
        "SELECT COALESCE(SUM(json_extract(r.receipt, '$.core_files')), 0) AS core_files,"
        " COALESCE(SUM(json_extract(r.receipt, '$.objects_changed')"
        "              + json_extract(r.receipt, '$.relations_added')), 0) AS writes"
        " FROM batches b JOIN receipts r ON r.token = json_extract(b.claim, '$.token')"
        " WHERE b.state = 'committed' AND json_extract(b.claim, '$.event_id') = :event",
        {"event": event_id}).fetchone()
    return evidence_count(conn, event_id) + int(row["core_files"]), int(row["writes"])


def _graph_changed(changes: WriteSummary) -> bool:
    """An object, relation or core-file change: what a last-page continue must make (a new
    evidence link alone is no progress on the event)."""
    return bool(changes["objects_changed"] or changes["relations_added"]
                or changes["core_files"])


def _check_disposition(disposition: Disposition, last: bool, claim: OrganizeClaim,
                       event_id: int) -> None:
    """The checks that need no write: progress for continue, no skipped page, a reason."""
    outcome = disposition.outcome
    if outcome == EventState.CONTINUE:
        if not (disposition.progress or "").strip():
            raise FieldError("events.0.progress", "continue needs progress: what is done, what "
                                                  "is next")
        return
    if not last:
        raise FieldError("events.0.outcome", f"event {event_id} has unread text after char "
                                             f"{claim.page_end}: skipping an unread page is "
                                             "refused; use continue")
    if outcome == EventState.ARCHIVE_ONLY and not (disposition.reason or "").strip():
        raise FieldError("events.0.reason", "archive_only needs a reason")


def _check_targets(disposition: Disposition, last: bool, had: tuple[int, int],
                   changes: WriteSummary, event_id: int) -> None:
    """The checks on what the write changed. `linked` needs a link (evidence or a core file);
    `archive_only` is refused once any durable write of the event's batches exists."""
    outcome = disposition.outcome
    links = had[0] + changes["evidence_added"] + changes["core_files"]
    writes = had[1] + changes["objects_changed"] + changes["relations_added"]
    if outcome == EventState.CONTINUE and last and not _graph_changed(changes):
        raise FieldError("events.0.outcome", "continue on the last page must change an object, "
                                             "a relation or a core file (evidence alone is not "
                                             "progress): no empty spinning")
    if outcome == EventState.LINKED and links == 0:
        raise FieldError("events.0.outcome", "linked needs at least one target: cite the event "
                                             "as evidence of an object, or write a core file")
    if outcome == EventState.ARCHIVE_ONLY and links + writes:
        raise FieldError("events.0.outcome", f"event {event_id} already has object targets "
                                             "(evidence, objects, relations or core files "
                                             "written for it); it cannot be archive_only "
                                             "(cite it and use linked)")

