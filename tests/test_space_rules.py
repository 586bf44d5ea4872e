"""Rule guards for spaces: each rule below once held in the engine with no test failing when
it broke. Each test was proven by breaking its rule on purpose (the mutant named in its
docstring), seeing the test fail and the rest of the suite pass, and restoring the engine.

- another space's project or object is answered as missing (NotFound), never as an empty
  success, by find's project filter and by evidence
  (mutants: the `_visible_object` checks in recall/query.py `_project_scope` and
  `memory_evidence` asked with EVERY_SPACE instead of the client's spaces);
- evidence is filtered by the cited event's space, so an event `space move` took away leaves
  an object's evidence, and an object moved away leaves an event's `cited_by`
  (mutants: `spaces.sql("+e.space")` in `_evidence_page`, `spaces.sql("+o.space")` in
  `memory_evidence`, each replaced by no condition);
- `import --space` stamps what it imports with that space
  (mutant: `space=memory.spaces.writes` dropped in home/chat_import.py `_store_one`);
- compaction folds one space per run, by the claim alone and by the commit alone
  (mutants: the `row["node_space"] != run_space` test in jobs/modes/compact.py `next_claim`
  made false; the `row["spaces"] > 1` refusal in `_check_still_a_run` made false);
- only the vault's root AGENTS.md, SOUL.md and USER.md are core files: `sub/AGENTS.md` is a
  person's note (mutant: vault/paths.py `is_core_file` matching the last path part);
- a summary head over heads takes the space of all the turns beneath it when one moves
  (mutant: timeline/hot.py `move_event_nodes` walking up to the direct parent only).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_cli
from memvault import Memory, NewEvent
from memvault.base.errors import NotFound
from memvault.base.spaces import SEVERAL, Spaces
from memvault.jobs.mode import CommitRefused
from memvault.jobs.modes.compact import CompactMode, fold_nodes
from memvault.jobs.records import get_job
from memvault.objects.records import ObjectRecord, add_evidence_items, save_object
from memvault.store.connection import write
from memvault.vault.paths import is_core_file
from memvault.vault.watcher import VaultWatcher
from vault_support import project

DATA = Path(__file__).parent / "data"
CHATGPT = Path(__file__).parent / "fixtures" / "chatgpt_conversations.json"


def bound(mem: Memory, space: str) -> Memory:
    return Memory(mem.config, mem.conn, mem.clock, Spaces(space))


def _person(mem: Memory, object_id: str, space: str, cited: tuple[int, ...] = ()) -> None:
    with write(mem.conn):
        now = mem.clock.now()
        save_object(mem.conn, ObjectRecord(id=object_id, type="person", name="Lee",
                                           summary="the reviewer", space=space), now)
        add_evidence_items(mem.conn, [(object_id, event, 0, 3) for event in cited], now)


def _space_of(mem: Memory, node_id: int) -> str:
    return str(mem.conn.execute("SELECT space FROM hot_nodes WHERE id = ?",
                                (node_id,)).fetchone()[0])


# -- missing, not empty ------------------------------------------------------------------------
def test_find_in_another_spaces_project_is_no_such_project(mem: Memory) -> None:
    with write(mem.conn):
        save_object(mem.conn, ObjectRecord(id="project:garden", type="project", name="Garden",
                                           space="home"), mem.clock.now())
    work = bound(mem, "work")
    with pytest.raises(NotFound, match="no object project:garden"):
        work.find("garden", project="project:garden")
    assert bound(mem, "home").find("garden", project="project:garden")["hits"]


def test_evidence_of_another_spaces_object_is_no_such_object(mem: Memory) -> None:
    [cited] = bound(mem, "home").append_events([NewEvent("Lee borrowed the ladder")])
    _person(mem, "person:lee-home", "home", (cited,))
    with pytest.raises(NotFound, match="no object person:lee-home"):
        bound(mem, "work").evidence("person:lee-home")
    assert bound(mem, "home").evidence("person:lee-home")["items"]


# -- evidence follows the cited event's space ---------------------------------------------------
def test_evidence_leaves_out_an_event_moved_into_another_space(mem: Memory) -> None:
    kept, moved = bound(mem, "work").append_events(
        [NewEvent("Lee reviews the design"), NewEvent("Lee's home address")])
    _person(mem, "person:lee-work", "work", (kept, moved))
    work = bound(mem, "work")
    assert [i["event_id"] for i in work.evidence("person:lee-work")["items"]] == [kept, moved]
    mem.move_space(moved, "home")
    answer = work.evidence("person:lee-work")
    assert [i["event_id"] for i in answer["items"]] == [kept]
    assert answer["total_chars"] == 3 and "address" not in json.dumps(answer)


def test_an_events_cited_by_leaves_out_an_object_moved_into_another_space(
        mem: Memory) -> None:
    [cited] = bound(mem, "work").append_events([NewEvent("Lee reviews the design")])
    _person(mem, "person:lee-work", "work", (cited,))
    _person(mem, "person:lee-private", "work", (cited,))
    mem.move_space("person:lee-private", "home")
    cited_by = bound(mem, "work").evidence(f"event:{cited}")["cited_by"]
    assert [c["object_id"] for c in cited_by] == ["person:lee-work"]


# -- import --space -----------------------------------------------------------------------------
@pytest.mark.parametrize(("fmt", "source"), [
    ("chatgpt", CHATGPT),
    ("claude-code", DATA / "transcripts" / "claude-code"),
])
def test_import_with_space_stamps_every_event_with_it(
        home: Path, runner: CliRunner, fmt: str, source: Path) -> None:
    report = json.loads(run_cli(runner, "import", "--space", "work", fmt, str(source),
                                "--json").stdout)
    assert report["events"] > 0
    with Memory.open(home) as mem:
        spaces = [r[0] for r in mem.conn.execute("SELECT space FROM events")]
        assert len(spaces) == report["events"] and set(spaces) == {"work"}
        assert bound(mem, "home").status()["events"]["total"] == 0


# -- compaction: one space per run ---------------------------------------------------------------
def _three_runs(mem: Memory) -> list[int]:
    """Raw nodes of work, home, work (three each); their ids in timeline order."""
    for space in ("work", "home", "work"):
        bound(mem, space).append_events(
            [NewEvent(f"{space} turn {i}: the team met and agreed on the launch date")
             for i in range(3)])
    return [r[0] for r in mem.conn.execute("SELECT id FROM hot_nodes ORDER BY seq")]


def test_a_compaction_claim_stops_where_another_spaces_node_begins(mem: Memory) -> None:
    nodes = _three_runs(mem)
    job = get_job(mem.conn, mem.compact()["job_id"])
    claimed = CompactMode().next_claim(mem.conn, job, mem.config, mem.clock.now())
    assert claimed is not None and list(claimed.fields.node_ids) == nodes[:3]


def test_a_compaction_commit_refuses_nodes_of_two_spaces(mem: Memory) -> None:
    """Whatever the claim held: a run claimed whole in work, of which `space move` took one
    turn into home before the commit, is refused, and so is a run across two spaces."""
    nodes = _three_runs(mem)
    first_run = nodes[:3]
    moved = mem.conn.execute("SELECT event_id FROM hot_nodes WHERE id = ?",
                             (first_run[1],)).fetchone()[0]
    mem.move_space(moved, "home")
    for run in (first_run, nodes[2:4]):
        with pytest.raises(CommitRefused, match="several spaces"), write(mem.conn):
            fold_nodes(mem.conn, run, "s", None, mem.clock.now())
    assert mem.conn.execute("SELECT COUNT(*) FROM hot_nodes WHERE kind = 'head'"
                            ).fetchone()[0] == 0


# -- core files are the vault's root ones ----------------------------------------------------------
def test_an_agents_md_below_the_vault_root_is_no_core_file(mem: Memory, home: Path) -> None:
    mem.write_core_file("AGENTS.md", "# the real one\n")
    project(mem)
    for rel in ("sub/AGENTS.md", "objects/AGENTS.md", "objects/person/USER.md"):
        path = home / "vault" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# a person's own note\n", encoding="utf-8")
        assert not is_core_file(rel)
        assert VaultWatcher.for_config(mem.config).handle(mem.conn, [rel]) == []
    assert is_core_file("AGENTS.md") and is_core_file("USER.md")
    stored = mem.read_core_file("AGENTS.md")
    assert stored is not None and stored["content"] == "# the real one\n"
    assert mem.read_core_file("USER.md") is None


# -- heads over heads follow their turns ---------------------------------------------------------
def test_every_head_above_a_moved_turn_takes_the_space_of_its_turns(mem: Memory) -> None:
    """A head folding a head and a raw turn: moving one turn beneath the inner head makes
    both heads of several spaces (no bound client reads either); once every turn moved, both
    are of the new space."""
    events = bound(mem, "work").append_events(
        [NewEvent(f"work turn {i}: the team met and agreed on the launch date " * 3)
         for i in range(3)])
    raw = [mem.conn.execute("SELECT id FROM hot_nodes WHERE event_id = ?", (e,)).fetchone()[0]
           for e in events]
    with write(mem.conn):
        inner = fold_nodes(mem.conn, raw[:2], "two turns", None, mem.clock.now()).head_id
        outer = fold_nodes(mem.conn, [inner, raw[2]], "three", None, mem.clock.now()).head_id
    mem.move_space(events[0], "home")
    assert (_space_of(mem, inner), _space_of(mem, outer)) == (SEVERAL, SEVERAL)
    assert bound(mem, "work").timeline_view()["nodes"] == []
    mem.move_space(events[1], "home")
    assert (_space_of(mem, inner), _space_of(mem, outer)) == ("home", SEVERAL)
    mem.move_space(events[2], "home")
    assert (_space_of(mem, inner), _space_of(mem, outer)) == ("home", "home")
    assert [n["id"] for n in bound(mem, "home").timeline_view()["nodes"]] == [outer]
