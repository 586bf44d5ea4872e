"""Secret values a model slipped past the detector (short cue words, an aside between the cue and
its value, spaced-out or look-alike cue words, hex-encoded and spaced-out keys, dotted and
19-digit card numbers, a key split across two fields), and the everyday strings that must stay
clean: a bare hex string or digit run is a secret only next to a cue word or under a known key
prefix, so commit SHAs, UUIDs, order and tracking numbers, phone numbers and ISBNs pass."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from memvault import Memory
from memvault.secrets import values as secret_values
from memvault.secrets.detector import find_secret, mask_secrets, scan_secrets
from modes_support import add_archived, commit_organize, counts, errors_seen, make_worker

# Fake keys, built by concatenation so no scanner mistakes this file for a leak.
KEY_HEAD = "sk-proj-" + "Ab3dEf6h"
KEY_TAIL = "Ij9kLm2nOp5qRs8tUv1w"
HEX_KEY = ("sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t").encode().hex()
SHA = "3f2a9c1b7d4e5f60718293a4b5c6d7e8f9012345"
UNIONPAY = "6212345678901234569"  # 19 digits, Luhn-valid

MISSED = [
    "wifi pw: Sunshine2024",
    "passcode 7731",
    "pass: Rex1999!",
    "the password, by the way, is hunter2",
    "密 码 : abc12345",
    "p\u0430ssword: hunter2",  # Cyrillic a
    "p\u0430ssw\u043erd: hunter2",  # Cyrillic a and o
    "pa\u0301ssword: hunter2",  # a combining acute accent
    "p\u00e1ssword: hunter2",  # a precomposed á
    "pass\ufe0fword: hunter2",  # an emoji variation selector
    f"api key: {HEX_KEY}",
    f"blob {HEX_KEY} end",  # hex that decodes to a known key prefix
    f"token: {SHA}",
    f"api key {SHA}",
    f"the deploy token is {SHA}",
    f"secret={SHA}",
    "sk-proj-Ab3d Ef6h Ij9k Lm2n Op5q Rs8t",
    "key: sk-proj- Ab3dEf6h Ij9kLm2n Op5qRs8t",
    "ghp_ a1B2a1B2a1 B2a1B2a1B2 a1B2a1B2a1 B2a1B2",
    "4111.1111.1111.1111",
    "card 4111.1111.1111.1111 exp 09/28",
    f"银联卡号 {UNIONPAY}",
    f"UnionPay {UNIONPAY}",
    "UnionPay 6212 3456 7890 1234 569",
    "6212 3456 7890 1234 569",  # a 19-digit card grouped as cards are
    f"pay with {UNIONPAY} please",  # UnionPay's 62 prefix, Luhn-valid
]

# Everyday strings a model writes: none is a secret. (>= 50; a bare hex string or digit run
# counts only next to a cue word or under a known key prefix.)
CLEAN = [
    # commit SHAs and hashes in prose
    f"fixed in commit {SHA}",
    f"Reverted {SHA[:12]} after the outage.",
    f"merge {SHA} into main",
    "git show 3f2a9c1 for the diff",
    "sha1: da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "md5 d41d8cd98f00b204e9800998ecf8427e of the empty file",
    "docker pull nginx@sha256:2bcabc23b45489fb0885d69a06ba1d648aeda973fae7bb981bafbb884165e514",
    "the build artifact is 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "ETag: \"33a64df551425fcc55e4d42a148795d9f25f89d4\"",
    "PR #4821 landed as e83c5163316f89bfbde7d9ab23ca2e25604af290",
    # UUIDs and ids
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "trace 4bf92f3577b34da6a3ce929d0e0e4736 span 00f067aa0ba902b7",
    "Jira AURORA-1234 and ticket INC0012345",
    "object id person:qhy, event 48213",
    "session 550e8400e29b41d4a716446655440000 ended",
    # order, invoice and tracking numbers
    "Amazon order #112-7623481-2094423 arrives Tuesday",
    "订单号 202403151234567890 已发货",
    "订单号 2024031512345678901，19 位",
    "ticket 6212345678901234560 (not Luhn-valid)",
    "快递单号 SF1234567890123，顺丰",
    "UPS tracking 1Z999AA10123456784",
    "USPS 9400 1000 0000 0000 0000 00 delivered",
    "FedEx 7489 1234 5678 arrives Friday",
    "invoice INV-2026-000482, total 1,234.56 USD",
    "DHL waybill 1234567890 scanned at Leipzig",
    "booking reference K7Q2ZP, seat 14C",
    "boarding pass: 12A, gate 33",
    # phone numbers
    "call +1 415 555 2671 after 6",
    "+86 138 0013 8000 是他的手机",
    "手机 13800138000",
    "tel. 030 1234 5678 (Berlin office)",
    "(020) 7946 0958 is the London number",
    # ISBNs and other numbers
    "ISBN 978-0-306-40615-7",
    "ISBN-13: 9780306406157",
    "ISBN 0-306-40615-2",
    "IBAN DE89 3704 0044 0532 0130 00 for the refund",
    "version 4.11.1111 released 2026-10-06",
    "IP 192.168.100.200 and 10.0.0.1",
    "the pi digits 3.14159265358979323846",
    "population 1411750000 in 2023",
    "timestamp 1764000000000 ms",
    "Unix time 1700000000",
    "MAC 00:1A:2B:3C:4D:5E",
    "colour #1e90ff and #ff00ff",
    # cue words in ordinary prose
    "pass the salt, please",
    "bus pass: monthly",
    "pass: see 1Password",
    "pw: ask Victor",
    "the wifi pw is on the fridge",
    "the password, as usual, is in 1Password",
    "the password, by the way, is stored in Bitwarden",
    "passcode reset done",
    "passcode 12",
    "密 码 学 课 程",
    "密 码 : 见 Bitwarden",
    "sk-learn is the library we use",
    "ghp_ tokens are prefixed like this and rotate every 90 days",
    "the token is 32 bytes long",
    "card games on Friday: 4 players",
    "Дорогой друг, пароль от wifi на холодильнике",  # Cyrillic prose, no value
    "ραντεβού στις 5",  # Greek prose
    "café résumé naïve",
    f"👨\u200d👩\u200d👧 family photo {SHA[:7]}",
]


CUE_WORDS = ["password", "passwd", "passcode", "passphrase", "pass", "pwd", "pw", "pin code",
             "pin", "one-time code", "otp", "client_secret", "secret key", "secret_access_key",
             "secret", "access token", "auth token", "api token", "bearer token",
             "refresh token", "session token", "bot token", "registration token", "token",
             "api key", "access key id", "private key", "cvv2", "cvc", "security code",
             "PIN码", "密码", "口令", "密钥", "秘钥", "私钥", "验证码", "校验码", "令牌", "安全码",
             "授权码", "动态码", "PASSWORD", "Token", "密 码"]


@pytest.mark.parametrize("cue", CUE_WORDS)
def test_every_cue_word_is_seen_whole(cue: str) -> None:
    # The cue regex starts with a one-class lookahead of first chars: none may be missing.
    assert secret_values._CUE.match(cue).group() == cue


@pytest.mark.parametrize("text", MISSED)
def test_each_missed_secret_is_found(text: str) -> None:
    assert find_secret(text) is not None, text
    (first, *_) = scan_secrets(text)
    assert 0 <= first.start < first.end <= len(text)


def test_the_everyday_set_is_large() -> None:
    assert len(CLEAN) >= 50


@pytest.mark.parametrize("text", CLEAN)
def test_everyday_strings_are_not_secrets(text: str) -> None:
    assert find_secret(text) is None, (text, scan_secrets(text))


def test_masking_hides_the_hex_and_spaced_keys() -> None:
    out = mask_secrets(f"note {HEX_KEY} and sk-proj-Ab3d Ef6h Ij9k Lm2n Op5q Rs8t, ok")
    assert HEX_KEY not in out and "Ij9k" not in out and out.endswith(", ok")


# -- a private key masked whole ------------------------------------------------------------------
# A fake key body: base64 of fixed bytes, wrapped as PEM wraps it (64) and as OpenSSH does (70).
KEY_BODY = base64.b64encode(hashlib.sha512(b"memvault fake key").digest() * 18).decode()


def pem(label: str, width: int, eol: str = "\n") -> str:
    lines = [KEY_BODY[i:i + width] for i in range(0, len(KEY_BODY), width)]
    return f"-----BEGIN {label}-----{eol}" + eol.join(lines) + f"{eol}-----END {label}-----{eol}"


def body_shown(text: str) -> list[str]:
    """The 10-char pieces of the key's body that `text` still shows."""
    return [KEY_BODY[i:i + 10] for i in range(0, len(KEY_BODY) - 10, 10)
            if KEY_BODY[i:i + 10] in text]


SERVICE_ACCOUNT = json.dumps({"type": "service_account", "project_id": "demo-123",
                              "private_key_id": "0a1b2c", "private_key": pem("PRIVATE KEY", 64),
                              "client_email": "bot@demo-123.iam.gserviceaccount.com"}, indent=2)
KEY_FORMS = {
    "pasted PEM": f"my key:\n{pem('RSA PRIVATE KEY', 64)}thanks",
    "pasted OpenSSH": f"ssh key\n{pem('OPENSSH PRIVATE KEY', 70)}",
    "CRLF": pem("EC PRIVATE KEY", 64, "\r\n"),
    "service account JSON": SERVICE_ACCOUNT,
    "JSON on one line": json.dumps({"private_key": pem("PRIVATE KEY", 64)}),
    "JSON with CRLF": json.dumps({"key": pem("PRIVATE KEY", 64, "\r\n")}),
    "JSON OpenSSH": json.dumps({"k": pem("OPENSSH PRIVATE KEY", 70)}),
    "JSON, escaped slashes": json.dumps({"k": pem("PRIVATE KEY", 64)}).replace("/", "\\/"),
    "no END line": f"{pem('PRIVATE KEY', 64).split('-----END')[0]}",
    "JSON, no END line": json.dumps({"k": pem("PRIVATE KEY", 64).split("-----END")[0]}),
}


@pytest.mark.parametrize("form", sorted(KEY_FORMS))
def test_a_private_key_is_masked_whole_pasted_or_inside_a_json_string(form: str) -> None:
    text = KEY_FORMS[form]
    masked = mask_secrets(text)
    assert body_shown(masked) == [], masked
    assert "[secret: a private key]" in masked
    assert "-----END" not in masked, masked


def test_the_words_around_a_masked_key_stay() -> None:
    masked = mask_secrets(KEY_FORMS["pasted PEM"])
    assert masked == "my key:\n[secret: a private key]\nthanks"
    masked = mask_secrets(SERVICE_ACCOUNT)
    assert '"client_email": "bot@demo-123.iam.gserviceaccount.com"' in masked
    assert '"project_id": "demo-123"' in masked
    cut = mask_secrets(pem("PRIVATE KEY", 64).split("-----END")[0] + "then more words")
    assert cut.endswith("then more words")


def test_a_key_in_a_json_string_is_masked_in_event_and_find(mem: Memory) -> None:
    event = mem.append_event(f"here is the service account:\n{SERVICE_ACCOUNT}")
    page = mem.read(event)
    assert body_shown(page["text"]) == [] and "-----END" not in page["text"]
    found = json.dumps(mem.find("service account private_key"), ensure_ascii=False)
    assert body_shown(found) == [] and "-----END" not in found


def test_a_key_body_without_its_begin_line_is_masked_in_a_json_string() -> None:
    body = "\n".join(KEY_BODY[i:i + 64] for i in range(0, len(KEY_BODY), 64))
    masked = mask_secrets(json.dumps({"note": "the body: " + body}))
    assert body_shown(masked) == [], masked


# -- HTTP Basic credentials -----------------------------------------------------------------------
BASIC = base64.b64encode(b"alice:" + b"Tr0ub4dor-and-3").decode()
BASIC_CASES = [
    f"Authorization: Basic {BASIC}",
    f"curl -H 'authorization: basic {BASIC}' https://example.com",
    f'{{"headers": {{"Authorization": "Basic {BASIC}"}}}}',
    f"AUTHORIZATION: BASIC {BASIC.rstrip('=')}",
]
BASIC_PROSE = ["Basic English is basic", "basic income now", "BASIC programming abcd",
               "basic auth is enabled on the proxy", "Basic YWJjZA== is base64 of abcd",
               "Basic Idea Tome Lime"]


@pytest.mark.parametrize("text", BASIC_CASES)
def test_http_basic_credentials_are_masked(text: str) -> None:
    masked = mask_secrets(text)
    assert BASIC.rstrip("=") not in masked and "[secret: HTTP Basic credentials]" in masked


@pytest.mark.parametrize("text", BASIC_PROSE)
def test_the_word_basic_in_prose_is_not_a_secret(text: str) -> None:
    assert find_secret(text) is None, scan_secrets(text)


# -- a key split across two fields of one object ------------------------------------------------

def test_a_key_split_across_two_fields_is_refused(mem: Memory) -> None:
    (event,) = add_archived(mem, "Victor set up the billing account.")
    mem.organize()
    before = counts(mem.conn)
    split = {"id": "credential:billing", "name": "billing key",
             "summary": f"the key starts {KEY_HEAD}", "body": f"{KEY_TAIL} is the rest"}
    cite = [{"object_id": "credential:billing", "event_id": event, "start": 0, "end": 6}]
    worker, provider = make_worker(mem, [commit_organize(event, "linked", objects=[split],
                                                         evidence=cite)] * 5)
    result = worker.tick()
    assert result.action == "failed"
    errors = errors_seen(provider)
    assert errors and errors[0]["field"] == "objects.0"
    assert "split across its fields" in errors[0]["error"]
    assert KEY_TAIL not in json.dumps(errors) and "Ab3dEf6h" not in json.dumps(errors)
    assert counts(mem.conn)["objects"] == before["objects"]


def test_fields_that_merely_follow_each_other_are_not_a_split_key(mem: Memory) -> None:
    (event,) = add_archived(mem, "Victor set up the billing account.")
    mem.organize()
    fine = {"id": "credential:billing", "name": "billing key sk-",
            "summary": "Stripe live key for billing", "body": f"in 1Password; commit {SHA}"}
    cite = [{"object_id": "credential:billing", "event_id": event, "start": 0, "end": 6}]
    worker, provider = make_worker(mem, [commit_organize(event, "linked", objects=[fine],
                                                         evidence=cite)])
    assert worker.tick().action == "committed"
    assert errors_seen(provider) == []
