"""NearIndex (index/memory/near.py), the writers' in-memory lookup, held to brute force."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_index.index.memory import near
from simhash_index.index.memory.near import NearIndex

fingerprints = st.integers(0, 2**64 - 1)
LAYOUTS = [None, (16, 16, 16, 16), (21, 21, 22), (8,) * 8, (24, 24, 16), (1, 21, 21, 21)]


def brute_force(stored: list[int], queries: list[int], radius: int) -> list[list[int]]:
    """Each query's fingerprints within the radius, a fingerprint stored twice found twice."""
    return [sorted(fp for fp in stored if (fp ^ query).bit_count() <= radius) for query in queries]


@st.composite
def neighbourhoods(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    """Stored fingerprints and queries, many of them a few bits from a stored one (and a few stored twice)."""
    stored = draw(st.lists(fingerprints, max_size=60))
    queries = draw(st.lists(fingerprints, max_size=8))
    for fp in draw(st.lists(st.sampled_from(stored), max_size=12)) if stored else []:
        for bit in draw(st.sets(st.integers(0, 63), max_size=10)):
            fp ^= 1 << bit
        queries.append(fp)
        stored.append(fp ^ (1 << draw(st.integers(0, 63))))
    stored += draw(st.lists(st.sampled_from(stored), max_size=4)) if stored else []
    return stored, queries


@settings(max_examples=examples(60), deadline=None)  # a wide layout's tables take a tenth of a second
@given(neighbourhoods(), st.sampled_from(LAYOUTS), st.integers(0, 12), st.integers(0, 3))
def test_search_equals_brute_force(case, widths, radius, added_in):
    """Every radius, every layout, whether the fingerprints came at build time or were added later."""
    stored, queries = case
    split = len(stored) * added_in // 4
    index = NearIndex(stored[:split], widths=widths)
    index.add(stored[split:])
    found = index.search(queries, radius)
    assert [list(map(int, fps)) for fps in found.of(len(queries))] == brute_force(stored, queries, radius)
    assert len(index) == len(stored)


@pytest.mark.parametrize("widths", [None, (16, 16, 16, 16)])
def test_adding_through_every_merge_keeps_the_answers_exact(widths, monkeypatch):
    """Fingerprints added a few at a time pass through the pending list, the small table and the
    main one (whose layout changes with its size): the answers stay those of brute force."""
    monkeypatch.setattr(near, "PENDING", 64)
    monkeypatch.setattr(near, "LARGE_FROM", 3000)
    rng = np.random.default_rng(3)
    index = NearIndex(widths=widths)
    held: list[int] = []
    layouts = set()
    for step in range(60):
        more = rng.integers(0, 2**64, int(rng.integers(1, 150)), dtype=np.uint64).tolist()
        if held and step % 5 == 0:
            more += held[:20]  # held twice: found twice
        index.add(np.array(more, np.uint64) if step % 2 else more)
        held += more
        layouts.add(index.widths)
        queries = [fp ^ (1 << int(a)) ^ (1 << int(b)) for fp, a, b in zip(held[-20:], *rng.integers(0, 64, (2, 20)))]
        queries += rng.integers(0, 2**64, 5, dtype=np.uint64).tolist()
        for radius in (0, 3, 6, 8):
            found = index.search(queries, radius)
            assert [list(map(int, fps)) for fps in found.of(len(queries))] == brute_force(held, queries, radius)
    assert len(index) == len(held)
    assert layouts == ({near.SMALL, near.LARGE} if widths is None else {tuple(widths)})


def test_the_entries_read_grow_with_the_radius_and_shrink_with_wider_parts():
    rng = np.random.default_rng(5)
    stored = rng.integers(0, 2**64, 200_000, dtype=np.uint64)
    queries = rng.integers(0, 2**64, 64, dtype=np.uint64)
    small, large = NearIndex(stored, widths=near.SMALL), NearIndex(stored, widths=near.LARGE)
    reads = {r: (small.search(queries, r).read, large.search(queries, r).read) for r in (3, 6, 8)}
    assert reads[3][0] < reads[6][0] < reads[8][0]
    assert all(wide < narrow for narrow, wide in reads.values())


def test_the_large_layout_puts_its_widest_part_where_the_tolerance_is_largest():
    """The first parts take the larger tolerances (probes.tolerances): there, a wider part's
    shorter runs cut the entries read more than its extra probes add."""
    rng = np.random.default_rng(6)
    stored = rng.integers(0, 2**64, 1_000_000, dtype=np.uint64)
    queries = rng.integers(0, 2**64, 64, dtype=np.uint64)
    ours, reversed_ = NearIndex(stored, widths=near.LARGE), NearIndex(stored, widths=near.LARGE[::-1])
    for radius in (3, 4, 6, 7):
        assert ours.search(queries, radius).read < reversed_.search(queries, radius).read


@pytest.mark.parametrize("widths", [(16, 16, 16), (32, 32), (0, 32, 32), (25, 25, 14)])
def test_widths_must_cover_64_bits_in_parts_of_at_most_24(widths):
    with pytest.raises(ValueError, match="widths must be parts of 1 to 24 bits adding up to 64"):
        NearIndex(widths=widths)


@pytest.mark.parametrize("radius", [-1, 64, 2.0, True])
def test_a_radius_outside_0_to_63_is_refused(radius):
    with pytest.raises(ValueError, match="radius must be an integer from 0 to 63"):
        NearIndex([1]).search([1], radius)


def test_signed_fingerprints_as_the_database_stores_them_are_read_as_unsigned():
    index = NearIndex(np.array([-1, 5], np.int64))
    assert index.search([2**64 - 1, 4], 1).of(2) == [[2**64 - 1], [5]]


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), fingerprints, st.booleans()), max_size=80), st.integers(0, 8))
def test_a_memory_index_finds_what_brute_force_finds_as_pages_come_and_go(steps, radius):
    """MemoryIndex finds near pages through a NearIndex that keeps stale fingerprints until it is
    rebuilt: its answers are those of brute force over the pages stored at each moment."""
    from unittest import mock

    from simhash_index import SimhashIndex
    from simhash_index.index.memory import backend

    stored: dict[str, int] = {}
    with mock.patch.object(backend, "REBUILD_FROM", 8), SimhashIndex("memory://", max_distance=radius) as index:
        for number, fingerprint, forget in steps:
            key = f"k{number}"
            if forget:
                index.forget([key])
                stored.pop(key, None)
            else:
                index.add(key, fingerprint)
                stored[key] = fingerprint
            probe = fingerprint ^ 0b101
            expected = {k: (v ^ probe).bit_count() for k, v in stored.items() if (v ^ probe).bit_count() <= radius}
            assert {m.key: m.distance for m in index.query(probe)} == expected
