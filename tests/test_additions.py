"""What one page adds to another (fingerprinting/additions.py), estimated from their bitmaps."""

from __future__ import annotations

import random

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_index import SimhashIndex
from simhash_index.fingerprinting.additions import BITS, MAX_BITS, MIN_BITS, SketchBound, added, bits_for
from simhash_index.fingerprinting.fingerprinter import DEFAULT, Signature
from simhash_index.index.explain import explain

VOCABULARY = [f"word{i}" for i in range(3000)]


def page(words: list[str]) -> Signature:
    signature = DEFAULT.signature(" ".join(words))
    assert signature is not None and signature.bloom is not None and signature.shingles is not None
    return signature


def adds(new: list[str], stored: list[str]):
    return added(page(new).shingled, page(stored).bloom)  # type: ignore[arg-type]


def text(rng: random.Random, count: int) -> list[str]:
    return [rng.choice(VOCABULARY) for _ in range(count)]


def test_a_page_that_adds_nothing_shows_no_new_word():
    rng = random.Random(1)
    stored = text(rng, 800)
    shorter = stored[:300] + stored[340:]  # a paragraph removed
    found = adds(shorter, stored)
    assert found.seen == 0  # the shingles across the cut are new, but each holds old words too
    assert not found.reaches(25)
    assert adds(stored, stored).seen == 0


@pytest.mark.parametrize("length", [300, 1500, 6000])
@pytest.mark.parametrize("count", [25, 60, 400])
def test_a_section_added_is_counted_within_a_few_words(length, count):
    rng = random.Random(length + count)
    stored = text(rng, length)
    at = rng.randrange(length)
    found = adds([*stored[:at], *text(rng, count), *stored[at:]], stored)
    assert found.reaches(25)
    assert abs(found.estimate - count) <= max(8, 0.25 * count)


def test_words_renamed_here_and_there_add_nothing_and_a_sentence_does():
    rng = random.Random(2)
    stored = text(rng, 1200)
    renamed = list(stored)
    for at in (100, 300, 500, 700, 900, 1000, 1100, 1150):
        renamed[at] = f"brandnewname{at}"
    found = adds(renamed, stored)
    assert found.estimate == 0 and not found.reaches(25)
    sentence = [*stored[:400], *text(rng, 6), *stored[400:]]
    assert adds(sentence, stored).estimate == 6


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


def test_a_short_page_against_a_long_one_and_a_long_one_against_a_short_one():
    rng = random.Random(4)
    stored = text(rng, 2000)
    assert adds(stored[:150], stored).seen == 0
    assert adds(stored, stored[:150]).reaches(25)  # it adds 1,850 words


def test_bitmap_sizes():
    assert bits_for(0) == MIN_BITS
    assert bits_for(1000) == 1000 * BITS
    assert bits_for(10**6) == MAX_BITS


def test_without_bitmaps_the_sketches_bound_what_a_page_adds():
    """An identical sketch still leaves room for ~1.8% of the page: a short page passes, a long one does not."""
    assert not SketchBound(1000, 256, 256).reaches(25)
    assert SketchBound(2000, 256, 256).reaches(25)
    assert SketchBound(400, 240, 256).reaches(25)


# -- the rule on every backend ------------------------------------------------------------------


def versions() -> dict[str, Signature]:
    """A page of 700 words, a version with a 40-word section more, one with a word changed, and
    one with 30 words added and 45 taken out elsewhere (shorter, yet adding)."""
    rng = random.Random(9)
    base = text(rng, 700)
    texts = {
        "base": base,
        "section": [*base[:300], *text(rng, 40), *base[300:]],
        "word": [*base[:200], "renamed", *base[201:]],
        "swap": [*base[:100], *text(rng, 30), *base[100:500], *base[545:]],
    }
    return {name: page(words) for name, words in texts.items()}


@pytest.mark.parametrize("prefer", ["first", "longest", "newest"])
def test_a_page_that_adds_a_section_is_kept_and_one_that_changes_a_word_is_dropped(any_url, prefer):
    pages = versions()
    with SimhashIndex(any_url, prefer=prefer) as index:
        assert index.check_and_add("https://docs.example/v1", pages["base"]) is None
        word = index.check_and_add("https://docs.example/word", pages["word"])
        assert word is not None and word.key == "https://docs.example/v1"
        assert word.added is not None and word.added <= 3
        if word.superseded is None:  # the log keeps what the dropped page added
            logged = index.duplicate("https://docs.example/word")
            assert logged is not None and logged.added == word.added
        section = index.check_and_add("https://docs.example/v2", pages["section"])
        swap = index.check_and_add("https://docs.example/v3", pages["swap"])
        stored = {key for key in ("v1", "v2", "v3", "word") if index.get(f"https://docs.example/{key}") is not None}
    # the section's 40 words and the swap's 30 are the crawl's only copy of them: never dropped
    assert section is None or section.superseded is not None
    assert swap is None or swap.superseded is not None
    assert {"v2", "v3"} <= stored
    if prefer == "first":
        assert stored == {"v1", "v2", "v3"}  # each kept as its own page
    else:  # the longer, or newer, supersedes the stored copy as a near copy would
        assert section is not None and section.superseded is not None and section.added >= 25


def test_the_plain_similarity_rule_drops_what_adds(any_url):
    pages = versions()
    with SimhashIndex(any_url, added_words=None) as index:
        index.check_and_add("https://docs.example/v1", pages["base"])
        match = index.check_and_add("https://docs.example/v2", pages["section"])
        assert match is not None and match.key == "https://docs.example/v1"


def test_explain_says_what_a_page_that_superseded_another_adds_to_it(any_url):
    """The log's words for a superseded page are those the page that took its place adds to it."""
    pages = versions()
    with SimhashIndex(any_url, prefer="longest") as index:
        index.check_and_add("https://docs.example/v1", pages["base"])
        section = index.check_and_add("https://docs.example/v2", pages["section"])
        assert section is not None and section.superseded == "longer" and section.added >= 25
        reasons = explain(index, "https://docs.example/v2").reasons()
    line = next(r for r in reasons if r.startswith("  https://docs.example/v1: "))
    assert f"to which this page adds about {section.added} words; this page is longer" in line, line
