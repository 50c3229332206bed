"""The multi-index probing rule (index/probes.py), as the SQL layouts probe their lookup columns."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from simhash_index.index.probes import probe_count, tolerances, variants
from simhash_index.index.sql.layouts import Layout

fingerprints = st.integers(0, 2**64 - 1)


def test_probe_counts_per_radius() -> None:
    assert [probe_count(r, 4, 16) for r in range(9)] == [1, 2, 3, 4, 20, 36, 52, 68, 188]
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


@given(pairs_within(8), st.sampled_from(["blocks", "halves"]), st.integers(0, 8))
def test_a_fingerprint_within_the_radius_is_among_the_probes(pair: tuple[int, int], name: str, radius: int) -> None:
    query, stored = pair
    layout = Layout(name)  # type: ignore[arg-type]
    radius = min(radius, layout.max_radius)
    if (query ^ stored).bit_count() > radius:
        return
    # at radius parts - 1, each part is probed at its own value only
    stored_keys = [probes[0] for probes in layout.probes(stored, len(layout.lookup_columns) - 1)]
    assert any(key in probes for key, probes in zip(stored_keys, layout.probes(query, radius)))


@given(fingerprints, st.sampled_from([("blocks", "contiguous"), ("blocks", "interleaved"), ("halves", "contiguous")]))
def test_a_rows_first_key_is_its_own_probe_of_the_first_column(fingerprint: int, layout: tuple[str, str]) -> None:
    """The key the candidates' rows are read by is the one a radius-0 lookup probes."""
    chosen = Layout(*layout)  # type: ignore[arg-type]
    assert chosen.first_key(fingerprint) == chosen.probes(fingerprint, 0)[0][0]
