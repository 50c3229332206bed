"""Kept texts (keep_texts, ?texts=1, SIMHASH_KEEP_TEXTS) on every backend: stored compressed,
read back, forgotten with their pages, counted by `stats`, diffed by `explain` and `report`."""

from __future__ import annotations

import json
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from commands import ok
from driving import make_pipeline
from sites import edit_words, english_article

from simhash_index import SimhashIndex
from simhash_index.index.texts import diff_text, word_diff

ARTICLE = " ".join(english_article(21))
EDITED = " ".join(edit_words(english_article(21), 5, 3))
OTHER = " ".join(english_article(22))


def with_texts(url: str) -> str:
    return url + ("&" if "?" in url else "?") + "texts=1"


def test_texts_are_kept_compressed_and_forgotten_with_their_pages(any_url: str) -> None:
    with SimhashIndex(any_url) as plain:
        assert plain.store_texts([("https://a/1", ARTICLE)]) == 0  # not asked to keep texts
        assert plain.text("https://a/1") is None
    with SimhashIndex(with_texts(any_url)) as index:
        assert index.keep_texts
        pages = [("https://a/1", ARTICLE), ("https://a/2", EDITED), ("https://b/1", OTHER)]
        assert index.store_texts(pages) == 3
        assert [index.text(key) for key, _ in pages] == [text for _, text in pages]
        sizes = index.text_sizes()
        packed = sum(len(zlib.compress(text.encode(), 6)) for _, text in pages)
        assert (sizes.texts, sizes.compressed_bytes) == (3, packed)
        assert packed < sum(len(text.encode()) for _, text in pages)
        index.store_texts([("https://b/1", ARTICLE)])  # replaces
        assert index.text("https://b/1") == ARTICLE
        assert index.text_sizes().compressed_bytes == packed - len(zlib.compress(OTHER.encode(), 6)) + len(
            zlib.compress(ARTICLE.encode(), 6)
        )
        for key in ("https://a/1", "https://b/1"):
            assert index.check_and_add(key, 0x0123456789ABCDEF if key == "https://a/1" else 0xFEDCBA9876543210) is None
        assert index.check_and_add("https://a/2", 0x0123456789ABCDEE).key == "https://a/1"
        index.forget(["https://a/1"])  # and the duplicate logged against it
        assert index.text("https://a/1") is None and index.text("https://a/2") is None
        assert index.text("https://b/1") == ARTICLE
        index.reset()
        assert index.text("https://b/1") is None and index.text_sizes().texts == 0


def test_word_diff() -> None:
    pieces = word_diff("one two three four five", "one two 3 four five six", context=1)
    assert "[-three-] {+3+}" in diff_text(pieces) and diff_text(pieces).endswith("{+six+}")
    assert [p.kind for p in pieces if p.kind != "same"] == ["removed", "added", "added"]
    assert len(" ".join(p.words for p in word_diff(ARTICLE, OTHER, limit=50)).split()) <= 60


class Diffs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows = self.deleted = self.inserted = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.rows += tag == "tr" and ("class", "diff") in attrs
        self.deleted += tag == "del"
        self.inserted += tag == "ins"


def test_import_keeps_texts_for_stats_explain_and_report(db_url: str, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    lines = [("https://a/1", ARTICLE), ("https://a/2", EDITED), ("https://b/1", OTHER)]
    corpus.write_text("".join(json.dumps({"url": u, "text": t}) + "\n" for u, t in lines), encoding="utf-8")
    result = ok("import", "--db", db_url, str(corpus), "--keep-texts", "--workers", "0")
    assert result.startswith("kept 2, dropped 1")
    stats = json.loads(ok("stats", "--db", db_url, "--format", "json"))
    packed = [len(zlib.compress(t.encode(), 6)) for _, t in lines]
    assert (stats["texts_kept"], stats["text_bytes"]) == (3, sum(packed))
    assert stats["text_bytes_per_page"] == round(sum(packed) / 3)
    explained = json.loads(ok("explain", "--db", db_url, "https://a/2", "--format", "json"))
    assert explained["duplicate_of"] == "https://a/1"
    assert explained["diff"] == diff_text(word_diff(ARTICLE, EDITED))
    assert "[-" in explained["diff"] and "{+" in explained["diff"]
    text = ok("explain", "--db", db_url, "https://a/2", "--format", "text")
    assert explained["diff"] in text
    report = Diffs()
    report.feed(ok("report", "--db", db_url, "--html", "-"))
    changed = [p for p in word_diff(ARTICLE, EDITED) if p.kind != "same"]
    assert report.rows == 1
    assert (report.deleted, report.inserted) == (
        sum(p.kind == "removed" for p in changed),
        sum(p.kind == "added" for p in changed),
    )


def test_the_pipeline_keeps_texts(sqlite_url: str) -> None:
    from driving import process, stop
    from scrapy.exceptions import DropItem

    pipeline = make_pipeline(sqlite_url, SIMHASH_KEEP_TEXTS=True)
    try:
        process(pipeline, {"url": "http://t/1", "text": ARTICLE})
        with pytest.raises(DropItem):
            process(pipeline, {"url": "http://t/2", "text": ARTICLE + " one more word"})
    finally:
        stop(pipeline)
    with SimhashIndex(sqlite_url) as index:
        assert index.text("http://t/1") == ARTICLE
        assert index.text("http://t/2") == ARTICLE + " one more word"
