"""More forms of plain statements the builtin model reads: each a class of sentence, kept
because it raised the validation split of bench/statement_facts.py.

Every test runs plain turns through the real flow (compact, then organize with the builtin
provider) and reads what the engine committed.
"""

from __future__ import annotations

from memvault import Memory
from test_builtin_statements import organize_turns, person, role


def test_this_is_a_name_with_a_job_is_a_self_introduction(mem: Memory) -> None:
    organize_turns(mem, ["Hi, this is Gwen Adler, I run the night desk at the Courier."])
    assert role(person(mem.conn, "Gwen Adler")) == "runs the night desk at the Courier"


def test_this_is_a_name_with_no_job_presents_no_one(mem: Memory) -> None:
    organize_turns(mem, ["This is Mia, she lives next door."])
    bodies = [r[0] for r in mem.conn.execute("SELECT body FROM objects WHERE type = 'person'")]
    assert not any("introduced themself" in body for body in bodies)


def test_a_chinese_title_as_the_subject_is_the_role_of_the_name_after_it(mem: Memory) -> None:
    organize_turns(mem, ["我们公司的CTO是郑海峰，技术很强。", "HR那边的负责人叫林秀。"])
    assert role(person(mem.conn, "林秀")) == "负责人"
    assert role(person(mem.conn, "郑海峰")) == "CTO"


def test_a_chinese_plan_run_on_into_a_question_is_still_a_plan(mem: Memory) -> None:
    organize_turns(mem, ["我下周五要去广州见客户，有什么要注意的吗？"])
    rules = {r[0]: r[1] for r in mem.conn.execute(
        "SELECT name, body FROM objects WHERE type = 'schedule'")}
    assert any("2026-03-13" in body and "广州" in name for name, body in rules.items()), rules


def test_a_question_about_a_day_is_no_plan(mem: Memory) -> None:
    organize_turns(mem, ["Is the viva on March 19, or was it moved?",
                         "你三月十九号来不来，还是后天？"])
    assert mem.conn.execute("SELECT COUNT(*) FROM objects WHERE type = 'schedule'"
                            ).fetchone()[0] == 0


def test_a_chinese_statement_before_any_question_is_read(mem: Memory) -> None:
    organize_turns(mem, ["我下周三要去杭州出差，需要带电脑吗？", "明天要不要去爬山，你觉得呢？"])
    names = [r[0] for r in mem.conn.execute("SELECT name FROM objects WHERE type = 'schedule'")]
    assert names == ["去杭州出差"]


def test_the_users_work_said_in_chinese_without_a_name_is_knowledge_of_its_own(
        mem: Memory) -> None:
    organize_turns(mem, ["我是一名小学老师，在杭州教数学。", "我在一家外企做HR。",
                         "我是真的累了。"])
    names = sorted(r[0] for r in mem.conn.execute(
        "SELECT name FROM objects WHERE type = 'knowledge'"))
    assert names == ["我在一家外企做HR", "我是一名小学老师"]


def test_a_speakers_adverb_before_the_verb_keeps_the_verb_agreed(mem: Memory) -> None:
    organize_turns(mem, ["Maya: Hi all, I'm Maya Collins, the QA lead at Brightpath.",
                         "Maya: Actually I now prefer live standups on Mondays with the team."],
                   speaker="Maya")
    body = person(mem.conn, "Maya Collins")["body"]
    assert "Maya now prefers live standups on Mondays" in body, body


def test_a_chinese_plan_with_one_event_word_is_a_plan_and_the_weather_is_not(
        mem: Memory) -> None:
    organize_turns(mem, ["明天下午三点开会。", "3月20日飞成都。", "明天降温了。", "后天北京晴。"])
    names = sorted(r[0] for r in mem.conn.execute(
        "SELECT name FROM objects WHERE type = 'schedule'"))
    assert names == ["开会", "飞成都"]  # the clock is the plan's time, not its name


def test_a_name_said_to_be_a_role_with_a_or_an_has_that_role(mem: Memory) -> None:
    organize_turns(mem, ["Tomasz Nowak is a paramedic in Leeds.", "Paris is a lovely city.",
                         "Networking was a lifesaver for me."])
    assert role(person(mem.conn, "Tomasz Nowak")) == "paramedic in Leeds"
    assert [r[0] for r in mem.conn.execute("SELECT name FROM objects WHERE type = 'person'")
            ] == ["Tomasz Nowak"]


def test_an_adverb_before_shi_is_no_part_of_a_chinese_name(mem: Memory) -> None:
    organize_turns(mem, ["赵敏现在是我们的项目经理。"])
    names = [r[0] for r in mem.conn.execute("SELECT name FROM objects WHERE type = 'person'")]
    assert names == ["赵敏"]
