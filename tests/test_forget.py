"""`memvault forget TEXT`: every stored copy of a text goes, and nothing else breaks.

A home is seeded with the text in every place the store keeps text (event text and meta, a
summary head, the queue's progress, objects and their versions, a core file and its history, a
job's scope, a batch's claim and error, a receipt, the usage ledger, vault bookkeeping, the
rendered vault, a conflict copy and the config), then forgotten through the command line.
Afterwards no file under the home holds the text's bytes or its JSON-escaped forms.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import add_evidence, run_cli
from memvault import Memory, NewEvent
from memvault.jobs.leases import acquire_lease, process_holder
from memvault.objects.corefiles import write_core_file
from memvault.recall.index import analyze_tokens, get_stat, units
from memvault.store.connection import write
from vault_support import open_memory, project, put_object

SECRETS = [
    "hunter2-Correct-Horse-9",
    "密码是天王盖地虎宝塔镇河妖",  # non-ASCII: its ensure_ascii JSON form differs
    'pa"ss\\word-42x',  # a quote and a backslash: both JSON forms differ
]
FILLER = "The quick brown fox jumps over the lazy dog. "


def forms(text: str) -> list[bytes]:
    """The byte sequences no file may hold afterwards."""
    return [f.encode("utf-8") for f in
            {text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]}]


def files_with(home: Path, text: str) -> list[str]:
    return [str(p.relative_to(home)) for p in sorted(home.rglob("*"))
            if p.is_file() and not p.is_symlink()
            and any(f in p.read_bytes() for f in forms(text))]


def stored_files(home: Path) -> dict[Path, bytes]:
    """Every file's bytes, but SQLite's -shm index (a read-only open makes one) and an empty
    -wal."""
    return {p: p.read_bytes() for p in home.rglob("*") if p.is_file()
            and not p.name.endswith("-shm") and not (p.name.endswith("-wal")
                                                     and not p.stat().st_size)}


def seed(mem: Memory, text: str) -> dict[str, int]:
    """Put `text` in every place the store keeps text; return the ids the test reads back."""
    conn, now = mem.conn, mem.clock.now()
    start = 7_995  # the text straddles offset 8,000, where the first page ends
    long_text = (FILLER * 178)[:start] + text + FILLER * 20
    long_id, meta_id, plain_id = mem.append_events([
        NewEvent(long_text),
        NewEvent(f"note: {text}", meta={"pasted": text, "nested": [text]}),
        NewEvent("an ordinary line about lunch"),
    ])
    put_object(mem, "person:alice", "Alice", aliases=["alice", text], body=f"key {text}")
    put_object(mem, "person:alice", body=f"key {text} (updated)", summary=f"holds {text}")
    put_object(mem, "person:bob", "Bob", body="Bob is a colleague")
    with write(conn):
        add_evidence(conn, "person:bob", long_id, start - 10, start + len(text) + 10, now)
        write_core_file(conn, "USER.md", f"# User\n\nwifi {text}\n", "api", now)
        write_core_file(conn, "USER.md", f"# User\n\nwifi {text} (v2)\n", "api", now)
        head = conn.execute(
            "INSERT INTO hot_nodes (kind, level, seq, summary, chars, est_tokens, first_at,"
            " last_at, created_at) VALUES ('head', 1, ?, ?, 40, 10, ?, ?, ?) RETURNING id",
            (meta_id, f"summary with {text}", now.isoformat(), now.isoformat(),
             now.isoformat())).fetchone()[0]
        conn.execute("UPDATE hot_nodes SET active = 0, parent_id = ? WHERE event_id = ?",
                     (head, meta_id))
        conn.execute("INSERT INTO archive_queue (event_id, state, progress, enqueued_at,"
                     " updated_at) VALUES (?, 'pending', ?, ?, ?)",
                     (meta_id, f"read so far: {text}", now.isoformat(), now.isoformat()))
    job = mem.organize(scope=f"look for {text}")["job_id"]
    with write(conn):
        batch = conn.execute(
            "INSERT INTO batches (job_id, state, claim, base_revision, claimed_at, error)"
            " VALUES (?, 'committed', ?, 0, ?, ?) RETURNING id",
            (job, json.dumps({"token": "t1", "quote": text}), now.isoformat(),
             f"model said {text}")).fetchone()[0]
        conn.execute("INSERT INTO receipts VALUES ('t1', ?, ?, 0, ?, ?)",
                     (batch, job, json.dumps({"echo": text}, ensure_ascii=False),
                      now.isoformat()))
        conn.execute("INSERT INTO model_calls (provider, model, input_tokens, output_tokens,"
                     " latency_ms, outcome, created_at) VALUES ('x', 'y', 1, 1, 1, ?, ?)",
                     (f"error: {text}", now.isoformat()))
        conn.execute("INSERT INTO vault_reports (path, kind, detail, detected_at, resolved_at)"
                     " VALUES ('USER.md', 'hand_edit', ?, ?, ?)",
                     (f"edit held {text}", now.isoformat(), now.isoformat()))
    project(mem)
    (mem.config.vault_path / "objects" / "old.md.conflict").write_text(f"hand edit {text}")
    with mem.config.config_path.open("a", encoding="utf-8") as out:
        out.write(f"# {text}\n")
    return {"long": long_id, "meta": meta_id, "plain": plain_id, "start": start}


def assert_index_matches_events(conn: sqlite3.Connection) -> None:
    """The recall index's counts are what indexing the events as they are now would give."""
    watermark = get_stat(conn, "events_indexed_to")
    vocab: Counter[str] = Counter()
    units_total = 0
    for (text,) in conn.execute("SELECT text FROM events WHERE id <= ?", (watermark,)):
        vocab.update(analyze_tokens(text)[1])
        units_total += units(text)
    assert dict(conn.execute("SELECT term, docs FROM recall_vocab").fetchall()) == dict(vocab)
    assert get_stat(conn, "events_units") == units_total
    for term in list(vocab)[:50]:  # the FTS5 table answers for what the vocabulary counts
        hits = conn.execute("SELECT count(*) FROM recall_events_fts WHERE recall_events_fts"
                            " MATCH ?", (f'"{term}"',)).fetchone()[0]
        assert hits == vocab[term], term


@pytest.mark.parametrize("text", SECRETS, ids=["ascii", "chinese", "json-escapes"])
def test_forget_leaves_no_copy_in_any_file_and_the_memory_still_holds_together(
    home: Path, runner: CliRunner, text: str,
) -> None:
    with open_memory(home) as mem:
        ids = seed(mem, text)
        before = mem.read_event(ids["long"])
        assert files_with(home, text)  # the seed reached the files
    result = run_cli(runner, "forget", text, "--yes", "--json")
    report = json.loads(result.stdout)
    assert report["occurrences"] >= 15 and report["residue"] == [] and report["check_ok"]
    assert report["objects_marked"] == 1  # person:bob cites the rewritten event
    assert report["left"] == {}  # every table's owner replaced it
    assert text not in result.output
    assert files_with(home, text) == []
    run_cli(runner, "check")
    with Memory.open(home) as mem:
        # recall finds nothing of it; the text kept its length, so pages and spans still fit
        assert mem.find(text)["hits"] == [] or all(
            text not in json.dumps(h, ensure_ascii=False) for h in mem.find(text)["hits"])
        page = mem.read_event(ids["long"])
        assert (page["chars"], page["next_offset"]) == (before["chars"], before["next_offset"])
        rest = mem.read_event(ids["long"], page["next_offset"])
        assert len(page["text"] + rest["text"]) == before["chars"]
        evidence = mem.evidence("person:bob")["items"][0]
        assert evidence["end_char"] - evidence["start_char"] == len(text) + 20
        assert evidence["text"][10:-10] == "X" * len(text)
        assert mem.read_event(ids["plain"])["text"] == "an ordinary line about lunch"
        assert_index_matches_events(mem.conn)
        vocab = {r[0] for r in mem.conn.execute("SELECT term FROM recall_vocab")}
        for token in analyze_tokens(text)[1] - vocab:  # the forgotten text's own tokens
            found = mem.conn.execute("SELECT count(*) FROM recall_events_fts WHERE"
                                     " recall_events_fts MATCH ?", (f'"{token}"',))
            assert found.fetchone()[0] == 0, token
        audit = mem.conn.execute("SELECT * FROM forget_audit").fetchall()
        assert len(audit) == 1 and audit[0]["occurrences"] == report["occurrences"]
        assert text not in json.dumps(dict(audit[0]), ensure_ascii=False)
        bob = (mem.config.vault_path / "objects").rglob("*.md")
        assert all(text not in p.read_text() for p in bob)


def test_the_immutability_trigger_is_back_after_forget(home: Path, runner: CliRunner) -> None:
    with open_memory(home) as mem:
        seed(mem, SECRETS[0])
    run_cli(runner, "forget", SECRETS[0], "--yes")
    with Memory.open(home) as mem, pytest.raises(sqlite3.DatabaseError, match="immutable"):
        mem.conn.execute("UPDATE events SET text = 'x'")


def test_a_dry_run_counts_per_place_and_changes_nothing(home: Path, runner: CliRunner) -> None:
    text = SECRETS[0]
    with open_memory(home) as mem:
        seed(mem, text)
    before = stored_files(home)
    report = json.loads(run_cli(runner, "forget", text, "--dry-run", "--json").stdout)
    assert report["dry_run"] and report["places"]["events.text"] == 2
    assert report["places"]["objects.aliases"] == 1 and report["places"]["core_files.content"] == 2
    assert {"vault/USER.md", "memvault.toml"} <= set(report["files"])
    assert stored_files(home) == before
    text_out = run_cli(runner, "forget", text, "--dry-run").output
    assert "would replace" in text_out and "backups made earlier" in text_out


def test_bad_input_is_refused_and_changes_nothing(home: Path, runner: CliRunner) -> None:
    text = SECRETS[0]
    with open_memory(home) as mem:
        seed(mem, text)
    db = (home / "memory.db").read_bytes()
    short = run_cli(runner, "forget", "12345", "--yes", code=1)
    assert "at least 6" in short.output
    unconfirmed = run_cli(runner, "forget", text, code=1)
    assert "--yes" in unconfirmed.output
    with Memory.open(home) as mem:
        assert acquire_lease(mem.conn, process_holder("worker"), mem.clock.now(), 300)
    held = run_cli(runner, "forget", text, "--yes", code=1)
    assert "holds the lease" in held.output and "nothing was changed" in held.output
    with Memory.open(home) as mem:
        assert mem.conn.execute("SELECT COUNT(*) FROM forget_audit").fetchone()[0] == 0
        assert mem.conn.execute("SELECT COUNT(*) FROM events WHERE instr(text, ?)",
                                (text,)).fetchone()[0] == 2
    assert text.encode() in db


def test_text_can_be_read_from_stdin_and_ids_are_kept(home: Path, runner: CliRunner) -> None:
    with open_memory(home) as mem:
        put_object(mem, "task:deploy-hunter2x", "Deploy", body="uses hunter2x daily")
    result = run_cli(runner, "forget", "-", "--yes", "--json", input="hunter2x\n", code=0)
    report = json.loads(result.stdout)
    assert report["ids_kept"] == ["task:deploy-hunter2x"]
    assert set(report["left"]) >= {"objects.id", "object_versions.object_id"}
    with Memory.open(home) as mem:
        assert mem.read_object("task:deploy-hunter2x")["object"]["body"] == "uses XXXXXXXX daily"


def test_a_migrated_home_forgets_in_the_tables_kept_from_the_original_design(
    tmp_path: Path, runner: CliRunner,
) -> None:
    from legacy_fixture import build_legacy_db, event_text

    home = tmp_path / "old"
    home.mkdir()
    build_legacy_db(home / "memory.db")
    run_cli(runner, "--home", str(home), "migrate")
    text = event_text(3)  # in the old timeline table and in the migrated event
    report = json.loads(run_cli(runner, "--home", str(home), "forget", text, "--yes",
                                "--json").output)
    assert report["places"]["timeline.text"] == 1 and report["places"]["events.text"] == 1
    assert files_with(home, text) == [] and report["check_ok"]


def test_event_keys_are_forgotten_as_the_dry_run_counted_and_stay_unique(
    home: Path, runner: CliRunner,
) -> None:
    """A key holding the text (a client's message id made of it) is a copy like any other:
    the dry run counts it, `--yes` replaces it, and a replaced key that would equal another
    event's key is cleared instead."""
    text = SECRETS[0]
    with open_memory(home) as mem:
        first, second, other = mem.append_events([
            NewEvent("first message", key=f"msg-{text}"),
            NewEvent("second message", key=f"thread-{text}-2"),
            NewEvent("already holds the marker", key="msg-" + "X" * len(text)),
        ])
    dry = json.loads(run_cli(runner, "forget", text, "--dry-run", "--json").stdout)
    assert dry["places"] == {"events.key": 2} and dry["left"] == {}
    done = json.loads(run_cli(runner, "forget", text, "--yes", "--json").stdout)
    assert done["places"] == dry["places"] and done["left"] == {} and done["residue"] == []
    assert done["check_ok"] and files_with(home, text) == []
    with Memory.open(home) as mem:
        keys = dict(mem.conn.execute("SELECT id, key FROM events").fetchall())
    assert keys == {first: None, second: "thread-" + "X" * len(text) + "-2",
                    other: "msg-" + "X" * len(text)}


def test_a_dry_run_names_copies_no_owner_would_replace(home: Path) -> None:
    """What a forget cannot replace is said before anything is written: the dry run reads
    every column, as the check after a forget does."""
    from memvault.home.forget import count_copies

    with open_memory(home) as mem:
        put_object(mem, "task:deploy-hunter2x", "Deploy", body="uses hunter2x daily")
        report = count_copies(mem.conn, "hunter2x")
    assert report.places["objects.body"] == 1
    assert report.left["objects.id"] == 1 and "objects.body" not in report.left


def test_a_copy_in_another_encoding_or_an_export_is_reported_never_rewritten(
    home: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    """A vault file saved as UTF-16 holds the text in bytes a UTF-8 search misses: it is found
    and reported, as Latin-1 is. An export kept inside the home is reported, not rewritten:
    rewritten, its files would no longer match the manifest and restore would refuse it."""
    text = SECRETS[0]
    with open_memory(home) as mem:
        mem.append_event(f"note: {text}")
    run_cli(runner, "export", str(home / "my-export"))
    notes = home / "vault" / "notes"
    notes.mkdir(parents=True, exist_ok=True)
    (notes / "utf16.md").write_bytes(f"saved by Notepad: {text}\n".encode("utf-16"))
    (notes / "latin1.md").write_bytes(f"caf\u00e9 {text}\n".encode("latin-1"))
    exported = (home / "my-export" / "events.jsonl").read_bytes()
    done = json.loads(run_cli(runner, "forget", text, "--yes", "--json", code=1).stdout)
    left = " ".join(done["files_not_text"])
    assert "vault/notes/utf16.md" in left and "vault/notes/latin1.md" in left
    assert "my-export/events.jsonl (a memvault export" in left
    assert set(done["residue"]) == {"vault/notes/utf16.md", "vault/notes/latin1.md",
                                    "my-export/events.jsonl"}
    assert (home / "my-export" / "events.jsonl").read_bytes() == exported
    restored = tmp_path / "restored"
    run_cli(runner, "--home", str(restored), "restore", str(home / "my-export"))


def test_files_are_searched_in_bounded_blocks_and_a_copy_across_two_is_found(
    home: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memvault.home import forget

    monkeypatch.setattr(forget, "SCAN_BLOCK", 64)
    text = SECRETS[0]
    home.mkdir(parents=True, exist_ok=True)
    for offset in range(40, 70):
        path = home / f"note-{offset}.txt"
        path.write_bytes(b"x" * offset + text.encode() + b"y" * 100)
    reads: list[int] = []
    real_read = forget.os.fdopen

    def counting_fdopen(fd: int, mode: str = "rb") -> object:
        stream = real_read(fd, mode)
        original = stream.read
        stream.read = lambda size=-1: reads.append(size) or original(size)  # type: ignore
        return stream

    monkeypatch.setattr(forget.os, "fdopen", counting_fdopen)
    found = forget.files_holding(home, text)
    assert {p.name for p in found} >= {f"note-{o}.txt" for o in range(40, 70)}
    assert reads and max(reads) == 64


def test_estimated_tokens_follow_the_rewritten_text(home: Path, runner: CliRunner) -> None:
    from memvault.base.tokens import estimate_tokens

    text = SECRETS[1]  # Chinese: one token a char, the X's that replace it far fewer
    with open_memory(home) as mem:
        seed(mem, text)
    run_cli(runner, "forget", text, "--yes")
    with Memory.open(home) as mem:
        events = mem.conn.execute("SELECT text, est_tokens FROM events").fetchall()
        assert all(tokens == estimate_tokens(t) for t, tokens in events)
        nodes = mem.conn.execute(
            "SELECT CASE WHEN n.kind = 'raw' THEN substr(e.text, n.start_char + 1,"
            " n.end_char - n.start_char) ELSE n.summary END, n.est_tokens"
            " FROM hot_nodes n LEFT JOIN events e ON e.id = n.event_id").fetchall()
        assert all(tokens == estimate_tokens(t) for t, tokens in nodes)


def test_a_copy_in_the_state_table_is_replaced(home: Path) -> None:
    from memvault.home.forget import forget_in_database
    from memvault.store.connection import set_state

    text = SECRETS[0]
    with open_memory(home) as mem:
        with write(mem.conn):
            set_state(mem.conn, "last_scope", f"looked for {text}")
        report = forget_in_database(mem.conn, text, mem.clock.now(), "test")
        assert report.places == {"state.value": 1}
        value = mem.conn.execute("SELECT value FROM state WHERE key = 'last_scope'").fetchone()
        assert value[0] == "looked for " + "X" * len(text)
