"""The builtin model on other people's words (issue 50): the forms new voices use for a day, a
move, a fact about their health or a wish, each read by a mechanism, not a phrase."""

from __future__ import annotations

from datetime import date
from typing import Any

from memvault.models.builtin import organize
from memvault.models.builtin.changes import plan_dates
from memvault.models.builtin.dates import find_dates


def payload(text: str, related: list[dict[str, Any]], day: str = "2026-11-24",
            source: str = "user") -> dict[str, Any]:
    return {"mode": "organize",
            "event": {"id": 9, "occurred_at": f"{day}T10:00:00+00:00", "source": source,
                      "kind": "message", "meta": None, "chars": len(text)},
            "page": {"start": 0, "end": len(text), "last": True, "text": text},
            "progress": None, "targets": [], "related": related, "scope": None}


def objects(text: str, related: list[dict[str, Any]] | None = None,
            day: str = "2026-11-24") -> list[dict[str, Any]]:
    proposal, _ = organize.build(payload(text, related or [], day))
    return list(proposal["objects"])


def schedule(name: str, rule: str, aliases: list[str] | None = None) -> dict[str, Any]:
    return {"id": f"schedule:{name.replace(' ', '-')}", "type": "schedule", "name": name,
            "aliases": aliases or [], "summary": "", "cues": [], "status": "active",
            "version": 1, "body": f"- time rule: {rule}\n- item: {name}\n"
                                  "- state: scheduled (one-off)"}


def test_a_dotted_day_first_date_with_its_year_is_that_day() -> None:
    said = date(2026, 11, 24)
    assert [d.day for d in find_dates("Appraisal: 09.12.2026 at 14:00", said)] == [
        date(2026, 12, 9)]
    assert find_dates("it's in 2.3.0-rc1, build 12.10", said) == []  # a version, no year


def test_a_slashed_day_is_month_first_unless_its_first_number_cannot_be_a_month() -> None:
    said = date(2026, 11, 24)
    assert [d.day for d in plan_dates("hip replacement on 15/12", said)] == [date(2026, 12, 15)]
    assert [d.day for d in plan_dates("dentist thu 12/10 2:30p", said)] == [date(2026, 12, 10)]
    assert plan_dates("Kev in Cabo 12/20-12/27", said) == []  # a range is no one day
    assert plan_dates("shift 9-5", said) == []  # hours, not a day


def test_a_label_before_its_day_names_the_plan() -> None:
    found = objects("Appraisal with Dr. Fenwick: 09.12.2026 at 14:00, Room 3.")
    plan = next(o for o in found if o["id"].startswith("schedule:"))
    assert plan["name"] == "Appraisal with Dr. Fenwick"
    assert "- time rule: 2026-12-09" in plan["body"]


def test_a_plans_name_leaves_out_its_weekday_and_clock() -> None:
    found = objects("vendor call w/ Hendricks Freight 12/9 10am. re rate increase")
    plan = next(o for o in found if o["id"].startswith("schedule:"))
    assert plan["name"] == "vendor call w/ Hendricks Freight"
    assert not any("am" in a.split() for a in plan["aliases"])


def test_a_short_weekday_name_is_a_day() -> None:
    said = date(2026, 12, 3)  # a Thursday
    assert [d.day for d in find_dates("safety audit next tue 9a", said)] == [date(2026, 12, 8)]


def test_a_move_to_a_weekday_alone_is_that_weekday_nearest_the_plans_old_day() -> None:
    dentist = schedule("dentist", "2026-12-10 (12/10, said on 2026-11-24)")
    moved = next(o for o in objects("dentist -> fri", [dentist], day="2026-12-02")
                 if o["id"] == dentist["id"])
    assert "- time rule: 2026-12-11" in moved["body"]  # Thu Dec 10 -> Fri Dec 11, not Dec 4
    assert "moved (was 2026-12-10" in moved["body"]


def test_a_weekday_with_its_day_of_the_month_moves_only_when_the_two_agree() -> None:
    appraisal = schedule("Appraisal with Dr. Fenwick", "2026-12-09", ["Appraisal"])
    moved = next(o for o in objects("Appraisal moved to Thursday 10th, same time.",
                                    [appraisal], day="2026-11-30") if o["id"] == appraisal["id"])
    assert "- time rule: 2026-12-10" in moved["body"]
    unmoved = objects("Appraisal moved to Friday 10th, same time.", [appraisal],
                      day="2026-11-30")
    assert not any("- time rule: 2026-12-" in o["body"] and "moved" in o["body"]
                   for o in unmoved)


def test_an_arrow_between_two_days_is_a_range_and_no_role_is_a_move() -> None:
    on_call = schedule("on-call", "2026-12-07")
    for text in ("on-call: I'm primary Mon Dec 7 -> Mon Dec 14",
                 "Tom -> shift supervisor eff today"):
        assert not any("history" in o["body"] for o in objects(text, [on_call], "2026-11-27"))


def test_a_move_to_the_day_a_plan_is_already_on_changes_nothing() -> None:
    review = schedule("design review", "2026-12-10")
    found = objects("Design review moved to Thursday Dec 10 at 2pm.", [review], "2026-12-05")
    assert not any("history" in o["body"] for o in found)


def test_a_cancellation_written_short_cancels() -> None:
    call = schedule("vendor call w/ Hendricks Freight", "2026-12-09", ["Hendricks Freight"])
    found = objects("hendricks call cxl'd. they just emailed the new rates", [call],
                    "2026-12-03")
    assert any(o["id"] == call["id"] and "cancelled" in o["body"] for o in found)


def test_the_word_that_heads_a_known_plan_is_no_person() -> None:
    appraisal = schedule("Appraisal with Dr. Fenwick", "2026-12-09", ["Appraisal"])
    found = objects("Appraisal moved to Thursday 10th, same time.", [appraisal], "2026-11-30")
    assert not any(o["id"].startswith("person:") for o in found)


def knowledge(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in found if o["id"].startswith("knowledge:")]


def test_health_the_user_states_is_one_knowledge_object_a_turn() -> None:
    kept = knowledge(objects("back: L4/L5 disc. PT tues+thurs 7am x 6 wks. no lifting >25 lb"))
    assert len(kept) == 1 and kept[0]["name"] == "Health: back: L4/L5 disc"
    assert "L4/L5" in kept[0]["body"] and "25 lb" in kept[0]["body"]
    allergy = knowledge(objects("我对青霉素过敏，上次打针差点出事。"))
    assert [o["name"] for o in allergy] == ["健康：我对青霉素过敏"]


def test_a_time_zone_or_a_clinic_project_is_no_health_fact() -> None:
    assert knowledge(objects("INC-4412 postmortem is on 2026-12-09 at 10:00 PT.")) == []
    project = objects("Project: set up the new diabetes recall clinic with Nurse Kaur by February.")
    assert not any(o["name"].startswith("Health") for o in knowledge(project))


def test_a_wish_the_user_is_unsure_of_is_knowledge_never_a_plan() -> None:
    text = ("Speaking of which, I keep thinking maybe I'd do a pottery class in the new year, "
            "there's one on Thursday evenings in Phibsborough.")
    found = objects(text, day="2026-12-04")
    assert not any(o["id"].startswith("schedule:") for o in found)
    assert [o["name"] for o in knowledge(found)] == ["Maybe: do a pottery class in the new year"]
    assert [o["name"] for o in knowledge(objects("thinking I might go for the Staff promo next "
                                                 "cycle. not sure yet"))] == [
        "Maybe: go for the Staff promo next cycle"]


def test_maybe_about_someone_else_or_the_listener_is_no_wish() -> None:
    for text in ("Declan might even make it if he gets a few hours' sleep.",
                 "Maybe you could send me the notes.", "Maybe it's the weather."):
        assert knowledge(objects(text)) == [], text


def test_someone_elses_leave_is_not_the_users_plan() -> None:
    for text in ("fyi Mei's out on PTO Dec 21 – Jan 4", "Brenda is off next Tuesday.",
                 "王丽下周三请假。"):
        assert not any(o["id"].startswith("schedule:") for o in objects(text, day="2026-12-04"))
    kept = objects("Dinner out on Friday with Sam.", day="2026-12-04")
    assert any(o["id"].startswith("schedule:") for o in kept)


def test_each_bullet_under_a_todo_header_is_an_open_todo() -> None:
    found = objects("todo:\n- renew forklift cert (exp 12/31)\n- order label printer for dock 3")
    todos = {o["name"]: o for o in found if o["id"].startswith("todo:")}
    assert set(todos) == {"renew forklift cert", "order label printer for dock 3"}
    assert "exp 12/31" in todos["renew forklift cert"]["body"]
    assert not any(o["id"].startswith("todo:") for o in objects("shopping:\n- milk\n- eggs"))


def todo(name: str) -> dict[str, Any]:
    return {"id": f"todo:{name.replace(' ', '-')}", "type": "todo", "name": name,
            "aliases": ["label printer"], "summary": "", "cues": [], "status": "active",
            "version": 1, "body": f"- item: {name}\n- state: open"}


def test_a_thing_still_not_done_leaves_its_todo_open() -> None:
    printer = todo("order label printer for dock 3")
    found = objects("label printer still not ordered. zebra ZD421, ~$450", [printer])
    assert not any(o["id"] == printer["id"] and "state: done" in o["body"] for o in found)
    closed = objects("label printer ordered.", [printer])
    assert any(o["id"] == printer["id"] and "state: done" in o["body"] for o in closed)


def test_a_slashed_count_or_a_far_slashed_day_is_no_plan_day() -> None:
    said = date(2026, 10, 25)
    assert plan_dates("Queue empty, 8/8 runners online", said) == []
    assert plan_dates("build 3/4 passed", said) == []  # March 4: months away, not a day
    assert [d.day for d in plan_dates("vendor call 11/9 10am", said)] == [date(2026, 11, 9)]


def test_a_remembered_health_fact_is_not_kept_twice() -> None:
    found = knowledge(objects("记住：浩宇对花生过敏。"))
    assert len(found) == 1 and not found[0]["name"].startswith("健康")
