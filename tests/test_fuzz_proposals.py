"""Fuzzing the commit tools of compact, organize and deep with malformed proposals.

Each fuzz test builds a real store once, claims batches through the engine's own claim code and
then, for every generated case, sends the raw arguments text down the path a model's tool call
takes: JSON text -> object -> pydantic -> commit_proposal -> the mode's validation. Every case
must be refused with an error the batch loop handles (FieldError: a correction; BatchFailed:
the batch fails; CommitRefused for a stale revision or a lost lease), or, for a replayed receipt
token, answered with the original receipt; any other exception is a crash. The refusal must be
UTF-8 (it goes back to the model and into the batches table) and the store's content unchanged.
10,000 cases a run (derandomized, so CI is reproducible). The strategies and the mutation
catalogue live in fuzz_strategies.py; `pytest --hypothesis-show-statistics` shows how often each
mutation ran. Also here: the base proposals are valid, malformed proposals through the whole
Worker.tick() path, and a regression test for each bug the fuzz found.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from fuzz_strategies import (
    CATALOGUE,
    Case,
    Scene,
    arbitrary_cases,
    catalogue_for,
    decorated,
    malformed_cases,
    mutated,
)
from helpers import T0
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from memvault import ManualClock, Memory
from memvault.jobs.batch_loop import BatchFailed, FieldError, Tool, _parse_arguments
from memvault.jobs.leases import acquire_lease
from memvault.jobs.mode import BatchContext, CommitRefused, Mode, commit_proposal
from memvault.jobs.records import Batch, Job, get_job, new_batch, pending_batch, reclaim_batch
from memvault.jobs.worker import default_modes
from memvault.store.connection import graph_revision, write
from memvault.timeline.hot import nodes_by_id
from modes_support import add_archived, batch_row, errors_seen, make_worker, put_object
from scripted_provider import call

HOLDER = "fuzz-worker"
MODES: dict[str, Mode] = default_modes()
FUZZ = settings(deadline=None, derandomize=True, database=None, print_blob=False,
                suppress_health_check=list(HealthCheck))
UNIT = "Ursula plans the Atlas launch calendar and reviews every release. "


def text_of(chars: int) -> str:
    return (UNIT * (chars // len(UNIT) + 1))[:chars]


# -- the store's content digest ------------------------------------------------------------------


def fingerprint(conn: sqlite3.Connection, skip: frozenset[str] = frozenset()) -> str:
    """sha256 over every row of every real table (FTS shadow tables included), in table order."""
    digest = hashlib.sha256()
    names = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        " AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name")]
    for name in names:
        if name not in skip:
            rows = conn.execute(f'SELECT * FROM "{name}"').fetchall()
            digest.update(repr((name, [tuple(r) for r in rows])).encode())
    return digest.hexdigest()


# -- claiming and committing through the engine --------------------------------------------------


def claim(mem: Memory, job_id: int) -> tuple[Job, Batch]:
    """The job's next batch, claimed as the worker claims it."""
    now = mem.clock.now()
    with write(mem.conn):
        job = get_job(mem.conn, job_id)
        next_claim = MODES[job.mode].next_claim(mem.conn, job, mem.config, now)
        assert next_claim is not None
        return job, new_batch(mem.conn, job.id, next_claim.fields, now)


def context(mem: Memory, job: Job, batch: Batch, holder: str = HOLDER,
            read_ids: set[str] | None = None) -> BatchContext:
    """A batch context; without `read_ids` the mode's prompt is built (it fills them)."""
    ctx = BatchContext(mem.conn, mem.config, batch, job, holder, mem.clock.now(),
                       read_ids=set(read_ids or ()))
    if read_ids is None:
        MODES[job.mode].prompt(ctx)
    return ctx


def commit_tool(ctx: BatchContext, mem: Memory) -> Tool:
    """The mode's commit tool, its validated proposal committed as the worker commits it (at
    the clock's time)."""
    mode = MODES[ctx.job.mode]
    tool = next(t for t in mode.tools(ctx) if t.terminal)
    return replace(tool, handler=lambda args: commit_proposal(
        ctx, mode, tool.handler(args), now=mem.clock.now()))


def submit(tool: Tool, raw: str) -> Any:
    """What the batch loop does with a tool call's arguments text."""
    return tool.run(_parse_arguments(raw, tool.name))


def commit(mem: Memory, job: Job, batch: Batch, build: Callable[[BatchContext], dict]) -> dict:
    """Commit a valid proposal for `batch` (setup); return its receipt."""
    ctx = context(mem, job, batch)
    receipt = submit(commit_tool(ctx, mem), json.dumps(build(ctx)))
    assert isinstance(receipt, dict) and not receipt.get("replayed"), receipt
    return receipt


# -- scenes: a valid proposal and the facts the mutations need -----------------------------------


def _live_ids(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT id FROM objects WHERE redirect_to IS NULL ORDER BY id")]


def _graph_facts(ctx: BatchContext) -> dict[str, Any]:
    conn, read = ctx.conn, sorted(ctx.read_ids)
    candidates = {r[0] for r in conn.execute(
        "SELECT id FROM objects WHERE type = 'project' AND status = 'candidate'")}
    return {
        "read_ids": tuple(read),
        "unread_ids": tuple(i for i in _live_ids(conn) if i not in ctx.read_ids),
        "merged": tuple(tuple(r) for r in conn.execute(
            "SELECT id, redirect_to FROM objects WHERE redirect_to IS NOT NULL ORDER BY id")),
        "candidate_projects": tuple(i for i in read if i in candidates),
        "other_events": tuple(r[0] for r in conn.execute(
            "SELECT id FROM events WHERE id != ? ORDER BY id",
            (getattr(ctx.batch.claim, "event_id", 0),))),
    }


def compact_scene(ctx: BatchContext) -> Scene:
    claimed = ctx.batch.claim.node_ids
    nodes = nodes_by_id(ctx.conn, claimed)
    every = [r[0] for r in ctx.conn.execute("SELECT id FROM hot_nodes ORDER BY id")]
    return Scene(
        "compact", "compact", {"node_ids": list(claimed), "summary": "the launch talk, in short"},
        claimed_nodes=claimed, foreign_nodes=tuple(i for i in every if i not in claimed),
        claimed_chars=sum(n.chars for n in nodes),
        claimed_tokens=sum(n.est_tokens for n in nodes))


def organize_scene(ctx: BatchContext, name: str) -> Scene:
    claim = ctx.batch.claim
    event_id, start, end = claim.event_id, claim.page_start, claim.page_end
    chars = ctx.conn.execute("SELECT chars FROM events WHERE id = ?", (event_id,)).fetchone()[0]
    targets = ctx.conn.execute("SELECT COUNT(*) FROM evidence WHERE event_id = ?",
                               (event_id,)).fetchone()[0]
    disposition: dict[str, Any] = (
        {"event_id": event_id, "outcome": "linked"} if end >= chars else
        {"event_id": event_id, "outcome": "continue", "progress": f"read to char {end}"})
    base = {
        "objects": [{"id": "person:ursula", "name": "Ursula", "aliases": ["Ursel"],
                     "summary": "Release planner", "body": "Plans the Atlas launch calendar.",
                     "cues": ["who plans launches?"]},
                    {"id": "knowledge:release-rule", "name": "Release rule",
                     "body": "Every release is reviewed."}],
        "relations": [{"src": "person:ursula", "label": "member_of", "dst": "project:atlas"}],
        "evidence": [{"object_id": "person:ursula", "event_id": event_id, "start": start,
                      "end": start + 20}],
        "core_files": [],
        "events": [disposition],
    }
    return Scene(f"organize/{name}", "organize", base, event_id=event_id, page=(start, end),
                 event_chars=chars, has_targets=bool(targets), **_graph_facts(ctx))


def deep_scene(ctx: BatchContext) -> Scene:
    slice_ids = ctx.batch.claim.object_ids
    snapshot = [r[0] for r in ctx.conn.execute(
        "SELECT object_id FROM deep_snapshot WHERE job_id = ? ORDER BY position", (ctx.job.id,))]
    base = {
        "reviewed": list(slice_ids),
        "objects": [{"id": "person:victor", "name": "Victor", "body": "On-call lead for payments.",
                     "cues": ["who is on call?"]}],
        "relations": [{"src": "person:victor", "label": "knows", "dst": "person:ursula"}],
        "merges": [],
        "core_files": [{"name": "AGENTS.md", "content": "Answer briefly."}],
    }
    return Scene("deep", "deep", base, reviewed=slice_ids,
                 outside_slice=tuple(i for i in snapshot if i not in slice_ids),
                 **_graph_facts(ctx))


# -- the prepared stores -------------------------------------------------------------------------
# A setup does what earlier batches of a job would have done and returns the job's id and the
# receipt of its one committed batch; the next claim of the job is the batch to fuzz.


def setup_compact(mem: Memory) -> tuple[int, dict]:
    """20 one-node events; the first 8 already compacted by the job."""
    for i in range(20):
        mem.append_event(f"message {i:02d}: the team met and agreed on the launch date for Atlas")
    job_id = mem.compact()["job_id"]
    job, first = claim(mem, job_id)
    return job_id, commit(mem, job, first, lambda ctx: {"node_ids": list(ctx.batch.claim.node_ids),
                                                        "summary": "eight launch messages"})


def cite_page(ctx: BatchContext) -> dict[str, Any]:
    """Continue, citing the page's first chars for person:ursula."""
    claim = ctx.batch.claim
    return {"evidence": [{"object_id": "person:ursula", "event_id": claim.event_id,
                          "start": claim.page_start, "end": claim.page_start + 10}],
            "events": [{"event_id": claim.event_id, "outcome": "continue",
                        "progress": "page one read"}]}


def setup_organize(mem: Memory) -> tuple[int, dict]:
    """Objects (one unread, one merged, a candidate project), an event still hot and three
    queued events of 20,000, 10,000 and 600 chars; page 1 of the first one organized."""
    put_object(mem, "person:ursula", "Ursula", body="Plans launches.")
    put_object(mem, "project:atlas", "Atlas", status="candidate")
    put_object(mem, "person:quinlan", "Quinlan Zebedee", body="Unrelated.")
    put_object(mem, "person:old", "Old record", redirect_to="person:ursula")
    mem.append_event("a message still on the hot timeline")
    add_archived(mem, text_of(20_000), text_of(10_000), text_of(600))
    job_id = mem.organize(compact_first=False)["job_id"]  # the hot message stays hot
    job, first = claim(mem, job_id)
    return job_id, commit(mem, job, first, cite_page)


def setup_deep(mem: Memory) -> tuple[int, dict]:
    """Ten live objects (plus project:daily and a merged one); the first four reviewed."""
    for i in range(1, 5):
        put_object(mem, f"knowledge:k{i}", f"fact {i}", summary=f"fact number {i}")
    put_object(mem, "person:ursula", "Ursula")
    put_object(mem, "person:victor", "Victor")
    put_object(mem, "project:atlas", "Atlas", status="candidate")
    put_object(mem, "task:t1", "Ship the launch")
    put_object(mem, "todo:d1", "Call the venue")
    put_object(mem, "person:old", "Old record", redirect_to="person:ursula")
    job_id = mem.organize(mode="deep")["job_id"]
    job, first = claim(mem, job_id)
    return job_id, commit(mem, job, first,
                          lambda ctx: {"reviewed": list(ctx.batch.claim.object_ids)})


SETUPS: dict[str, Callable[[Memory], tuple[int, dict]]] = {
    "compact": setup_compact, "organize": setup_organize, "deep": setup_deep}


@dataclass
class Bench:
    """A real store with claimed batches and their commit tools, per scene and context."""

    mem: Memory
    scenes: list[Scene]
    tools: dict[tuple[str, str], Tool]
    replay: dict[str, Any]  # the receipt that the replayed token gives back
    saved: sqlite3.Connection | None = None  # a copy of the store as prepared

    def save(self) -> str:
        """Keep a copy of the store; return its fingerprint."""
        self.saved = sqlite3.connect(":memory:")
        self.mem.conn.backup(self.saved)
        return fingerprint(self.mem.conn)

    def restore(self) -> None:
        """Put the saved copy back (after a case that changed the store, so that the next
        cases, and Hypothesis' shrinking, start from the prepared store again)."""
        assert self.saved is not None
        self.saved.backup(self.mem.conn)

    def close(self) -> None:
        if self.saved is not None:
            self.saved.close()
        self.mem.close()


def variant_tools(mem: Memory, ctx: BatchContext, token: str) -> dict[str, Tool]:
    """The commit tool of the batch as claimed, and under a stale revision, a lost lease and
    a receipt token that was already committed."""
    batch = ctx.batch
    variants = {
        "claimed": (batch, HOLDER),
        "stale_revision": (replace(batch, base_revision=batch.base_revision - 1), HOLDER),
        "lease_lost": (batch, "intruder"),
        "replayed_token": (replace(batch, token=token), HOLDER),
    }
    return {name: commit_tool(context(mem, ctx.job, b, holder, ctx.read_ids), mem)
            for name, (b, holder) in variants.items()}


def make_bench(mem: Memory, receipt: dict,
               claimed: list[tuple[Batch, Callable[[BatchContext], Scene]]]) -> Bench:
    bench = Bench(mem, [], {}, receipt)
    for batch, make_scene in claimed:
        ctx = context(mem, get_job(mem.conn, batch.job_id), batch)
        scene = make_scene(ctx)
        bench.scenes.append(scene)
        for name, tool in variant_tools(mem, ctx, receipt["token"]).items():
            bench.tools[(scene.name, name)] = tool
    return bench


def open_store(home: Path) -> Memory:
    """A new home whose clock stands still and whose lease HOLDER holds for good."""
    mem = Memory.open(home, clock=ManualClock(T0))
    acquire_lease(mem.conn, HOLDER, mem.clock.now(), 10**7)
    return mem


def compact_bench(home: Path) -> Bench:
    mem = open_store(home)
    job_id, receipt = setup_compact(mem)
    return make_bench(mem, receipt, [(claim(mem, job_id)[1], compact_scene)])


def organize_bench(home: Path) -> Bench:
    """Three claimed pages: the middle one of event 2 (cited before), the last one of event 3
    (cited before) and the only one of event 4 (never cited)."""
    mem = open_store(home)
    job_id, receipt = setup_organize(mem)
    _, middle = claim(mem, job_id)
    job, first = claim(mem, job_id)
    commit(mem, job, first, cite_page)
    _, targeted = claim(mem, job_id)
    _, fresh = claim(mem, job_id)
    with write(mem.conn):  # claimed again at the current revision, as a worker re-claims
        batches = [reclaim_batch(mem.conn, b, mem.clock.now()) for b in (middle, targeted, fresh)]
    names = ("middle", "last_targeted", "last_fresh")
    bench = make_bench(mem, receipt, [
        (b, lambda ctx, n=n: organize_scene(ctx, n)) for b, n in zip(batches, names, strict=True)])
    assert [(s.last_page, s.has_targets) for s in bench.scenes] == [
        (False, True), (True, True), (True, False)]
    return bench


def deep_bench(home: Path) -> Bench:
    mem = open_store(home)
    job_id, receipt = setup_deep(mem)
    return make_bench(mem, receipt, [(claim(mem, job_id)[1], deep_scene)])


BENCHES: dict[str, Callable[[Path], Bench]] = {
    "compact": compact_bench, "organize": organize_bench, "deep": deep_bench}


# -- the fuzz ------------------------------------------------------------------------------------


def outcome_of(bench: Bench, case: Case) -> tuple[str, str]:
    """(kind, message) of the engine's answer to the case; any other exception propagates."""
    tool = bench.tools[(case.scene.name, case.context)]
    try:
        result = submit(tool, case.raw)
    except FieldError as exc:
        return "correction", str(exc)
    except CommitRefused as exc:
        return "refused", str(exc)
    except BatchFailed as exc:
        return "malformed", str(exc)
    if result == {**bench.replay, "replayed": True}:
        return "replayed", ""
    return "accepted", json.dumps(result)[:500]


def refusal(bench: Bench, scene_name: str, arguments: dict[str, Any] | str) -> tuple[str, str]:
    """(kind, message) for one proposal (or raw arguments text) to a scene's claimed batch."""
    scene = next(s for s in bench.scenes if s.name == scene_name)
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return outcome_of(bench, Case(scene, "claimed", (), raw))


def sendable(message: str) -> bool:
    """A refusal goes back to the model and into the batches table: it must be UTF-8."""
    try:
        message.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_case(bench: Bench, baseline: str, case: Case, digest: bool) -> None:
    """Submit one case: the answer must be one the case allows, sendable, and the store must
    still match `baseline` (checked by digest when `digest` or when a row was written)."""
    conn = bench.mem.conn
    written = conn.total_changes
    try:
        kind, message = outcome_of(bench, case)
    finally:
        # A row written, even one rolled back since, moves total_changes: then the content
        # digest must prove the store unchanged. A changed store is put back for what follows.
        unchanged = not (digest or conn.total_changes != written) or (
            fingerprint(conn) == baseline)
        if not unchanged:
            bench.restore()
    where = f"{case.scene.name} {case.labels} in context {case.context}"
    assert kind in case.allowed, f"{where}: {kind}: {message}"
    assert sendable(message), f"{where}: the refusal is not UTF-8: {message!r}"
    assert unchanged, f"{where}: the store changed"


def run_fuzz(benches: list[Bench], cases: st.SearchStrategy[Case], examples: int) -> Counter:
    """Check `examples` generated cases against the bench each one's scene belongs to (the
    full digest every 10th case at least); return how often each label ran."""
    by_scene = {s.name: b for b in benches for s in b.scenes}
    baselines = {id(b): b.save() for b in benches}
    ran: Counter = Counter()

    @settings(FUZZ, max_examples=examples)
    @given(cases)
    def check(case: Case) -> None:
        for label in (*case.labels, f"context:{case.context}"):
            event(label)
            ran[label] += 1
        ran["cases"] += 1
        bench = by_scene[case.scene.name]
        check_case(bench, baselines[id(bench)], case, digest=ran["cases"] % 10 == 0)

    check()
    return ran


@pytest.mark.parametrize(("mode", "examples"), [("compact", 3_100), ("organize", 3_100),
                                                ("deep", 3_100)])
def test_malformed_proposals_are_refused_and_change_nothing(
    tmp_path: Path, mode: str, examples: int,
) -> None:
    """Cases from the mutation catalogue, in four commit contexts; every mutation that applies
    to the mode's scenes ran at least 10 times."""
    bench = BENCHES[mode](tmp_path / mode)
    try:
        ran = run_fuzz([bench], malformed_cases(bench.scenes), examples)
    finally:
        bench.close()
    expected = {m.label for s in bench.scenes for m in catalogue_for(s)}
    assert {label: ran[label] for label in expected if ran[label] < 10} == {}


def test_arbitrary_json_arguments_are_refused_and_change_nothing(tmp_path: Path) -> None:
    """Arbitrary JSON (Hypothesis' recursive strategy) as the arguments of every mode's tool."""
    benches = [make(tmp_path / mode) for mode, make in BENCHES.items()]
    scenes = [s for b in benches for s in b.scenes]
    try:
        run_fuzz(benches, arbitrary_cases(scenes), 700)
    finally:
        for bench in benches:
            bench.close()


# -- the catalogue: valid starting points, mutations invalid for the reason they give -------------

SCENES = ("compact", "organize/middle", "organize/last_targeted", "organize/last_fresh", "deep")


def bench_for(tmp_path: Path, scene_name: str) -> tuple[Bench, Scene]:
    bench = BENCHES[scene_name.partition("/")[0]](tmp_path / "store")
    return bench, next(s for s in bench.scenes if s.name == scene_name)


@pytest.mark.parametrize("scene_name", SCENES)
def test_each_base_proposal_commits_even_with_awkward_unicode(tmp_path: Path,
                                                              scene_name: str) -> None:
    """The mutations start from a proposal the engine accepts. RTL marks, combining chars,
    4-byte emoji, ZWJ sequences, BOM and DEL are valid text (NUL and lone surrogates are not),
    so the Unicode noise added to cases never makes them invalid by itself."""
    bench, scene = bench_for(tmp_path, scene_name)
    try:
        proposal = decorated(scene.base)
        revision = graph_revision(bench.mem.conn)
        receipt = submit(bench.tools[(scene_name, "claimed")],
                         json.dumps(proposal, ensure_ascii=False))
        assert receipt["revision"] == revision + 1 and "replayed" not in receipt
        for written in proposal.get("objects", []):
            stored = bench.mem.read_object(written["id"])["object"]
            assert (stored["name"], stored["body"]) == (written["name"], written["body"])
    finally:
        bench.close()


def test_each_mutation_alone_is_a_correction_where_it_says(tmp_path: Path) -> None:
    """Every mutation applies to some scene and, applied alone to a valid proposal (a few
    seeds each), is refused with a correction naming the field its label is about."""
    assert len({m.label for m in CATALOGUE}) == len(CATALOGUE)
    benches = [make(tmp_path / mode) for mode, make in BENCHES.items()]
    applied: set[str] = set()
    for bench in benches:
        for scene in bench.scenes:
            for m in catalogue_for(scene):
                applied.add(m.label)
                for seed in range(4):
                    kind, message = refusal(bench, scene.name, mutated(scene, [m.label], seed))
                    assert kind == "correction", (scene.name, m.label, seed, kind, message)
                    assert message.startswith(m.field), (scene.name, m.label, seed, message)
        bench.close()
    assert applied == {m.label for m in CATALOGUE}


# -- the whole worker path -----------------------------------------------------------------------

BOOKKEEPING = frozenset({"batches", "jobs", "model_calls", "leases"})
TOOLS = {"compact": "commit_compaction", "organize": "commit_organize", "deep": "commit_review"}
SCENE_OF: dict[str, Callable[[BatchContext], Scene]] = {
    "compact": compact_scene, "organize": lambda ctx: organize_scene(ctx, "worker"),
    "deep": deep_scene}
FIELDS = {  # the fields the three corrections named
    "compact": ["node_ids", "summary", "reviewed"],
    "organize": ["events", "relations.1.label", "evidence.1"],
    "deep": ["reviewed", "core_files.1.name", "merges.0.survivor"],
}
JUNK = {  # four mutations per mode: three corrections, and the fourth fails the batch
    "compact": ("node_missing", "summary_blank", "foreign_field", "lone_surrogate"),
    "organize": ("events_missing", "label_typo", "evidence_outside_page", "surrogate_key"),
    "deep": ("reviewed_missing", "soul_from_deep", "merge_unread", "nul_in_text"),
}


def junk_step(mem: Memory, job_id: int, label: str) -> Callable[..., Any]:
    """A model answer: the named mutation of a valid proposal for the batch the worker claimed."""

    def step(messages: Any, tools: Any, max_out: int) -> Any:
        job = get_job(mem.conn, job_id)
        pending = pending_batch(mem.conn, job_id)
        assert pending is not None
        batch = pending.typed(MODES[job.mode].claim_type.from_json)
        scene = SCENE_OF[job.mode](context(mem, job, batch))
        return call(TOOLS[job.mode], json.dumps(mutated(scene, [label])))

    return step


@pytest.mark.parametrize("mode", ["compact", "organize", "deep"])
def test_the_worker_survives_malformed_proposals(tmp_path: Path, mode: str) -> None:
    """Malformed proposals through Worker.tick(): three corrections go back to the model, the
    fourth fails the batch; after the backoff, undecodable arguments fail it again at once.
    The worker never raises, and only the batch/job bookkeeping changes."""
    mem = open_store(tmp_path / "home")
    job_id, _ = SETUPS[mode](mem)
    mem.sync_recall_index()
    before = fingerprint(mem.conn, BOOKKEEPING)
    steps = [junk_step(mem, job_id, label) for label in JUNK[mode]]
    worker, provider = make_worker(mem, [*steps, call(TOOLS[mode], "[" * 100_000)],
                                   holder=HOLDER)

    first = worker.tick()
    assert (first.action, first.job_id) == ("failed", job_id)
    assert "4 invalid proposals" in first.error
    assert [e["field"] for e in errors_seen(provider)] == FIELDS[mode]
    mem.clock.advance(seconds=mem.config["worker.backoff_s"] + 1)
    second = worker.tick()
    assert (second.action, second.batch_id) == ("failed", first.batch_id)
    assert "malformed tool call" in second.error and "RecursionError" in second.error

    row = batch_row(mem.conn, first.batch_id)
    assert (row["state"], row["failures"]) == ("claimed", 2)
    assert fingerprint(mem.conn, BOOKKEEPING) == before
    mem.close()


# -- regressions: what the fuzz found ------------------------------------------------------------


def test_text_sqlite_cannot_keep_is_a_correction(tmp_path: Path) -> None:
    """A lone surrogate (a JSON \\ud800 escape) in any text failed the commit with
    UnicodeEncodeError, a NUL in a core file with InputError; a surrogate in a field name came
    back inside the correction, which the worker then could not store (it raised)."""
    bench = organize_bench(tmp_path / "organize")
    base = bench.scenes[0].base
    ursula = base["objects"][0]
    cases = {
        "objects.0.body": {**base, "objects": [{**ursula, "body": "plans \ud800 launches"}]},
        "objects.0.aliases.0": {**base, "objects": [{**ursula, "aliases": ["\udfff"]}]},
        "events.0.progress": {**base, "events": [{**base["events"][0], "progress": "p\udc80"}]},
        "core_files.0.content": {**base, "core_files": [{"name": "AGENTS.md",
                                                         "content": "a\x00b"}]},
        "objects.0.name": {**base, "objects": [{**ursula, "name": "Ursula\x00"}]},
    }
    before = fingerprint(bench.mem.conn)
    for field, proposal in cases.items():
        assert refusal(bench, "organize/middle", proposal)[0] == "correction"
        assert refusal(bench, "organize/middle", proposal)[1].startswith(f"{field}: ")
    kind, message = refusal(bench, "organize/middle", {**base, "objects\ud800": []})
    assert kind == "correction" and sendable(message)
    assert fingerprint(bench.mem.conn) == before
    bench.close()


def test_a_blank_or_unencodable_compaction_summary_is_a_correction(tmp_path: Path) -> None:
    """A blank summary replaced eight nodes by nothing; a lone surrogate crashed the commit."""
    bench = compact_bench(tmp_path / "compact")
    base = bench.scenes[0].base
    before = fingerprint(bench.mem.conn)
    for summary in (" ", "\n\t\u3000", "short \ud800 summary", "nul\x00"):
        kind, message = refusal(bench, "compact", {**base, "summary": summary})
        assert (kind, message.partition(":")[0]) == ("correction", "summary")
    assert fingerprint(bench.mem.conn) == before
    bench.close()


def test_a_relation_from_a_merged_id_to_its_survivor_is_refused(tmp_path: Path) -> None:
    """person:old was merged into person:ursula: a relation between them was accepted and
    stored as a self-relation of person:ursula."""
    bench = organize_bench(tmp_path / "organize")
    base = bench.scenes[0].base
    for src, dst in (("person:old", "person:ursula"), ("person:ursula", "person:old")):
        relation = {"src": src, "label": "knows", "dst": dst}
        kind, message = refusal(bench, "organize/middle", {**base, "relations": [relation]})
        assert kind == "correction" and "merged into the other" in message
    assert bench.mem.conn.execute(
        "SELECT COUNT(*) FROM relations WHERE src_id = dst_id").fetchone()[0] == 0
    bench.close()


def test_undecodable_arguments_fail_the_batch_cleanly(tmp_path: Path) -> None:
    """json.loads raises ValueError for an int past 4,300 digits and RecursionError for deep
    nesting; both escaped the batch loop's 'malformed tool call' handling."""
    bench = deep_bench(tmp_path / "deep")
    for raw in ('{"reviewed": [' + "9" * 5_000 + "]}", "[" * 100_000, '{"a":' * 50_000):
        kind, message = refusal(bench, "deep", raw)
        assert kind == "malformed" and "malformed tool call commit_review" in message
    bench.close()
