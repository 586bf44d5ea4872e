"""The state enums name exactly the states the schema lets a row hold, so engine code comparing
or writing `JobState.DONE`, `EventState.LINKED`, … speaks the stored values and nothing else."""

from __future__ import annotations

import json
import re
import sqlite3
from enum import StrEnum
from pathlib import Path

import pytest
from memvault import Memory
from memvault.home.migrations import open_home_db
from memvault.jobs.claims import DeepClaim
from memvault.jobs.records import (
    BatchState,
    JobState,
    get_batch,
    get_job,
    new_batch,
    pending_batch,
    rotation_with_pending,
)
from memvault.objects.ids import ObjectStatus
from memvault.store.connection import write
from memvault.timeline.queue import EVENT_STATES, EventState


def allowed(conn: sqlite3.Connection, table: str, column: str) -> set[str]:
    """The values `table.column`'s CHECK (column IN (...)) allows, read from the schema."""
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    found = re.search(rf"\b{column}\b[^,]*?CHECK \({column} IN \(([^)]*)\)\)", sql, re.S)
    assert found, f"no CHECK on {table}.{column}"
    return set(re.findall(r"'([^']*)'", found[1]))


# The schema also allows a 'cancelled' job and a 'failed' batch, which no code writes.
@pytest.mark.parametrize(("enum", "table", "column", "unused"), [
    (JobState, "jobs", "state", {"cancelled"}),
    (BatchState, "batches", "state", {"failed"}),
    (EventState, "archive_queue", "state", set()),
    (ObjectStatus, "objects", "status", set()),
])
def test_each_state_enum_names_the_states_its_column_allows(
    tmp_path: Path, enum: type[StrEnum], table: str, column: str, unused: set[str],
) -> None:
    conn = open_home_db(tmp_path / "memory.db")
    try:
        assert {state.value for state in enum} == allowed(conn, table, column) - unused
    finally:
        conn.close()


def test_a_state_is_its_stored_string() -> None:
    # StrEnum: equal to, hashed as and formatted as the text SQLite stores.
    assert EventState.ARCHIVE_ONLY == "archive_only" and f"{JobState.DONE}" == "done"
    assert {"linked": 1}[EventState.LINKED] == 1
    assert EVENT_STATES == ("pending", "continue", "linked", "archive_only", "blocked")
    assert all(type(state) is str for state in EVENT_STATES)  # plain keys in status output


def test_jobs_and_batches_read_back_with_their_state_members(mem: Memory) -> None:
    """Every way a job or batch is read gives the enum member, and the JSON a receipt sends
    still says the plain stored string."""
    now = mem.clock.now()
    receipt = mem.organize("deep", compact_first=False)
    assert json.loads(json.dumps(receipt))["state"] == "queued"
    with write(mem.conn):
        batch = new_batch(mem.conn, receipt["job_id"], DeepClaim((0,), ()), now)
    job = get_job(mem.conn, receipt["job_id"])
    assert type(job.state) is JobState and job.state is JobState.RUNNING  # claimed
    rotated = {j.id: (j, pending) for j, pending in rotation_with_pending(mem.conn, now)}
    assert type(rotated[job.id][0].state) is JobState
    for read in (batch, get_batch(mem.conn, batch.id), pending_batch(mem.conn, job.id),
                 rotated[job.id][1]):
        assert read is not None
        assert type(read.state) is BatchState and read.state is BatchState.CLAIMED
