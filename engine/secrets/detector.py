"""Detecting secret values, so a credential object keeps only purpose and where a secret lives.

Text is normalised first (NFKC; format characters such as zero-width spaces and soft hyphens,
and combining marks, dropped; accented Latin letters and Cyrillic/Greek look-alikes read as
the plain Latin letter), so a key or cue word split by an invisible character, written in
fullwidth forms or spelled with a Cyrillic "а" is still seen. Then, in order: private keys
(BEGIN line through END line, line ends real or JSON-escaped; or a body without its BEGIN
line), well-known key prefixes (also with the key written in space-separated chunks, or
hex-encoded), URLs carrying a password, HTTP Basic credentials, payment card numbers
(Luhn-valid, with a card context or card-style grouping, digits split by spaces, dashes or
dots), a cue word (password, pw, PIN, token, 密码, 验证码 ...) followed by an assignment-like
value, and long opaque random-looking tokens (by character classes and Shannon entropy). A bare
hex string or digit run is a secret only after a cue word or under a known key prefix: commit
SHAs, UUIDs, order, tracking and phone numbers pass.

Ordinary prose must pass: a cue word counts only when an assignment follows it ("password:
hunter2", "the wifi password is correcthorsebatterystaple", "PIN 482913"), never when ordinary
words do ("I forgot my password yesterday", "the PIN pad is broken", "密码学课程"); hex hashes,
URLs without credentials and identifiers do not look random enough to count.
A finding names the kind of secret only: callers must never echo the value.
Cards and cue words are judged in secret_values.py; this module normalises, finds keys by
their shapes and runs everything in order.
Speed without weakening: the key-prefix patterns run only when one of their needles occurs
(substring tests), and inside scan_once() (one commit) each distinct text is scanned
once, however many fields or checks name it.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..base.errors import FieldError
from ..base.patterns import lazy_compile
from . import values as secret_values
from .values import assigned, basic_credentials, cards, mixed


@dataclass(frozen=True)
class SecretHit:
    """One secret-looking value: its kind and its span [start, end) in the original text."""

    kind: str
    start: int
    end: int


# -- normalising --------------------------------------------------------------------------------
# Cyrillic and Greek letters drawn like Latin ones (after Unicode's confusables.txt): "pаssword"
# with a Cyrillic а reads as "password". A table, not a dependency: these are all that matter
# for cue words and key prefixes, and it stays one dict lookup per distinct char.
_LOOKALIKES = dict(zip(
    "аеорсухѕіјԁһӏԛԝАВЕКМНОРСТХЅІЈοανρικτυΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxsijdhlqwABEKMHOPCTXSIJoavpiktuABEZHIKMNOPTYX", strict=True))


@lru_cache(maxsize=4_096)
def _normal_char(ch: str) -> str:
    # Format characters (Cf: zero-width space/joiners, word joiner, BOM, soft hyphen, bidi
    # controls) and combining marks (Mn: accents, variation selectors such as U+FE0F) are
    # invisible or ride on the letter before: a key or cue word split by one is seen whole.
    if unicodedata.category(ch) in ("Cf", "Mn"):
        return ""
    if ch in _LOOKALIKES:
        return _LOOKALIKES[ch]
    norm = unicodedata.normalize("NFKC", ch)
    if len(norm) == 1 and not norm.isascii():
        # A Latin letter with an accent ("pássword") reads as the letter.
        base = unicodedata.normalize("NFD", norm)
        if base[0].isascii() and base[0].isalpha():
            return base[0]
    return norm


# Chars seen before, by what _normal_char made of them: a text's distinct chars minus the ones
# known to stay is one C set difference, where a call per distinct char (hundreds in Chinese
# prose) was a third of scanning it. Single chars only; at most _KNOWN_MAX are remembered.
_SAME: set[str] = {chr(i) for i in range(128)}  # ASCII always stays as it is
_CHANGED: dict[str, str] = {}
_KNOWN_MAX = 50_000
_REPLACE_MAX = 16  # changed chars normalise replaces one by one; more: one translate


def _changed_chars(text: str) -> dict[str, str]:
    """{char: what it normalises to} for the chars of `text` that normalising changes."""
    chars = set(text)
    chars -= _SAME
    changed: dict[str, str] = {}
    for ch in chars:
        norm = _CHANGED.get(ch)
        if norm is None:
            norm = _normal_char(ch)
            if norm == ch and len(_SAME) < _KNOWN_MAX:
                _SAME.add(ch)
            elif norm != ch and len(_CHANGED) < _KNOWN_MAX:
                _CHANGED[ch] = norm
        if norm != ch:
            changed[ch] = norm
    return changed


def normalise(text: str) -> tuple[str, list[int] | None]:
    """The text the patterns read, and for each of its chars the index in `text` it came
    from (None when nothing changed). Normalised char by char so spans map back exactly."""
    if text.isascii():
        return text, None
    # Most non-ASCII text (Chinese prose) is already normal: one test per distinct char then,
    # not a Python step per char. Its full-width punctuation ("，", "？") is one char for one
    # char: translated at C speed, and the positions stay where they were.
    changed = _changed_chars(text)
    if not changed:
        return text, None
    if all(len(norm) == 1 for norm in changed.values()):
        if len(changed) <= _REPLACE_MAX and changed.keys().isdisjoint(changed.values()):
            # a few chars: a C replace pass each beats translate's dict lookup per char
            for ch, norm in changed.items():
                text = text.replace(ch, norm)
            return text, None
        return text.translate({ord(ch): norm for ch, norm in changed.items()}), None
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
# A line break as pasted text has it, or as a JSON string writes it (a service account's
# "private_key": "-----BEGIN PRIVATE KEY-----\nMIIE...\n-----END PRIVATE KEY-----\n").
_BREAK = r"(?:\r?\n|\\r\\n|\\n)"
# A private key is masked whole, from its BEGIN line through its END line: the body between
# (base64 lines, an encrypted key's "Proc-Type:" / "DEK-Info:" headers, armour "Version:" and
# "Comment:" lines, with real or JSON-escaped line ends: \n, \r, \/ and \") within 32,000
# chars (an event's most). Without an END line (a key cut short), the lines of base64 after
# the BEGIN line are masked with it. Each unit of the body is one char of a set or a two-char
# escape starting with a backslash, which no char of the set is, and the body stops at the next
# "-----": the match is linear, and a text of many BEGIN lines is read once, not once each.
_PEM_LABEL = r"[A-Z0-9 ]*PRIVATE KEY[A-Z ]*"
_PEM_BLOCK = lazy_compile(
    rf"-----BEGIN {_PEM_LABEL}-----"
    rf"(?:(?:[A-Za-z0-9+/=:,._<>@()'!?#%&*; \t\r\n]|-(?!----)|\\[rnt/\"]){{0,32000}}?"
    rf"-----END {_PEM_LABEL}-----"
    rf"|(?:(?:[ \t]*{_BREAK})+[ \t]*[{_B64}]+=*(?=[ \t]*(?:{_BREAK}|\\?\"|$)))*)")
# (kind, pattern, needles): a pattern runs only when one of its needles is in the text (a
# substring test costs far less than a regex pass); no needles: it always runs.
_PREFIXED: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    ("a private key", _PEM_BLOCK, ("PRIVATE KEY",)),
    ("an Anthropic API key", lazy_compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"), ("sk-ant-",)),
    ("an OpenAI-style API key",
     lazy_compile(r"\bsk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{20,}"),
     ("sk-",)),
    ("a Stripe secret key", lazy_compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}"),
     ("k_live_", "k_test_")),
    ("a Stripe webhook secret", lazy_compile(r"\bwhsec_[A-Za-z0-9]{20,}"), ("whsec_",)),
    ("a GitHub token",
     lazy_compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    ("a GitLab token", lazy_compile(r"\bgl(?:pat|dt|rt|ptt|cbt)-[A-Za-z0-9_\-]{20,}"), ("gl",)),
    ("a Hugging Face token", lazy_compile(r"\bhf_[A-Za-z0-9]{30,}"), ("hf_",)),
    ("an npm token", lazy_compile(r"\bnpm_[A-Za-z0-9]{36,}"), ("npm_",)),
    ("a PyPI token", lazy_compile(r"\bpypi-AgE[A-Za-z0-9_\-]{50,}"), ("pypi-AgE",)),
    ("an AWS access key", lazy_compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
     ("AKIA", "ASIA", "AGPA", "AIDA", "AROA")),
    ("a Google API key", lazy_compile(r"\bAIza[0-9A-Za-z_\-]{35}"), ("AIza",)),
    ("a Google OAuth token", lazy_compile(r"\bya29\.[0-9A-Za-z_\-]{30,}"), ("ya29.",)),
    ("a Slack token", lazy_compile(r"\bxox[abposre]-[0-9A-Za-z\-]{10,}"), ("xox",)),
    ("a Slack webhook",
     lazy_compile(r"hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/\w{16,}"), ("hooks.slack",)),
    ("a SendGrid key", lazy_compile(r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{20,}"), ("SG.",)),
    ("a DigitalOcean token", lazy_compile(r"\bdo[por]_v1_[a-f0-9]{64}"), ("_v1_",)),
    ("a Shopify token", lazy_compile(r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"), ("shp",)),
    ("a Telegram bot token", lazy_compile(r"(?<!\d)\d{8,10}:AA[A-Za-z0-9_\-]{33}"), (":AA",)),
    ("a JSON web token",
     lazy_compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
     ("eyJ",)),
    ("a bearer token", lazy_compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{20,}=*"), ()),
    ("a URL with a password", lazy_compile(
        r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@\"'<>]+:(?!\$\{|\$[A-Z_]|\*+@|<)[^\s/@\"'<>]+@"
        r"[^\s/@\"'<>]+"), ("://",)),
    # A key's base64 body without its BEGIN line: lines of 64 chars (PEM, PGP), 70 (OpenSSH) or
    # up to 76 (MIME) in a row, their line ends real or JSON-escaped; or one long blob.
    ("a private key body", lazy_compile(
        rf"(?m)(?:^[ \t]*[{_B64}]{{64,76}}[ \t]*\r?\n){{2,}}"
        rf"(?:[ \t]*[{_B64}]{{1,76}}={{0,2}}(?=[ \t\r]*$))?"), ()),
    ("a private key body", lazy_compile(
        rf"(?:(?<![{_B64}\\])|(?<=\\n))(?:[{_B64}]{{64,76}}(?:\\r)?\\n){{2,}}"
        rf"(?:[{_B64}]{{1,76}}={{0,2}}(?=\\|\"|$))?"), ("\\n",)),
    ("a private key body", lazy_compile(rf"(?<![{_B64}])[{_B64}]{{200,}}={{0,2}}"), ()),
)


_NEEDLES = tuple(sorted({n for _, _, ns in _PREFIXED for n in ns}))
# Which entries of _PREFIXED a needle lets run, and those that always run (by index: the
# entries run in table order).
_ALWAYS = frozenset(i for i, (_, _, needles) in enumerate(_PREFIXED) if not needles)
_GATED: dict[str, frozenset[int]] = {
    needle: frozenset(i for i, (_, _, ns) in enumerate(_PREFIXED) if needle in ns)
    for needle in _NEEDLES}


def needles_in(text: str) -> set[str]:
    """The needles of _PREFIXED that occur in `text`. A substring test per needle (str's C
    search): 3-4x faster than one regex pass over every position trying every needle, at 100
    chars as at 16,000 (recall scans the object bodies that hold a query term)."""
    return {needle for needle in _NEEDLES if needle in text}


def _prefixed(text: str) -> Iterator[tuple[str, int, int]]:
    needles = needles_in(text)
    run = set(_ALWAYS)
    for needle in needles:
        run |= _GATED[needle]
    for i in sorted(run):
        kind, pattern, _needles = _PREFIXED[i]
        for m in pattern.finditer(text):
            if kind == "a private key body" and not mixed(m.group()):
                continue  # a run of hex digests or of one letter is no key
            yield kind, m.start(), m.end()
    yield from _spaced(text, needles)


# A known prefix followed by groups split by spaces or tabs ("sk-proj-Ab3d Ef6h Ij9k ..."): the
# key written in chunks, or split across two fields joined by a space (graph_write).
_GROUP = lazy_compile(r"[A-Za-z0-9_\-]+")
_SPACED_NEEDLES = frozenset(n for n in _NEEDLES if len(n) >= 3 and n.replace("_", "").replace(
    "-", "").isalnum())
MAX_GROUPS = 16
_SPACED = {needle: lazy_compile(rf"(?<![A-Za-z0-9]){re.escape(needle)}[A-Za-z0-9_\-]*"
                                rf"(?:[ \t]+[A-Za-z0-9_\-]{{2,}}){{1,{MAX_GROUPS}}}")
           for needle in _SPACED_NEEDLES}


def _spaced(text: str, needles: set[str]) -> Iterator[tuple[str, int, int]]:
    """A key under a known prefix written in space-separated chunks. Every chunk after the
    first must look random (a digit, or mixed case that is no Capitalised word) and the chunks
    joined must match the prefix's own pattern, so prose after a prefix ("ghp_ tokens are
    prefixed like this", "sk- Stripe key in 1Password") never counts."""
    for needle in needles & _SPACED_NEEDLES:
        for m in _SPACED[needle].finditer(text):
            groups = list(_GROUP.finditer(text, m.start(), m.end()))
            found = _joined_key(groups, needle)
            if found:
                yield found[0], m.start(), found[1]


def _joined_key(groups: list[re.Match[str]], needle: str) -> tuple[str, int] | None:
    """(kind, end) of the longest run of `groups` that, joined, is a key under `needle`."""
    keyish = 1
    while keyish < len(groups) and _keyish(groups[keyish].group()):
        keyish += 1
    for count in range(keyish, 1, -1):
        chunks = [g.group() for g in groups[:count]]
        joined = "".join(chunks)
        for i in _GATED[needle]:
            kind, pattern, _needles = _PREFIXED[i]
            m = pattern.match(joined)
            if m and m.end() > len(chunks[0]):  # it needs the later chunks to be a key
                return kind, groups[count - 1].end()
    return None


def _keyish(chunk: str) -> bool:
    """A chunk of a random key rather than a word: a digit, or upper and lower case mixed other
    than as a Capitalised word."""
    if any(c.isdigit() for c in chunk):
        return True
    return (any(c.isupper() for c in chunk) and any(c.islower() for c in chunk)
            and not (chunk[0].isupper() and chunk[1:].islower()))


# -- hex-encoded keys ---------------------------------------------------------------------------
# A hex run that decodes to printable text holding a known key ("736b2d70726f6a2d..." is
# "sk-proj-..."). A hash or a SHA decodes to random bytes, never to printable text, so a bare
# hex string is a secret only when what it encodes is one.
# Greedy from the left, so each match is a whole run (no hex char before or after it): the
# plain class repeat is 4x faster than spelling the boundaries out.
_HEX_RUN = lazy_compile(r"[0-9A-Fa-f]{24,}")


def _hex_encoded(text: str) -> Iterator[tuple[str, int, int]]:
    for m in _HEX_RUN.finditer(text):
        if len(m.group()) % 2:
            continue  # not whole bytes
        decoded = bytes.fromhex(m.group())
        if not all(32 <= b < 127 for b in decoded):
            continue
        for kind, _start, _end in _prefixed(decoded.decode("ascii")):
            yield f"{kind} (hex-encoded)", m.start(), m.end()
            break


# -- long random tokens -------------------------------------------------------------------------
_TOKEN = lazy_compile(r"(?<![A-Za-z0-9_\-+=])[A-Za-z0-9_\-+=]{32,}")
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
        if not mixed(token) or sum(c.isdigit() for c in token) < 2:
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
    _prefixed, _hex_encoded, basic_credentials, cards, assigned, _random_tokens)


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
    return redact_slice(text, 0, len(text), scan_secrets(text), label)


def redact_slice(text: str, start: int, end: int, hits: list[SecretHit],
                 label: str = "redacted") -> str:
    """text[start:end] with every part of a secret of `hits` (found in the whole `text`) as
    `[<label>: kind]`: a secret cut by the slice is replaced too, so a page of a longer text
    shows no piece of it."""
    out, pos, covered = [], start, start  # covered: raw text replaced so far (may pass end)
    for hit in sorted(hits, key=lambda h: (h.start, -h.end)):
        if hit.end <= covered or hit.start >= end:
            continue
        out.append(text[pos:max(pos, hit.start)])
        out.append(f"[{label}: {hit.kind}]")
        covered = hit.end
        pos = min(hit.end, end)
    out.append(text[pos:end])
    return "".join(out)


def mask_secrets(text: str) -> str:
    """`text` as recall and the vault show it: each secret-looking value as `[secret: kind]`."""
    return redact_secrets(text, "secret")


def secret_refusal(kind: str) -> str:
    """The correction for a field holding a secret: what kind, never the value itself."""
    return (f"holds what looks like {kind}: keep only the purpose and where the secret lives, "
            "never it (the value is not repeated here)")


FIELD_JOIN = " "  # what stands between two fields scanned as one text: _spaced bridges it


def check_no_split_secret(where: str, texts: list[str]) -> None:
    """Raise FieldError(`where`) when `texts` (the fields of one object, each clean alone) hold
    a secret once read as one text: half a key in the summary, the rest in the body."""
    kind = find_secret(FIELD_JOIN.join(text for text in texts if text))
    if kind:
        raise FieldError(where, secret_refusal(f"{kind} split across its fields"))


def check_no_secret(where: str, text: str) -> None:
    """Raise FieldError(`where`) when `text` holds a secret-looking value."""
    kind = find_secret(text)
    if kind:
        raise FieldError(where, secret_refusal(kind))


def _loaded_source() -> bytes | None:
    """The detector's source (this module and secret_values) read as it is loaded: what recall's
    secret marks fingerprint (recall/masking.py). Read now, not when first asked, so that a
    newer detector installed while a process runs is never taken for the one it runs. None when
    a file cannot be read."""
    try:
        return b"".join(Path(path).read_bytes() for path in (__file__, secret_values.__file__))
    except (OSError, TypeError):  # no file (TypeError: a __file__ of None)
        return None


LOADED_SOURCE = _loaded_source()
