"""Detecting secret values, so a credential object keeps only purpose and where a secret lives.

High-confidence patterns only (well-known key prefixes, private key blocks, JWTs, and an
assignment of a long opaque value to a secret-named word), so ordinary text is not refused.
"""

from __future__ import annotations

import re

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("an OpenAI-style API key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{20,}")),
    ("a GitHub token",
     re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[0-9A-Za-z\-]{10,}")),
    ("a JSON web token",
     re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}")),
    ("a bearer token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._\-]{20,}")),
    ("an assigned secret value", re.compile(
        r"(?i)(?:password|passwd|pwd|secret|token|api[_\- ]?key|access[_\- ]?key|密码|口令|密钥)"
        r"\s*(?:[:=：]|is|是|为)\s*[\"'`]?(?=[^\s\"'`]*[0-9])(?=[^\s\"'`]*[A-Za-z])"
        r"[^\s\"'`，。]{8,}"
    )),
)


def find_secret(text: str) -> str | None:
    """Name the kind of secret value found in `text`, or None."""
    for kind, pattern in _PATTERNS:
        if pattern.search(text):
            return kind
    return None
