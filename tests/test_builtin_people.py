"""The builtin model's people: a first name finds the one person it starts, a self-introduction's
role clause fills the role, the subject of a plan or a fact is a person with a dated line.

Every test runs plain turns through the real flow (compact, then organize with the builtin
provider) and reads what the engine committed.
"""

from __future__ import annotations

import json
import sqlite3

from memvault import Memory
from test_builtin_changes import obj, organize_turns, states
from test_builtin_modes import profile, review


def people(conn: sqlite3.Connection) -> dict[str, sqlite3.Row]:
    return {r["id"]: r for r in conn.execute("SELECT * FROM objects WHERE id LIKE 'person:%'")}


def about(conn: sqlite3.Connection, src: str) -> set[str]:
    return {r[0] for r in conn.execute(
        "SELECT dst_id FROM relations WHERE src_id = ? AND label = 'about'", (src,))}


def role_line(row: sqlite3.Row) -> str:
    return next(line for line in row["body"].splitlines() if line.startswith(("- role:", "- 职责")))


def test_a_first_name_later_is_the_person_with_that_full_name(mem: Memory) -> None:
    organize_turns(mem, [
        "Marcus Lee is our facilities lead; he handles the movers and the lease.",
        "Marcus has worked at Larkspur for six years and prefers email over calls.",
        "Marcus says the movers need the floor plan by January 5.",
    ])
    conn = mem.conn
    assert set(people(conn)) == {"person:marcus-lee"}
    marcus = obj(conn, "person:marcus-lee")
    assert "- 2026-12-04: Marcus has worked at Larkspur for six years and prefers email over " \
           "calls." in marcus["body"].splitlines()
    assert "Marcus" in marcus["aliases"] and marcus["summary"] == "Marcus Lee — facilities lead"
    plan = obj(conn, "schedule:movers-need-the-floor-plan")
    assert about(conn, plan["id"]) == {"person:marcus-lee"}


def test_a_first_name_on_the_same_page_is_the_person_named_there(mem: Memory) -> None:
    organize_turns(mem, ["Marcus Lee is our facilities lead. Marcus prefers email over calls."])
    assert set(people(mem.conn)) == {"person:marcus-lee"}
    assert "Marcus prefers email over calls." in obj(mem.conn, "person:marcus-lee")["body"]


def test_a_first_name_two_people_share_names_neither_and_makes_no_third(mem: Memory) -> None:
    ids = organize_turns(mem, [
        "Marcus Lee is our facilities lead.",
        "Marcus Chen is our CFO.",
        "Marcus has worked here for six years.",
        "Marcus says the movers need the floor plan by January 5.",
    ])
    conn = mem.conn
    assert set(people(conn)) == {"person:marcus-lee", "person:marcus-chen"}
    for row in people(conn).values():
        assert "six years" not in row["body"] and "floor plan" not in row["body"]
    assert about(conn, "schedule:movers-need-the-floor-plan") == set()
    assert states(conn, ids)[2] == "archive_only"
    reason = conn.execute("SELECT reason FROM archive_queue WHERE event_id = ?",
                          (ids[2],)).fetchone()[0]
    assert "Marcus may be any of person:marcus-chen, person:marcus-lee: not guessed" in reason


def test_the_subject_of_a_dated_plan_becomes_a_person_the_plan_is_about(mem: Memory) -> None:
    organize_turns(mem, ["Elena Ruiz joins the team next Monday as network engineer.",
                         "林晓梅下周三来上海参加季度评审。"])
    conn = mem.conn
    elena = obj(conn, "person:elena-ruiz")
    assert role_line(elena) == "- role: network engineer"
    assert "- 2026-12-04: Elena Ruiz joins the team next Monday as network engineer." in \
        elena["body"].splitlines()
    (plan,) = [r[0] for r in conn.execute("SELECT id FROM objects WHERE id LIKE 'schedule:elena%'")]
    assert about(conn, plan) == {"person:elena-ruiz"}
    assert "2026-12-07" in obj(conn, plan)["body"]
    (visit,) = [r[0] for r in conn.execute(
        "SELECT id FROM objects WHERE id LIKE 'schedule:林晓梅%'")]
    assert about(conn, visit) == {"person:林晓梅"}


def test_a_plan_that_names_no_person_makes_no_person(mem: Memory) -> None:
    organize_turns(mem, ["Dentist appointment on 2026-12-09 at 15:00.",
                         "The Larkspur office move is scheduled for 2027-01-14.",
                         "Team Offsite will be held next Monday."])
    assert people(mem.conn) == {}


def test_a_self_introduction_with_a_first_person_role_clause_fills_the_role(mem: Memory) -> None:
    organize_turns(mem, [
        "Hi! I'm Dana Whitfield, I run the ops team at Larkspur.",
        "I'm Priya Nair, and I work as a nurse at the county hospital.",
        "I'm Tom, I lead the data team.",
        "我叫李娜，我是灯塔项目的产品经理。",
        "我是王芳，我负责招聘。",
    ])
    found = people(mem.conn)
    assert role_line(found["person:dana-whitfield"]) == "- role: runs the ops team at Larkspur"
    assert found["person:dana-whitfield"]["summary"] == \
        "Dana Whitfield — runs the ops team at Larkspur"
    assert role_line(found["person:priya-nair"]) == "- role: nurse at the county hospital"
    assert role_line(found["person:tom"]) == "- role: leads the data team"
    assert role_line(found["person:李娜"]) == "- 职责：灯塔项目的产品经理"
    assert role_line(found["person:王芳"]) == "- 职责：负责招聘"


def test_a_first_person_clause_that_is_no_role_leaves_the_role_unknown(mem: Memory) -> None:
    organize_turns(mem, ["I'm Dana Whitfield, I run every morning before work.",
                         "I'm Sam, I run every morning.",
                         "我叫李娜，我是昨天到的。"])
    found = people(mem.conn)
    assert role_line(found["person:dana-whitfield"]) == "- role: unknown"
    assert "person:sam" not in found  # one word and no role: no introduction
    assert role_line(found["person:李娜"]) == "- 职责：未知"


def test_a_fact_about_a_known_chinese_person_is_a_dated_line_of_their_profile(
        mem: Memory) -> None:
    organize_turns(mem, ["刘洋是我们的运维负责人。", "刘洋在公司工作了六年，喜欢用邮件沟通。"])
    row = obj(mem.conn, "person:刘洋")
    assert role_line(row) == "- 职责：运维负责人"
    assert "- 2026-12-04: 刘洋在公司工作了六年，喜欢用邮件沟通。" in row["body"].splitlines()


def test_deep_merges_a_first_name_person_into_the_one_full_name_that_holds_it() -> None:
    lone = profile("person:marcus", "Marcus", "- 2026-12-03: Marcus says the movers…",
                   created_at="2026-12-03T08:30:00+00:00")
    lee = profile("person:marcus-lee", "Marcus Lee", "- role: facilities lead",
                  aliases=["Marcus"], created_at="2026-12-01T09:10:00+00:00")
    args = review([lone], related=[lee])
    assert args["merges"] == [{"loser": "person:marcus", "survivor": "person:marcus-lee"}]


def test_deep_does_not_guess_between_two_people_with_the_same_first_name() -> None:
    lone = profile("person:marcus", "Marcus", "- 2026-12-03: Marcus says the movers…")
    lee = profile("person:marcus-lee", "Marcus Lee", aliases=["Marcus"])
    chen = profile("person:marcus-chen", "Marcus Chen", aliases=["Marcus"])
    assert review([lone, lee, chen])["merges"] == []
    assert review([lone], related=[chen, lee])["merges"] == []


def test_a_chinese_name_and_its_nickname_answer_to_their_pinyin(mem: Memory) -> None:
    """"Lao Zhang" on an English page is the 张伟 who is called 老张, not a second person."""
    organize_turns(mem, ["张伟（大家叫他老张）这次跟我一起做同步这块。",
                         "Lao Zhang says the load test for the sync service is done.",
                         "Zhang Wei has worked on the sync API since October."])
    people = {r[0]: r[1] for r in mem.conn.execute(
        "SELECT id, aliases FROM objects WHERE type = 'person' AND redirect_to IS NULL")}
    assert list(people) == ["person:张伟"]
    assert {"老张", "Zhang Wei", "Lao Zhang"} <= set(json.loads(people["person:张伟"]))
    body = mem.conn.execute("SELECT body FROM objects WHERE id = 'person:张伟'").fetchone()[0]
    assert "load test for the sync service" in body and "sync API since October" in body
