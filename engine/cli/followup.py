"""What a command that changed the memory says afterwards, from the library's typed reports
(memvault.home.runs): what an organize job recognised, what its compaction did, what bringing
the vault up to date did, and after queueing a job that no worker runs now, how to run it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..jobs.records import JobState

if TYPE_CHECKING:
    from ..home.memory import Memory
    from ..home.runs import CompactionRun, MemoryCounts, Recognised, VaultRefresh

GUIDE = "docs/builtin-model.md"
# The library's advice names its Python arguments; a person at the command line gets the flag.
_CLI_TERMS = {"retry_blocked=True": "`memvault organize --retry-blocked`"}


def cli_terms(text: str) -> str:
    """`text` (a job's note, a library message) with its Python advice said as commands."""
    for python, command in _CLI_TERMS.items():
        text = text.replace(python, command)
    return text


def vault_line(refresh: VaultRefresh, path: Path) -> str:
    """What bringing the vault up to date did, in one line for people."""
    if not refresh.refreshed and not refresh.busy:
        return f"vault not written yet: `memvault project-vault --all` renders it into {path}"
    if not refresh.refreshed:
        return ("vault: another projection is running and will pick the change up "
                "(`memvault project-vault`)")
    line = f"vault refreshed: {refresh.written} file(s) written"
    if refresh.remaining:
        line += (f"; {refresh.remaining} object(s) still pending: "
                 "`memvault project-vault --all`")
    if refresh.errors:
        line += f"; {refresh.errors} failed (see `memvault status`)"
    return line


def vault_json(refresh: VaultRefresh, path: Path) -> dict[str, Any]:
    """The same as JSON: whether it was refreshed, the line, the last run's summary."""
    return {"refreshed": refresh.refreshed, "line": vault_line(refresh, path), **refresh.summary}


def waiting_note(before: MemoryCounts, compacted: CompactionRun | None = None) -> str | None:
    """Why an organize job found nothing: its events are still in the hot timeline (it ran
    with --no-compact, or its compaction failed)."""
    ev = before.events
    if ev.get("pending", 0) or ev.get("continue", 0) or not ev.get("hot", 0):
        return None
    if compacted is not None and compacted.state == JobState.DONE:
        return None
    if compacted is not None:
        return (f"the compaction before it ended {compacted.state}: {ev['hot']} event(s) "
                "are still in the hot timeline (see the failure above and `memvault status`)")
    return (f"nothing was waiting to be organized: {ev['hot']} event(s) are still in the hot "
            "timeline; `memvault organize` without --no-compact compacts them first (the "
            "worker also does by itself: past compact.threshold_tokens, and each night for "
            "turns older than compact.max_age_hours)")


def compaction_line(compaction: CompactionRun) -> str:
    """What the compaction before an organize job did, in one line."""
    before, after = compaction.before, compaction.after
    return (f"compact job {compaction.job_id}: {compaction.state}"
            + (f" ({cli_terms(compaction.note)})" if compaction.note else "")
            + f"; hot timeline {before.nodes} nodes / ~{before.est_tokens:,} tokens -> "
            f"{after.nodes} nodes / ~{after.est_tokens:,} tokens"
            + (" (raw turns folded into summary heads, expandable; their events went to the "
               "organize queue)" if compaction.state == JobState.DONE else ""))


def mostly_archived(report: Recognised) -> bool:
    """True when most events the job finished went to the archive only."""
    return report.archive_only > 0 and report.archive_only * 2 > (
        report.archive_only + report.linked)


def recognised_lines(report: Recognised, provider: str) -> list[str]:
    """`report` for people, with a pointer to a real model when the builtin one saw little."""
    made = ", ".join(f"{t} {n}" for t, n in report.new_objects.items()) or "none"
    lines = [f"recognised: new objects: {made}; events linked to objects: {report.linked}, "
             f"kept in the archive only: {report.archive_only}"
             + (f", blocked: {report.blocked}" if report.blocked else "")]
    if provider.startswith("builtin") and mostly_archived(report):
        lines.append(f"the builtin model recognises only explicit patterns ({GUIDE}); for "
                     "natural notes set model.provider = \"openai\" in memvault.toml "
                     "(or pass --model openai:MODEL)")
    return lines


def worker_running(mem: Memory) -> str | None:
    """The live worker that holds the lease now ("host:pid"), or None."""
    return mem.worker_holder()


def worker_line(mem: Memory, job_id: int, command: str = "organize") -> str:
    """After `--no-wait`: who will run the job, or how to run it."""
    who = worker_running(mem)
    if who is not None:
        return f"worker {who} is running batches and will take job {job_id}"
    return (f"no worker is running batches now: job {job_id} waits for `memvault serve` or "
            "`memvault worker` (run `memvault worker --burst` to run it and stop, or "
            f"`memvault {command}` without --no-wait)")
