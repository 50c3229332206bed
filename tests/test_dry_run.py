"""DryRunIndex: an Index that answers as the index it reads would, and writes nothing to it."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

from simhash_index import Index, Match, SimhashIndex, defaults
from simhash_index.fingerprinting.fingerprinter import DEFAULT, Signature
from simhash_index.index.dry_run import DryRunIndex

STORED = 0x0123_4567_89AB_CDEF


def test_a_dry_run_decides_as_its_source_and_leaves_it_alone(db_url: str) -> None:
    with SimhashIndex(db_url, max_distance=2) as source:
        source.add("https://example.com/kept", STORED)
        with DryRunIndex(source, scheme=DEFAULT.scheme) as dry:
            assert isinstance(dry, Index) and dry.max_distance == 2
            assert dry.check_and_add("https://example.com/copy", STORED ^ 0b11) == Match(
                "https://example.com/kept", STORED, 2
            )
            assert dry.check_and_add("https://example.com/far", STORED ^ 0b111) is None
            assert dry.check_and_add("https://example.com/again", STORED ^ 0b111) == Match(
                "https://example.com/far", STORED ^ 0b111, 0
            )
        assert len(source) == 1 and source.duplicates() == []


def test_a_dry_run_without_an_index_decides_as_a_new_one_would() -> None:
    assert DryRunIndex(None, scheme=DEFAULT.scheme).max_distance == defaults.MAX_DISTANCE
    assert DryRunIndex(None, scheme=DEFAULT.scheme, max_distance=3).max_distance == 3


def test_a_dry_run_compares_words_and_dates_as_its_source_would(db_url: str) -> None:
    """The pages copied from the source keep their words and dates: a survivor policy compares them."""
    stored = Signature(STORED, None, words=100, modified=datetime(2024, 1, 8, tzinfo=timezone.utc))
    with SimhashIndex(db_url) as source:
        source.check_and_add("https://example.com/kept", stored)
        longer = replace(stored, words=120)
        with DryRunIndex(source, scheme=DEFAULT.scheme, prefer="longest") as dry:
            assert dry.check_and_add("https://example.com/shorter", replace(stored, words=90)) is not None
            found = dry.check_and_add("https://example.com/longer", longer)
            assert found is not None and found.superseded == "longer"
        older = replace(stored, modified=datetime(2024, 1, 1, tzinfo=timezone.utc))
        with DryRunIndex(source, scheme=DEFAULT.scheme, prefer="newest") as dry:
            found = dry.check_and_add("https://example.com/older", older)
            assert found is not None and found.superseded is None
        assert len(source) == 1 and source.duplicates() == []
