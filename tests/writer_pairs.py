"""Two writers on one index, and what they decide: what tests/test_following.py and
tests/test_redis_following.py share."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from simhash_index import Signature, SimhashIndex
from simhash_index.index.base import Index

BASE = 0x0123_4567_89AB_CDEF
FAR = 0xF0F0_0F0F_3C3C_C3C3  # 32 bits from BASE


@contextmanager
def two_writers(url: str) -> Iterator[tuple[Index, Index]]:
    """Writer `a`, whose lookup is built before the other writer `b` changes anything."""
    with SimhashIndex(url) as a, SimhashIndex(url) as b:
        a.check_and_add("https://a.example/seed", FAR ^ 0xFFFF)  # builds a's lookup
        yield a, b


def near_copy(fingerprint: int, bits: int = 5) -> int:
    return fingerprint ^ ((1 << bits) - 1) << 20


def duplicate_of(index: Index, key: str, fingerprint: int | Signature) -> str | None:
    match = index.check_and_add(key, fingerprint)
    return None if match is None else match.key
