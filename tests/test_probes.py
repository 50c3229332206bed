"""The multi-index probing rule (index/probes.py) and the locks that make wider radii atomic."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from simhash_index.fingerprinting.fingerprinter import Signature
from simhash_index.index.probes import probe_count, tolerances, variants
from simhash_index.index.sql.engine import advisory_lock_keys
from simhash_index.index.sql.layouts import Layout, contiguous_blocks

fingerprints = st.integers(0, 2**64 - 1)


def test_probe_counts_per_radius() -> None:
    assert [probe_count(r, 4, 16) for r in range(8)] == [1, 2, 3, 4, 20, 36, 52, 68]
    assert [probe_count(r, 2, 32) for r in range(6)] == [1, 2, 34, 66, 562, 1058]


@given(st.integers(0, 20), st.integers(1, 6))
def test_tolerances_leave_no_room_for_a_fingerprint_within_the_radius(radius: int, parts: int) -> None:
    """Each part one bit past its tolerance adds up to more than the radius, and one fewer would not."""
    spread = tolerances(radius, parts)
    assert sum(t + 1 for t in spread) == radius + 1


@given(st.integers(0, 2**16 - 1), st.integers(0, 2))
def test_variants_are_every_value_within_the_tolerance_once(value: int, tolerance: int) -> None:
    found = variants(value, 16, tolerance)
    assert len(found) == len(set(found))
    assert set(found) == {v for v in range(2**16) if (v ^ value).bit_count() <= tolerance}


@st.composite
def pairs_within(draw: st.DrawFn, radius: int) -> tuple[int, int]:
    fingerprint = draw(fingerprints)
    other = fingerprint
    for bit in draw(st.sets(st.integers(0, 63), max_size=radius)):
        other ^= 1 << bit
    return fingerprint, other


@given(pairs_within(7), st.sampled_from(["blocks", "halves"]), st.integers(0, 7))
def test_a_fingerprint_within_the_radius_is_among_the_probes(pair: tuple[int, int], name: str, radius: int) -> None:
    query, stored = pair
    layout = Layout(name)  # type: ignore[arg-type]
    radius = min(radius, layout.max_radius)
    if (query ^ stored).bit_count() > radius:
        return
    # at radius parts - 1, each part is probed at its own value only
    stored_keys = [probes[0] for probes in layout.probes(stored, len(layout.lookup_columns) - 1)]
    assert any(key in probes for key, probes in zip(stored_keys, layout.probes(query, radius)))


@given(pairs_within(7), st.integers(0, 7), st.integers(0, 7))
def test_two_checks_that_could_see_each_other_share_a_lock(pair: tuple[int, int], radius_a: int, radius_b: int) -> None:
    """PostgreSQL serialises two checks within the smaller of their radii: they need a lock in
    common (beyond it, the check that misses the other's page could have run first)."""
    fp_a, fp_b = pair
    a = set(advisory_lock_keys(Signature(fp_a, None), 1, radius_a))
    b = set(advisory_lock_keys(Signature(fp_b, None), 2, radius_b))
    if (fp_a ^ fp_b).bit_count() <= min(radius_a, radius_b):
        assert a & b


def test_fingerprints_eight_bits_apart_in_two_bytes_of_every_block_may_share_no_lock() -> None:
    """The locks are no coarser than they need be: 8 bits, two in each block, one in each byte."""
    a = 0
    b = sum(1 << (16 * block + bit) for block in range(4) for bit in (0, 8))
    assert contiguous_blocks(a) != contiguous_blocks(b)
    assert not set(advisory_lock_keys(Signature(a, None), 1, 7)) & set(advisory_lock_keys(Signature(b, None), 2, 7))


def test_up_to_radius_3_only_whole_blocks_are_locked() -> None:
    """Fingerprints that differ in every block but share bytes lock nothing in common at radius 3,
    so writers of unrelated pages run side by side; from radius 4 the shared byte is locked."""
    a = 0
    b = sum(1 << (16 * block) for block in range(4))  # one bit in each block's low byte
    locks = {
        radius: [set(advisory_lock_keys(Signature(fp, None), n, radius)) for n, fp in enumerate((a, b))]
        for radius in (3, 4)
    }
    assert not locks[3][0] & locks[3][1]
    assert locks[4][0] & locks[4][1]
