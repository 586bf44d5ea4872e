"""What an organize claim sends as related: objects citing the event, and objects the page
names (through the name index, checked against the text)."""

from __future__ import annotations

from datetime import UTC, datetime

from helpers import add_evidence
from memvault import Memory
from memvault.jobs.modes.organize import name_keys, related_objects
from memvault.objects.records import ObjectRecord, save_object
from memvault.store.connection import write

T0 = datetime(2026, 10, 13, tzinfo=UTC)


def put(mem: Memory, object_id: str, name: str, aliases: list[str] | None = None) -> None:
    with write(mem.conn):
        save_object(mem.conn, ObjectRecord(id=object_id, type=object_id.split(":")[0],
                                           name=name, aliases=aliases or []), T0)


def related_ids(mem: Memory, event_id: int, text: str) -> set[str]:
    return {o["id"] for o in related_objects(mem.conn, event_id, text, 96_000)}


def test_names_and_aliases_in_chinese_and_english_are_found(mem: Memory) -> None:
    put(mem, "person:zhang-wei", "张伟", ["老张"])
    put(mem, "person:sarah-chen", "Sarah Chen", ["Sarah"])
    put(mem, "person:tom-becker", "Tom Becker")
    put(mem, "schedule:lighthouse-weekly", "Lighthouse 周会")
    put(mem, "knowledge:x", "unrelated fact")
    event = mem.append_event("x")
    text = "老张说 SARAH CHEN's review 明天做；tomorrow the Lighthouse 周会 moves."
    assert related_ids(mem, event, text) == {
        "person:zhang-wei", "person:sarah-chen", "schedule:lighthouse-weekly"}


def test_objects_citing_the_event_come_along_and_merged_ones_do_not(mem: Memory) -> None:
    put(mem, "person:li-na", "李娜")
    put(mem, "person:old", "李娜 old")
    event = mem.append_event("nothing named here")
    with write(mem.conn):
        add_evidence(mem.conn, "person:li-na", event, 0, 5, T0)
        mem.conn.execute("UPDATE objects SET redirect_to = 'person:li-na' WHERE id = 'person:old'")
    assert related_ids(mem, event, "nothing named here") == {"person:li-na"}
    assert related_ids(mem, event, "李娜 old 来了") == {"person:li-na"}


def test_renaming_an_object_moves_it_in_the_name_index(mem: Memory) -> None:
    put(mem, "person:p", "Priya Nair")
    event = mem.append_event("x")
    assert related_ids(mem, event, "ask Priya Nair") == {"person:p"}
    put(mem, "person:p", "Priya N.", ["QA lead"])
    assert related_ids(mem, event, "ask Priya Nair") == set()
    assert related_ids(mem, event, "ask the qa lead") == {"person:p"}


def test_name_keys_cover_words_possessives_and_cjk_pairs() -> None:
    keys = name_keys("Tom's PR，张伟（老张）说: done.")
    assert {"tom", "pr", "张伟", "老张", "done"} <= keys


def test_a_name_running_from_latin_letters_into_chinese_is_found(mem: Memory) -> None:
    put(mem, "task:lighthouse-design", "Lighthouse负责第36版设计稿")
    put(mem, "person:chen-jing", "陈静")
    event = mem.append_event("x")
    text = "昨天Lighthouse负责第36版设计稿已经发给陈静了。"
    assert related_ids(mem, event, text) == {"task:lighthouse-design", "person:chen-jing"}
    assert related_ids(mem, event, "the Lighthouse team met") == set()


def test_a_mixed_name_is_looked_up_by_its_latin_start_and_checked_against_the_text(
        mem: Memory) -> None:
    put(mem, "task:a", "Lighthouse负责设计稿")
    put(mem, "task:b", "Lighthouse负责运维")
    event = mem.append_event("x")
    assert related_ids(mem, event, "Lighthouse负责设计稿，周五前") == {"task:a"}
    assert related_ids(mem, event, "Lighthouse负责 设计稿") == set()  # a space ends the key
