"""Secret marks (engine/recall/masking.py): the syncs scan each indexed object's fields once and
mark those holding no secret, so a find does not scan them again; a mark is trusted only for
the exact texts and the detector it was made with, so an edit, a forget, a change the index
missed or a new detector never lets a secret through, and an older home is marked after it
upgrades."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import count, run_cli
from memvault import Memory
from memvault.home.migrations import open_home_db
from memvault.recall import masking
from memvault.recall.index import index_lag
from memvault.store.connection import write
from vault_support import open_memory, put_object

TOKEN = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
BODY = "The lighthouse keeper logs the weather. " * 40 + "Tide tables live in the drawer."


def mark_of(mem: Memory, object_id: str) -> bytes | None:
    row = mem.conn.execute("SELECT secret_mark FROM recall_object_keys WHERE object_id = ?",
                           (object_id,)).fetchone()
    return None if row is None else row[0]


def scanned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts masking scans for secrets from now on."""
    texts: list[str] = []
    scan = masking.scan_secrets

    def counting(text: str) -> Any:
        texts.append(text)
        return scan(text)

    monkeypatch.setattr(masking, "scan_secrets", counting)
    return texts


def test_a_marked_object_is_shown_without_scanning_its_fields_again(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_memory(home) as mem:
        put_object(mem, "knowledge:tides", "Tides", summary="where the tide tables are",
                   body=BODY)
        mem.sync_recall_index()
        assert mark_of(mem, "knowledge:tides")  # scanned at the sync, no secret found
        texts = scanned(monkeypatch)
        marked = mem.find("drawer")
        assert "drawer" in marked["hits"][0]["snippet"]
        assert BODY not in texts and "where the tide tables are" not in texts
        with write(mem.conn):
            mem.conn.execute("UPDATE recall_object_keys SET secret_mark = NULL")
        assert mem.find("drawer") == marked  # scanned again, and the same answer
        assert BODY in texts


def test_an_edit_that_adds_a_secret_is_masked_before_and_after_the_next_sync(
    home: Path
) -> None:
    with open_memory(home) as mem:
        put_object(mem, "knowledge:tides", "Tides", body=BODY)
        mem.sync_recall_index()
        clean = mark_of(mem, "knowledge:tides")
        put_object(mem, "knowledge:tides", body=f"{BODY} The drawer token is {TOKEN}")
        for _ in range(2):
            answer = mem.find("drawer")
            text = json.dumps(answer)
            assert answer["hits"] and TOKEN not in text and "[secret: " in text
            mem.sync_recall_index()
        assert mark_of(mem, "knowledge:tides") == b""  # scanned again: holds a secret
        assert clean


def test_a_mark_the_texts_no_longer_match_is_not_trusted(home: Path) -> None:
    with open_memory(home) as mem:
        put_object(mem, "knowledge:tides", "Tides", body=BODY)
        mem.sync_recall_index()
        with write(mem.conn):  # a change the index never heard of: its mark stays
            mem.conn.execute("UPDATE objects SET body = ? WHERE id = 'knowledge:tides'",
                             (f"{BODY} The drawer token is {TOKEN}",))
            mem.conn.execute("DELETE FROM recall_dirty")
        assert mark_of(mem, "knowledge:tides")
        text = json.dumps(mem.find("drawer"))
        assert TOKEN not in text and "[secret: " in text


def test_marks_of_another_detector_are_not_trusted_and_are_made_again(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_memory(home) as mem:
        put_object(mem, "knowledge:tides", "Tides", body=BODY)
        mem.sync_recall_index()
        old = mark_of(mem, "knowledge:tides")
        monkeypatch.setattr(masking, "_rules", lambda: b"a detector with one more rule")
        texts = scanned(monkeypatch)
        mem.find("drawer")
        assert BODY in texts  # the old mark vouches for nothing now
        mem.sync_recall_index()
        new = mark_of(mem, "knowledge:tides")
        assert new and new != old
        texts.clear()
        mem.find("drawer")
        assert BODY not in texts


def test_forget_drops_the_marks_of_the_objects_it_rewrote(
    home: Path, runner: CliRunner
) -> None:
    with open_memory(home) as mem:
        put_object(mem, "knowledge:tides", "Tides", body=f"{BODY} Keeper: Oskar Lindqvist.")
        mem.sync_recall_index()
        before = mark_of(mem, "knowledge:tides")
    run_cli(runner, "forget", "Oskar Lindqvist", "--yes")
    with Memory.open(home) as mem:
        after = mark_of(mem, "knowledge:tides")
        assert before and after != before
        mem.sync_recall_index()
        assert mark_of(mem, "knowledge:tides") not in (None, before)
        assert "Oskar" not in json.dumps(mem.find("drawer"))


def test_a_sync_marks_a_bounded_step_and_the_worker_sees_the_rest_as_work(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(masking, "MARK_STEP", 3)
    with open_memory(home) as mem:
        for i in range(5):
            put_object(mem, f"knowledge:note-{i}", f"Note {i}", body=f"drawer {i}")
        mem.sync_recall_index()
        indexed = count(mem.conn, "recall_object_keys")
        assert indexed >= 5 and index_lag(mem.conn) == (False, indexed - 3)
        while index_lag(mem.conn)[1]:
            mem.sync_recall_index()
            assert index_lag(mem.conn)[1] in (0, indexed - 6)
        mem.sync_recall_index(max_events=None)  # nothing left: nothing scanned
        assert all(mark_of(mem, f"knowledge:note-{i}") for i in range(5))


def test_an_older_home_upgrades_and_its_objects_are_marked_by_the_next_sync(
    home: Path
) -> None:
    with open_memory(home) as mem:
        put_object(mem, "knowledge:tides", "Tides", body=BODY)
        put_object(mem, "knowledge:keys", "Keys", body=f"drawer token {TOKEN}")
        mem.sync_recall_index()
        before = mem.find("drawer")
    conn = open_home_db(home / "memory.db")
    conn.execute("DROP INDEX recall_object_keys_unmarked")
    conn.execute("ALTER TABLE recall_object_keys DROP COLUMN secret_mark")
    conn.execute("DELETE FROM _migrations WHERE name = 'm014_recall_secret_marks'")
    conn.close()
    with open_memory(home) as mem:  # migrates
        assert mark_of(mem, "knowledge:tides") is None
        assert index_lag(mem.conn) == (False, count(mem.conn, "recall_object_keys"))
        assert mem.find("drawer") == before
        mem.sync_recall_index()
        assert index_lag(mem.conn) == (False, 0)
        assert mark_of(mem, "knowledge:tides") and mark_of(mem, "knowledge:keys") == b""
        after = mem.find("drawer")
        assert after == before and TOKEN not in json.dumps(after)


_FINGERPRINT = """
import sys
from pathlib import Path
import memvault.secrets.detector  # the detector as this process runs it
if sys.argv[1] == "upgraded":  # a newer detector installed on disk while the process runs
    Path.read_bytes = lambda self: b"def scan_secrets(text): ...  # one more rule"
from memvault.recall import masking
print(masking._rules().hex())
"""


def test_marks_fingerprint_the_detector_the_process_loaded_not_a_newer_file_on_disk() -> None:
    # a process that loaded the detector before an upgrade must not vouch for its scans with
    # the new detector's fingerprint: a reader running the new one would trust them
    def fingerprint(case: str) -> str:
        done = subprocess.run([sys.executable, "-c", _FINGERPRINT, case], capture_output=True,
                              text=True, timeout=120, check=True)
        return done.stdout.strip()

    assert fingerprint("upgraded") == fingerprint("as loaded")
