"""The quiet-time rule: with the service running and nobody asking, the turns that have been on
the hot timeline longer than compact.max_age_hours are compacted before the nightly review,
organized, and reach the vault by morning. Everything on a ManualClock through the worker with
the builtin model; nothing sleeps."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from helpers import count
from memvault import ManualClock, Memory
from memvault.jobs.worker import Worker
from memvault.models.builtin import BuiltinProvider
from memvault.vault.projector import render_vault
from modes_support import open_memory, queue_row, run_until_idle

SHANGHAI = '[time]\ntimezone = "Asia/Shanghai"\n'
CST = timezone(timedelta(hours=8))


def at(day: int, hh: int, mm: int = 0) -> datetime:
    return datetime(2026, 10, day, hh, mm, tzinfo=CST)


def a_day_of_talk(home: Path, toml: str = "") -> tuple[Memory, ManualClock, int, int]:
    """A turn at 01:00 on the 13th and one at 20:00; nothing runs until the night after."""
    clock = ManualClock(at(13, 1))
    mem = open_memory(home, clock, SHANGHAI + toml)
    early = mem.append_event("TODO: call the bank about the mortgage")
    clock.set(at(13, 20))
    late = mem.append_event("TODO: water the plants on Sunday")
    return mem, clock, early, late


def hot_raw_events(mem: Memory) -> list[int]:
    return [r[0] for r in mem.conn.execute(
        "SELECT event_id FROM hot_nodes WHERE active = 1 AND kind = 'raw' ORDER BY id")]


def test_turns_older_than_a_day_become_objects_and_reach_the_vault_by_morning(
    home: Path,
) -> None:
    mem, clock, early, late = a_day_of_talk(home)
    worker = Worker(mem, BuiltinProvider(), holder="w", scheduler=True)
    clock.set(at(14, 2, 50))  # the nightly run; quiet since 20:00
    run_until_idle(worker)
    # 01:00 on the 13th is 25 h 50 min ago: compacted and organized; 20:00 is not a day old.
    assert queue_row(mem.conn, early)["state"] == "linked"
    assert hot_raw_events(mem) == [late] and queue_row(mem.conn, late) == {}
    assert count(mem.conn, "objects", "type = 'todo'") == 1
    jobs = mem.conn.execute("SELECT mode, origin, state FROM jobs ORDER BY id").fetchall()
    assert [tuple(j) for j in jobs] == [("compact", "nightly", "done"),
                                        ("organize", "nightly", "done"),
                                        ("deep", "nightly", "done")]
    vault = home / "vault"
    render_vault(mem.conn, vault, all=False, config=mem.config, now=clock.now())
    todo_files = list((vault / "objects" / "todo").glob("*.md"))
    assert len(todo_files) == 1 and "call the bank" in todo_files[0].read_text()

    # The next night the 20:00 turn is a day old too.
    clock.set(at(15, 2, 50))
    run_until_idle(worker)
    assert queue_row(mem.conn, late)["state"] == "linked" and hot_raw_events(mem) == []
    assert count(mem.conn, "objects", "type = 'todo'") == 2
    mem.close()


def test_the_nightly_review_runs_after_the_nights_organize_job(home: Path) -> None:
    mem, clock, early, _ = a_day_of_talk(home)
    worker = Worker(mem, BuiltinProvider(), holder="w", scheduler=True)
    clock.set(at(14, 2, 50))
    run_until_idle(worker)
    first_claims = dict(mem.conn.execute(
        "SELECT j.mode, MIN(b.id) FROM batches b JOIN jobs j ON j.id = b.job_id GROUP BY 1"))
    last_claims = dict(mem.conn.execute(
        "SELECT j.mode, MAX(b.id) FROM batches b JOIN jobs j ON j.id = b.job_id GROUP BY 1"))
    assert last_claims["compact"] < first_claims["organize"]
    assert last_claims["organize"] < first_claims["deep"]
    # so the review saw the object the night's organize job made
    snapshot = [r[0] for r in mem.conn.execute("SELECT object_id FROM deep_snapshot")]
    assert any(o.startswith("todo:") for o in snapshot)
    mem.close()


def test_a_shorter_max_age_files_the_evenings_talk_the_same_night(home: Path) -> None:
    mem, clock, early, late = a_day_of_talk(home, "[compact]\nmax_age_hours = 6\n")
    worker = Worker(mem, BuiltinProvider(), holder="w", scheduler=True)
    clock.set(at(14, 2, 50))
    run_until_idle(worker)
    assert [queue_row(mem.conn, e)["state"] for e in (early, late)] == ["linked", "linked"]
    assert hot_raw_events(mem) == []
    mem.close()


def test_max_age_zero_turns_the_rule_off(home: Path) -> None:
    mem, clock, early, late = a_day_of_talk(home, "[compact]\nmax_age_hours = 0\n")
    worker = Worker(mem, BuiltinProvider(), holder="w", scheduler=True)
    clock.set(at(14, 2, 50))
    run_until_idle(worker)
    assert hot_raw_events(mem) == [early, late]
    assert count(mem.conn, "jobs", "mode != 'deep'") == 0
    mem.close()


def test_nothing_old_enough_adds_no_job(home: Path) -> None:
    clock = ManualClock(at(14, 1))
    mem = open_memory(home, clock, SHANGHAI)
    mem.append_event("TODO: water the plants on Sunday")
    worker = Worker(mem, BuiltinProvider(), holder="w", scheduler=True)
    clock.set(at(14, 2, 50))
    run_until_idle(worker)
    assert [r[0] for r in mem.conn.execute("SELECT mode FROM jobs")] == ["deep"]
    mem.close()


def test_the_rule_waits_for_quiet_like_the_nightly_run(home: Path) -> None:
    mem, clock, early, _ = a_day_of_talk(home)
    worker = Worker(mem, BuiltinProvider(), holder="w", scheduler=True)
    clock.set(at(14, 2, 48))
    mem.append_event("still awake, chatting")
    clock.set(at(14, 2, 50))
    run_until_idle(worker)
    assert count(mem.conn, "jobs") == 0  # postponed: two quiet minutes only
    clock.set(at(14, 2, 53))
    run_until_idle(worker)
    assert queue_row(mem.conn, early)["state"] == "linked"
    mem.close()


def test_summary_heads_from_earlier_are_left_alone(home: Path) -> None:
    mem, clock, early, late = a_day_of_talk(home)
    mem.compact()  # folded by hand on the 13th: one head over both turns
    worker = Worker(mem, BuiltinProvider(), holder="w", scheduler=False)
    run_until_idle(worker)
    heads = count(mem.conn, "hot_nodes", "kind = 'head'")
    worker = Worker(mem, BuiltinProvider(), holder="w", scheduler=True)
    clock.set(at(14, 2, 50))
    run_until_idle(worker)
    assert count(mem.conn, "hot_nodes", "kind = 'head'") == heads
    assert count(mem.conn, "jobs", "mode = 'compact' AND origin = 'nightly'") == 0
    mem.close()


def test_max_age_hours_is_documented_and_checked(home: Path) -> None:
    import pytest
    from memvault.base.config import default_toml, load_config
    from memvault.base.errors import ConfigError

    assert "# max_age_hours = 24" in default_toml()
    for bad in ("-1", "721", "1.5", "true"):
        (home / "memvault.toml").parent.mkdir(parents=True, exist_ok=True)
        (home / "memvault.toml").write_text(f"[compact]\nmax_age_hours = {bad}\n")
        with pytest.raises(ConfigError, match="compact.max_age_hours"):
            load_config(home)
