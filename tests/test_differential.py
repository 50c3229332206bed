"""Every backend decides as the rule (index/rule.py), on crowded pages with real sketches.

The memory index calls the rule on every stored page near a checked one: it is the reference.
Each other backend (SQLite and PostgreSQL with the writer's in-memory lookup, which turns
candidates away by their sketch bits before it reads a row, and with the table's own lookup;
Redis) is given the same sequence: batches of pages crowded within a few bits of a few centres
(some near copies, some pages that add a section, some siblings that only share a template, some
exact-only), keys checked again (updates), pages forgotten, under each survivor policy; the
answers, the pages stored and the duplicates log must be the reference's.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from simhash_index import Fingerprinter, Signature, SimhashIndex

FINGERPRINTER = Fingerprinter()
TEMPLATE = [f"menu{i}" for i in range(60)]  # what template siblings share


def words(rng: random.Random, count: int) -> list[str]:
    return [f"w{rng.randrange(5000)}" for _ in range(count)]


def pages(seed: int) -> list[Signature]:
    """Texts of a few families: an article, its near copies, copies that add a section, siblings
    that share only the template, and short ones matched only exactly."""
    rng = random.Random(seed)
    found: list[Signature] = []
    for _ in range(2):
        article = TEMPLATE + words(rng, 600)
        at = rng.randrange(60, 600)
        variants = [
            article,
            [*article[:at], "renamed", *article[at + 1 :]],  # a word changed: a near copy
            [*article[:at], *words(rng, 40), *article[at:]],  # a section added
            [*article[:at], *words(rng, 30), *article[at + 40 :]],  # one added, a longer one gone: shorter
            TEMPLATE + words(rng, 600),  # a sibling
            article[:10],  # exact only
        ]
        for text in variants:
            signature = FINGERPRINTER.signature(" ".join(text))
            assert signature is not None
            found.append(signature)
    return found


def crowded(rng: random.Random, signatures: list[Signature], centres: list[int]) -> Signature:
    """A page whose fingerprint lies a few bits from a centre: crowded with others, whatever its text."""
    signature = rng.choice(signatures)
    fingerprint = rng.choice(centres)
    for bit in rng.sample(range(64), rng.randint(0, 3)):
        fingerprint ^= 1 << bit
    return replace(signature, simhash=fingerprint)


def operations(seed: int) -> list[tuple[str, object]]:
    rng = random.Random(seed)
    signatures = pages(seed)
    centres = [rng.getrandbits(64) for _ in range(2)]
    ops: list[tuple[str, object]] = []
    for _ in range(14):
        if rng.random() < 0.15:
            ops.append(("forget", [f"https://site.example/{rng.randrange(20)}" for _ in range(2)]))
            continue
        batch = [
            (f"https://site.example/{rng.randrange(20)}", crowded(rng, signatures, centres))
            for _ in range(rng.randint(1, 6))
        ]
        ops.append(("check", batch))
    return ops


def run(url: str, ops: list[tuple[str, object]], prefer: str, radius: int, **policy: object) -> tuple[object, ...]:
    answers: list[object] = []
    with SimhashIndex(url, prefer=prefer, max_distance=radius, **policy) as index:
        index.reset()
        for kind, argument in ops:
            if kind == "forget":
                index.forget(argument)  # type: ignore[arg-type]
                continue
            for match in index.check_and_add_many(argument):  # type: ignore[arg-type]
                answers.append(None if match is None else (match.key, match.exact, match.superseded))
        keys = {f"https://site.example/{i}" for i in range(20)}
        stored = sorted(key for key in keys if index.get(key) is not None)
        logged = sorted((d.key, d.duplicate_of, d.superseded) for d in index.duplicates())
    return answers, stored, logged


@pytest.fixture(params=["sqlite", "sqlite-sql", "postgres", "postgres-sql", "redis"])
def backend_url(request: pytest.FixtureRequest) -> str:
    backend, _, lookup = request.param.partition("-")
    url: str = request.getfixturevalue(f"{backend}_url")
    return f"{url}{'&' if '?' in url else '?'}lookup=sql" if lookup else url


@pytest.mark.parametrize("prefer", ["first", "longest", "newest"])
def test_every_backend_decides_as_the_rule(backend_url, prefer):
    near_copies = added_to = 0
    for seed in range(4):
        ops = operations(seed)
        radius = (4, 6, 8)[seed % 3]
        expected = run("memory://", ops, prefer, radius)
        assert run(backend_url, ops, prefer, radius) == expected, seed
        near_copies += sum(1 for answer in expected[0] if answer and not answer[1])  # type: ignore[index, union-attr]
        added_to += expected != run("memory://", ops, prefer, radius, added_words=None)
    assert near_copies, "no near copy was matched: the test tests nothing"
    assert added_to, "no page was kept for what it adds: the test tests nothing"
