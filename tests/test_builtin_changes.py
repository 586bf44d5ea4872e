"""The builtin model keeps up with change: dated plans, needs, updates, people named in passing.

Every test runs plain turns through the real flow (compact, then organize with the builtin
provider) and reads what the engine committed: the current object, its history line and its
earlier versions, and what memory_find returns first.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import date

from memvault import Memory
from memvault.models.builtin import BuiltinProvider, organize
from memvault.models.builtin.dates import find_dates
from memvault.recall.query import memory_find
from memvault.timeline.events import NewEvent
from modes_support import compact_then_organize


def organize_turns(mem: Memory, turns: list[str], day: str = "2026-12-04",
                   speaker: str | None = None) -> list[int]:
    """Append the turns (one minute apart), compact, organize; the event ids."""
    ids = mem.append_events([NewEvent(text, f"{day}T09:{i:02d}:00Z", "user", "message",
                                      {"speaker": speaker} if speaker else None)
                             for i, text in enumerate(turns)])
    compact_then_organize(mem, BuiltinProvider())
    return ids


def obj(conn: sqlite3.Connection, object_id: str) -> sqlite3.Row:
    row = conn.execute("SELECT * FROM objects WHERE id = ?", (object_id,)).fetchone()
    assert row is not None, f"no {object_id}; have " + ", ".join(
        r[0] for r in conn.execute("SELECT id FROM objects"))
    return row


def versions(conn: sqlite3.Connection, object_id: str) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT body FROM object_versions WHERE object_id = ? ORDER BY version", (object_id,))]


def states(conn: sqlite3.Connection, ids: list[int]) -> list[str]:
    state = dict(conn.execute("SELECT event_id, state FROM archive_queue").fetchall())
    return [state[i] for i in ids]


LARKSPUR = [
    "The Larkspur office move is scheduled for 2027-01-14.",
    "I need to order the badge printer from Camille.",
    "Good morning!",
    "Change of plan: the move is postponed to 2027-01-21.",
    "Done: I ordered the printer.",
]


def test_a_postponed_move_changes_the_current_date_and_keeps_the_old_one_as_history(
        mem: Memory) -> None:
    ids = organize_turns(mem, LARKSPUR)
    conn = mem.conn
    move = obj(conn, "schedule:larkspur-office-move")
    assert "- time rule: 2027-01-21" in move["body"].splitlines()
    assert "2027-01-14 -> 2027-01-21" in move["body"]  # the old value, as history
    assert "2027-01-21" in move["summary"] and "2027-01-14" not in move["summary"].split("(")[0]
    assert any("- time rule: 2027-01-14" in body for body in versions(conn, move["id"]))
    cited = {r[0] for r in conn.execute(
        "SELECT event_id FROM evidence WHERE object_id = ?", (move["id"],))}
    assert cited == {ids[0], ids[3]}
    hits = memory_find(conn, "when is the Larkspur office move", include_events=False)["hits"]
    assert hits[0]["id"] == move["id"]
    assert states(conn, ids) == ["linked", "linked", "archive_only", "linked", "linked"]


def test_a_needed_todo_becomes_done_and_the_person_it_names_is_a_person(mem: Memory) -> None:
    organize_turns(mem, LARKSPUR)
    conn = mem.conn
    todo = obj(conn, "todo:order-the-badge-printer-from-camille")
    assert "- state: done" in todo["body"].splitlines()
    assert any("- state: open" in body for body in versions(conn, todo["id"]))
    camille = obj(conn, "person:camille")
    assert camille["name"] == "Camille"
    assert conn.execute("SELECT 1 FROM relations WHERE src_id = ? AND label = 'about'"
                        " AND dst_id = 'person:camille'", (todo["id"],)).fetchone()


def test_the_same_in_chinese_moved_cancelled_and_done(mem: Memory) -> None:
    ids = organize_turns(mem, [
        "项目评审会定在2027年1月14日。",
        "我要找林晓梅订会议室。",
        "林晓梅下周三来上海。",
        "评审会改到1月21日。",
        "会议室已经订好了。",
        "林晓梅来上海的行程取消了。",
    ])
    conn = mem.conn
    review = obj(conn, "schedule:项目评审会")
    assert "- 时间规则：2027-01-21" in review["body"].splitlines()
    assert "2027-01-14 → 2027-01-21" in review["body"]
    assert any("- 时间规则：2027-01-14" in body for body in versions(conn, review["id"]))
    todo = obj(conn, "todo:找林晓梅订会议室")
    assert "- 状态：done" in todo["body"].splitlines()
    visit = obj(conn, "schedule:林晓梅来上海")
    assert "2026-12-09" in visit["body"]  # 下周三, said on Friday 2026-12-04
    assert "- 状态：已取消" in visit["body"].splitlines() and "- 历史：" in visit["body"]
    assert obj(conn, "person:林晓梅")["name"] == "林晓梅"
    assert conn.execute("SELECT 1 FROM relations WHERE src_id = ? AND label = 'about'"
                        " AND dst_id = 'person:林晓梅'", (visit["id"],)).fetchone()
    hits = memory_find(conn, "评审会", include_events=False)["hits"]
    assert hits[0]["id"] == review["id"]
    assert states(conn, ids) == ["linked"] * 6


def test_a_change_that_names_nothing_known_or_plain_writes_nothing(mem: Memory) -> None:
    ids = organize_turns(mem, ["It's been postponed to 2027-02-03.",
                               "The move will be cancelled, I think.",
                               "Wei Ling cancelled on us."])
    assert mem.conn.execute("SELECT COUNT(*) FROM objects WHERE type = 'schedule'"
                            ).fetchone()[0] == 0
    reasons = [mem.conn.execute("SELECT reason FROM archive_queue WHERE event_id = ?",
                                (i,)).fetchone()[0] or "" for i in ids[:2]]
    assert all("named no schedule or todo" in reason for reason in reasons), reasons


def test_a_change_of_a_plan_not_yet_known_is_kept_as_that_plan(mem: Memory) -> None:
    """Old history arrives in any order: "the dentist visit is postponed" may be organized
    before the plan it changes, which then finds it (objects/latest.py keeps it current)."""
    organize_turns(mem, ["The dentist visit is postponed to 2027-02-03.",
                         "周一的例会取消了。"])
    visit = obj(mem.conn, "schedule:dentist-visit")
    assert (visit["state"], visit["name"]) == ("moved", "dentist visit")
    assert "- time rule: 2027-02-03" in visit["body"].splitlines()
    assert obj(mem.conn, "schedule:周一的例会")["state"] == "cancelled"


def test_a_third_person_fact_is_kept_on_the_persons_profile_and_greetings_are_not(
        mem: Memory) -> None:
    ids = organize_turns(mem, [
        "Hey Audrey! Good to see you! How have you been?",
        "My neighbour said Elena moved to Lisbon last spring.",
        "Thanks, that's so sweet of you!",
    ], speaker="Jon")
    conn = mem.conn
    elena = obj(conn, "person:elena")
    assert "Elena moved to Lisbon last spring." in elena["body"]
    assert conn.execute("SELECT 1 FROM relations WHERE src_id = 'person:elena'"
                        " AND label = 'knows' AND dst_id = 'person:jon'").fetchone()
    assert states(conn, ids) == ["archive_only", "linked", "archive_only"]
    assert conn.execute("SELECT COUNT(*) FROM objects WHERE name = 'Audrey'").fetchone()[0] == 0


def test_dates_are_days_in_both_languages_and_past_days_are_not_plans() -> None:
    friday = date(2026, 12, 4)
    assert [d.day.isoformat() for d in find_dates("moved to Jan 21", friday)] == ["2027-01-21"]
    assert [d.day.isoformat() for d in find_dates("下周三来上海", friday)] == ["2026-12-09"]
    assert [d.day.isoformat() for d in find_dates("改到12月16日", friday)] == ["2026-12-16"]
    assert [d.day.isoformat() for d in find_dates("1月21日见", friday)] == ["2027-01-21"]
    assert find_dates("next month", friday) == []


def _payload(text: str, related: list[dict[str, object]], source: str = "user"
             ) -> dict[str, object]:
    return {"mode": "organize",
            "event": {"id": 9, "occurred_at": "2026-10-25T10:00:00+08:00", "source": source,
                      "kind": "message", "meta": None, "chars": len(text)},
            "page": {"start": 0, "end": len(text), "last": True, "text": text},
            "progress": None, "targets": [], "related": related, "scope": None}


def test_a_change_applies_to_what_its_own_clause_names() -> None:
    rotation = {"id": "schedule:on-call-rotation", "type": "schedule",
                "name": "On-call rotation for the runner fleet", "aliases": ["rotation"],
                "summary": "", "cues": [], "status": "active", "version": 1,
                "body": "- time rule: 2026-10-30\n- item: On-call rotation\n- state: scheduled"}
    text = "The on-call rotation is published, and the SaaS plan is cancelled."
    proposal, _ = organize.build(_payload(text, [rotation]))
    assert proposal["objects"] == []  # the rotation is not cancelled
    assert "named no schedule or todo" in proposal["events"][0]["reason"]


def test_the_agents_words_are_not_the_users_plans() -> None:
    text = "The team offsite is scheduled for 2026-11-20."
    assert organize.build(_payload(text, [], source="agent"))[0]["objects"] == []
    written = organize.build(_payload(text, []))[0]["objects"]
    assert [o["id"] for o in written] == ["schedule:team-offsite"]


def test_impossible_or_odd_dates_are_no_date_and_no_error() -> None:
    friday = date(2026, 12, 4)
    for text in ("Feb 31", "2027-13-45", "2月30日", "99999-01-01", "on Monday", "下下周日",
                 "in 999999999 days", "Jan 1, 99999"):
        for found in find_dates(text, friday):
            assert found.day.year >= 1
    assert find_dates("2月30日", friday) == []
    assert find_dates("on Monday", None) == []  # relative, and no day said: no date


def test_a_bare_month_day_counts_after_a_move() -> None:
    review = {"id": "schedule:design-review", "type": "schedule", "name": "design review",
              "aliases": ["review"], "summary": "", "cues": [], "status": "active",
              "version": 1, "body": "- time rule: 2026-12-09\n- item: design review\n"
                                    "- state: scheduled (one-off)"}
    proposal, _ = organize.build(_payload("The design review moved to 12-16.", [review]))
    body = proposal["objects"][0]["body"]
    assert "- time rule: 2026-12-16" in body and "2026-12-09 -> 2026-12-16" in body
    assert find_dates("we won 3-2 on 12-16", date(2026, 12, 4)) == []  # not without a move


def test_a_name_that_carries_the_old_day_says_the_new_one() -> None:
    dentist = {"id": "schedule:看牙医-10月20日", "type": "schedule", "name": "看牙医 10月20日",
               "aliases": ["看牙医"], "summary": "", "cues": [], "status": "active",
               "version": 1, "body": "- 时间规则：10月20日下午3点\n- 事项：看牙医\n"
                                     "- 状态：已安排（一次）"}
    proposal, _ = organize.build(_payload("看牙医改到10月27日。", [dentist]))
    moved = proposal["objects"][0]
    assert moved["id"] == dentist["id"] and moved["name"] == "看牙医 2026-10-27"
    assert "- 时间规则：2026-10-27" in moved["body"] and "10月20日下午3点 → 2026-10-27" in moved[
        "body"]


def test_the_engine_takes_the_renamed_schedule_and_recall_finds_the_new_day(
        mem: Memory) -> None:
    ids = organize_turns(mem, ["Dentist appointment on 2027-01-14 at 10:00.",
                               "The dentist appointment is postponed to 2027-01-21."])
    conn = mem.conn
    assert states(conn, ids) == ["linked", "linked"]
    row = obj(conn, "schedule:dentist-appointment-2027-01-14")  # the id is stable
    assert row["name"] == "Dentist appointment 2027-01-21"
    hits = memory_find(conn, "dentist appointment", include_events=False)["hits"]
    assert hits[0]["id"] == row["id"] and "2027-01-21" in hits[0]["name"]


def test_a_moved_schedules_cues_follow_the_new_day(mem: Memory) -> None:
    organize_turns(mem, ["The Larkspur office move is scheduled for 2027-01-14.",
                         "Change of plan: the move is postponed to 2027-01-21."])
    cues = obj(mem.conn, "schedule:larkspur-office-move")["cues"]
    assert "2027-01-21" in cues and "2027-01-14" not in cues


def test_a_moved_chinese_meetings_cues_follow_the_new_day(mem: Memory) -> None:
    organize_turns(mem, ["季度评审会议定在12月10日。", "会议改到12月16日了。"], day="2026-12-02")
    row = mem.conn.execute("SELECT cues, body FROM objects WHERE type = 'schedule'").fetchone()
    assert "2026-12-16" in row["cues"] and "12-10" not in row["cues"]
    assert "2026-12-10" in row["body"]  # the old day stays as history, not as a cue


def test_a_plan_someone_reported_is_named_by_the_plan_not_the_report(mem: Memory) -> None:
    organize_turns(mem, ["Marcus Lee is our facilities lead.",
                         "Marcus says the movers need the floor plan by January 5."])
    (row,) = mem.conn.execute("SELECT id, name FROM objects WHERE type = 'schedule'")
    assert row["name"] == "movers need the floor plan"
    assert "person:marcus-lee" in about(mem.conn, row["id"])  # still about who said it


def test_a_chinese_plan_someone_reported_is_named_by_the_plan(mem: Memory) -> None:
    organize_turns(mem, ["林晓梅说季度评审会议定在12月10日。"], day="2026-12-02")
    (row,) = mem.conn.execute("SELECT name, body FROM objects WHERE type = 'schedule'")
    assert row["name"] == "季度评审会议" and "2026-12-10" in row["body"]


def about(conn: sqlite3.Connection, src: str) -> set[str]:
    return {r[0] for r in conn.execute(
        "SELECT dst_id FROM relations WHERE src_id = ? AND label = 'about'", (src,))}


def test_a_plan_said_again_for_the_same_day_is_one_schedule(mem: Memory) -> None:
    organize_turns(mem, ["The Larkspur office move is scheduled for 2027-01-14.",
                         "Dentist appointment on 2026-12-09 at 15:00.",
                         "Our office move is on January 14.",
                         "Reminder: the dentist appointment is on Dec 9.",
                         "The board meeting is on January 14."], day="2026-12-01")
    names = sorted(r[0] for r in mem.conn.execute(
        "SELECT name FROM objects WHERE type = 'schedule'"))
    # the same day and the same event words: one object; another event that day: its own
    assert names == ["Dentist appointment 2026-12-09", "Larkspur office move", "board meeting"]


def test_a_chinese_plan_said_again_for_the_same_day_is_one_schedule(mem: Memory) -> None:
    ids = organize_turns(mem, ["季度评审会议定在12月10日。", "别忘了12月10日的季度评审会议。"],
                         day="2026-12-01")
    (row,) = mem.conn.execute("SELECT id FROM objects WHERE type = 'schedule'")
    cited = {r[0] for r in mem.conn.execute(
        "SELECT event_id FROM evidence WHERE object_id = ?", (row["id"],))}
    assert cited == set(ids)


def test_a_cancellation_asked_for_or_told_in_the_first_person_names_what_follows_it(
        mem: Memory) -> None:
    """"Cancel the X", "We called off the X", "取消周五的X": the object is after the verb."""
    organize_turns(mem, [
        "The quarterly planning day is on 2027-01-14 at 10:00.",
        "The board dinner is on 2027-01-20 at 19:00.",
        "项目复盘会定在2027年1月22日下午三点。",
        "The supplier visit is on 2027-01-26 at 11:00.",
    ])
    organize_turns(mem, [
        "Please cancel the quarterly planning day, the budget got cut.",
        "We called off the board dinner.",
        "取消项目复盘会吧，大家都出差。",
    ], day="2026-12-05")
    state = dict(mem.conn.execute("SELECT id, state FROM objects WHERE type = 'schedule'"))
    assert state == {"schedule:quarterly-planning-day-2027-01-14": "cancelled",
                     "schedule:board-dinner-2027-01-20": "cancelled",
                     "schedule:项目复盘会-2027年1月22日": "cancelled",
                     "schedule:supplier-visit-2027-01-26": "scheduled"}


def test_a_chinese_note_that_starts_with_its_day_and_time_is_a_plan_named_by_the_rest(
        mem: Memory) -> None:
    """"下周二上午十点面试": the day, then the clock, then a bare event noun or verb."""
    organize_turns(mem, ["下周二上午十点面试", "这周六晚上七点部门聚餐", "下礼拜四下午开家长会",
                         "明天下午帮我查一下天气"])
    rules = dict(mem.conn.execute("SELECT name, body FROM objects WHERE type = 'schedule'"))
    assert set(rules) == {"面试", "部门聚餐", "开家长会"}
    assert "2026-12-08" in rules["面试"] and "2026-12-05" in rules["部门聚餐"]
    assert "2026-12-10" in rules["开家长会"]


def test_a_chinese_note_of_a_need_without_its_subject_is_a_todo_and_its_done_closes_it(
        mem: Memory) -> None:
    organize_turns(mem, ["要去银行办信用卡", "得把季度报表交给财务", "要是下雨就不去了"])
    todos = dict(mem.conn.execute("SELECT name, state FROM objects WHERE type = 'todo'"))
    assert set(todos) == {"去银行办信用卡", "把季度报表交给财务"}, todos  # 要是: an "if"
    organize_turns(mem, ["信用卡办好了"], day="2026-12-05")
    assert mem.conn.execute("SELECT state FROM objects WHERE name = '去银行办信用卡'"
                            ).fetchone()[0] == "done"


def test_a_todo_answers_to_the_head_of_its_first_clause_so_its_done_marker_finds_it(
        mem: Memory) -> None:
    """"renew my indemnity insurance this month, it lapses on the 30th" answers to
    "indemnity insurance", not to "it lapses": the later "indemnity insurance is renewed"
    closes it."""
    organize_turns(mem, ["I need to renew my indemnity insurance this month, it lapses on the "
                         "30th"])
    organize_turns(mem, ["right, indemnity insurance is renewed, one thing off the list"],
                   day="2026-12-05")
    [(aliases, state)] = mem.conn.execute(
        "SELECT aliases, state FROM objects WHERE type = 'todo'").fetchall()
    assert "indemnity insurance" in json.loads(aliases) and state == "done"


def test_a_plan_to_cancel_something_is_not_cancelled_by_news_that_it_will_be(
        mem: Memory) -> None:
    """"Cancel the SaaS overage plan — Tom, Jan 15" is an act; "the SaaS overage plan will be
    cancelled on Jan 15" says the act stands, it does not cancel it."""
    organize_turns(mem, ["Follow-ups (owner, due): 1) Cancel the SaaS overage plan — Tom, "
                         "2027-01-15."])
    organize_turns(mem, ["Saved: the SaaS overage plan will be cancelled on Jan 15."],
                   day="2026-12-05")
    [(name, state)] = mem.conn.execute(
        "SELECT name, state FROM objects WHERE type = 'schedule'").fetchall()
    assert name.startswith("Cancel the SaaS overage plan") and state == "scheduled"
