"""The builtin model files other people's words on the right object, or on none.

Plain turns go through the real flow (compact, then organize with the builtin provider); the
tests read the objects the engine committed.
"""

from __future__ import annotations

import sqlite3

from memvault import Memory
from memvault.models.builtin import BuiltinProvider
from memvault.timeline.events import NewEvent
from modes_support import compact_then_organize


def organize_turns(mem: Memory, turns: list[tuple[str, str]], day: str = "2026-12-01") -> None:
    """Append (source, text) turns one minute apart, compact, organize."""
    mem.append_events([NewEvent(text, f"{day}T09:{i:02d}:00Z", source, "message", None)
                       for i, (source, text) in enumerate(turns)])
    compact_then_organize(mem, BuiltinProvider())


def rows(conn: sqlite3.Connection, type_: str) -> list[sqlite3.Row]:
    return list(conn.execute("SELECT * FROM objects WHERE type = ? ORDER BY id", (type_,)))


def test_a_move_that_names_the_thing_of_an_appointment_moves_it(mem: Memory) -> None:
    organize_turns(mem, [("user", "Dentist appointment Tuesday 15 December at 16:10."),
                         ("user", "Dentist moved to Thursday 17 December, same time.")])
    (visit,) = rows(mem.conn, "schedule")
    assert "2026-12-17" in visit["body"] and visit["state"] == "moved"
    assert [r["name"] for r in rows(mem.conn, "person")] == []  # "Dentist" is no one


def test_a_note_that_drops_its_verb_names_the_event_and_its_cancellation_finds_it(
        mem: Memory) -> None:
    organize_turns(mem, [("user", "Ward Christmas night out booked for 19/12 at the Cosy Club."),
                         ("user", "Dental check-up on 2026-12-18 at 10:00."),
                         ("user", "Christmas night out is cancelled, half the ward is on shift.")])
    plans = {r["name"]: r["state"] for r in rows(mem.conn, "schedule")}
    assert plans["Ward Christmas night out"] == "cancelled"
    assert [s for n, s in plans.items() if n != "Ward Christmas night out"] == ["scheduled"]


def test_two_plans_joined_in_one_sentence_keep_their_own_words(mem: Memory) -> None:
    organize_turns(mem, [("user", "Cian's booster on 14 December at 4pm, and a dental check-up "
                                  "for Aoife on 16 December at 10:00.")])
    plans = {r["name"]: r["body"] for r in rows(mem.conn, "schedule")}
    booster = next(body for name, body in plans.items() if "booster" in name)
    assert "Aoife" not in booster and "check-up" not in booster
    assert any("check-up" in name for name in plans)


def test_a_cancellation_naming_only_a_day_cancels_no_plan(mem: Memory) -> None:
    organize_turns(mem, [("user", "I'm going to meet the accountant on Thursday.")],
                   day="2026-12-07")
    organize_turns(mem, [("user", "Sadly Thursday is cancelled.")], day="2026-12-08")
    assert {r["state"] for r in rows(mem.conn, "schedule")} == {"scheduled"}


def test_a_change_naming_two_plans_equally_changes_neither(mem: Memory) -> None:
    organize_turns(mem, [("user", "Budget review with Maya on 2026-12-10 at 10:00."),
                         ("user", "Budget review with Omar on 2026-12-11 at 10:00.")])
    organize_turns(mem, [("user", "The budget review is cancelled.")], day="2026-12-02")
    assert {r["state"] for r in rows(mem.conn, "schedule")} == {"scheduled"}


def test_a_day_put_instead_of_another_moves_the_plan_said_with_its_day(mem: Memory) -> None:
    organize_turns(mem, [("user", "Parent-teacher meeting with Mrs. Okafor on Tuesday 8 December "
                                  "at 3:10pm.")])
    (meeting,) = rows(mem.conn, "schedule")
    assert "- time rule: 2026-12-08 (Tuesday 8 December at 3:10pm" in meeting["body"]
    organize_turns(mem, [("user", "Mrs. Okafor asked could we have the meeting the Wednesday "
                                  "instead of the Tuesday, same time.")], day="2026-12-03")
    (meeting,) = rows(mem.conn, "schedule")
    assert "- time rule: 2026-12-09" in meeting["body"] and meeting["state"] == "moved"


def people(conn: sqlite3.Connection) -> dict[str, str]:
    """Each person's name and summary."""
    return {r["name"]: r["summary"] for r in rows(conn, "person")}


def test_roles_said_as_a_note_a_work_verb_a_team_or_a_title(mem: Memory) -> None:
    organize_turns(mem, [
        ("user", "new notes. ppl:\n- Priya Nair — ops mgr, started Mon\n- Tom Brandt, forklift "
                 "lead\n- Kev drives the 2nd shift truck"),
        ("user", "Dr. Rhys Evans — respiratory consultant, does the Tuesday ward round."),
        ("user", "Carlos Reyes owns the payments gateway. Femi Adeyemi from security reviews "
                 "anything with card data."),
        ("user", "社区医院的李建华医生说我血压有点高。"),
        ("user", "女儿周晓雯在深圳工作，她是个律师。"),
        ("user", "陈静负责财务。"),
        ("user", "Mum (Grace) in for her hip replacement on 15/12."),
        ("user", "New registrar Tariq Hussain starts a placement with me on Monday.")])
    said = people(mem.conn)
    assert said["Priya Nair"].endswith("ops mgr") and said["Tom Brandt"].endswith("forklift lead")
    assert said["Kev"].endswith("drives the 2nd shift truck")
    assert said["Rhys Evans"].endswith("respiratory consultant")  # "Dr." is no part of it
    assert said["Carlos Reyes"].endswith("owns the payments gateway")
    assert said["Femi Adeyemi"].endswith("from security")
    assert said["李建华"].endswith("医生") and said["周晓雯"].endswith("女儿; 律师")
    assert said["陈静"].endswith("负责财务")
    assert said["Grace"].endswith("mum") and said["Tariq Hussain"].endswith("registrar")
    assert not [n for n in said if n.startswith("Dr") or n.endswith("医生")]


def test_a_person_whose_role_comes_later_reads_it_in_the_summary(mem: Memory) -> None:
    organize_turns(mem, [("user", "I had lunch with Chen Hao (陈浩) today.")])
    organize_turns(mem, [("user", "Chen Hao is the art director.")], day="2026-12-02")
    assert [s for s in people(mem.conn).values() if "art director" in s]


def test_a_name_with_its_native_form_in_brackets_is_one_person(mem: Memory) -> None:
    organize_turns(mem, [("user", "My new colleague Chen Hao (陈浩) joined the design team."),
                         ("user", "陈浩是我们的美术总监。")])
    (chen,) = rows(mem.conn, "person")
    assert "陈浩" in chen["aliases"] and "colleague" in chen["body"]


def test_a_switch_of_choice_is_the_preference_and_keeps_the_old_as_history(mem: Memory) -> None:
    organize_turns(mem, [("user", "I prefer black coffee in the morning.")])
    organize_turns(mem, [("user", "coffee: switched. oat flat white now, black wrecks my stomach"),
                         ("user", "going forward: pytest fixtures, not unittest, in anything new"),
                         ("user", "I am a tea person through and through, strong, a drop of milk."),
                         ("user", "以前早上喝咖啡，现在改喝绿茶了。")], day="2026-12-04")
    facts = {r["name"]: r["body"] for r in rows(mem.conn, "knowledge")}
    coffee = [b for b in facts.values() if "oat flat white" in b]
    assert len(coffee) == 1 and "- history: until 2026-12-04" in coffee[0]
    assert [n for n, b in facts.items() if n.startswith("Preference") and "fixtures" in b]
    assert [b for b in facts.values() if "tea" in b and "milk" in b]
    assert [b for b in facts.values() if "绿茶" in b]


def test_a_weekly_plan_said_again_in_the_other_language_is_one_plan(mem: Memory) -> None:
    organize_turns(mem, [("user", "Team standup every Monday at 10:00.")], day="2026-10-07")
    organize_turns(mem, [("user", "另外，每周一上午十点的 standup 照常。")], day="2026-10-08")
    (standup,) = rows(mem.conn, "schedule")
    assert standup["name"] == "Team standup" and "- state: recurring" in standup["body"]


def test_a_request_or_a_teams_action_item_is_no_plan_of_the_user(mem: Memory) -> None:
    organize_turns(mem, [("user", "Please leave comments inline; we would like to freeze this "
                                  "document by Friday, October 16."),
                         ("user", "4) Fake clock for the two search-indexer tests — search team, "
                                  "Nov 6.")], day="2026-10-12")
    assert rows(mem.conn, "schedule") == []


def test_a_todo_line_of_two_acts_is_two_todos_and_a_past_tense_closes_its_own(
        mem: Memory) -> None:
    organize_turns(mem, [("user", "todo: renew my NMC revalidation, book a flu jab for Owain."),
                         ("user", "I need to sign the consent form and send in fifteen euro.")])
    organize_turns(mem, [("user", "Renewed the NMC revalidation online after my shift."),
                         ("user", "I finally signed the zoo form this morning.")],
                   day="2026-12-02")
    todos = {r["name"]: r["state"] for r in rows(mem.conn, "todo")}
    assert todos == {"renew my NMC revalidation": "done", "book a flu jab for Owain": "open",
                     "sign the consent form and send in fifteen euro": "done"}


def test_a_labelled_project_and_an_open_item_are_kept(mem: Memory) -> None:
    organize_turns(mem, [("user", "Project: set up the new diabetes recall clinic with Nurse Kaur "
                                  "by February."),
                         ("user", "open item for me: runbook for the ledger reconciler, haven't "
                                  "started it")])
    assert [r["status"] for r in rows(mem.conn, "project")
            if r["name"] == "diabetes recall clinic"] == ["candidate"]
    assert [r["state"] for r in rows(mem.conn, "todo") if "runbook" in r["name"]] == ["open"]


def test_chinese_people_by_role_before_the_name_and_a_plan_whose_day_stands_alone(
        mem: Memory) -> None:
    organize_turns(mem, [("user", "室友陈思琪是学医的，她男朋友周航在清华读研。"),
                         ("user", "实验室新来了一个博士后，叫刘畅，做图神经网络的。"),
                         ("user", "和高中同学张磊约了周日晚上吃火锅，12月13日，在五道口。"),
                         ("user", "帮我记一下：周五之前要交操作系统的实验报告。")])
    said = people(mem.conn)
    assert said["陈思琪"].endswith("室友") and said["刘畅"].endswith("博士后")
    assert said["张磊"].endswith("高中同学")
    (zhou,) = [r["body"] for r in rows(mem.conn, "person") if r["name"] == "周航"]
    assert "周航在清华读研" in zhou and "男朋友" in zhou
    assert [r for r in rows(mem.conn, "schedule") if "火锅" in r["name"]
            and "2026-12-13" in r["body"]]
    assert [r for r in rows(mem.conn, "todo") if "实验报告" in r["name"]]


def test_an_agents_echo_of_a_plan_with_its_weekday_is_the_same_plan(mem: Memory) -> None:
    organize_turns(mem, [("user", "11月1日中午12点给妈妈过生日，在豫园附近的老饭店。")],
                   day="2026-10-20")
    echo = "已添加：11 月 1 日（周日）12:00 妈妈生日聚餐（豫园附近老饭店）。"
    organize_turns(mem, [("agent", echo)], day="2026-10-25")
    (party,) = rows(mem.conn, "schedule")
    assert "妈妈生日聚餐" in party["aliases"]
