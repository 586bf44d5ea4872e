"""The secret detector's entropy threshold: a long token that passes every other gate of the
random-token detector (32+ chars, both cases, digits, frequent class changes) is a secret from
4.0 bits of Shannon entropy per char, and ordinary text below it is not.

The tokens are built to sit on either side of the threshold: 16 distinct chars twice each is
exactly 4.0 bits; 16 chars with one repeated once more is 3.98; 15 chars evenly is 3.91.

What breaks this test (each mutation made in engine/secrets/detector.py, the test run and seen
to fail, the code restored):
- `ENTROPY_MIN_BITS = 4.0` changed to 3.9, and separately to 4.1 ->
  test_a_token_is_a_secret_from_four_bits_of_entropy_per_char;
- `shannon_entropy(token) >= ENTROPY_MIN_BITS` changed to `>` -> the same test.
"""

from __future__ import annotations

import pytest
from memvault.secrets.detector import scan_secrets, shannon_entropy

SIXTEEN = "aA1bB2cC3dD4eE5f"
AT_THRESHOLD = SIXTEEN * 2  # 16 symbols, each twice: exactly 4.0 bits a char
JUST_UNDER = SIXTEEN + SIXTEEN[:-1] + "a"  # one symbol thrice, one once: 3.98 bits
FIFTEEN_EVENLY = SIXTEEN[:-1] * 3  # 15 symbols, each thrice: 3.91 bits
RANDOM = "Zx9Qm2Lr7Tb4Wk8Np3Vd6Hs1Jc5Gf0Ye"  # 32 distinct chars: 5.0 bits


def kinds(token: str) -> list[str]:
    return [hit.kind for hit in scan_secrets(f"the deploy id is {token} for now")]


def test_the_tokens_sit_where_the_names_say() -> None:
    assert shannon_entropy(AT_THRESHOLD) == 4.0
    assert 3.97 < shannon_entropy(JUST_UNDER) < 3.99
    assert 3.90 < shannon_entropy(FIFTEEN_EVENLY) < 3.91
    assert shannon_entropy(RANDOM) == 5.0
    assert all(len(t) >= 32 for t in (AT_THRESHOLD, JUST_UNDER, FIFTEEN_EVENLY, RANDOM))


@pytest.mark.parametrize(("token", "secret"), [
    (RANDOM, True), (AT_THRESHOLD, True), (JUST_UNDER, False), (FIFTEEN_EVENLY, False),
], ids=["random", "at-4.0-bits", "3.98-bits", "3.91-bits"])
def test_a_token_is_a_secret_from_four_bits_of_entropy_per_char(token: str, secret: bool) -> None:
    assert kinds(token) == (["a long random token"] if secret else [])
