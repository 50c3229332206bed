"""What one page adds to another (fingerprinting/additions.py), estimated from their bitmaps."""

from __future__ import annotations

import random

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_index.fingerprinting.additions import MAX_BITS, MIN_BITS, SketchBound, addition, bits_for
from simhash_index.fingerprinting.fingerprinter import DEFAULT, Signature

VOCABULARY = [f"word{i}" for i in range(3000)]


def page(words: list[str]) -> Signature:
    signature = DEFAULT.signature(" ".join(words))
    assert signature is not None and signature.bloom is not None and signature.shingles is not None
    return signature


def adds(new: list[str], stored: list[str]):
    a, b = page(new), page(stored)
    return addition(a.bloom, a.shingles, b.bloom, b.shingles)  # type: ignore[arg-type]


def text(rng: random.Random, count: int) -> list[str]:
    return [rng.choice(VOCABULARY) for _ in range(count)]


def test_a_page_that_adds_nothing_shows_no_new_bit():
    rng = random.Random(1)
    stored = text(rng, 800)
    shorter = stored[:300] + stored[340:]  # a paragraph removed
    found = adds(shorter, stored)
    assert found.new_bits <= 2  # only the shingles across the cut are new
    assert not found.reaches(25)
    assert adds(stored, stored).new_bits == 0


@pytest.mark.parametrize("length", [300, 1500, 6000])
@pytest.mark.parametrize("added", [25, 60, 400])
def test_a_section_added_is_counted_within_a_few_words(length, added):
    rng = random.Random(length + added)
    stored = text(rng, length)
    at = rng.randrange(length)
    found = adds([*stored[:at], *text(rng, added), *stored[at:]], stored)
    assert found.reaches(25)
    assert abs(found.estimate - (added + 2)) <= max(8, 0.25 * added)  # a run of w new words: w + 2 new shingles


def test_a_renamed_word_adds_three_shingles_and_a_few_renames_stay_under_the_threshold():
    rng = random.Random(2)
    stored = text(rng, 1200)
    renamed = list(stored)
    for at in (100, 500, 900):
        renamed[at] = "brandnewname"
    found = adds(renamed, stored)
    assert 6 <= found.estimate <= 12
    assert not found.reaches(25)


def test_a_longer_page_adds_at_least_its_extra_shingles():
    """The floor needs no estimate: a page of 500 more distinct shingles adds 500 at least."""
    rng = random.Random(3)
    stored = text(rng, 200)
    longer = stored + text(rng, 500)
    found = adds(longer, stored)
    assert found.floor >= 490
    assert found.estimate >= found.floor


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(50, 3000), st.integers(0, 120), st.randoms(use_true_random=False))
def test_the_drop_is_conservative(length, added, rng):
    """Whatever the page, a page that adds well over 25 new words is never taken to add fewer
    (at exactly 25 new shingles, the odds are DOUBT), and one that adds none always is."""
    stored = text(rng, length)
    at = rng.randrange(length)
    found = adds([*stored[:at], *text(rng, added), *stored[at:]], stored)
    if added >= 32:
        assert found.reaches(25)
    if added == 0:
        assert not found.reaches(25)


def test_bitmaps_of_two_sizes_are_folded_to_the_smaller():
    rng = random.Random(4)
    stored = text(rng, 2000)
    short = stored[:150]  # a bitmap of fewer bits
    a, b = page(short), page(stored)
    assert len(a.bloom) < len(b.bloom)  # type: ignore[arg-type]
    assert addition(a.bloom, a.shingles, b.bloom, b.shingles).new_bits == 0  # type: ignore[arg-type]


def test_bitmap_sizes():
    assert bits_for(0) == MIN_BITS
    assert bits_for(1000) == 2048
    assert bits_for(10**6) == MAX_BITS


def test_without_bitmaps_the_sketches_bound_what_a_page_adds():
    """An identical sketch still leaves room for ~1.8% of the page: a short page passes, a long one does not."""
    assert not SketchBound(1000, 256, 256).reaches(25)
    assert SketchBound(2000, 256, 256).reaches(25)
    assert SketchBound(400, 240, 256).reaches(25)
