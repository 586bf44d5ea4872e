"""Secret values judged by what stands around them: HTTP Basic credentials (base64 that decodes to
user:password), payment card numbers (Luhn-valid, with a card word near or card-style grouping)
and a cue word (password, pw, PIN, token, 密码, 验证码 ...) followed by an assignment-like value.
Part of the detector in memvault.secrets.detector, which normalises the text first and runs
these after the key-prefix patterns.

Ordinary prose must pass: a cue word counts only when an assignment follows it ("password:
hunter2", "the wifi password is correcthorsebatterystaple", "PIN 482913"), never when ordinary
words do ("I forgot my password yesterday", "the PIN pad is broken", "bus pass: monthly",
"密码学课程"); a bare digit run counts only after a cue word or as a card.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
from collections.abc import Iterator

from ..base.patterns import lazy_compile


def mixed(value: str) -> bool:
    """Upper and lower case letters and digits: random base64, not hex, not a word."""
    return (any(c.isupper() for c in value) and any(c.islower() for c in value)
            and any(c.isdigit() for c in value))


# -- HTTP Basic credentials ---------------------------------------------------------------------
# "Authorization: Basic dXNlcjpwYXNzd29yZA==": base64 of "user:password". "basic" is an everyday
# word, so the value counts only when it decodes to printable text holding a user, a colon and
# a password ("Basic English", "basic income" decode to bytes that are no such text).
_BASIC = lazy_compile(
    r"(?i)(?<![A-Za-z0-9_])basic[ \t]+([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])")


def basic_credentials(text: str) -> Iterator[tuple[str, int, int]]:
    if "asic" not in text and "ASIC" not in text:  # Basic, basic, BASIC: a C substring test
        return
    for m in _BASIC.finditer(text):
        value = m.group(1).rstrip("=")
        try:
            decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
            plain = decoded.decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            continue
        user, colon, password = plain.partition(":")
        if colon and user and password and plain.isprintable():
            yield "HTTP Basic credentials", m.start(), m.end()


# -- payment cards ------------------------------------------------------------------------------
# Card digits come in groups of 4+ (4-4-4-4, 4-6-5, or none), split by spaces, dashes or dots;
# a CVV group of 3 may follow.
_CARD = lazy_compile(r"(?<![\d.,])\d{4,}(?:[ \-.]\d{3,}){0,6}(?![\d])")
_CARD_CONTEXT = lazy_compile(
    r"(?i)(?:card|visa|master\s*card|amex|american\s+express|discover|unionpay|cvv2?|cvc2?|"
    r"exp(?:iry|ires|iration)?\b|valid\s+thru|卡号|信用卡|银行卡|储蓄卡|借记卡|有效期|安全码|银联)")
# 4-4-4-4 (and 4-4-4-4-3 of a 19-digit card), Amex's 4-6-5, 16 digits in a row, or UnionPay's
# 19 digits in a row (its 62 prefix).
_CARD_GROUPED = lazy_compile(
    r"[3-6]\d{3}([ \-.])\d{4}\1\d{4}\1\d{1,7}|3[47]\d{2}([ \-.])\d{6}\2\d{5}|[3-6]\d{15}"
    r"|[3-6]\d{3}([ \-.])\d{4}\3\d{4}\3\d{4}\3\d{3}|62\d{17}")


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


def cards(text: str) -> Iterator[tuple[str, int, int]]:
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
_CUE_EN = (r"pass(?:word|wd|code|phrase)?|pwd|pw|pin[ \-_]?code|pin|one[ \-]time[ \-]code|otp|"
           r"client[ _\-]?secret|secret[ _\-]?(?:access[ _\-]?)?key|secret|"
           r"(?:access|auth|api|bearer|refresh|session|bot|registration)[ _\-]?token|token|"
           r"api[ _\-]?key|access[ _\-]?key(?:[ _\-]?id)?|private[ _\-]?key|"
           r"cvv2?|cvc2?|security[ \-]code")
_ZH_CUES = ("PIN码", "pin码", "密码", "口令", "密钥", "秘钥", "私钥", "验证码", "校验码", "令牌",
            "安全码", "授权码", "动态码")
# A space may stand between the characters of a Chinese cue ("密 码 : ..."): it reads the same.
_CUE_ZH = "|".join(r"\s?".join(re.escape(ch) for ch in cue) if cue[0] > "\x7f" else cue
                   for cue in _ZH_CUES)
# The first char of every cue above, as a lookahead: most positions fail this one class test
# instead of trying each alternative (a third faster on everyday text).
_CUE_FIRST = "PpOoCcSsAaBbRrTt" + "".join(sorted({cue[0] for cue in _ZH_CUES if cue[0] > "\x7f"}))
_CUE = lazy_compile(
    rf"(?i)(?=[{_CUE_FIRST}])(?:{_CUE_ZH}|(?<![A-Za-z0-9])(?:{_CUE_EN})"
    rf"(?:[_\-][A-Za-z0-9]+){{0,2}}(?![A-Za-z0-9]))")
# Cue words that are also everyday words ("bus pass: monthly"): their value must hold a digit
# or a symbol, never only letters.
_LOOSE_CUES = lazy_compile(r"(?i)pass|pw")
# Cues of a short number: four digits count even without a separator ("passcode 7731").
_PIN_CUES = lazy_compile(r"(?i)pin|pass|pw|otp|one|密\s?码|口\s?令|验\s?证\s?码|动\s?态\s?码")
_SHORT_CUES = lazy_compile(r"(?i)cvv2?|cvc2?|security[ \-]code|安全码|校验码")
_DIGIT_CUES = lazy_compile(r"(?i)pin|pass|pw|otp|one|cvv|cvc|security|密\s?码|口\s?令|验\s?证\s?码|"
                           r"安\s?全\s?码|动\s?态\s?码|校\s?验\s?码")
# What may stand between the cue and its assignment: "(root)", "for root", "of the router".
# An aside between commas counts too: "the password, by the way, is hunter2".
_QUALIFIER = (r"(?:[\"'`]?\s*[(（\[][^)）\]\n]{0,40}[)）\]]"
              r"|\s*[,，][^,，:=：\n]{1,40}[,，]"
              r"|\s+(?:for|of|on|at|to)\s+[^\s:=：\"',;]+(?:\s+[^\s:=：\"',;]+){0,2}?)?")
_STRONG = lazy_compile(_QUALIFIER + r"[\"'`]?\s*(?:(?:is|was)\s*)?(?::=|=>|->|[:=：]|是|为|為)\s*")
_WEAK = lazy_compile(_QUALIFIER + r"\s+(?:is|was|are|reads|=)\s+")
_BARE = lazy_compile(r"\s+|(?<=[\u4e00-\u9fff])")
_META_SUFFIX = lazy_compile(
    r"(?i)[_\-](?:env|file|path|name|url|uri|var|endpoint|type|len|length|hint|policy|ttl|"
    r"expiry|expires|count|limit|location|manager|field|header|prefix)$")
_ENV_NAME = lazy_compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_QUOTES = "\"'`“”‘’「」『』"
_VALUE = lazy_compile(rf"([{_QUOTES}]?)([^\s{_QUOTES},;\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]+)")
_PLACEHOLDER = lazy_compile(
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
                          and not mixed(value)):
        return False  # a URL (credentials in one are caught on their own) or a vault path
    if "(" in value or re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", value):
        return False  # code: a call or an attribute (`token = m.group()`, `ctx.batch.token`)
    has_digit = any(c.isdigit() for c in value)
    letters_only = value.isalpha()
    digits_only = value.isdigit()
    short = bool(_SHORT_CUES.fullmatch(cue))
    prose_follows = bool(re.match(r"[ \t]+[A-Za-z]", after)) and not ends_sentence
    if digits_only:
        # PINs and security codes are short numbers; a year after "token" is not a secret.
        if strength != "bare":
            return len(value) >= (3 if short else 4)
        if not _DIGIT_CUES.match(cue):
            return False
        if short:
            return len(value) >= 3  # "CVV 123"
        # "passcode 7731" ends its clause; "password 2024 was leaked" is a sentence.
        pin_like = _PIN_CUES.match(cue) and (cue.lower().startswith("pin") or not prose_follows)
        return len(value) >= (4 if pin_like else 6)
    if _LOOSE_CUES.fullmatch(cue) and letters_only:
        return False  # "bus pass: monthly", "pw: ask Victor"
    if strength == "bare":
        # No separator: only an opaque value counts ("token 3f9a...", not "token economy").
        return len(value) >= 16 and has_digit and not letters_only
    if quoted:
        return len(value) >= 3
    if strength == "strong":
        if letters_only and prose_follows:
            return False  # "password: stored in Bitwarden" is a sentence, not a value
        return len(value) >= 4
    # "is"/"was": a value with a digit or a symbol, or one long run of letters ending the clause.
    if has_digit or not letters_only:
        return len(value) >= 4 and any(c.isalpha() or c.isdigit() for c in value)
    return len(value) >= 16 and not prose_follows


def assigned(text: str) -> Iterator[tuple[str, int, int]]:
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
