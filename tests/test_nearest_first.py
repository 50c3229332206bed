"""A writer's in-memory lookup reads the rows of each page's nearest candidates first, and the
farther ones only when none of the nearest settles the page (lookup.MemoryLookup.near): its
decisions are those of the table lookup, which reads every candidate."""

from __future__ import annotations

import pytest

from simhash_index import Signature, SimhashIndex
from simhash_index.fingerprinting.sketch import minhash

BASE = 0x0123_4567_89AB_CDEF
FAR = BASE ^ 0b1110  # 3 bits from BASE, 2 from BASE ^ 1
SIMILAR = minhash(f"w{i}" for i in range(200))
ALSO_SIMILAR = minhash(f"w{i}" for i in range(190))
OTHER = minhash(f"x{i}" for i in range(200))


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue(f"{request.param}_url")


def decide_both(url: str, stored: list[tuple[str, Signature]], batch: list[tuple[str, Signature]]) -> list[object]:
    """The batch's answers from the memory lookup, after checking the table lookup gives the same."""
    answers = []
    for lookup in ("sql", "memory"):
        with SimhashIndex(url, lookup=lookup) as index:
            index.reset()
            index.add_many(stored)
            index.check_and_add("https://warm.example/", Signature(BASE ^ (2**64 - 1), None))  # builds the lookup
            answers.append([None if m is None else (m.key, m.distance) for m in index.check_and_add_many(batch)])
    assert answers[0] == answers[1]
    return answers[1]


def test_a_nearest_candidate_turned_away_by_its_sketch_leaves_the_farther_ones_read(url):
    stored = [("https://near/", Signature(BASE ^ 1, 1, OTHER)), ("https://far/", Signature(FAR, 2, SIMILAR))]
    assert decide_both(url, stored, [("https://new/", Signature(BASE, 3, ALSO_SIMILAR))]) == [("https://far/", 3)]


def test_a_nearest_candidate_the_batch_takes_out_of_sight_leaves_the_farther_ones_read(url):
    """The nearest settles the second page when the batch is read, but the first page stores its
    key anew far away: the second page's farther candidate is read then."""
    stored = [("https://near/", Signature(BASE ^ 1, 1, SIMILAR)), ("https://far/", Signature(FAR, 2, SIMILAR))]
    batch = [
        ("https://near/", Signature(BASE ^ 0xFFFF_0000_0000_0000, 4, OTHER)),
        ("https://new/", Signature(BASE, 3, ALSO_SIMILAR)),
    ]
    assert decide_both(url, stored, batch) == [None, ("https://far/", 3)]


def test_a_nearest_candidate_that_settles_the_page_is_its_match(url):
    stored = [("https://near/", Signature(BASE ^ 1, 1, SIMILAR)), ("https://far/", Signature(FAR, 2, SIMILAR))]
    assert decide_both(url, stored, [("https://new/", Signature(BASE, 3, ALSO_SIMILAR))]) == [("https://near/", 1)]
