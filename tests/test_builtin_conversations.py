"""The builtin model on real conversations: speakers, first-person facts, plans, named people.

Unit tests call organize.build on hand-made payloads (checked against the pydantic model and the
invariants test_builtin.py checks); the last tests run a small LoCoMo-like conversation through
the whole engine (compact -> organize -> deep) and check the engine accepted every proposal.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from memvault import Memory
from memvault.models.builtin import BuiltinProvider, organize, speech
from memvault.objects.proposals import OrganizeProposal
from memvault.timeline.events import NewEvent
from modes_support import compact_then_organize
from test_builtin import check_invariants


def payload(text: str, speaker: str | None = None, related: list[dict[str, Any]] | None = None,
            when: str = "2023-05-08T13:56:00Z") -> dict[str, Any]:
    return {
        "mode": "organize",
        "event": {"id": 7, "occurred_at": when, "source": "user", "kind": "message",
                  "meta": {"speaker": speaker} if speaker else None, "chars": len(text)},
        "page": {"start": 0, "end": len(text), "last": True, "text": text},
        "progress": None, "targets": [], "related": related or [], "scope": None,
    }


def propose(data: dict[str, Any]) -> dict[str, Any]:
    proposal, _ = organize.build(data)
    OrganizeProposal.model_validate(proposal)
    check_invariants(data, proposal)
    return proposal


def objects(proposal: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {o["id"]: o for o in proposal["objects"]}


def cited_text(proposal: dict[str, Any], text: str, object_id: str) -> list[str]:
    return [text[e["start"]:e["end"]] for e in proposal["evidence"]
            if e["object_id"] == object_id]


def test_a_first_person_fact_becomes_a_dated_third_person_line_of_the_speakers_person() -> None:
    text = "I started a new job as a financial analyst last week."
    proposal = propose(payload(text, speaker="Jon"))
    person = objects(proposal)["person:jon"]
    assert "- 2023-05-08: Jon started a new job as a financial analyst last week" in person["body"]
    assert cited_text(proposal, text, "person:jon") == [text]
    assert proposal["events"][0]["outcome"] == "linked"


def test_a_name_prefix_makes_the_speaker_and_evidence_skips_the_prefix() -> None:
    text = "Melanie: my dogs are Pepper, Precious and Panda, they keep me busy."
    proposal = propose(payload(text))
    person = objects(proposal)["person:melanie"]
    assert "their dogs are Pepper, Precious and Panda" in person["body"]
    assert cited_text(proposal, text, "person:melanie") == [text[len("Melanie: "):]]


def test_a_known_speaker_is_updated_not_duplicated() -> None:
    known = {"id": "person:melanie", "type": "person", "name": "Melanie", "aliases": [],
             "summary": "Melanie — role unknown", "cues": [], "status": "active",
             "body": "- identity: unknown\n- 2023-05-01: I paint lakes at sunrise."}
    text = "Melanie: I ran a charity race for mental health last Saturday."
    proposal = propose(payload(text, related=[known]))
    assert [o["id"] for o in proposal["objects"]] == ["person:melanie"]
    body = proposal["objects"][0]["body"]
    assert body.startswith(known["body"]) and "charity race" in body


def test_chinese_first_person_facts_and_a_named_relative() -> None:
    text = "我养了三只狗，都是从收容所领养的。我的妹妹王芳下周要来北京看我。"
    proposal = propose(payload(text, speaker="李娜"))
    found = objects(proposal)
    assert "- 2023-05-08: 李娜养了三只狗，都是从收容所领养的；" in found["person:李娜"]["body"]
    assert "李娜的妹妹" in found["person:王芳"]["body"]
    assert {"src": "person:王芳", "label": "knows", "dst": "person:李娜"} in proposal["relations"]


def test_a_chinese_prefix_speaker_but_not_a_label() -> None:
    assert speech.speaker_of(None, "小明：我最近在学做蛋糕。", 0).name == "小明"
    assert speech.speaker_of(None, "记住：我对花生过敏。", 0) is None
    assert speech.speaker_of(None, "Session: Lighthouse cutover", 0) is None
    assert speech.speaker_of(None, "Caroline: hi", 40) is None  # not the event's first line


def test_a_dated_plan_is_a_schedule_about_the_speaker_and_an_intention_a_profile_line() -> None:
    text = ("Jon: I'm going to open a dance studio next month! "
            "I want to learn more about marketing strategies.")
    proposal = propose(payload(text, when="2023-12-10T09:00:00Z"))
    found = objects(proposal)
    schedule = next(o for o in found.values() if o["id"].startswith("schedule:"))
    assert "next month (said on 2023-12-10; about January 2024)" in schedule["body"]
    assert "open a dance studio" in schedule["body"]
    assert {"src": schedule["id"], "label": "about", "dst": "person:jon"} in proposal[
        "relations"]
    # an intention without a day is a fact about Jon, not a todo ("have a good time")
    assert not any(o.startswith("todo:") for o in found)
    assert "Jon wants to learn more about marketing strategies" in found["person:jon"]["body"]


def test_a_chinese_plan_with_a_date_word_is_a_schedule() -> None:
    proposal = propose(payload("我打算下个月去云南旅游。", speaker="李娜"))
    schedule = next(o for o in proposal["objects"] if o["id"].startswith("schedule:"))
    assert "去云南旅游" in schedule["body"] and "June 2023" in schedule["body"]


def test_a_named_friend_becomes_a_person_who_knows_the_speaker() -> None:
    proposal = propose(payload("Jon: My friend Gina helped me find a place for the studio."))
    assert objects(proposal)["person:gina"]["summary"] == "Gina — Jon's friend"


def test_chatter_stays_archive_only_with_a_reason_naming_the_speaker() -> None:
    for text in ("Caroline: Thanks, Mel! That's so sweet of you.",
                 "Melanie: Wow, what kinda jobs are you thinkin' of?",
                 "Melanie: You'd be a great counselor! Your empathy will really help people.",
                 "Caroline: I totally agree, Melanie. Taking care of ourselves is important."):
        proposal = propose(payload(text))
        disposition = proposal["events"][0]
        assert proposal["objects"] == [] and disposition["outcome"] == "archive_only", text
        assert disposition["reason"].startswith(text.split(":")[0] + " said nothing")


def test_without_a_speaker_first_person_sentences_stay_unclaimed() -> None:
    proposal = propose(payload("I started a new job as a financial analyst last week."))
    assert proposal["objects"] == [] and proposal["events"][0]["outcome"] == "archive_only"


def test_relative_dates_resolve_only_by_plain_arithmetic() -> None:
    said = date(2023, 5, 25)  # a Thursday
    assert speech.resolve("tomorrow", said) == "2023-05-26"
    assert speech.resolve("next month", date(2023, 12, 3)) == "January 2024"
    assert speech.resolve("this Saturday", said) == "2023-05-27"
    assert speech.resolve("next week", said) == "week of 2023-05-29"
    assert speech.resolve("this summer", said) == ""
    assert speech.resolve("tomorrow", None) == ""


CONVERSATION = [
    ("Caroline", "Hey Mel! Good to see you! How have you been?"),
    ("Melanie", "Hey Caroline! I'm swamped with the kids & work. What's up with you?"),
    ("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
    ("Melanie", "Wow, that's cool, Caroline! What happened that was so awesome?"),
    ("Caroline", "I'm going to continue my education in counseling next month."),
    ("Melanie", "I painted that lake sunrise last year, it's special to me."),
    ("Melanie", "My friend Gina helped me frame it for the living room."),
    ("Caroline", "Thanks, Melanie! That's really sweet."),
]


def test_a_conversation_through_the_engine_commits_every_proposal_first_time(
        mem: Memory) -> None:
    rows = [NewEvent(f"{who}: {said}", f"2023-05-08T13:{i:02d}:00Z", "user", "message",
                     {"speaker": who, "dia_id": f"D1:{i + 1}"})
            for i, (who, said) in enumerate(CONVERSATION)]
    ids = mem.append_events(rows)
    compact_then_organize(mem, BuiltinProvider(), lambda: mem.organize("deep"))
    conn = mem.conn
    assert conn.execute("SELECT COUNT(*) FROM model_calls").fetchone()[0] == conn.execute(
        "SELECT COUNT(*) FROM batches WHERE state = 'committed'").fetchone()[0]  # no corrections
    state = dict(conn.execute("SELECT event_id, state FROM archive_queue").fetchall())
    assert [state[i] for i in ids] == ["archive_only", "linked", "linked", "archive_only",
                                       "linked", "linked", "linked", "archive_only"]
    names = [r[0] for r in conn.execute("SELECT name FROM objects WHERE redirect_to IS NULL")]
    assert len(names) == len(set(names))
    assert {"Caroline", "Melanie", "Gina"} <= set(names)
    body = conn.execute("SELECT body FROM objects WHERE id = 'person:melanie'").fetchone()[0]
    assert "swamped with the kids" in body and "lake sunrise" in body
    about = conn.execute("SELECT src_id FROM relations WHERE label = 'about'"
                         " AND dst_id = 'person:caroline'").fetchall()
    assert any(r[0].startswith("schedule:") for r in about)


def test_a_meta_only_speaker_already_known_converges_through_one_correction(
        mem: Memory) -> None:
    """Without the name in the text the engine does not send the speaker's person as related:
    the builtin proposes it anew, the engine refuses (exists, unread), and the resubmission
    keeps the evidence, so the turn still ends linked to the speaker."""
    said = ["I adopted a puppy called Oscar last week.", "I started pottery classes on Monday."]
    ids = mem.append_events([NewEvent(t, f"2023-05-08T13:0{i}:00Z", "user", "message",
                                      {"speaker": "Melanie"}) for i, t in enumerate(said)])
    compact_then_organize(mem, BuiltinProvider(), limit=50)
    conn = mem.conn
    state = dict(conn.execute("SELECT event_id, state FROM archive_queue").fetchall())
    assert [state[i] for i in ids] == ["linked", "linked"]
    cited = {r[0] for r in conn.execute("SELECT event_id FROM evidence"
                                        " WHERE object_id = 'person:melanie'")}
    assert cited == set(ids)
    outcomes = [r[0] for r in conn.execute("SELECT outcome FROM model_calls WHERE mode = ?"
                                           " ORDER BY id", ("organize",))]
    assert len(outcomes) == 3  # the second turn needed one correction, and only one
