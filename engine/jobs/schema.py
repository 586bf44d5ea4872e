"""The jobs' schema: jobs, their batches and receipts, the worker's lease, the deep review's
snapshot and the model-usage ledger.

`M001_TABLES` is this feature's part of the first schema (m001_initial, run by
home/migrations.py with every feature's part); the later migrations follow, each under the
name a home records it by.
"""

from __future__ import annotations

import sqlite3

from ..store.script import run_script

M001_TABLES = """
        CREATE TABLE jobs (
            id            INTEGER PRIMARY KEY,
            mode          TEXT NOT NULL CHECK (mode IN ('compact', 'organize', 'deep')),
            origin        TEXT NOT NULL CHECK (origin IN ('threshold', 'explicit', 'hourly',
                                                          'nightly')),
            scope         TEXT,
            params        TEXT NOT NULL DEFAULT '{}',
            state         TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'partial',
                                                         'failed', 'cancelled')),
            request_token TEXT UNIQUE,
            local_date    TEXT,                      -- nightly: one per local date
            created_at    TEXT NOT NULL,
            started_at    TEXT,
            last_claim_at TEXT,
            finished_at   TEXT,
            error         TEXT
        );
        CREATE INDEX jobs_state ON jobs (state, last_claim_at);

        CREATE TABLE batches (
            id             INTEGER PRIMARY KEY,
            job_id         INTEGER NOT NULL REFERENCES jobs (id),
            state          TEXT NOT NULL CHECK (state IN ('claimed', 'committed', 'failed',
                                                          'terminal')),
            claim          TEXT NOT NULL,            -- JSON: node ids / event page / object ids
            base_revision  INTEGER NOT NULL,
            failures       INTEGER NOT NULL DEFAULT 0,
            claimed_at     TEXT NOT NULL,
            next_attempt_at TEXT,
            committed_at   TEXT,
            error          TEXT
        );
        CREATE INDEX batches_job ON batches (job_id, state);

        CREATE TABLE deep_snapshot (
            job_id      INTEGER NOT NULL REFERENCES jobs (id),
            position    INTEGER NOT NULL,
            object_id   TEXT    NOT NULL,
            reviewed_at TEXT,
            batch_id    INTEGER REFERENCES batches (id),
            PRIMARY KEY (job_id, position)
        );

        CREATE TABLE leases (
            name        TEXT PRIMARY KEY,              -- 'worker': one valid lease at a time
            holder      TEXT NOT NULL,
            batch_id    INTEGER REFERENCES batches (id),
            acquired_at TEXT NOT NULL,
            expires_us  INTEGER NOT NULL
        );

        CREATE TABLE receipts (
            token      TEXT PRIMARY KEY,
            batch_id   INTEGER NOT NULL REFERENCES batches (id),
            job_id     INTEGER NOT NULL REFERENCES jobs (id),
            revision   INTEGER NOT NULL,
            receipt    TEXT NOT NULL,                  -- JSON returned again on replay
            created_at TEXT NOT NULL
        );

        CREATE TABLE model_calls (
            id            INTEGER PRIMARY KEY,
            job_id        INTEGER REFERENCES jobs (id),
            batch_id      INTEGER REFERENCES batches (id),
            mode          TEXT,
            provider      TEXT NOT NULL,
            model         TEXT NOT NULL,
            input_tokens  INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            estimated     INTEGER NOT NULL DEFAULT 0,  -- 1 when the provider reported none
            latency_ms    INTEGER NOT NULL,
            outcome       TEXT NOT NULL,
            created_at    TEXT NOT NULL
        );
        CREATE INDEX model_calls_time ON model_calls (created_at);
"""


def m006_batch_lookups(conn: sqlite3.Connection) -> None:
    """Indexes for the questions a claim or a commit asks of batches, so none reads them all:
    a job's latest claim, the claims open now, and the batches of one event."""
    run_script(
        conn,
        """
        CREATE INDEX batches_job_latest ON batches (job_id, id);
        CREATE INDEX batches_open ON batches (job_id) WHERE state = 'claimed';
        CREATE INDEX batches_event ON batches (json_extract(claim, '$.event_id'));
        """,
    )


def m011_job_provider(conn: sqlite3.Connection) -> None:
    """Jobs record the provider spec they were queued with (JSON, engine/models/spec.py; NULL:
    queued by an older memvault, run on the worker's default provider)."""
    conn.execute("ALTER TABLE jobs ADD COLUMN provider TEXT")
