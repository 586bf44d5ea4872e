"""The builtin model writes a speaker's facts the way a note-taker does: the subject named once
per line, hedges, discourse and "going to" cut, up to three clauses of a turn, an evaluation
only when it says enough, a clause that names little left out, and a fact said before never
written again (it is cited, and its slot goes to a clause that says something new).

Unit tests call organize.build on hand-made payloads (checked like test_builtin_conversations);
the last test runs turns through the engine (compact -> organize).
"""

from __future__ import annotations

from memvault import Memory
from memvault.models.builtin import BuiltinProvider, speech
from memvault.timeline.events import NewEvent
from modes_support import compact_then_organize
from test_builtin_conversations import cited_text, objects, payload, propose


def fact_lines(body: str) -> list[str]:
    return [line for line in body.splitlines() if line.startswith(("- 20", "  - "))]


def test_a_line_names_its_subject_once_and_later_parts_drop_it() -> None:
    text = "Joanna: I love dramas and romcoms; I watch one every Friday with my sister."
    body = objects(propose(payload(text)))["person:joanna"]["body"]
    assert fact_lines(body) == [
        "- 2023-05-08: Joanna loves dramas and romcoms; watches one every Friday with their "
        "sister"]


def test_a_later_i_inside_a_part_keeps_the_name_and_its_agreed_verb() -> None:
    # "they" would read better but loses the verb's form ("wants"), which the facts say
    assert speech.third_person("I read up on the visa rules for places I want to visit",
                               "Tim") == ("Tim reads up on the visa rules for places Tim wants "
                                          "to visit")
    assert speech.third_person("I don't expect to win, I like playing for fun", "Nate") == (
        "Nate doesn't expect to win, likes playing for fun")
    assert speech.third_person("Since we last spoke, I started teaching", "Nate") == (
        "Since they last spoke, Nate started teaching")
    assert speech.third_person("We do all kinds of dances", "Jon") == (
        "Jon and others do all kinds of dances")


def test_hedges_go_and_going_to_is_will_but_not_a_place() -> None:
    assert speech.tighten("Jon is, you know, really going to open a studio") == (
        "Jon is will open a studio".replace("is will", "will"))
    assert speech.tighten("To be honest, Jon is gonna keep writing") == "Jon will keep writing"
    assert speech.tighten("Jon is going to the park") == "Jon is going to the park"
    assert speech.tighten("Jon is going to school in May") == "Jon is going to school in May"


def test_greetings_vocatives_discourse_and_talk_to_the_listener_are_not_stored() -> None:
    text = ("Jon: Hey Andrew! Oh, btw, I adopted a puppy named Max last week, lol 😊. Check "
            "out this photo of him. Have faith in yourself, you will find a great job. Can't "
            "wait to see it all come together!")
    line = fact_lines(objects(propose(payload(text)))["person:jon"]["body"])[0]
    assert line == "- 2023-05-08: Jon adopted a puppy named Max last week"


def test_a_turn_keeps_up_to_three_clauses_the_speakers_own_first() -> None:
    text = ("Nate: I won my fourth video game tournament on Friday, and then I bought a new "
            "gaming chair. It was fun. I also adopted a turtle named Max. I love it.")
    line = fact_lines(objects(propose(payload(text)))["person:nate"]["body"])[0]
    assert "fourth video game tournament" in line and "gaming chair" in line
    assert "turtle named Max" in line
    assert line.count("Nate") == 1


def test_an_evaluation_is_kept_only_when_it_says_enough() -> None:
    text = ("John: It was an intense season with both tough losses and great wins. "
            "I'd say we did pretty well. It was so powerful.")
    body = objects(propose(payload(text)))["person:john"]["body"]
    assert "intense season with both tough losses and great wins" in body
    assert "powerful" not in body


def test_a_clause_that_names_little_is_not_written() -> None:
    # counted after the hedges are cut: "Caroline loves it much" names nothing
    text = ("Caroline: I adopted two cats named Luna and Milo from the Dover shelter. I just "
            "really love it so much. I painted a sunset over Lake Tahoe.")
    line = fact_lines(objects(propose(payload(text)))["person:caroline"]["body"])[0]
    assert "love" not in line
    assert "two cats named Luna and Milo" in line and "sunset over Lake Tahoe" in line
    assert speech.names_enough("Jon started a new job as a financial analyst", "Jon")
    assert not speech.names_enough("Caroline is excited about it", "Caroline")


def test_a_clause_naming_someone_in_another_script_or_in_capitals_is_written() -> None:
    # a short name counts as a name in Han or in capitals too, not only as "Ana" or "Łódź"
    for who in ("李娜", "王芳", "AJ", "Ana", "Łódź"):
        text = f"Jon: I've been dating {who} since June."
        line = fact_lines(objects(propose(payload(text)))["person:jon"]["body"])
        assert line and who in line[0], who
        assert speech.names_enough(f"Jon has been dating {who}", "Jon"), who
    assert not speech.names_enough("Jon has been dating us", "Jon")


def test_a_clause_said_before_is_cited_and_its_slot_goes_to_a_new_one() -> None:
    known = {"id": "person:jon", "type": "person", "name": "Jon", "aliases": [],
             "summary": "Jon — role unknown", "cues": [], "status": "active",
             "body": "- identity: unknown\n- 2023-05-01: Jon lost their job at the bank in March"}
    text = ("Jon: I lost my job at the bank in March. I'm opening a dance studio downtown. "
            "I've been practicing salsa every evening. My sister Gina helps with the books.")
    proposal = propose(payload(text, related=[known]))
    body = objects(proposal)["person:jon"]["body"]
    new = body[len(known["body"]):]
    assert "bank" not in new  # said before: not written again
    assert "dance studio downtown" in new and "salsa every evening" in new
    assert "I lost my job at the bank in March." in cited_text(proposal, text, "person:jon")


def test_through_the_engine_a_fact_said_twice_is_one_line(mem: Memory) -> None:
    turns = ["Maria: I volunteer at the homeless shelter every Saturday morning.",
             "Maria: Thanks! I volunteer at the homeless shelter every Saturday morning, "
             "you know.",
             "Maria: I'm going to run the city marathon with my brother."]
    ids = mem.append_events([NewEvent(t, f"2023-05-08T13:0{i}:00Z", "user", "message",
                                      {"speaker": "Maria"}) for i, t in enumerate(turns)])
    compact_then_organize(mem, BuiltinProvider(), limit=50)
    body = mem.conn.execute("SELECT body FROM objects WHERE id = 'person:maria'").fetchone()[0]
    assert body.count("homeless shelter") == 1
    assert "Maria will run the city marathon with their brother" in body
    cited = {r[0] for r in mem.conn.execute(
        "SELECT event_id FROM evidence WHERE object_id = 'person:maria'")}
    assert cited == set(ids)
