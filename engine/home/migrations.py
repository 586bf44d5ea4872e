"""The one ordered registry of schema migrations, assembled above the features it lists.

Each feature keeps its migrations beside its tables; this module lists them in the order homes
apply them, append-only, each keeping the name a home records it by in `_migrations` (so none
runs twice). It sits in home/ because it imports every feature's schema module, and only a
package above the features may (store/migrations.py runs a registry it is handed). Opening a
home's database goes through `open_home_db`, which hands it this registry.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..jobs import schema as jobs_schema
from ..objects import schema as objects_schema
from ..recall import schema as recall_schema
from ..store import migrations as runner
from ..store.connection import BUSY_TIMEOUT_MS, open_db
from ..store.migrations import M001_STATE, Migration
from ..store.script import run_script
from ..timeline import schema as timeline_schema
from ..vault import schema as vault_schema
from . import schema as home_schema


def m001_initial(conn: sqlite3.Connection) -> None:
    """The first schema, every feature's tables at once: events, the hot timeline and the
    archive queue; objects, relations, evidence and core files; jobs, batches, receipts, the
    lease and the ledger; the vault's projection; the state table."""
    run_script(conn, "\n".join((timeline_schema.M001_TABLES, objects_schema.M001_TABLES,
                                 jobs_schema.M001_TABLES, vault_schema.M001_TABLES, M001_STATE)))


# Every migration of every feature, in the one order homes apply them: append-only, and each
# keeps the name a home records it by in `_migrations` (so none runs twice).
MIGRATIONS: list[Migration] = [
    m001_initial,
    recall_schema.m002_recall_index,
    vault_schema.m003_vault,
    objects_schema.m004_object_names,
    timeline_schema.m005_fragment_index,
    jobs_schema.m006_batch_lookups,
    timeline_schema.m007_event_keys,
    objects_schema.m008_version_origin,
    home_schema.m009_forget_audit,
    recall_schema.m010_recall_date_mentions,
    jobs_schema.m011_job_provider,
    vault_schema.m012_projection_intents,
    recall_schema.m013_recall_objects_vocab,
    recall_schema.m014_recall_secret_marks,
    recall_schema.m015_recall_more_date_forms,
    objects_schema.m016_correction_create,
    recall_schema.m017_recall_fold_every_script,
    objects_schema.m018_object_state,
    timeline_schema.m019_spaces,
    objects_schema.m020_object_spaces,
    timeline_schema.m021_event_moves,
    timeline_schema.m022_event_keys_per_space,
]


def open_home_db(path: str | Path, readonly: bool = False,
                 busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> sqlite3.Connection:
    """A connection to a home's memory.db, migrated to this registry (a read-only one refused
    when it would need a migration): store/connection.py `open_db` with MIGRATIONS."""
    return open_db(path, readonly=readonly, busy_timeout_ms=busy_timeout_ms,
                   migrations=MIGRATIONS)


def apply_migrations(conn: sqlite3.Connection) -> list[str]:
    """Apply every migration of the registry not yet recorded; return their names."""
    return runner.apply_migrations(conn, MIGRATIONS)


def pending_migrations(conn: sqlite3.Connection) -> list[str]:
    """The registry's migrations the database has not had yet."""
    return runner.pending_migrations(conn, MIGRATIONS)

