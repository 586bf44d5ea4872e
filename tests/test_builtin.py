"""The builtin offline model: the provider protocol and organize, on the bundled sample.

Payloads are built from real sample lines (engine/data/sample_events.jsonl) the way
memvault.jobs.modes.organize builds them; every proposal is validated against the pydantic models.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memvault.base.tokens import estimate_tokens
from memvault.jobs.modes.compact import CompactionProposal
from memvault.models.base import ModelReply, ProviderError, ToolSpec
from memvault.models.builtin import BuiltinProvider, organize
from memvault.objects.ids import check_object_id
from memvault.objects.proposals import OrganizeProposal, ReviewProposal
from memvault.secrets.detector import find_secret


@cache
def sample() -> list[dict[str, Any]]:
    data = resources.files("memvault") / "data" / "sample_events.jsonl"
    return [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]


def event_text(number: int) -> str:
    """The text of sample event `number` (1-based, as in the file)."""
    return sample()[number - 1]["text"]


def page_payload(number: int | None = None, *, text: str | None = None, start: int = 0,
                 end: int | None = None, related: list[dict[str, Any]] | None = None,
                 targets: list[str] | None = None, progress: str | None = None,
                 source: str = "user", kind: str = "message") -> dict[str, Any]:
    """An organize payload for one page of a sample event (or of `text`)."""
    if number is not None:
        row = sample()[number - 1]
        text, source, kind = row["text"], row["source"], row["kind"]
    assert text is not None
    end = len(text) if end is None else end
    return {
        "mode": "organize",
        "event": {"id": number or 999, "occurred_at": "2026-10-09T10:00:00+08:00",
                  "source": source, "kind": kind, "meta": {}, "chars": len(text)},
        "page": {"start": start, "end": end, "last": end >= len(text), "text": text[start:end]},
        "progress": progress, "targets": targets or [], "related": related or [],
        "scope": None,
    }


def propose(payload: dict[str, Any]) -> dict[str, Any]:
    """organize.build, checked against the model and the engine's hard rules."""
    proposal, _ = organize.build(payload)
    OrganizeProposal.model_validate(proposal)
    check_invariants(payload, proposal)
    return proposal


def check_invariants(payload: dict[str, Any], proposal: dict[str, Any]) -> None:
    page, event = payload["page"], payload["event"]
    related = {o["id"] for o in payload["related"]}
    written = {o["id"] for o in proposal["objects"]}
    cited = {e["object_id"] for e in proposal["evidence"]}
    assert len(proposal["events"]) == 1 and proposal["events"][0]["event_id"] == event["id"]
    for obj in proposal["objects"]:
        check_object_id(obj["id"])
        assert obj["id"] in cited, f"{obj['id']} written without evidence"
        assert len(obj["summary"]) <= 400 and len(obj["body"]) < 16_000
        assert find_secret("\n".join([obj["name"], obj["summary"], obj["body"], *obj["aliases"],
                                      *obj["cues"]])) is None
        if obj["id"].startswith("project:") and obj["id"] not in related:
            assert obj["status"] == "candidate"
    for ev in proposal["evidence"]:
        assert ev["event_id"] == event["id"]
        assert page["start"] <= ev["start"] < ev["end"] <= page["end"]
    known = written | cited | related | set(payload["targets"])
    for rel in proposal["relations"]:
        assert rel["src"] in known and rel["dst"] in known and rel["src"] != rel["dst"]
    assert proposal["core_files"] == []
    outcome = proposal["events"][0]
    if not page["last"]:
        assert outcome["outcome"] == "continue" and 0 < len(outcome["progress"]) <= 2_000
    elif cited or payload["targets"]:
        assert outcome["outcome"] == "linked"
    else:
        assert outcome["outcome"] == "archive_only" and 0 < len(outcome["reason"]) <= 1_000


def objects_of(proposal: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {o["id"]: o for o in proposal["objects"]}


def quoted(payload: dict[str, Any], proposal: dict[str, Any], object_id: str) -> list[str]:
    """The page text each evidence span of `object_id` cites (offsets are absolute)."""
    base, text = payload["page"]["start"], payload["page"]["text"]
    return [text[e["start"] - base: e["end"] - base] for e in proposal["evidence"]
            if e["object_id"] == object_id]


def tools(*names: str) -> list[ToolSpec]:
    return [ToolSpec(n, "", {"type": "object"}) for n in names]


def ask(payload: dict[str, Any], tool: str, history: list[dict[str, Any]] | None = None
        ) -> tuple[ModelReply, dict[str, Any]]:
    messages = [{"role": "system", "content": "system prompt"},
                {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
                *(history or [])]
    reply = BuiltinProvider().complete(messages, tools("read_object", tool), 32_768)
    return reply, json.loads(reply.tool_calls[0].arguments)


# -- the provider protocol ---------------------------------------------------------------------


def test_provider_attributes_and_one_tool_call_per_answer() -> None:
    provider = BuiltinProvider()
    assert (provider.name, provider.model) == ("builtin", "builtin-rules-1")
    assert provider.max_output_tokens == 131_072 and provider.context_tokens == 1_000_000
    payload = page_payload(45)
    reply, args = ask(payload, "commit_organize")
    assert reply.finish_reason == "tool_calls" and len(reply.tool_calls) == 1
    assert reply.tool_calls[0].name == "commit_organize" and reply.model == "builtin-rules-1"
    assert reply.usage.estimated is True
    assert reply.usage.output_tokens == estimate_tokens(reply.tool_calls[0].arguments)
    assert reply.usage.input_tokens > 0
    OrganizeProposal.model_validate(args)


def test_the_mode_is_recognised_by_the_commit_tool_offered() -> None:
    compact_payload = {"mode": "compact", "nodes": [
        {"id": 7, "kind": "raw", "level": 0, "from": "2026-10-05T09:47:00+08:00",
         "to": "2026-10-05T09:47:00+08:00", "source": "user", "chars": 114,
         "text": event_text(4)}]}
    _, args = ask(compact_payload, "commit_compaction")
    assert CompactionProposal.model_validate(args).node_ids == [7]
    deep_payload = {"mode": "deep", "review": [{"id": "person:x", "type": "person",
                                                "name": "X", "aliases": [], "body": ""}],
                    "related": [], "scope": None}
    _, args = ask(deep_payload, "commit_review")
    assert ReviewProposal.model_validate(args).reviewed == ["person:x"]


def test_without_a_commit_tool_or_a_json_payload_it_refuses_clearly() -> None:
    provider = BuiltinProvider()
    with pytest.raises(ProviderError, match="only answers"):
        provider.complete([{"role": "user", "content": "{}"}], tools("read_object"), 100)
    with pytest.raises(ProviderError, match="JSON"):
        provider.complete([{"role": "user", "content": "hello"}], tools("commit_organize"), 100)
    with pytest.raises(ProviderError, match="no user message"):
        provider.complete([{"role": "system", "content": "x"}], tools("commit_organize"), 100)


def test_an_answer_longer_than_allowed_comes_back_truncated() -> None:
    messages = [{"role": "user", "content": json.dumps(page_payload(40), ensure_ascii=False)}]
    reply = BuiltinProvider().complete(messages, tools("commit_organize"), 5)
    assert reply.truncated and not reply.tool_calls


# -- organize: what the rules recognise on the sample -----------------------------------------


def test_self_introductions_with_explicit_aliases() -> None:
    found = objects_of(propose(page_payload(2)))
    person = found["person:秦浩宇"]
    assert {"浩宇", "Haoyu", "qhy"} <= set(person["aliases"])
    assert "未知" in person["body"]  # role, traits... unknown, not guessed
    zhang = objects_of(propose(page_payload(37)))["person:张伟"]
    assert "负责后端" in zhang["body"]
    assert objects_of(propose(page_payload(38)))["person:张伟"]["aliases"] == [
        "老张", "Zhang Wei", "Lao Zhang"]  # a Chinese name's pinyin too: people.romanized


def test_people_named_with_a_role_in_both_languages() -> None:
    family = objects_of(propose(page_payload(10)))
    assert "太太" in family["person:陈静"]["body"]
    daughter = family["person:秦小雨"]
    assert "女儿" in daughter["body"] and "小雨" in daughter["aliases"]
    assert "产品经理" in objects_of(propose(page_payload(36)))["person:李娜"]["body"]
    assert "牙医" in objects_of(propose(page_payload(109)))["person:王芳"]["body"]
    assert "HR" in objects_of(propose(page_payload(107)))["person:赵敏"]["body"]
    tom = propose(page_payload(55))
    assert "DevOps lead" in objects_of(tom)["person:tom-becker"]["body"]
    mark = objects_of(propose(page_payload(60)))["person:mark-liu"]
    assert "manager" in mark["body"] and mark["aliases"] == ["Mark"]


def test_wo_jiao_and_my_name_is_introduce_people() -> None:
    found = objects_of(propose(page_payload(text="你好，我叫张曼婷，很高兴认识你。")))
    assert set(found) == {"person:张曼婷"}
    found = objects_of(propose(page_payload(text="Hi, my name is John Zhang.")))
    assert set(found) == {"person:john-zhang"}


def test_a_person_introduced_on_a_project_is_a_member_of_that_candidate_project() -> None:
    proposal = propose(page_payload(49))
    found = objects_of(proposal)
    assert "designer" in found["person:sarah-chen"]["body"]
    assert found["project:aurora"]["status"] == "candidate"
    assert {"src": "person:sarah-chen", "label": "member_of",
            "dst": "project:aurora"} in proposal["relations"]
    priya = propose(page_payload(92))
    assert {"src": "person:priya-nair", "label": "member_of",
            "dst": "project:aurora"} in priya["relations"]
    lighthouse = propose(page_payload(55))
    assert {"src": "person:tom-becker", "label": "member_of",
            "dst": "project:lighthouse"} in lighthouse["relations"]


def test_projects_are_candidates_with_scope_and_stated_aliases() -> None:
    aurora = objects_of(propose(page_payload(32)))["project:aurora"]
    assert aurora["status"] == "candidate" and "redesign of our note-taking app" in aurora["body"]
    lighthouse = objects_of(propose(page_payload(55)))["project:lighthouse"]
    assert lighthouse["status"] == "candidate"
    assert {"灯塔项目", "灯塔"} <= set(lighthouse["aliases"])
    assert "自建 runner" in lighthouse["body"]
    for number in (73, 103, 115):  # "Project Lighthouse", "项目 Aurora", "project Lighthouse"
        found = objects_of(propose(page_payload(number)))
        assert any(i.startswith("project:") and o["status"] == "candidate"
                   for i, o in found.items())


@pytest.mark.parametrize(("number", "object_id", "words"), [
    (12, "todo:renew-the-passport", ["before Nov 20", "open"]),
    (14, "todo:给妈妈买生日礼物", ["给妈妈买生日礼物"]),
    (45, "todo:把周报发给李娜", ["周五下午"]),
    (64, "todo:给小雨报名周末的游泳课", ["周六上午那个班"]),
    (68, "todo:call-the-bank", ["on Monday", "credit card annual fee"]),
    (78, "todo:write-the-lighthouse-runner-capacity-plan", ["by Friday"]),
    (105, "todo:交物业费", ["下周四之前"]),
    (177, "todo:book-the-hotel-for-the-beijing-trip", ["by Wednesday"]),
    (187, "todo:rotate-the-aurora-deploy-key", ["after the beta ships"]),
])
def test_todos_and_reminders(number: int, object_id: str, words: list[str]) -> None:
    proposal = propose(page_payload(number))
    body = objects_of(proposal)[object_id]["body"]
    assert all(w in body for w in words), body
    assert "open" in body


@pytest.mark.parametrize(("number", "object_id", "rule"), [
    (24, "schedule:team-standup", "every Monday at 10:00"),
    (26, "schedule:打羽毛球", "每周三晚上7点"),
    (43, "schedule:aurora-sprint-review", "every other Thursday at 16:00"),
    (53, "schedule:lighthouse-周会", "每周五下午4点"),
    (79, "schedule:11-with-mark", "every Tuesday at 14:00"),
    (109, "schedule:看牙医-10月20日", "10月20日下午3点"),
    (129, "schedule:lighthouse-cutover-2026-10-24", "2026-10-24 at 22:00"),
    (140, "schedule:dentist-appointment-2026-10-28", "2026-10-28 at 15:00"),
    (175, "schedule:flight-to-beijing-nov-3", "Nov 3 at 08:15"),
    (136, "schedule:带小雨去儿童医院体检-10月25日", "10月25日上午9点"),
])
def test_dated_and_recurring_appointments(number: int, object_id: str, rule: str) -> None:
    body = objects_of(propose(page_payload(number)))[object_id]["body"]
    assert rule in body, body


@pytest.mark.parametrize(("number", "object_id", "words"), [
    (4, "knowledge:haoyu-prefers-tea-over-coffee", ["tea over coffee", "afternoon"]),
    (5, "knowledge:浩宇对花生过敏", ["点外卖的时候"]),
    (16, "knowledge:妈妈喜欢丝巾", ["颜色偏素"]),
    (34, "knowledge:公司的-vpn-用-wireguard", ["office.conf"]),
    (51, "knowledge:aurora-figma-file", ["figma.example.com"]),
    (57, "knowledge:tom-is-based-in-berlin", ["late afternoon"]),
    (128, "knowledge:小雨的生日是3月14日", ["3月14日"]),
])
def test_remember_that_and_ji_zhu_make_knowledge(number: int, object_id: str,
                                                 words: list[str]) -> None:
    proposal = propose(page_payload(number))
    body = objects_of(proposal)[object_id]["body"]
    assert all(w in body for w in words), body
    assert quoted(page_payload(number), proposal, object_id)


def test_credentials_keep_purpose_and_place_never_a_value() -> None:
    nas = propose(page_payload(21))
    found = objects_of(nas)
    assert set(found) == {"credential:nas-的管理员密码", "credential:路由器的管理密码"}
    for cred in found.values():  # "也在同一个文件夹" resolves to the same place
        assert "Bitwarden 的 Home 文件夹" in cred["body"] and "不保存" in cred["body"]
    deploy = objects_of(propose(page_payload(89)))["credential:deploy-key-for-aurora"]
    assert "1Password, vault 'Work', item 'aurora-deploy'" in deploy["body"]
    token = objects_of(propose(page_payload(76)))
    assert "Vault at secret/ci/lighthouse" in token[
        "credential:lighthouse-runner-registration-token"]["body"]


def test_a_secret_value_is_never_stored_anywhere() -> None:
    text = ("The staging password is kept in Vault under "
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB. Remember that the wifi password is "
            "hunter2abc99.")
    proposal = propose(page_payload(text=text))
    assert proposal["objects"] == []
    assert proposal["events"][0]["outcome"] == "archive_only"
    assert "secret" in proposal["events"][0]["reason"]


def test_about_relations_to_people_named_on_the_page_or_related() -> None:
    proposal = propose(page_payload(107))
    assert {"src": "todo:整理报销单据", "label": "about", "dst": "person:赵敏"} in proposal[
        "relations"]
    related = [{"id": "person:li-na", "type": "person", "name": "李娜", "aliases": [],
                "summary": "", "body": "", "cues": [], "status": "active", "version": 1}]
    proposal = propose(page_payload(45, related=related))
    assert {"src": "todo:把周报发给李娜", "label": "about", "dst": "person:li-na"} in proposal[
        "relations"]


def test_objects_on_a_line_naming_a_related_project_are_members() -> None:
    related = [{"id": "project:aurora", "type": "project", "name": "Aurora", "aliases": [],
                "summary": "", "body": "", "cues": [], "status": "active", "version": 3}]
    proposal = propose(page_payload(36, related=related))
    assert {"src": "person:李娜", "label": "member_of", "dst": "project:aurora"} in proposal[
        "relations"]
    proposal = propose(page_payload(91, related=related))
    assert {"src": "todo:update-the-aurora-onboarding-doc", "label": "member_of",
            "dst": "project:aurora"} in proposal["relations"]
    proposal = propose(page_payload(103, related=related))  # "项目 Aurora": reuse, cite only
    assert proposal["objects"] == []
    assert {e["object_id"] for e in proposal["evidence"]} == {"project:aurora"}


@pytest.mark.parametrize("text", [
    "今天是我的生日", "It's a nice day", "周末是我的休息日，别安排工作", "我是说你应该早点睡",
    "I'm back from lunch.", "Today is my birthday!", "高兴是我的本能",
    "This is my favourite song", "The key is to stay calm.", "午饭吃什么好", "谢谢",
    # look-alikes seen in real conversations (LoCoMo, MemoryBank): reminiscence and advice
    "These figurines I bought yesterday remind me of family love.",
    "They motivate me and remind me why I'm doing this.",
    "Just remember that staying positive is very important.",
    "Remember that epic block in Game 7 of the '16 Finals?",
    "Your project is going to be great for them!",
])
def test_small_talk_and_look_alikes_are_archive_only(text: str) -> None:
    proposal = propose(page_payload(text=text))
    assert proposal["objects"] == [] and proposal["evidence"] == []
    assert proposal["events"][0]["outcome"] == "archive_only"


@pytest.mark.parametrize("number", [1, 3, 7, 9, 23, 47, 62, 63, 65, 85, 87, 122, 180, 220])
def test_sample_chatter_is_archive_only(number: int) -> None:
    proposal = propose(page_payload(number))
    assert proposal["events"][0]["outcome"] == "archive_only"


def test_tool_output_is_never_read_for_facts() -> None:
    text = "$ grep -rn TODO src/\nsrc/a.py:3: # TODO: remove this hack\n记住：别删"
    proposal = propose(page_payload(text=text, source="tool", kind="tool_result"))
    assert proposal["objects"] == []
    assert "tool output" in proposal["events"][0]["reason"]


# -- organize: existing objects, done markers, pages ------------------------------------------


def profile(object_id: str, name: str, body: str = "", aliases: list[str] | None = None,
            status: str = "active", **extra: Any) -> dict[str, Any]:
    return {"id": object_id, "type": object_id.split(":")[0], "name": name,
            "aliases": aliases or [], "summary": f"{name} summary", "body": body, "cues": [],
            "status": status, "version": 2, **extra}


def test_a_related_person_is_updated_not_duplicated() -> None:
    existing = profile("person:zhang-wei", "Zhang Wei", "- identity: backend engineer\n"
                       "- role: unknown\n- traits: careful reviewer\n- extra line kept",
                       aliases=["张伟"])
    proposal = propose(page_payload(38, related=[existing]))
    (obj,) = proposal["objects"]
    assert obj["id"] == "person:zhang-wei" and obj["name"] == "Zhang Wei"
    # the first word (people.first_name) and a Chinese name's pinyin (people.romanized)
    assert obj["aliases"] == ["张伟", "老张", "Zhang", "Lao Zhang"]
    assert "careful reviewer" in obj["body"] and "extra line kept" in obj["body"]
    assert obj["status"] == "active"
    proposal = propose(page_payload(37, related=[existing]))
    assert "- role: 负责后端" in objects_of(proposal)["person:zhang-wei"]["body"]


def test_an_unchanged_related_object_is_cited_not_rewritten() -> None:
    first = objects_of(propose(page_payload(38)))["person:张伟"]
    existing = {**first, "type": "person", "status": "active", "version": 1}
    proposal = propose(page_payload(38, related=[existing]))
    assert proposal["objects"] == []
    assert [e["object_id"] for e in proposal["evidence"]] == ["person:张伟"]
    assert proposal["events"][0]["outcome"] == "linked"


def test_an_existing_project_keeps_its_id_and_status() -> None:
    existing = profile("project:lighthouse-ci", "Lighthouse", "- scope: unknown\n- goal: unknown",
                       status="active")
    proposal = propose(page_payload(55, related=[existing]))
    project = objects_of(proposal)["project:lighthouse-ci"]
    assert project["status"] == "active" and "自建 runner" in project["body"]
    assert "project:lighthouse" not in objects_of(proposal)


def open_todo(object_id: str, name: str, item: str, lang: str = "en") -> dict[str, Any]:
    body = (f"- item: {item}\n- condition: unknown\n- state: open" if lang == "en"
            else f"- 事项：{item}\n- 条件：未知\n- 状态：open")
    return profile(object_id, name, body)


@pytest.mark.parametrize(("number", "todo"), [
    (59, open_todo("todo:weekly-report", "把周报发给李娜", "把周报发给李娜", "zh")),
    (72, open_todo("todo:call-the-bank", "call the bank", "call the bank")),
    (99, open_todo("todo:review-pr", "review Zhang Wei's PR for the sync API",
                   "review Zhang Wei's PR for the sync API")),
    (146, open_todo("todo:交物业费", "交物业费", "交物业费", "zh")),
    (198, open_todo("todo:renew-the-passport", "renew the passport", "renew the passport")),
    (206, open_todo("todo:给妈妈买生日礼物", "给妈妈买生日礼物", "给妈妈买生日礼物", "zh")),
    (204, open_todo("todo:去取干洗的衣服", "去取干洗的衣服", "去取干洗的衣服", "zh")),
])
def test_done_markers_close_a_related_todo(number: int, todo: dict[str, Any]) -> None:
    unrelated = open_todo("todo:water-plants", "water the plants", "water the plants")
    proposal = propose(page_payload(number, related=[todo, unrelated]))
    found = objects_of(proposal)
    # people the same text names in passing ("刘洋今天加班") are kept too, nothing else
    assert {k for k in found if not k.startswith("person:")} == {todo["id"]}
    body = found[todo["id"]]["body"]
    assert body.splitlines()[0] == todo["body"].splitlines()[0]  # the item line is kept
    assert "done" in body.splitlines()[2] and "open" not in body
    assert proposal["events"][0]["outcome"] == "linked"


def test_a_shared_short_alias_never_makes_two_appointments_one() -> None:
    first = objects_of(propose(page_payload(109)))["schedule:看牙医-10月20日"]
    assert first["aliases"][0] == "看牙医"  # its head ("牙医") may follow
    existing = {**first, "type": "schedule", "status": "active", "version": 1}
    proposal = propose(page_payload(text="10月28日下午3点看牙医，补牙。", related=[existing]))
    assert set(objects_of(proposal)) == {"schedule:看牙医-10月28日"}


def test_a_done_marker_without_its_todo_in_related_writes_nothing() -> None:
    proposal = propose(page_payload(59))
    assert proposal["objects"] == []
    assert proposal["events"][0]["outcome"] == "archive_only"
    assert "no open todo" in proposal["events"][0]["reason"]


def test_todos_get_a_short_alias_so_a_later_done_marker_finds_them() -> None:
    assert objects_of(propose(page_payload(45)))["todo:把周报发给李娜"]["aliases"] == ["周报"]
    assert objects_of(propose(page_payload(12)))["todo:renew-the-passport"]["aliases"] == [
        "passport"]


def test_a_long_event_page_by_page_with_absolute_evidence() -> None:
    text = event_text(40)
    bounds = [(0, 1000), (1000, 2000), (2000, len(text))]
    targets: list[str] = []
    progress = None
    for start, end in bounds:
        payload = page_payload(40, start=start, end=end, targets=list(targets), progress=progress)
        proposal = propose(payload)
        outcome = proposal["events"][0]
        for ev in proposal["evidence"]:
            assert text[ev["start"]:ev["end"]] == payload["page"]["text"][
                ev["start"] - start: ev["end"] - start]
            targets.append(ev["object_id"])
        if end < len(text):
            assert outcome["outcome"] == "continue" and str(start) in outcome["progress"]
            progress = outcome["progress"]
    assert outcome["outcome"] == "linked"
    assert "project:aurora" in targets and "schedule:sprint-review" in targets


def test_a_last_page_with_nothing_new_is_linked_when_the_event_has_targets() -> None:
    proposal = propose(page_payload(text="好的，就这样吧。", targets=["person:x"]))
    assert proposal["events"][0]["outcome"] == "linked" and proposal["objects"] == []


@pytest.mark.parametrize("page_chars", [300, 2_000, 8_000])
def test_every_sample_event_in_pages_keeps_the_rules(page_chars: int) -> None:
    for number in range(1, len(sample()) + 1):
        text, targets = event_text(number), list[str]()
        for start in range(0, len(text), page_chars):
            payload = page_payload(number, start=start, end=min(len(text), start + page_chars),
                                   targets=targets)
            proposal = propose(payload)
            targets = sorted(set(targets) | {e["object_id"] for e in proposal["evidence"]})


def test_at_most_32_objects_with_people_and_projects_first() -> None:
    lines = [f"TODO: water plant number {i} on the balcony" for i in range(40)]
    lines += ["Project Nimbus is the new storage backend.", "我是周杰，负责测试。"]
    proposal = propose(page_payload(text="\n".join(lines)))
    ids = [o["id"] for o in proposal["objects"]]
    assert len(ids) == 32 and ids[:2] == ["project:nimbus", "person:周杰"]
    assert len(proposal["relations"]) <= 64


# -- organize: corrections ---------------------------------------------------------------------


def correction(reply_args: dict[str, Any], field: str, error: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {
                    "name": "commit_organize",
                    "arguments": json.dumps(reply_args, ensure_ascii=False)}}]},
            {"role": "tool", "tool_call_id": "c1",
             "content": json.dumps({"error": f"{field}: {error}", "field": field})}]


def test_a_refused_object_is_dropped_with_its_evidence_and_relations() -> None:
    payload = page_payload(49)
    _, first = ask(payload, "commit_organize")
    index = [o["id"] for o in first["objects"]].index("project:aurora")
    _, second = ask(payload, "commit_organize", correction(first, f"objects.{index}.status",
                                                           "a new project must be candidate"))
    OrganizeProposal.model_validate(second)
    # "Haoyu said I could…" names Haoyu in passing: a person too
    assert [o["id"] for o in second["objects"]] == ["person:haoyu", "person:sarah-chen"]
    assert all(e["object_id"] != "project:aurora" for e in second["evidence"])
    assert second["relations"] == [] and second["events"][0]["outcome"] == "linked"


def test_an_unread_existing_object_keeps_its_evidence_but_is_not_rewritten() -> None:
    payload = page_payload(110)
    _, first = ask(payload, "commit_organize")
    index = [o["id"] for o in first["objects"]].index("schedule:看牙医-10月20日")
    _, second = ask(payload, "commit_organize", correction(
        first, f"objects.{index}.id", "schedule:看牙医-10月20日 exists and this batch has not "
                                      "read it: call read_object first, then write it whole"))
    assert "schedule:看牙医-10月20日" not in objects_of(second)
    assert "schedule:看牙医-10月20日" in {e["object_id"] for e in second["evidence"]}


def test_corrections_always_shrink_the_proposal_until_archive_only() -> None:
    payload = page_payload(107)
    _, args = ask(payload, "commit_organize")
    sizes = []
    for _ in range(6):
        _, args = ask(payload, "commit_organize", correction(args, "proposal", "too large"))
        OrganizeProposal.model_validate(args)
        sizes.append(len(args["objects"]) + len(args["relations"]) + len(args["evidence"]))
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] == 0
    assert args["events"][0]["outcome"] == "archive_only"


WORDS = st.sampled_from([
    "TODO: ", "待办：", "提醒我", "Remind me to ", "Remember that ", "记住：", "我是张伟", "，",
    "。", ". ", "\n", "王芳是我的牙医", "every Monday at 10:00 ", "10月20日下午3点看牙医",
    "project Nimbus", "灯塔项目 (Lighthouse)", "The deploy key for Nimbus lives in 1Password",
    "已经发了", "Done: ", "Mark Liu is my manager", "（大家叫他老张）", "call the bank", "a",
    "好", "😀", " ",
])


@settings(max_examples=200, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=40), st.integers(0, 3))
def test_any_text_in_any_page_gives_a_valid_proposal(words: list[str], cut: int) -> None:
    text = "".join(words)
    start = min(len(text) - 1, cut * len(text) // 4)
    propose(page_payload(text=text, start=start, end=len(text)))
    propose(page_payload(text=text, start=0, end=max(1, len(text) // 2)))
