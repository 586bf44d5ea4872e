"""Detecting secret values, so a credential object keeps only purpose and where a secret lives.

Text is normalised first (NFKC, format characters such as zero-width spaces and soft hyphens
dropped), so a key split by an invisible character or written in fullwidth forms is still
seen. Then, in order: private keys (with or without their BEGIN line), well-known key prefixes,
URLs carrying a password, payment card numbers (Luhn-valid, with a card context or card-style
grouping), a cue word (password, PIN, token, 密码, 验证码 ...) followed by an assignment-like
value, and long opaque random-looking tokens (by character classes and Shannon entropy).

Ordinary prose must pass: a cue word counts only when an assignment follows it ("password:
hunter2", "the wifi password is correcthorsebatterystaple", "PIN 482913"), never when ordinary
words do ("I forgot my password yesterday", "the PIN pad is broken", "密码学课程"); hex hashes,
URLs without credentials and identifiers do not look random enough to count.
A finding names the kind of secret only: callers must never echo the value.
Speed without weakening: the key-prefix patterns run only when one of their needles occurs
(found by one regex pass), and inside scan_once() (one commit) each distinct text is scanned
once, however many fields or checks name it.
"""

from __future__ import annotations

import bisect
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache

from ..base.errors import FieldError


@dataclass(frozen=True)
class SecretHit:
    """One secret-looking value: its kind and its span [start, end) in the original text."""

    kind: str
    start: int
    end: int


# -- normalising --------------------------------------------------------------------------------
@lru_cache(maxsize=4_096)
def _normal_char(ch: str) -> str:
    # Format characters (Cf: zero-width space/joiners, word joiner, BOM, soft hyphen, bidi
    # controls) are invisible: a key split by one must still be seen whole.
    if unicodedata.category(ch) == "Cf":
        return ""
    return unicodedata.normalize("NFKC", ch)


def normalise(text: str) -> tuple[str, list[int] | None]:
    """The text the patterns read, and for each of its chars the index in `text` it came
    from (None when nothing changed). Normalised char by char so spans map back exactly."""
    if text.isascii():
        return text, None
    # Most non-ASCII text (Chinese prose) is already normal: one test per distinct char then,
    # not a Python step per char.
    if all(_normal_char(ch) == ch for ch in set(text) if not ch.isascii()):
        return text, None
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        norm = ch if ch.isascii() else _normal_char(ch)
        out.append(norm)
        where.extend([i] * len(norm))
    where.append(len(text))
    return "".join(out), where


# -- well-known shapes --------------------------------------------------------------------------
_B64 = "A-Za-z0-9+/"
# (kind, pattern, needles): a pattern runs only when one of its needles is in the text (a
# substring test costs far less than a regex pass); no needles: it always runs.
_PREFIXED: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    ("a private key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----"),
     ("PRIVATE KEY",)),
    ("an Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"), ("sk-ant-",)),
    ("an OpenAI-style API key",
     re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{20,}"),
     ("sk-",)),
    ("a Stripe secret key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}"),
     ("k_live_", "k_test_")),
    ("a Stripe webhook secret", re.compile(r"\bwhsec_[A-Za-z0-9]{20,}"), ("whsec_",)),
    ("a GitHub token",
     re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    ("a GitLab token", re.compile(r"\bgl(?:pat|dt|rt|ptt|cbt)-[A-Za-z0-9_\-]{20,}"), ("gl",)),
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), ("hf_",)),
    ("an npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36,}"), ("npm_",)),
    ("a PyPI token", re.compile(r"\bpypi-AgE[A-Za-z0-9_\-]{50,}"), ("pypi-AgE",)),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
     ("AKIA", "ASIA", "AGPA", "AIDA", "AROA")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), ("AIza",)),
    ("a Google OAuth token", re.compile(r"\bya29\.[0-9A-Za-z_\-]{30,}"), ("ya29.",)),
    ("a Slack token", re.compile(r"\bxox[abposre]-[0-9A-Za-z\-]{10,}"), ("xox",)),
    ("a Slack webhook",
     re.compile(r"hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/\w{16,}"), ("hooks.slack",)),
    ("a SendGrid key", re.compile(r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{20,}"), ("SG.",)),
    ("a DigitalOcean token", re.compile(r"\bdo[por]_v1_[a-f0-9]{64}"), ("_v1_",)),
    ("a Shopify token", re.compile(r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"), ("shp",)),
    ("a Telegram bot token", re.compile(r"(?<!\d)\d{8,10}:AA[A-Za-z0-9_\-]{33}"), (":AA",)),
    ("a JSON web token",
     re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
     ("eyJ",)),
    ("a bearer token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{20,}=*"), ()),
    ("a URL with a password", re.compile(
        r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@\"'<>]+:(?!\$\{|\$[A-Z_]|\*+@|<)[^\s/@\"'<>]+@"
        r"[^\s/@\"'<>]+"), ("://",)),
    # A key's base64 body without its BEGIN line: 64-char lines in a row, or one long blob.
    ("a private key body", re.compile(
        rf"(?m)(?:^[ \t]*[{_B64}]{{64}}[ \t]*\r?\n){{2,}}(?:[ \t]*[{_B64}]{{1,64}}={{0,2}})?"),
     ()),
    ("a private key body", re.compile(rf"(?<![{_B64}])[{_B64}]{{200,}}={{0,2}}"), ()),
)


def _mixed(value: str) -> bool:
    """Upper and lower case letters and digits: random base64, not hex, not a word."""
    return (any(c.isupper() for c in value) and any(c.islower() for c in value)
            and any(c.isdigit() for c in value))


def _needle_scan() -> tuple[re.Pattern[str], dict[str, frozenset[str]]]:
    """One regex that finds, at every position, the longest needle starting there; and for
    each needle the needles it contains. A needle inside another at the same position is a
    prefix of it, so the longest one plus its contained needles names every needle present."""
    needles = sorted({n for _, _, ns in _PREFIXED for n in ns}, key=len, reverse=True)
    scan = re.compile("(?=(" + "|".join(re.escape(n) for n in needles) + "))")
    return scan, {n: frozenset(m for m in needles if m in n) for n in needles}


_NEEDLE_SCAN, _CONTAINED = _needle_scan()
# Which entries of _PREFIXED a needle lets run, and those that always run (by index: the
# entries run in table order).
_ALWAYS = frozenset(i for i, (_, _, needles) in enumerate(_PREFIXED) if not needles)
_GATED: dict[str, frozenset[int]] = {
    needle: frozenset(i for i, (_, _, ns) in enumerate(_PREFIXED) if needle in ns)
    for needle in _CONTAINED}


def needles_in(text: str) -> set[str]:
    """The needles of _PREFIXED that occur in `text` (the same as a substring test of each,
    in one regex pass instead of one Python-level test per needle)."""
    found: set[str] = set()
    for needle in set(_NEEDLE_SCAN.findall(text)):
        found |= _CONTAINED[needle]
    return found


def _prefixed(text: str) -> Iterator[tuple[str, int, int]]:
    run = set(_ALWAYS)
    for needle in needles_in(text):
        run |= _GATED[needle]
    for i in sorted(run):
        kind, pattern, _needles = _PREFIXED[i]
        for m in pattern.finditer(text):
            if kind == "a private key body" and not _mixed(m.group()):
                continue  # a run of hex digests or of one letter is no key
            yield kind, m.start(), m.end()


# -- payment cards ------------------------------------------------------------------------------
# Card digits come in groups of 4+ (4-4-4-4, 4-6-5, or none); a CVV group of 3 may follow.
_CARD = re.compile(r"(?<![\d.,])\d{4,}(?:[ \-]\d{3,}){0,6}(?![\d])")
_CARD_CONTEXT = re.compile(
    r"(?i)(?:card|visa|master\s*card|amex|american\s+express|discover|unionpay|cvv2?|cvc2?|"
    r"exp(?:iry|ires|iration)?\b|valid\s+thru|卡号|信用卡|银行卡|储蓄卡|借记卡|有效期|安全码|银联)")
_CARD_GROUPED = re.compile(
    r"[3-6]\d{3}([ \-])\d{4}\1\d{4}\1\d{1,7}|3[47]\d{2}([ \-])\d{6}\2\d{5}|[3-6]\d{15}")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card_windows(run: str) -> Iterator[tuple[int, int]]:
    """Spans of `run` (digits with spaces or dashes) holding 13-19 digits, cut only at its
    separators: "4111 1111 1111 1111 123" holds a card followed by its CVV."""
    cuts = [0] + [i + 1 for i, c in enumerate(run) if not c.isdigit()]
    ends = [i for i, c in enumerate(run) if not c.isdigit()] + [len(run)]
    digits_before = [0]  # digits_before[i]: digits in run[:i]
    for c in run:
        digits_before.append(digits_before[-1] + c.isdigit())
    for a in cuts:
        # Longest first; 19 digits and 18 separators span at most 37 chars.
        near = ends[bisect.bisect_right(ends, a): bisect.bisect_right(ends, a + 37)]
        for b in reversed(near):
            if 13 <= digits_before[b] - digits_before[a] <= 19:
                yield a, b


def _cards(text: str) -> Iterator[tuple[str, int, int]]:
    for m in _CARD.finditer(text):
        for a, b in _card_windows(m.group()):
            number = m.group()[a:b]
            digits = re.sub(r"\D", "", number)
            if not _luhn(digits) or len(set(digits)) < 2:
                continue
            # An order number or a timestamp may pass Luhn by chance: a card needs card-style
            # grouping or a card word (card, CVV, 有效期 ...) close by.
            start, end = m.start() + a, m.start() + b
            around = text[max(0, start - 40): end + 40]
            if _CARD_GROUPED.fullmatch(number) or _CARD_CONTEXT.search(around):
                yield "a payment card number", start, end
                break


# -- a cue word followed by a value -------------------------------------------------------------
_CUE_EN = (r"pass(?:word|wd|code|phrase)|pwd|pin[ \-_]?code|pin|one[ \-]time[ \-]code|otp|"
           r"client[ _\-]?secret|secret[ _\-]?(?:access[ _\-]?)?key|secret|"
           r"(?:access|auth|api|bearer|refresh|session|bot|registration)[ _\-]?token|token|"
           r"api[ _\-]?key|access[ _\-]?key(?:[ _\-]?id)?|private[ _\-]?key|"
           r"cvv2?|cvc2?|security[ \-]code")
_CUE_ZH = r"PIN码|pin码|密码|口令|密钥|秘钥|私钥|验证码|校验码|令牌|安全码|授权码|动态码"
_CUE = re.compile(
    rf"(?i){_CUE_ZH}|(?<![A-Za-z0-9])(?:{_CUE_EN})(?:[_\-][A-Za-z0-9]+){{0,2}}(?![A-Za-z0-9])")
_SHORT_CUES = re.compile(r"(?i)cvv2?|cvc2?|security[ \-]code|安全码|校验码")
_DIGIT_CUES = re.compile(r"(?i)pin|pass|pwd|otp|one|cvv|cvc|security|密码|口令|验证码|安全码|"
                         r"动态码|校验码")
# What may stand between the cue and its assignment: "(root)", "for root", "of the router".
_QUALIFIER = (r"(?:[\"'`]?\s*[(（\[][^)）\]\n]{0,40}[)）\]]"
              r"|\s+(?:for|of|on|at|to)\s+[^\s:=：\"',;]+(?:\s+[^\s:=：\"',;]+){0,2}?)?")
_STRONG = re.compile(_QUALIFIER + r"[\"'`]?\s*(?:(?:is|was)\s*)?(?::=|=>|->|[:=：]|是|为|為)\s*")
_WEAK = re.compile(_QUALIFIER + r"\s+(?:is|was|are|reads|=)\s+")
_BARE = re.compile(r"\s+|(?<=[\u4e00-\u9fff])")
_META_SUFFIX = re.compile(
    r"(?i)[_\-](?:env|file|path|name|url|uri|var|endpoint|type|len|length|hint|policy|ttl|"
    r"expiry|expires|count|limit|location|manager|field|header|prefix)$")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_QUOTES = "\"'`“”‘’「」『』"
_VALUE = re.compile(rf"([{_QUOTES}]?)([^\s{_QUOTES},;\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]+)")
_PLACEHOLDER = re.compile(
    r"(?i)\*+|x{3,}|\.+|-+|_+|\?+|<[^>]*>|\{[^}]*\}|\$\{?[A-Za-z_]\w*\}?|%\w+%|\[[^\]]*\]|"
    r"redacted|hidden|removed|omitted|elided|none|null|nil|n/?a|tbd|todo|unknown|empty|unset")
_STOPWORDS = frozenset("""
a an the is are was be been it its this that these those here there what which who how
my your his her our their in on at to for of from by via with without under inside into and or
see ask check stored saved kept lives live living held managed rotated protected encrypted
hashed required optional needed same not no yes true false missing wrong incorrect correct
invalid expired changed reset set updated removed deleted known unchanged enabled disabled
off ok fine pending later soon only also still never always provided given sent shared
use using used
vault keychain keyring bitwarden lastpass keepass 1password onepassword manager env file
environment variable password passwords token tokens secret secrets key keys bearer pin
""".split())


def _clean(value: str) -> str:
    return value.strip(".:!?)]}>（）。").lstrip("([<")


def _looks_assigned(cue: str, value: str, quoted: bool, strength: str, after: str) -> bool:
    """Whether `value`, after a cue word and a separator of `strength`, is a secret value."""
    # A value that ends its sentence ("... is correcthorsebatterystaple. We ...") is not
    # followed by prose, whatever the next sentence says.
    ends_sentence = value.endswith((".", "!", "?", "。", "！", "？"))
    value = _clean(value)
    low = value.lower()
    if (not value or _PLACEHOLDER.fullmatch(value) or low in _STOPWORDS
            or _ENV_NAME.fullmatch(value)):
        return False
    if "://" in value or (re.fullmatch(r"[\w.\-~]*(?:/[\w.\-~]+)+/?", value)
                          and not _mixed(value)):
        return False  # a URL (credentials in one are caught on their own) or a vault path
    if "(" in value or re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", value):
        return False  # code: a call or an attribute (`token = m.group()`, `ctx.batch.token`)
    has_digit = any(c.isdigit() for c in value)
    letters_only = value.isalpha()
    digits_only = value.isdigit()
    short = bool(_SHORT_CUES.fullmatch(cue))
    if digits_only:
        # PINs and security codes are short numbers; a year after "token" is not a secret.
        least = 3 if short else 4 if strength != "bare" or cue.lower().startswith("pin") else 6
        return len(value) >= least and (strength != "bare" or bool(_DIGIT_CUES.match(cue)))
    if strength == "bare":
        # No separator: only an opaque value counts ("token 3f9a...", not "token economy").
        return len(value) >= 16 and has_digit and not letters_only
    if quoted:
        return len(value) >= 3
    prose_follows = bool(re.match(r"[ \t]+[A-Za-z]", after)) and not ends_sentence
    if strength == "strong":
        if letters_only and prose_follows:
            return False  # "password: stored in Bitwarden" is a sentence, not a value
        return len(value) >= 4
    # "is"/"was": a value with a digit or a symbol, or one long run of letters ending the clause.
    if has_digit or not letters_only:
        return len(value) >= 4 and any(c.isalpha() or c.isdigit() for c in value)
    return len(value) >= 16 and not prose_follows


def _assigned(text: str) -> Iterator[tuple[str, int, int]]:
    for cue in _CUE.finditer(text):
        if _META_SUFFIX.search(cue.group()):
            continue  # token_env, password_file: the name of where a secret is, not one
        for strength, sep in (("strong", _STRONG), ("weak", _WEAK), ("bare", _BARE)):
            m = sep.match(text, cue.end())
            if m is None:
                continue
            v = _VALUE.match(text, m.end())
            if v is None:
                continue
            after = text[v.end(): v.end() + 3]
            if _looks_assigned(cue.group(), v.group(2), bool(v.group(1)), strength, after):
                yield "an assigned secret value", cue.start(), v.end()
                break


# -- long random tokens -------------------------------------------------------------------------
_TOKEN = re.compile(r"(?<![A-Za-z0-9_\-+=])[A-Za-z0-9_\-+=]{32,}")
ENTROPY_MIN_BITS = 4.0  # per char: 99% of random base62 tokens of 32+ chars have 4.2 or more
SWITCH_MIN = 0.4  # class changes per char pair: random ~0.6 (1% under 0.42), CamelCase ~0.3


def _class_switches(value: str) -> float:
    """How often adjacent chars change class (upper, lower, digit, other): words stay in one."""
    def cls(ch: str) -> int:
        return 0 if ch.isupper() else 1 if ch.islower() else 2 if ch.isdigit() else 3
    pairs = zip(value, value[1:], strict=False)
    return sum(cls(a) != cls(b) for a, b in pairs) / (len(value) - 1)


def shannon_entropy(value: str) -> float:
    """Bits per character of `value`'s own character distribution."""
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _random_tokens(text: str) -> Iterator[tuple[str, int, int]]:
    for m in _TOKEN.finditer(text):
        token = m.group()
        # Hex hashes and UUIDs lack mixed case; identifiers and slugs lack digits or entropy.
        if not _mixed(token) or sum(c.isdigit() for c in token) < 2:
            continue
        if sum(c.isupper() for c in token) < 2 or sum(c.islower() for c in token) < 2:
            continue
        start = text.rfind(" ", 0, m.start()) + 1
        word = text[start: m.start()]
        if "://" in word or word.lower().startswith("www.") or re.search(r"(?i)sha\d+[-:]$", word):
            continue  # part of a URL (document ids, signed links) or an integrity hash
        if shannon_entropy(token) >= ENTROPY_MIN_BITS and _class_switches(token) >= SWITCH_MIN:
            yield "a long random token", m.start(), m.end()


_DETECTORS: tuple[Callable[[str], Iterator[tuple[str, int, int]]], ...] = (
    _prefixed, _cards, _assigned, _random_tokens)


# -- the API ------------------------------------------------------------------------------------
def scan_secrets(text: str) -> list[SecretHit]:
    """Every secret-looking value in `text` (detector order, then position), spans in `text`."""
    if not text:
        return []
    norm, where = normalise(text)
    hits = []
    for detector in _DETECTORS:
        for kind, start, end in detector(norm):
            if where is not None:
                start, end = where[start], where[end - 1] + 1
            hits.append(SecretHit(kind, start, end))
    return hits


# Within a commit the same text is often checked more than once (an id named again by a relation
# and by evidence; a core file checked with the write, then again as it is written): inside
# scan_once(), find_secret remembers its answer per text, so each text is scanned once.
_MEMO: ContextVar[dict[str, str | None] | None] = ContextVar("secret_scan_memo", default=None)


@contextmanager
def scan_once() -> Iterator[None]:
    """Within the block, find_secret scans each distinct text once (for one commit: the memo
    dies with the block, so nothing of the texts outlives it)."""
    outer = _MEMO.get()  # nested: share the enclosing commit's memo
    token = _MEMO.set({} if outer is None else outer)
    try:
        yield
    finally:
        _MEMO.reset(token)


def _first_kind(text: str) -> str | None:
    norm, _ = normalise(text)
    for detector in _DETECTORS:
        for kind, _start, _end in detector(norm):
            return kind
    return None


def find_secret(text: str) -> str | None:
    """Name the kind of secret value found in `text`, or None."""
    memo = _MEMO.get()
    if memo is None:
        return _first_kind(text)
    if text not in memo:
        memo[text] = _first_kind(text)
    return memo[text]


def redact_secrets(text: str, label: str = "redacted") -> str:
    """`text` with every secret-looking value replaced by `[<label>: kind]` (for logs)."""
    hits = sorted(scan_secrets(text), key=lambda h: (h.start, -h.end))
    if not hits:
        return text
    out, pos = [], 0
    for hit in hits:
        if hit.end <= pos:
            continue
        out.append(text[pos: max(pos, hit.start)])
        out.append(f"[{label}: {hit.kind}]")
        pos = hit.end
    out.append(text[pos:])
    return "".join(out)


def mask_secrets(text: str) -> str:
    """`text` as recall and the vault show it: each secret-looking value as `[secret: kind]`."""
    return redact_secrets(text, "secret")


def secret_refusal(kind: str) -> str:
    """The correction for a field holding a secret: what kind, never the value itself."""
    return (f"holds what looks like {kind}: keep only the purpose and where the secret lives, "
            "never it (the value is not repeated here)")


def check_no_secret(where: str, text: str) -> None:
    """Raise FieldError(`where`) when `text` holds a secret-looking value."""
    kind = find_secret(text)
    if kind:
        raise FieldError(where, secret_refusal(kind))
