"""Secrets (issue "Trust", item 4): the widened detector, applied to every text a proposal
writes (the refusal names the real field and the kind, never the value, and nothing is written),
and logs that never echo a refused value."""

from __future__ import annotations

import io
import json
import logging
from collections import Counter
from typing import Any

import pytest
from memvault import Memory
from memvault.base.errors import InputError
from memvault.jobs.worker import TickResult
from memvault.objects import proposals
from memvault.objects.corefiles import write_core_file
from memvault.secrets import detector as secrets
from memvault.secrets.detector import find_secret, redact_secrets, scan_secrets
from memvault.service.host import JsonLinesFormatter, TickLogger
from memvault.store.connection import write
from modes_support import (
    add_archived,
    batch_row,
    commit_organize,
    compact_step,
    counts,
    errors_seen,
    make_worker,
    obj,
    put_object,
    review_step,
)
from scripted_provider import call

# Fake keys, built by concatenation so no scanner mistakes this file for a leak.
OPENAI = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
PEM_BODY = "\n".join(["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"] * 3)

POSITIVES = [
    # the examples
    ("the db is postgres://user:pass@host/app", "a URL with a password"),
    (f"billing key {STRIPE}", "a Stripe secret key"),
    ("password: hunter2", "an assigned secret value"),
    ("the wifi password is correcthorsebatterystaple", "an assigned secret value"),
    ("the wifi password is correcthorsebatterystaple. We met at noon.",
     "an assigned secret value"),
    ("root 密码 = 19900101", "an assigned secret value"),
    ("PIN: 482913", "an assigned secret value"),
    ("token 0123456789abcdef0123456789abcdef01234567", "an assigned secret value"),
    ("card 4111 1111 1111 1111 CVV 123", "a payment card number"),
    ("卡号 4242-4242-4242-4242 有效期 09/28", "a payment card number"),
    ("sk-proj-Ab3dEf6h\u200bIj9kLm2nOp5qRs8t", "an OpenAI-style API key"),  # zero-width split
    ("sk-proj-Ab3dEf6h\u00adIj9kLm2nOp5qRs8t", "an OpenAI-style API key"),  # soft hyphen
    (PEM_BODY, "a private key body"),
    ("blob " + "Zm9vYmFyQmF6" * 20, "a private key body"),
    # cue words and separators
    ("wifi password for the office: Tr0ub4dor", "an assigned secret value"),
    ("password for root is hunter2", "an assigned secret value"),
    ("密码是 abc12345", "an assigned secret value"),
    ("密码：hunter2", "an assigned secret value"),
    ("口令为 Qwerty99", "an assigned secret value"),
    ("验证码482913", "an assigned secret value"),
    ("PIN码：4829", "an assigned secret value"),
    ("DB_PASSWORD=s3cr3tvalue", "an assigned secret value"),
    ('{"api_key": "abcd1234efgh"}', "an assigned secret value"),
    ("passcode is: 7391", "an assigned secret value"),
    ("CVV 123", "an assigned secret value"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "an assigned secret value"),
    ("ＰＡＳＳＷＯＲＤ：ｈｕｎｔｅｒ２", "an assigned secret value"),  # fullwidth forms
    # each known prefix
    (OPENAI, "an OpenAI-style API key"),
    ("sk-ant-api03-" + "Ab3dEf6hIj9kLm2nOp5qRs8t", "an Anthropic API key"),
    ("sk_test_" + "4eC39HqLyjWDarjtT1zdp7dc", "a Stripe secret key"),
    ("rk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "a Stripe secret key"),
    ("whsec_" + "4eC39HqLyjWDarjtT1zdp7dc", "a Stripe webhook secret"),
    ("ghp_" + "a1B2" * 9, "a GitHub token"),
    ("gho_" + "a1B2" * 9, "a GitHub token"),
    ("github_pat_" + "11ABCDEFG0" * 5, "a GitHub token"),
    ("glpat-" + "xY3" * 7, "a GitLab token"),
    ("hf_" + "aB3" * 11, "a Hugging Face token"),
    ("npm_" + "aB3" * 12, "an npm token"),
    ("pypi-AgEIcHlwaS5vcmc" + "aB3" * 20, "a PyPI token"),
    ("AKIA" + "ABCDEFGHIJKLMNOP", "an AWS access key"),
    ("AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "a Google API key"),
    ("xoxb-" + "1234567890-abcdefghij", "a Slack token"),
    ("xoxp-" + "1234567890-abcdefghij", "a Slack token"),
    ("SG." + "aB3dE6gH9jK2mN5pQ8sT1v" + "." + "aB3dE6gH9jK2mN5pQ8sT1vaB3", "a SendGrid key"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "a JSON web token"),
    ("Authorization: Bearer " + "abc123" * 4, "a bearer token"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----", "a private key"),
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----", "a private key"),
    ("here 1aBcD3fGhIjKlMnOpQrStUvWxYz0123456789 is it", "a long random token"),
]

NEGATIVES = [
    "I forgot my password yesterday",
    "the PIN pad is broken",
    "密码学课程",
    "我在上密码学课程，老师讲了 RSA。",
    "token economy",
    "We discussed the token economy and NFT hype.",
    "The password is stored in 1Password under Work.",
    "Password: stored in Bitwarden",
    "Token: see Vault at secret/ci/lighthouse",
    "The Lighthouse runner registration token is kept in Vault at secret/ci/lighthouse.",
    "NAS 的管理员密码存在 Bitwarden 的 Home 文件夹里，具体密码别问我要。",
    "密码是什么",
    "密码：见 Bitwarden",
    "验证码已发送到手机",
    "令牌桶算法用于限流",
    "私钥保存在 YubiKey 上",
    "My password was changed last week.",
    "Remember the PIN is 4 digits.",
    "The token is 32 bytes long.",
    "The secret to success is consistency.",
    "password policy: 12 chars minimum",
    "His password hint: first pet.",
    "I set the pin: important for the Atlas doc.",
    "access token expires in 3600 seconds",
    "Password reset link: https://example.com/reset?id=42",
    "Token endpoint: https://auth.example.com/oauth/token",
    "https://docs.google.com/document/d/1aBcD3fGhIjKlMnOpQrStUvWxYz0123456789/edit",
    "commit 3f9a2b1c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f90 fixed it",
    "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "UUID 123e4567-e89b-12d3-a456-426614174000 is the request id.",
    "Call me at 13812345678 or +86 138 1234 5678.",
    "order 1764000000000 shipped; invoice 2026-10-06-00042 total 1,234.56 USD",
    "4111111111111112 is not a card number",  # fails Luhn
    "MemvaultOrganizeModeTestCase2024Version",
    'api_key_env = "OPENAI_API_KEY"',
    "the token_env variable names MEMVAULT_TOKEN",
    "the wifi password is complicated",
    "the deploy key lives in 1Password, vault 'Work', item 'aurora-deploy'",
    "credential:github-token",
]


@pytest.mark.parametrize(("text", "kind"), POSITIVES)
def test_the_detector_finds_each_kind(text: str, kind: str) -> None:
    assert find_secret(text) == kind
    (first, *_) = scan_secrets(text)
    assert first.kind == kind and 0 <= first.start < first.end <= len(text)


@pytest.mark.parametrize("text", NEGATIVES)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert find_secret(text) is None, text


def test_the_bundled_sample_holds_no_secret() -> None:
    from importlib import resources

    data = resources.files("memvault") / "data" / "sample_events.jsonl"
    lines = data.read_text(encoding="utf-8").splitlines()
    assert len(lines) > 100
    assert [find_secret(json.loads(line)["text"]) for line in lines] == [None] * len(lines)


def test_redaction_replaces_the_value_in_the_original_text() -> None:
    text = "note: password: hunter2 and sk-proj-Ab3dEf6h\u200bIj9kLm2nOp5qRs8t, 好的"
    out = redact_secrets(text)
    assert "hunter2" not in out and "Ab3dEf6h" not in out and "Ij9kLm" not in out
    assert out.startswith("note: [redacted: an assigned secret value] and [redacted: ")
    assert out.endswith(", 好的")
    assert redact_secrets("nothing to hide, 密码学课程") == "nothing to hide, 密码学课程"


# -- the commit path ----------------------------------------------------------------------------
def evidence(object_id: str, event_id: int) -> list[dict[str, Any]]:
    return [{"object_id": object_id, "event_id": event_id, "start": 0, "end": 5}]


@pytest.fixture
def event(mem: Memory) -> int:
    (event_id,) = add_archived(mem, "Victor is the new on-call lead for payments.")
    mem.organize()
    return event_id


def refused_until_failed(mem: Memory, proposal: Any) -> tuple[Any, list[dict[str, Any]]]:
    """Send the same proposal past the correction limit; return the tick and the corrections."""
    worker, provider = make_worker(mem, [proposal] * 4)
    result = worker.tick()
    return result, errors_seen(provider)


def assert_refused(errors: list[dict[str, Any]], field: str, kind: str, value: str) -> None:
    assert errors, "no correction was sent"
    for error in errors:
        assert error["field"] == field
        assert kind in error["error"] and "never it" in error["error"]
        assert value not in json.dumps(error, ensure_ascii=False)


ORGANIZE_CASES = [
    ("objects.2.aliases.1", lambda e: {"objects": [
        obj("person:victor", "Victor"), obj("project:payments", "Payments"),
        obj("credential:deploy", "deploy key", aliases=["dk", f"key {OPENAI}"])]}),
    ("objects.0.id", lambda e: {"objects": [obj(f"credential:{OPENAI}", "deploy key")]}),
    ("objects.0.name", lambda e: {"objects": [obj("credential:wifi", "password: hunter2")]}),
    ("objects.0.summary", lambda e: {"objects": [
        obj("credential:db", "db", summary="postgres://user:pass@host/app")]}),
    ("objects.0.cues.0", lambda e: {"objects": [
        obj("credential:card", "card", cues=["card 4111 1111 1111 1111 CVV 123"])]}),
    ("objects.0.body", lambda e: {"objects": [
        obj("credential:ssh", "ssh key", body=f"the key body:\n{PEM_BODY}\n")]}),
    ("core_files.0.content", lambda e: {"core_files": [
        {"name": "USER.md", "content": f"# User\nVictor's billing key is {STRIPE}\n"}]}),
    ("relations.0.src", lambda e: {"objects": [obj("person:victor", "Victor")],
                                   "relations": [{"src": f"credential:{OPENAI}",
                                                  "label": "about", "dst": "person:victor"}]}),
    ("evidence.1.object_id", lambda e: {"objects": [obj("person:victor", "Victor")],
                                        "evidence": evidence("person:victor", e)
                                        + evidence(f"credential:{OPENAI}", e)}),
]


@pytest.mark.parametrize(("field", "build"), ORGANIZE_CASES, ids=[c[0] for c in ORGANIZE_CASES])
def test_organize_refuses_a_secret_in_any_field_and_writes_nothing(
    mem: Memory, event: int, field: str, build: Any,
) -> None:
    before = counts(mem.conn)
    args = build(event)
    args.setdefault("evidence", evidence("person:victor", event)
                    if any(o["id"] == "person:victor" for o in args.get("objects", [])) else [])
    result, errors = refused_until_failed(mem, commit_organize(event, "linked", **args))
    assert result.action == "failed"
    text = json.dumps(args, ensure_ascii=False)
    value = next(v for v in (OPENAI, STRIPE, "hunter2", "user:pass", "4111 1111", "MIIEvQIB")
                 if v in text)
    assert_refused(errors, field, "looks like", value)
    after = counts(mem.conn)
    assert {k: after[k] for k in ("objects", "object_versions", "relations", "evidence",
                                  "core_files", "receipts")} == {
        k: before[k] for k in ("objects", "object_versions", "relations", "evidence",
                               "core_files", "receipts")}
    assert mem.read_core_file("USER.md") is None
    # Neither the stored failure nor the tick's error repeats the value.
    assert value not in (result.error or "")
    assert value not in json.dumps(batch_row(mem.conn, result.batch_id), default=str)


def test_a_refused_core_file_can_be_corrected(mem: Memory, event: int) -> None:
    bad = {"name": "USER.md", "content": f"Victor's key: {STRIPE}"}
    good = {"name": "USER.md", "content": "Victor's billing key lives in 1Password (Ops)."}
    worker, provider = make_worker(mem, [commit_organize(event, "linked", core_files=[bad]),
                                         commit_organize(event, "linked", core_files=[good])])
    assert worker.tick().action == "committed"
    assert_refused(errors_seen(provider), "core_files.0.content", "a Stripe secret key", STRIPE)
    assert mem.read_core_file("USER.md")["content"] == good["content"]
    stored = mem.conn.execute("SELECT group_concat(content) FROM core_files").fetchone()[0]
    assert STRIPE not in stored


def test_a_secret_in_the_progress_of_a_disposition_is_refused(mem: Memory) -> None:
    (event_id,) = add_archived(mem, ("Ursula keeps the release calendar. " * 300)[:10_000])
    mem.organize()
    result, errors = refused_until_failed(mem, commit_organize(
        event_id, "continue", progress="page 1 read; the PIN: 482913 was mentioned"))
    assert result.action == "failed"
    assert_refused(errors, "events.0.progress", "an assigned secret value", "482913")
    assert mem.conn.execute("SELECT progress FROM archive_queue WHERE event_id = ?",
                            (event_id,)).fetchone()[0] is None


def test_a_field_name_holding_a_key_is_refused_without_echoing_it(
    mem: Memory, event: int,
) -> None:
    proposal = call("commit_organize", {OPENAI: 1, "events": [
        {"event_id": event, "outcome": "archive_only", "reason": "nothing"}]})
    result, errors = refused_until_failed(mem, proposal)
    assert result.action == "failed" and errors
    assert all(OPENAI not in json.dumps(e) for e in errors)
    assert "looks like" in errors[0]["error"]


def test_compaction_refuses_a_summary_with_a_secret(mem: Memory) -> None:
    for i in range(3):
        mem.append_event(f"message {i}: the wifi password is correcthorsebatterystaple, ok?")
    mem.compact()
    before = counts(mem.conn)
    summary = "wifi password is correcthorsebatterystaple"
    worker, provider = make_worker(mem, [compact_step(summary)] * 4)
    result = worker.tick()
    assert result.action == "failed"
    assert_refused(errors_seen(provider), "summary", "an assigned secret value",
                   "correcthorse")
    assert counts(mem.conn) == before  # no head, every node still active


def test_compaction_commits_once_the_secret_is_left_out(mem: Memory) -> None:
    for i in range(3):
        mem.append_event(f"message {i}: the wifi password is correcthorsebatterystaple, ok?")
    mem.compact()
    worker, provider = make_worker(mem, [compact_step("wifi password: correcthorse99"),
                                         compact_step("the wifi password was shared")])
    assert worker.tick().action == "committed"
    assert [e["field"] for e in errors_seen(provider)] == ["summary"]


def test_deep_refuses_an_edit_with_a_secret(mem: Memory) -> None:
    put_object(mem, "credential:wifi", "wifi", body="The wifi password is on the fridge.")
    mem.organize(mode="deep")
    edit = obj("credential:wifi", "wifi", aliases=["home wifi"],
               body="The wifi password is correcthorsebatterystaple")
    before = counts(mem.conn)
    worker, provider = make_worker(mem, [review_step(lambda d: {"objects": [edit]})] * 4)
    result = worker.tick()
    assert result.action == "failed"
    assert_refused(errors_seen(provider), "objects.0.body", "an assigned secret value",
                   "correcthorse")
    after = counts(mem.conn)
    assert {**after, "deep_snapshot": 0} == {**before, "deep_snapshot": 0}  # taken at claim
    assert mem.read_object("credential:wifi")["object"]["body"] == (
        "The wifi password is on the fridge.")


def test_deep_refuses_a_core_file_with_a_key(mem: Memory) -> None:
    put_object(mem, "person:victor", "Victor")
    mem.organize(mode="deep")
    core = {"name": "AGENTS.md", "content": f"Use {OPENAI} for the API."}
    result, errors = refused_until_failed(
        mem, review_step(lambda d: {"core_files": [core]}))
    assert result.action == "failed"
    assert_refused(errors, "core_files.0.content", "an OpenAI-style API key", OPENAI)
    assert mem.read_core_file("AGENTS.md") is None


def test_a_model_origin_core_file_write_is_refused_but_a_persons_is_kept(mem: Memory) -> None:
    now = mem.clock.now()
    with write(mem.conn), pytest.raises(InputError) as caught:
        write_core_file(mem.conn, "USER.md", f"key {STRIPE}", "organize", now)
    assert STRIPE not in str(caught.value) and "Stripe" in str(caught.value)
    with write(mem.conn):
        assert write_core_file(mem.conn, "USER.md", f"key {STRIPE}", "hand", now) == 1


# -- logs ---------------------------------------------------------------------------------------
def log_lines(emit: Any) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLinesFormatter())
    logger = logging.getLogger("memvault.service")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        emit()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    return stream.getvalue()


def test_a_failed_batch_that_quotes_a_key_is_logged_redacted(mem: Memory, event: int) -> None:
    # A tool name is quoted back in the batch's error; the log must not carry it.
    worker, _ = make_worker(mem, [call(OPENAI, {})])
    result = worker.tick()
    assert result.action == "failed" and OPENAI in (result.error or "")
    out = log_lines(lambda: TickLogger()(result))
    line = json.loads(out)
    assert line["event"] == "batch_failed" and OPENAI not in out
    assert "[redacted: an OpenAI-style API key]" in line["error"]


def test_a_batch_failed_by_secret_corrections_logs_no_value(mem: Memory, event: int) -> None:
    bad = obj("credential:wifi", "wifi", body="password: hunter2")
    result, _ = refused_until_failed(mem, commit_organize(
        event, "linked", objects=[bad], evidence=evidence("credential:wifi", event)))
    out = log_lines(lambda: TickLogger()(result))
    assert "hunter2" not in out and "objects.0.body" in out


def test_every_log_field_and_traceback_is_redacted() -> None:
    def emit() -> None:
        try:
            raise ValueError(f"bad id credential:{OPENAI}")
        except ValueError:
            logging.getLogger("memvault.service").error(
                "tool_refused %s", STRIPE, exc_info=True,
                extra={"fields": {"error": f"not an object id: {OPENAI}",
                                  "nested": {"list": ["password: hunter2"]}, "n": 3}})

    out = log_lines(emit)
    assert OPENAI not in out and STRIPE not in out and "hunter2" not in out
    line = json.loads(out)
    assert line["n"] == 3 and line["error"].startswith("not an object id: [redacted")


def test_tick_results_without_secrets_log_unchanged() -> None:
    result = TickResult("failed", 1, 2, error="provider scripted failed: model down")
    line = json.loads(log_lines(lambda: TickLogger()(result)))
    assert line["error"] == "provider scripted failed: model down"


def test_a_failed_batch_stores_its_error_redacted(mem: Memory) -> None:
    """status and check show a batch's last error: a model that names a key as its tool must
    not get the key stored there."""
    (event_id,) = add_archived(mem, "Victor is the new on-call lead for payments.")
    mem.organize()
    worker, _ = make_worker(mem, [call(f"use {OPENAI}", {})])
    assert worker.tick().action in ("failed", "terminal")
    (error,) = mem.conn.execute("SELECT error FROM batches").fetchone()
    assert error and OPENAI not in error and "redacted" in error


# -- each text scanned once per commit, a faster detector that finds the same -----------


def test_each_text_of_an_organize_commit_is_scanned_once(
    mem: Memory, event: int, monkeypatch: pytest.MonkeyPatch,
) -> None:
    scanned: Counter[str] = Counter()
    real = secrets.normalise

    def counted(text: str) -> Any:
        scanned[text] += 1
        return real(text)

    monkeypatch.setattr(secrets, "normalise", counted)
    core = "# User\nVictor leads payments on-call; his deploy key lives in 1Password (Ops).\n"
    proposal = commit_organize(
        event, "linked",
        objects=[obj("person:victor", "Victor", aliases=["Vic"], cues=["who is on call?"]),
                 obj("project:payments", "Payments")],
        relations=[{"src": "person:victor", "label": "member_of", "dst": "project:payments"}],
        evidence=evidence("person:victor", event) + evidence("project:payments", event),
        core_files=[{"name": "USER.md", "content": core}])
    worker, _ = make_worker(mem, [proposal])
    assert worker.tick().action == "committed"
    # Every text is still checked (the core file too), none twice: before the fix the ids were
    # scanned once per field naming them, the core file again when written, and the schema's
    # own field names (id, name ...) once per object.
    for text in ("person:victor", "Victor", "Vic", "who is on call?", "Payments", core):
        assert scanned[text] >= 1, text
    assert {t: n for t, n in scanned.items() if n > 1} == {}
    assert mem.read_core_file("USER.md")["content"] == core


def test_a_secret_repeated_in_a_write_is_named_at_its_first_field(
    mem: Memory, event: int,
) -> None:
    key = f"credential:{OPENAI}"
    args = {"objects": [obj("person:victor", "Victor", aliases=["Vic", key])],
            "relations": [{"src": key, "label": "about", "dst": "person:victor"}],
            "evidence": evidence("person:victor", event) + evidence(key, event)}
    result, errors = refused_until_failed(mem, commit_organize(event, "linked", **args))
    assert result.action == "failed"
    assert_refused(errors, "objects.0.aliases.1", "an OpenAI-style API key", OPENAI)


def test_a_scan_scope_remembers_only_inside_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    scanned: list[str] = []
    real = secrets.normalise
    monkeypatch.setattr(secrets, "normalise", lambda t: (scanned.append(t), real(t))[1])
    with secrets.scan_once():
        assert find_secret(f"key {OPENAI}") == find_secret(f"key {OPENAI}")
        assert find_secret("plain words") is None and find_secret("plain words") is None
    assert find_secret("plain words") is None
    assert scanned == [f"key {OPENAI}", "plain words", "plain words"]


def test_no_field_name_of_the_schema_looks_like_a_secret() -> None:
    # The proposal models skip scanning their own declared field names: this holds only while
    # none of them is secret-looking.
    strict = proposals.Strict
    models = [m for m in vars(proposals).values()
              if isinstance(m, type) and issubclass(m, strict) and m is not strict]
    names = {name for m in models for name in m.model_fields}
    assert len(models) >= 9 and {"id", "content", "legacy_label"} <= names
    assert [n for n in names if find_secret(n)] == []


NEEDLE_TEXTS = [*(t for t, _ in POSITIVES), *NEGATIVES, "", "sk-ant-", "xsk-ant-x sk-",
                "glpat-", "ghp_gho_ghu_ghs_ghr_", "sk_live_ rk_test_", "AKIASIAGPAIDAROA",
                "ya29.ya29.", "whsec_whsec", "eyJeyJ", "a:AA:AA", "hooks.slack SG. xox shp _v1_",
                "-----BEGIN RSA PRIVATE KEY-----", "npm_hf_pypi-AgE://AIza"]


def test_needles_in_finds_every_needle_the_text_holds() -> None:
    # The prefixed patterns run when one of their needles is in the text: every needle found,
    # overlapping ones (sk- inside sk-ant-) included.
    needles = {n for _, _, ns in secrets._PREFIXED for n in ns}
    for text in NEEDLE_TEXTS:
        assert secrets.needles_in(text) == {n for n in needles if n in text}, text


@pytest.mark.parametrize("text", [
    "密码：ｈｕｎｔｅｒ２，好吗？", "pаsswоrd: hunter2", "ＡＢＣＤＥＦＧＨＩＪＫＬＭＮＯＰＱＲＳＴ",
    "中文，英文？再见！", "zero\u200bwidth and pássword", "plain ascii", "",
])
def test_normalise_reads_each_char_as_normalising_it_alone_would(text: str) -> None:
    # normalise remembers the chars it has seen and replaces a few changed ones one by one:
    # whatever the path, the result is the text normalised char by char
    for _ in range(2):  # a second time, from what it remembers
        norm, where = secrets.normalise(text)
        assert norm == "".join(secrets._normal_char(ch) for ch in text)
        if where is not None:
            assert [text[i] for i in where[:-1]] == [
                ch for ch in text for _ in secrets._normal_char(ch)]
