"""The builtin model files plain statements about people, plans and preferences (issue 34).

Every test runs plain turns through the real flow (compact, then organize with the builtin
provider) and reads what the engine committed.
"""

from __future__ import annotations

import json
import sqlite3

from memvault import Memory
from memvault.models.builtin import BuiltinProvider
from memvault.timeline.events import NewEvent
from modes_support import compact_then_organize


def organize_turns(mem: Memory, turns: list[str], day: str = "2026-03-03",
                   speaker: str | None = None, source: str = "user") -> list[int]:
    """Append the turns (one minute apart), compact, organize; the event ids."""
    ids = mem.append_events([NewEvent(text, f"{day}T09:{i:02d}:00Z", source, "message",
                                      {"speaker": speaker} if speaker else None)
                             for i, text in enumerate(turns)])
    compact_then_organize(mem, BuiltinProvider())
    return ids


def person(conn: sqlite3.Connection, name: str) -> sqlite3.Row:
    row = conn.execute("SELECT * FROM objects WHERE type = 'person' AND name = ?",
                       (name,)).fetchone()
    assert row is not None, f"no person {name}; have " + ", ".join(
        r[0] for r in conn.execute("SELECT name FROM objects WHERE type = 'person'"))
    return row


def role(row: sqlite3.Row) -> str:
    lines = [ln for ln in row["body"].splitlines() if ln.startswith(("- role:", "- 职责："))]
    return lines[0].split(":", 1)[-1].split("：", 1)[-1].strip() if lines else ""


def knows(conn: sqlite3.Connection, src: str, dst: str) -> bool:
    return conn.execute("SELECT 1 FROM relations WHERE src_id = ? AND dst_id = ? AND label = "
                        "'knows'", (src, dst)).fetchone() is not None


def test_a_relation_said_possessively_is_the_persons_role_and_the_rest_a_line_of_theirs(
        mem: Memory) -> None:
    organize_turns(mem, ["My sister is Mia Park, she teaches chemistry at a school in York.",
                         "My landlord is Gerald Hughes. He's been ignoring the boiler."])
    mia = person(mem.conn, "Mia Park")
    assert role(mia) == "sister"
    assert "- 2026-03-03: Mia Park teaches chemistry at a school in York" in mia["body"]
    gerald = person(mem.conn, "Gerald Hughes")
    assert role(gerald) == "landlord"
    assert "Gerald Hughes has been ignoring the boiler" in gerald["body"]


def test_a_speakers_relation_is_theirs_and_the_person_knows_them(mem: Memory) -> None:
    organize_turns(mem, ["Raj: My wife's name is Anjali, she's a pediatrician."],
                   speaker="Raj")
    anjali = person(mem.conn, "Anjali")
    assert role(anjali) == "Raj's wife"
    assert "Anjali is a pediatrician" in anjali["body"]
    assert knows(mem.conn, anjali["id"], "person:raj")


def test_a_family_name_is_the_relative_of_the_person_it_names(mem: Memory) -> None:
    organize_turns(mem, ["My sister is Mia Park."])
    organize_turns(mem, ["Mia's husband is called Ben, he's a carpenter."], day="2026-03-04")
    ben = person(mem.conn, "Ben")
    assert role(ben) == "Mia's husband"
    assert "Ben is a carpenter" in ben["body"]
    assert knows(mem.conn, ben["id"], person(mem.conn, "Mia Park")["id"])


def test_a_role_in_apposition_keeps_its_title(mem: Memory) -> None:
    organize_turns(mem, ["Tom Reyes, our ward manager, asked me to cover the night shift.",
                         "Zara Khan, the new HCA on our ward, starts on Monday.",
                         "Priya Nair is our clinical educator."])
    assert role(person(mem.conn, "Tom Reyes")) == "ward manager"
    assert role(person(mem.conn, "Zara Khan")).startswith("HCA")
    assert role(person(mem.conn, "Priya Nair")) == "clinical educator"


def test_a_capitalised_word_in_an_aside_that_is_no_title_names_no_one(mem: Memory) -> None:
    organize_turns(mem, ["Paris, the capital of France, is lovely in spring.",
                         "My mum is British, by the way."])
    assert mem.conn.execute("SELECT COUNT(*) FROM objects WHERE type = 'person'"
                            ).fetchone()[0] == 0


def test_chinese_relations_family_names_and_titles(mem: Memory) -> None:
    organize_turns(mem, ["我姐姐是王芳，她在杭州当律师。", "王芳的老公叫陈明，是个医生。",
                         "刘洋，我们的财务总监，下周三要去北京出差。",
                         "我妹妹林悦下个月从成都搬到上海。"])
    wang = person(mem.conn, "王芳")
    assert role(wang) == "姐姐" and "王芳在杭州当律师" in wang["body"]
    chen = person(mem.conn, "陈明")
    assert role(chen) == "王芳的老公" and "陈明是个医生" in chen["body"]
    assert knows(mem.conn, chen["id"], wang["id"])
    assert role(person(mem.conn, "刘洋")) == "财务总监"
    assert "林悦下个月从成都搬到上海" in person(mem.conn, "林悦")["body"]


def test_a_relation_stated_to_an_assistant_in_an_imported_chat_is_kept(mem: Memory) -> None:
    from io import BytesIO

    from memvault.home.chat_import import import_export

    message = {"id": "m1", "author": {"role": "user"}, "create_time": 1772560000,
               "content": {"content_type": "text", "parts": [
                   "My wife Chiara wants to visit her parents in Palermo in August. Can you "
                   "find cheap flights?"]}}
    export = [{"id": "c1", "title": "Flights", "create_time": 1772560000, "current_node": "m1",
               "mapping": {"root": {"id": "root", "message": None, "parent": None,
                                    "children": ["m1"]},
                           "m1": {"id": "m1", "message": message, "parent": "root",
                                  "children": []}}}]
    import_export(mem, "chatgpt", BytesIO(json.dumps(export).encode()), "conversations.json")
    compact_then_organize(mem, BuiltinProvider())
    chiara = person(mem.conn, "Chiara")
    assert role(chiara) == "wife"
    assert "Chiara wants to visit her parents in Palermo in August" in chiara["body"]


def test_a_self_introduction_takes_its_job_from_the_next_sentence(mem: Memory) -> None:
    organize_turns(mem, ["Hi! I'm Lena Fischer. I work as a nurse at St James's Hospital in "
                         "Leeds, mostly on the cardiology ward."])
    assert role(person(mem.conn, "Lena Fischer")) == "nurse at St James's Hospital in Leeds"


def test_a_chinese_self_introduction_keeps_the_job_and_the_duty(mem: Memory) -> None:
    organize_turns(mem, ["大家好，我叫王伟，在星辰科技做产品经理，主要负责支付模块。",
                         "我叫林晓，是这边的后端工程师，在杭州远程办公。"])
    assert role(person(mem.conn, "王伟")) == "在星辰科技做产品经理；负责支付模块"
    assert role(person(mem.conn, "林晓")) == "后端工程师"


def test_the_users_work_said_without_a_name_is_knowledge_of_its_own(mem: Memory) -> None:
    organize_turns(mem, ["For context, I work as a data analyst at Brightwater Insurance in "
                         "Bristol. What should a claims dashboard include?"])
    rows = mem.conn.execute("SELECT name, body FROM objects WHERE type = 'knowledge'").fetchall()
    assert [r["name"] for r in rows] == [
        "I work as a data analyst at Brightwater Insurance in Bristol"]
    assert mem.conn.execute("SELECT COUNT(*) FROM objects WHERE type = 'person'"
                            ).fetchone()[0] == 0


def test_the_assistants_words_about_itself_make_nothing(mem: Memory) -> None:
    ids = organize_turns(mem, ["I'm a large language model, I work as an assistant for you."],
                         source="assistant")
    assert mem.conn.execute("SELECT state FROM archive_queue WHERE event_id = ?",
                            (ids[0],)).fetchone()[0] == "archive_only"


def test_a_commitment_is_an_open_todo_and_a_vague_one_is_not(mem: Memory) -> None:
    organize_turns(mem, ["I'll book the pottery class for two then.",
                         "I'll think about it and let you know.", "I'll write it up tomorrow."])
    todos = [r[0] for r in mem.conn.execute("SELECT name FROM objects WHERE type = 'todo'")]
    assert todos == ["book the pottery class for two"]


def todo_state(conn: sqlite3.Connection, name_part: str) -> str:
    rows = conn.execute("SELECT name, body FROM objects WHERE type = 'todo'").fetchall()
    hits = [r for r in rows if name_part in r["name"]]
    assert len(hits) == 1, [r["name"] for r in rows]
    return next(ln.split("：", 1)[-1].split(": ", 1)[-1] for ln in hits[0]["body"].splitlines()
                if ln.startswith(("- state:", "- 状态：")))


def test_a_plain_past_tense_closes_the_todo_whose_verb_it_is(mem: Memory) -> None:
    organize_turns(mem, ["Remind me to pay the rent by Friday.",
                         "I need to book the train tickets to York."])
    organize_turns(mem, ["I looked at the rent prices in York again."], day="2026-03-04")
    assert todo_state(mem.conn, "rent") == "open"  # looking is not paying
    organize_turns(mem, ["Paid the rent.", "I booked the train tickets to York."],
                   day="2026-03-05")
    assert todo_state(mem.conn, "rent") == "done"
    assert todo_state(mem.conn, "train tickets") == "done"


def test_a_need_without_a_subject_is_an_open_todo(mem: Memory) -> None:
    organize_turns(mem, ["Need to renew my nursing registration before the end of April."])
    assert todo_state(mem.conn, "registration") == "open"


def test_a_chinese_bare_done_closes_the_need_it_names(mem: Memory) -> None:
    organize_turns(mem, ["我得在月底前把房租交了。"])
    assert todo_state(mem.conn, "房租") == "未完成"
    organize_turns(mem, ["房租交了。"], day="2026-03-07")
    assert todo_state(mem.conn, "房租") == "done"


def body_lines(conn: sqlite3.Connection, name: str) -> list[str]:
    return person(conn, name)["body"].splitlines()


def test_a_persons_move_and_a_hand_over_are_lines_of_theirs(mem: Memory) -> None:
    organize_turns(mem, ["Sam from pharmacy is relocating to the Bradford site in May.",
                         "Kim will take over the medication audit from me next month.",
                         "供应商对接以后由赵磊接手。", "前台的工作以后交给王丽负责。"])
    assert "- 2026-03-03: Sam from pharmacy is relocating to the Bradford site in May." in (
        body_lines(mem.conn, "Sam"))
    assert any("take over the medication audit" in ln for ln in body_lines(mem.conn, "Kim"))
    assert any("供应商对接以后由赵磊接手" in ln for ln in body_lines(mem.conn, "赵磊"))
    assert any("前台的工作以后交给王丽负责" in ln for ln in body_lines(mem.conn, "王丽"))


def test_any_clause_with_a_known_person_as_subject_is_a_line_of_theirs(mem: Memory) -> None:
    organize_turns(mem, ["Mia's husband is called Ben."])
    organize_turns(mem, ["Ben is building Mia a bookshelf for her birthday."], day="2026-03-05")
    assert "- 2026-03-05: Ben is building Mia a bookshelf for her birthday." in (
        body_lines(mem.conn, "Ben"))


def test_a_speakers_news_of_someone_else_counts_but_talk_to_the_listener_does_not(
        mem: Memory) -> None:
    ids = organize_turns(mem, ["Raj: Tomas is relocating to the Berlin office in May."],
                         speaker="Raj")
    assert any("Berlin office" in ln for ln in body_lines(mem.conn, "Tomas"))
    ids += organize_turns(mem, ["Tim: Wow, congrats on those deals with Nike and Gatorade!"],
                          speaker="Tim", day="2026-03-04")
    names = {r[0] for r in mem.conn.execute("SELECT name FROM objects WHERE type = 'person'")}
    assert "Nike" not in names and "Gatorade" not in names
    assert mem.conn.execute("SELECT state FROM archive_queue WHERE event_id = ?",
                            (ids[-1],)).fetchone()[0] == "archive_only"


def knowledge(conn: sqlite3.Connection, name: str) -> sqlite3.Row:
    row = conn.execute("SELECT * FROM objects WHERE type = 'knowledge' AND name = ?",
                       (name,)).fetchone()
    assert row is not None, [r[0] for r in conn.execute(
        "SELECT name FROM objects WHERE type = 'knowledge'")]
    return row


def test_a_preference_and_its_change_keep_the_newer_value_current(mem: Memory) -> None:
    organize_turns(mem, ["I prefer calls after lunch, the ward is chaos before noon."])
    first = knowledge(mem.conn, "Preference: calls")
    assert first["summary"] == "I prefer calls after lunch"
    organize_turns(mem, ["Actually I now prefer mornings for calls, since I switched shifts."],
                   day="2026-03-09")
    pref = knowledge(mem.conn, "Preference: calls")
    assert pref["id"] == first["id"]
    assert pref["summary"] == "Actually I now prefer mornings for calls"
    assert "- history: until 2026-03-09: I prefer calls after lunch" in pref["body"]
    old = mem.conn.execute("SELECT summary FROM object_versions WHERE object_id = ? AND "
                           "version = 1", (pref["id"],)).fetchone()[0]
    assert old == "I prefer calls after lunch"  # the earlier version keeps the older value


def test_a_chinese_preference_changes_on_the_same_topic(mem: Memory) -> None:
    organize_turns(mem, ["我比较喜欢下午开会，上午脑子清醒，适合写文档。"])
    organize_turns(mem, ["我现在更喜欢上午开会了，下午老是被打断。"], day="2026-03-09")
    pref = knowledge(mem.conn, "偏好：开会")
    assert "- 结论：我现在更喜欢上午开会了" in pref["body"]
    assert "- 历史：2026-03-09 之前：我比较喜欢下午开会" in pref["body"]


def test_a_new_role_replaces_the_old_one_which_stays_as_history_and_a_version(
        mem: Memory) -> None:
    organize_turns(mem, ["Dana Wells is our product manager."])
    organize_turns(mem, ["Dana Wells is now head of design."], day="2026-03-09")
    dana = person(mem.conn, "Dana Wells")
    assert role(dana) == "head of design"
    assert dana["summary"] == "Dana Wells — head of design"
    assert "- history: until 2026-03-09: role was product manager" in dana["body"]
    old = mem.conn.execute("SELECT body FROM object_versions WHERE object_id = ? AND "
                           "version = 1", (dana["id"],)).fetchone()[0]
    assert "- role: product manager" in old


def test_a_role_said_after_a_change_word_in_a_later_clause_is_the_new_role(mem: Memory) -> None:
    organize_turns(mem, ["Maya Lewis is our engineering manager.", "Tom Price is our intern."])
    organize_turns(mem, ["Maya Lewis got promoted, she's director of engineering now.",
                         "Tom Price is no longer an intern, he's been hired as a junior "
                         "developer."], day="2026-03-09")
    assert role(person(mem.conn, "Maya Lewis")) == "director of engineering"
    assert role(person(mem.conn, "Tom Price")) == "junior developer"


def test_a_relatives_new_job_keeps_the_relation(mem: Memory) -> None:
    organize_turns(mem, ["My brother Rhys is a paramedic in Swansea."])
    organize_turns(mem, ["Rhys quit the ambulance service, he's a firefighter now."],
                   day="2026-03-09")
    assert role(person(mem.conn, "Rhys")) == "brother; firefighter"


def test_a_chinese_promotion_is_the_new_role(mem: Memory) -> None:
    organize_turns(mem, ["我们学校的教务主任王建华，人挺好的。"])
    organize_turns(mem, ["王建华现在是副校长了，上个月刚升的。"], day="2026-03-09")
    wang = person(mem.conn, "王建华")
    assert role(wang) == "副校长"
    assert "- 历史：2026-03-09 之前原为教务主任" in wang["body"]


def test_now_without_a_role_changes_no_role(mem: Memory) -> None:
    organize_turns(mem, ["Kofi Mensah is our head of maths."])
    organize_turns(mem, ["Kofi Mensah is now in Leeds for the conference.",
                         "Is Kofi Mensah now the deputy head?"], day="2026-03-09")
    assert role(person(mem.conn, "Kofi Mensah")) == "head of maths"


def test_a_speakers_preference_is_a_line_of_their_profile_not_an_object(mem: Memory) -> None:
    organize_turns(mem, ["Elif: I prefer async updates over meetings for status reports."],
                   speaker="Elif")
    assert mem.conn.execute("SELECT COUNT(*) FROM objects WHERE type = 'knowledge'"
                            ).fetchone()[0] == 0
    assert any("prefers async updates" in ln for ln in body_lines(mem.conn, "Elif"))


def schedule(conn: sqlite3.Connection, name_part: str) -> sqlite3.Row:
    rows = [r for r in conn.execute("SELECT * FROM objects WHERE type = 'schedule'")
            if name_part in r["name"]]
    assert len(rows) == 1, [r["name"] for r in conn.execute(
        "SELECT name FROM objects WHERE type = 'schedule'")]
    return rows[0]


def test_a_day_of_the_month_said_alone_is_a_plan_ahead_not_after_a_past_verb(
        mem: Memory) -> None:
    organize_turns(mem, ["Piano recital on the 26th at 4pm, in the school hall.",
                         "We went to the old harbour on the 2nd, lovely day."],
                   day="2026-04-20")
    recital = schedule(mem.conn, "recital")
    assert "2026-04-26" in recital["body"]
    assert not any("harbour" in r["name"] for r in mem.conn.execute(
        "SELECT name FROM objects WHERE type = 'schedule'"))


def test_an_appointment_with_a_clock_is_moved_by_its_head_noun(mem: Memory) -> None:
    organize_turns(mem, ["Budget review with Maya on 11 November at 10:00."], day="2026-10-30")
    organize_turns(mem, ["budget review pushed to 13 November"], day="2026-10-31")
    review = schedule(mem.conn, "Budget review")
    assert "budget review" in [a.casefold() for a in json.loads(review["aliases"])]
    assert "2026-11-13" in review["body"] and review["state"] == "moved"


def test_a_done_marker_repeating_a_done_todo_closes_nothing_else(mem: Memory) -> None:
    organize_turns(mem, ["待办：给妈妈买生日礼物。", "11月1日中午12点给妈妈过生日。"],
                   day="2026-10-06")
    organize_turns(mem, ["已完成：给妈妈买生日礼物。"], day="2026-10-30")
    organize_turns(mem, ["已完成：给妈妈买生日礼物。"], day="2026-10-31")  # said again
    assert schedule(mem.conn, "过生日")["state"] == "scheduled"


def test_a_chinese_postponement_by_weekday_is_resolved_from_the_turns_date(
        mem: Memory) -> None:
    organize_turns(mem, ["周四下午三点跟供应商开会。"], day="2026-03-02")  # a Monday
    meeting = schedule(mem.conn, "供应商")
    assert "2026-03-05" in meeting["body"] and "周四" in json.loads(meeting["aliases"])
    organize_turns(mem, ["周四的会改到下周二。"], day="2026-03-03")
    moved = schedule(mem.conn, "供应商")
    assert moved["id"] == meeting["id"]
    assert "- 时间规则：2026-03-10" in moved["body"].splitlines()
    aliases = json.loads(moved["aliases"])
    assert "周二" in aliases and "周四" not in aliases  # it answers to its new weekday only
    organize_turns(mem, ["周二的会再推到周五。"], day="2026-03-09")
    assert "- 时间规则：2026-03-13" in schedule(mem.conn, "供应商")["body"].splitlines()


def test_an_english_change_naming_the_weekday_finds_the_plan_on_it(mem: Memory) -> None:
    organize_turns(mem, ["I'm going to meet the accountant on Thursday."], day="2026-03-02")
    organize_turns(mem, ["Thursday's meeting got moved to next Tuesday."], day="2026-03-03")
    meeting = schedule(mem.conn, "accountant")
    assert "- time rule: 2026-03-10" in meeting["body"].splitlines()
    assert "Tuesday" in json.loads(meeting["aliases"])


def test_a_weekday_far_from_the_turn_names_no_plan(mem: Memory) -> None:
    organize_turns(mem, ["I'm going to meet the accountant on Thursday."], day="2026-03-02")
    organize_turns(mem, ["Thursday's yoga got moved to next Tuesday."], day="2026-03-20")
    body = schedule(mem.conn, "accountant")["body"]
    assert body.startswith("- time rule: 2026-03-05") and "history" not in body


def test_note_style_relations_titles_first_and_accented_names(mem: Memory) -> None:
    organize_turns(mem, ["line manager: Helen Byrne (VP Product)",
                         "Our new intern, Sean, starts on Monday.",
                         "Siobhan Kelly, head of sales, joins the Atlas calls from now on.",
                         "My boss, Dr. Inês Costa, approved two days of study leave."])
    assert role(person(mem.conn, "Helen Byrne")) == "line manager"
    assert role(person(mem.conn, "Sean")) == "intern"
    assert role(person(mem.conn, "Siobhan Kelly")) == "head of sales"
    costa = person(mem.conn, "Inês Costa")
    assert role(costa) == "boss" and "Inês Costa approved two days of study leave" in (
        costa["body"])


def test_chinese_relations_with_you_ge_a_title_before_the_name_or_after_it(
        mem: Memory) -> None:
    organize_turns(mem, ["我有个弟弟叫陈阳，在武汉读大学。", "我们部门的会计赵敏下周开始休产假。",
                         "我们律所的合伙人是林国栋律师，人很严肃。"])
    chen = person(mem.conn, "陈阳")
    assert role(chen) == "弟弟" and "陈阳在武汉读大学" in chen["body"]
    assert role(person(mem.conn, "赵敏")) == "会计"
    assert role(person(mem.conn, "林国栋")) == "律师; 合伙人"  # the title after the name too


def test_an_interjection_before_a_comma_is_no_one(mem: Memory) -> None:
    organize_turns(mem, ["Wow, that sounds great - I agree, let's do it."])
    assert mem.conn.execute("SELECT COUNT(*) FROM objects WHERE type = 'person'"
                            ).fetchone()[0] == 0


def test_self_introductions_as_a_signature_or_with_what_they_teach(mem: Memory) -> None:
    organize_turns(mem, ["Ravi Kapoor here — product manager at Quillstone, Dublin office.",
                         "I'm Leo Park and I teach physics at Redfield College.",
                         "Hey all, I'm Ana Souza, I work as a vet in Bristol.",
                         "我叫张博，在一家游戏公司当程序员。"])
    assert role(person(mem.conn, "Ravi Kapoor")) == "product manager at Quillstone"
    assert role(person(mem.conn, "Leo Park")) == "teaches physics at Redfield College"
    assert role(person(mem.conn, "Ana Souza")) == "vet in Bristol"
    assert role(person(mem.conn, "张博")) == "在一家游戏公司当程序员"


def test_id_rather_is_a_preference_and_its_main_word_names_it_later(mem: Memory) -> None:
    organize_turns(mem, ["prefer async standups, mornings are for deep work"])
    first = knowledge(mem.conn, "Preference: async standups")
    assert "standups" in json.loads(first["aliases"])
    organize_turns(mem, ["From now on I'd rather do standups live on Mondays."],
                   day="2026-04-13")
    pref = knowledge(mem.conn, "Preference: async standups")
    assert "From now on I'd rather do standups live on Mondays" in pref["summary"]
    assert "- history: until 2026-04-13: prefer async standups" in pref["body"]


def test_a_note_of_a_thing_and_its_participle_closes_the_todo(mem: Memory) -> None:
    organize_turns(mem, ["todo: file expenses by Fri"])
    organize_turns(mem, ["expenses filed"], day="2026-03-04")
    assert todo_state(mem.conn, "expenses") == "done"


def test_small_talk_keeps_news_of_someone_not_a_description_of_a_place(mem: Memory) -> None:
    organize_turns(mem, ["Joanna: Woodhaven has had an interesting past with lots of cool people.",
                         "Grace: Amara wants to visit Edinburgh in December."],
                   speaker=None)
    names = {r[0] for r in mem.conn.execute("SELECT name FROM objects WHERE type = 'person'")}
    assert "Woodhaven" not in names
    assert any("Amara wants to visit Edinburgh" in ln for ln in body_lines(mem.conn, "Amara"))


def test_a_known_name_inside_a_clause_is_no_subject(mem: Memory) -> None:
    organize_turns(mem, ["My friend is called Max."])
    organize_turns(mem, ["Wow, those sneakers and Max deals are something."], day="2026-03-04")
    assert not any("deals" in ln for ln in body_lines(mem.conn, "Max"))


def test_a_past_verb_that_arranged_a_day_named_outright_is_a_plan(mem: Memory) -> None:
    organize_turns(mem, ["I signed up for the Bath half marathon on March 29. Can you give me "
                         "a plan?", "I started pottery classes on Monday."], day="2026-03-09")
    race = schedule(mem.conn, "marathon")
    assert race["name"] == "Bath half marathon"
    assert race["body"].startswith("- time rule: 2026-03-29")
    assert "marathon" in json.loads(race["aliases"])
    assert not [r for r in mem.conn.execute("SELECT name FROM objects WHERE type = 'schedule'")
                if "pottery" in r[0]]  # "on Monday" after a past verb was last Monday


def test_a_wish_with_a_time_said_by_a_pronoun_is_a_plan(mem: Memory) -> None:
    organize_turns(mem, ["She wants to go to Kyoto in April.", "她想四月去京都看樱花。"])
    kyoto = schedule(mem.conn, "go to Kyoto")
    assert "- time rule: in April (said on 2026-03-03)" in kyoto["body"].splitlines()
    assert "四月" in schedule(mem.conn, "京都")["body"]


def test_a_wish_of_ones_own_with_a_time_is_a_plan_whatever_adverb_it_carries(
        mem: Memory) -> None:
    organize_turns(mem, ["honestly I'd really love to hike the Dolomites next summer",
                         "We're really hoping to visit Lisbon in May.",
                         "我一直想去新疆看看，打算明年秋天去",
                         "I'd love to have more time."])  # no time: no plan
    assert "next summer" in schedule(mem.conn, "Dolomites")["body"]
    assert "May" in schedule(mem.conn, "Lisbon")["body"]
    assert "明年" in schedule(mem.conn, "新疆")["body"]
    assert not [r for r in mem.conn.execute("SELECT name FROM objects WHERE type = 'schedule'")
                if "time" in r[0]]


def test_names_with_particles_accents_and_two_part_words_are_filed_whole(mem: Memory) -> None:
    """A name is taken whole whatever its origin: lowercase particles between its words, accented
    and extended Latin letters, O'/D'/Mc/Mac words, hyphens; a possessive 's is no part of it."""
    organize_turns(mem, [
        "My manager is Hendrik van der Meer, he runs the plant.",
        "Chiara De Santis, our lead auditor, arrives on Monday.",
        "Aleksander Wójcik got promoted to plant director.",
        "Niamh O'Sullivan is our new quality engineer.",
        "Mairéad McGrath will take over the night shift from me.",
        "Yusuf al-Amin is relocating to the Doha office in March.",
        "Anne-Sophie Lefèvre, the head of logistics, signed off the plan.",
    ])
    assert role(person(mem.conn, "Hendrik van der Meer")) == "manager"
    assert role(person(mem.conn, "Chiara De Santis")) == "lead auditor"
    assert role(person(mem.conn, "Aleksander Wójcik")) == "plant director"
    assert role(person(mem.conn, "Niamh O'Sullivan")) == "quality engineer"
    assert "night shift" in person(mem.conn, "Mairéad McGrath")["body"]
    assert "Doha" in person(mem.conn, "Yusuf al-Amin")["body"]
    assert role(person(mem.conn, "Anne-Sophie Lefèvre")) == "head of logistics"
    names = [r[0] for r in mem.conn.execute("SELECT name FROM objects WHERE type = 'person'")]
    assert not [n for n in names if n in ("Hendrik", "Chiara De", "Niamh O", "Yusuf")]


def test_a_title_then_the_name_it_is_called_by_is_that_persons_role(mem: Memory) -> None:
    organize_turns(mem, ["oh and the area manager, a guy called Declan Hurst, is coming in",
                         "Our new intern is called Sam Ortiz.",
                         "我们组长叫黄磊，人挺好的", "新来的实习生叫赵敏",
                         "The weather is called fine."])  # no role word: no one
    assert role(person(mem.conn, "Declan Hurst")) == "area manager"
    assert role(person(mem.conn, "Sam Ortiz")) == "intern"
    assert "组长" in person(mem.conn, "黄磊")["body"]
    assert "实习生" in person(mem.conn, "赵敏")["body"]
    assert mem.conn.execute("SELECT count(*) FROM objects WHERE type = 'person'").fetchone()[0] \
        == 4
