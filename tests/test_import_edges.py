"""`import` of pages at the edges: a page whose text is one node past libxml2's 10 MB limit,
and a URL that comes twice."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from commands import ok
from sites import english_article, page

from simhash_index import SimhashIndex

pytestmark = pytest.mark.early  # pages of 10 MB


def one_node_page(size: int) -> str:
    """A page whose text is one text node of `size` characters, of long words (fewer of them
    make it quick to fingerprint)."""
    rng = random.Random(size)
    vocabulary = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(30, 60))) for _ in range(2000)]
    words: list[str] = []
    length = 0
    while length < size:
        words.append(rng.choice(vocabulary))
        length += len(words[-1]) + 1
    text = " ".join(words)[:size]
    return f"<html><head><title>Big</title></head><body><article><p>{text}</p></article></body></html>"


def write_corpus(path: Path, pages: list[tuple[str, str]]) -> Path:
    path.write_text("".join(json.dumps({"url": url, "html": html}) + "\n" for url, html in pages))
    return path


def test_a_text_node_over_ten_megabytes_is_read_and_its_copy_dropped(tmp_path: Path) -> None:
    big = one_node_page(10_300_000)  # under the 20 MB page limit, over libxml2's 10 MB text node limit
    corpus = write_corpus(tmp_path / "big.jsonl", [("https://a.example/big", big), ("https://b.example/copy", big)])
    db = f"sqlite:///{tmp_path / 'big.db'}"
    assert ok("import", "--db", db, "--workers", "0", str(corpus)) == "kept 1, dropped 1, skipped 0 (no text)\n"
    with SimhashIndex(db) as index:
        [duplicate] = index.duplicates()
    assert (duplicate.key, duplicate.exact) == ("https://b.example/copy", True)


def test_a_url_twice_is_kept_once(tmp_path: Path) -> None:
    """A URL met again is another copy of its page (kept once, the copy dropped): "kept" counts
    what the index holds."""
    story, other = page("Story", english_article(1)), page("Other", english_article(2))
    copy = page("Story", english_article(1), nav=2)
    corpus = write_corpus(
        tmp_path / "twice.jsonl",
        [("https://a.example/1", story), ("https://a.example/1", story), ("https://b.example/2", other)]
        + [("https://c.example/copy", copy)] * 2,
    )
    db = f"sqlite:///{tmp_path / 'twice.db'}"
    summary = ok("import", "--db", db, "--workers", "0", str(corpus))
    with SimhashIndex(db) as index:
        stored, dropped = len(index), len(index.duplicates())
    assert (stored, dropped) == (2, 1)
    assert summary == "kept 2, dropped 3, skipped 0 (no text)\n"
