"""What a command that changed the memory says (and does) afterwards.

- `refresh_vault`: when the home has a vault already, render one projection batch (the core
  files and up to vault.objects_per_run changed objects) so it does not stay stale; when it has
  none yet, one line saying how to make it.
- `recognised`: what an organize job made, from counts before and after it: new objects per
  type, events linked to objects, events kept only in the archive.
- `worker_line`: after queueing a job that no worker is running now, how to run it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..jobs.records import JobState
from ..timeline.queue import EventState

if TYPE_CHECKING:
    from ..home.memory import Memory

GUIDE = "docs/builtin-model.md"


def refresh_vault(mem: Memory, first: Sequence[str] = ()) -> dict[str, Any]:
    """Render one projection batch if the vault exists; report what happened either way.
    `first`: objects rendered before the batch, whatever its limit (a correction's).

    Returns {"refreshed": bool, "line": one line for people, plus the run's summary}."""
    path = mem.config.vault_path
    if not path.is_dir():
        return {"refreshed": False, "line": f"vault not written yet: `memvault project-vault "
                                            f"--all` renders it into {path}"}
    from ..vault.projector import ProjectionBusy, render_vault  # the CLI composes the vault

    try:
        result = render_vault(mem.conn, path, all=False, config=mem.config,
                              now=mem.clock.now(), first=first)
    except ProjectionBusy:
        return {"refreshed": False, "line": "vault: another projection is running and will "
                                            "pick the change up (`memvault project-vault`)"}
    summary = result.summary()
    line = f"vault refreshed: {summary['written']} file(s) written"
    if summary["remaining"]:
        line += (f"; {summary['remaining']} object(s) still pending: "
                 "`memvault project-vault --all`")
    if summary["errors"]:
        line += f"; {summary['errors']} failed (see `memvault status`)"
    return {"refreshed": True, "line": line, **summary}


def counts(mem: Memory) -> dict[str, Any]:
    """Events per state and objects per type, the inputs of `recognised` (two counting
    queries: the whole status report would also run quick_check over the database)."""
    from ..home.status import event_counts, object_counts

    return {"events": event_counts(mem.conn),
            "objects": {t: sum(by.values()) for t, by in object_counts(mem.conn).items()}}


def recognised(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What a job changed: new objects per type and events newly linked / archive_only."""
    types = sorted(set(before["objects"]) | set(after["objects"]))
    new = {t: after["objects"].get(t, 0) - before["objects"].get(t, 0) for t in types}
    events = {state: after["events"].get(state, 0) - before["events"].get(state, 0)
              for state in (EventState.LINKED, EventState.ARCHIVE_ONLY, EventState.BLOCKED)}
    return {"new_objects": {t: n for t, n in new.items() if n > 0},
            "events": {k: max(v, 0) for k, v in events.items()}}


def waiting_note(before: dict[str, Any], compacted: dict[str, Any] | None = None) -> str | None:
    """Why an organize job found nothing: its events are still in the hot timeline (it ran
    with --no-compact, or its compaction failed)."""
    ev = before["events"]
    if ev.get("pending", 0) or ev.get("continue", 0) or not ev.get("hot", 0):
        return None
    if compacted is not None and compacted["state"] == JobState.DONE:
        return None
    if compacted is not None:
        return (f"the compaction before it ended {compacted['state']}: {ev['hot']} event(s) "
                "are still in the hot timeline (see the failure above and `memvault status`)")
    return (f"nothing was waiting to be organized: {ev['hot']} event(s) are still in the hot "
            "timeline; `memvault organize` without --no-compact compacts them first (the "
            "worker also does by itself: past compact.threshold_tokens, and each night for "
            "turns older than compact.max_age_hours)")


def compaction_line(compaction: dict[str, Any]) -> str:
    """What the compaction before an organize job did, in one line."""
    before, after = compaction["before"], compaction["after"]
    return (f"compact job {compaction['job_id']}: {compaction['state']}"
            + (f" ({compaction['note']})" if compaction.get("note") else "")
            + f"; hot timeline {before['nodes']} nodes / ~{before['est_tokens']:,} tokens -> "
            f"{after['nodes']} nodes / ~{after['est_tokens']:,} tokens"
            + (" (raw turns folded into summary heads, expandable; their events went to the "
               "organize queue)" if compaction["state"] == JobState.DONE else ""))


def mostly_archived(report: dict[str, Any]) -> bool:
    """True when most events the job finished went to the archive only."""
    ev = report["events"]
    return ev["archive_only"] > 0 and ev["archive_only"] * 2 > ev["archive_only"] + ev["linked"]


def recognised_lines(report: dict[str, Any], provider: str) -> list[str]:
    """`report` for people, with a pointer to a real model when the builtin one saw little."""
    new = report["new_objects"]
    ev = report["events"]
    made = ", ".join(f"{t} {n}" for t, n in new.items()) or "none"
    lines = [f"recognised: new objects: {made}; events linked to objects: {ev['linked']}, "
             f"kept in the archive only: {ev['archive_only']}"
             + (f", blocked: {ev['blocked']}" if ev["blocked"] else "")]
    if provider.startswith("builtin") and mostly_archived(report):
        lines.append(f"the builtin model recognises only explicit patterns ({GUIDE}); for "
                     "natural notes set model.provider = \"openai\" in memvault.toml "
                     "(or pass --model openai:MODEL)")
    return lines


def worker_running(mem: Memory) -> str | None:
    """The live worker that holds the lease now ("host:pid"), or None."""
    from ..jobs.leases import live_lease, parse_holder

    lease = live_lease(mem.conn, mem.clock.now())
    if lease is None:
        return None
    holder = parse_holder(lease["holder"])
    return holder.describe() if holder else lease["holder"]


def worker_line(mem: Memory, job_id: int, command: str = "organize") -> str:
    """After `--no-wait`: who will run the job, or how to run it."""
    who = worker_running(mem)
    if who is not None:
        return f"worker {who} is running batches and will take job {job_id}"
    return (f"no worker is running batches now: job {job_id} waits for `memvault serve` or "
            "`memvault worker` (run `memvault worker --burst` to run it and stop, or "
            f"`memvault {command}` without --no-wait)")
