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
