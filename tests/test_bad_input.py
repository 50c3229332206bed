"""Odd pages and odd items: each is counted, none crashes the crawl or loses an item."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from crawling import crawl, docs_block, user_project
from driving import make_pipeline, process, simhash_stats, stop
from scrapy.exceptions import DropItem
from sites import english_article, page, serve

from simhash_index import SimhashIndex
from simhash_index.scrapy.pipeline import RepeatedPage, SimhashDedupPipeline
from simhash_index.scrapy.stats import OUTCOMES

ARTICLE = page("Report", english_article(21))
README_SETTINGS = docs_block("pipeline-settings")
ZH_TEXT = "".join(english_article(1)[0].split()[:5]) + "城市交通部门今天发布了新的出行指南，市民可以在网上查询。" * 20


def nested(depth: int) -> str:
    return "<html><body>" + "<div>" * depth + "deep text " * 50 + "</div>" * depth + "</body></html>"


@pytest.fixture
def pipeline(db_url: str):
    p = make_pipeline(db_url)
    yield p
    stop(p)


def test_ten_thousand_character_urls_are_keys_like_any_other(pipeline: SimhashDedupPipeline, db_url: str) -> None:
    long_url = "http://example.com/" + "a" * 10_000
    other = "http://example.com/" + "a" * 9_999 + "b"
    process(pipeline, {"url": long_url, "html": ARTICLE})
    with pytest.raises(DropItem):
        process(pipeline, {"url": other, "html": ARTICLE})
    with pytest.raises(RepeatedPage):  # itself, passed on before in this crawl
        process(pipeline, {"url": long_url, "html": ARTICLE})
    with SimhashIndex(db_url, scheme=None) as index:
        assert [(d.key, d.duplicate_of) for d in index.duplicates()] == [(other, long_url)]
        assert index.get(long_url).key == long_url


@pytest.mark.parametrize(
    ("text", "kept"),
    [("1234567890 " * 40, True), ("... !!! ??? ;;; " * 40, False), ("  \n\t  ", False)],
)
def test_digits_only_is_text_punctuation_only_is_not(pipeline: SimhashDedupPipeline, text: str, kept: bool) -> None:
    item = {"url": "http://x/1", "text": text}
    assert process(pipeline, item) is item
    assert ("simhash/kept" in simhash_stats(pipeline)) is kept
    assert ("simhash/no_text" in simhash_stats(pipeline)) is not kept


def test_bytes_html_in_a_broken_encoding_is_decoded(pipeline: SimhashDedupPipeline) -> None:
    gbk = f'<html><head><meta charset="utf-8"></head><body><p>{ZH_TEXT}</p></body></html>'.encode("gbk")
    invalid_utf8 = ARTICLE.encode() + b"\xff\xfe\xc3\x28"
    process(pipeline, {"url": "http://x/gbk", "html": gbk})
    process(pipeline, {"url": "http://x/bad-utf8", "html": invalid_utf8})
    assert simhash_stats(pipeline) == {"simhash/kept": 2}
    with pytest.raises(DropItem):  # the GBK page was read as Chinese, not mojibake
        process(pipeline, {"url": "http://x/gbk-copy", "text": ZH_TEXT})


def test_deeply_nested_html_is_handled(pipeline: SimhashDedupPipeline) -> None:
    item = {"url": "http://x/deep", "html": nested(10_000)}
    assert process(pipeline, item) is item
    assert sum(simhash_stats(pipeline).values()) == 1  # kept, or counted as no text / an error


def test_extreme_fingerprints_round_trip(db_url: str) -> None:
    with SimhashIndex(db_url) as index:
        for value in (0, 2**64 - 1):
            assert index.check_and_add(f"fp-{value}", value) is None
            match = index.query(value)[0]
            assert (match.key, match.fingerprint, match.distance) == (f"fp-{value}", value, 0)
        assert index.check_and_add("near-max", 2**64 - 1 - 0b101).key == f"fp-{2**64 - 1}"


def test_a_crawl_of_bad_pages_finishes_cleanly(tmp_path: Path, sqlite_url: str) -> None:
    root = tmp_path / "site"
    root.mkdir()
    files = {
        "empty.html": b"",
        "binary.html": bytes(range(256)) * 200,
        "gbk.html": f'<html><head><meta charset="utf-8"></head><body><p>{ZH_TEXT}</p></body></html>'.encode("gbk"),
        "invalid.html": ARTICLE.encode() + b"\xff\xfe\xc3\x28",
        "huge.html": b"<html><body><p>" + b"many words here " * 1_400_000 + b"</p></body></html>",
        "deep.html": nested(10_000).encode(),
        "scripts.html": b"<html><head><script>var x = 1;</script></head><body><script>go()</script></body></html>",
        "doc.pdf": b"%PDF-1.4 binary",
        "good.html": ARTICLE.encode(),
        "good-copy.html": ARTICLE.encode(),
    }
    for name, body in files.items():
        (root / name).write_bytes(body)
    links = "".join(f'<a href="/{name}">{name}</a> ' for name in files)
    (root / "index.html").write_text(f"<html><body>{links}</body></html>")
    with serve(root) as base:
        result = crawl(f"{base}/index.html", sqlite_url, tmp_path / "run")
    assert result.returncode == 0
    assert "Traceback" not in result.log
    assert "'finish_reason': 'finished'" in result.log
    assert max(len(line) for line in result.log.splitlines()) < 2000  # no page body in the log
    assert result.stat("simhash/dropped") == 2  # of good, good-copy and invalid (same text), one is kept
    assert result.stat("simhash/errors/extract") == 1  # the 22 MB page
    assert result.stat("simhash/no_text") >= 3  # empty, binary, scripts
    pages = len(files) - 1  # the PDF is not an item
    assert result.stat("item_scraped_count") + result.stat("item_dropped_count") == pages + 1  # + index


ODD_SPIDER = """
import scrapy


class Odd(scrapy.Spider):
    name = "odd"
    start_urls = ["{base}/index.html"]

    def parse(self, response):
        yield {{"url": "{base}/first", "text": {text!r}}}
        yield {{"url": "http://example.com/a\\x00b", "text": {text!r} + " nul"}}
        yield {{"url": "http://example.com/\\ud800", "text": {text!r} + " surrogate"}}
        yield "a plain string"
        yield 42
        yield [1, 2]
        yield object()
        yield {{"url": "{base}/copy", "text": {text!r}}}
"""


def test_odd_items_pass_through_a_crawl_counted(tmp_path: Path, db_url: str) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text("<html><body>start</body></html>")
    text = " ".join(english_article(22))
    with serve(tmp_path / "site") as base:
        project = user_project(tmp_path, ODD_SPIDER.format(base=base, text=text), README_SETTINGS)
        result = crawl("", db_url, tmp_path / "run", cwd=project, spider="odd", feed=False)
    assert result.returncode == 0, result.log[-3000:]
    assert "Traceback" not in result.log and "Logging error" not in result.log
    assert "'finish_reason': 'finished'" in result.log  # one bad item never stops a crawl
    assert result.stat("simhash/not_an_item") == 4
    assert result.stat("simhash/bad_url") == 2
    assert (result.stat("simhash/kept"), result.stat("simhash/dropped")) == (1, 1)
    assert result.stat("item_scraped_count") == 7  # all but the copy went on
    assert "holds a NUL character" in result.log and "holds a lone surrogate" in result.log


def test_each_item_lands_in_exactly_one_outcome(pipeline: SimhashDedupPipeline) -> None:
    items = [
        {"url": "http://o/1", "html": ARTICLE},  # kept
        {"url": "http://o/2", "html": ARTICLE},  # dropped (exact)
        {"url": "http://o/1", "html": ARTICLE},  # repeated: passed on before in this crawl
        {"url": "http://o/3"},  # no html or text field
        {"url": "http://o/4", "text": "   "},  # a blank text
        {"url": "http://o/5", "html": ""},  # no text in the html
        {"html": ARTICLE},  # no url
        {"url": "http://o/\x00", "html": ARTICLE},  # a url no database stores
        {"url": "http://o/6", "html": "<p>" + "word " * 5_000_000 + "</p>"},  # over the extraction limit
        "not an item",
    ]
    for item in items:
        with contextlib.suppress(DropItem):
            process(pipeline, item)
    counted = simhash_stats(pipeline)
    assert sum(counted.get(f"simhash/{outcome}", 0) for outcome in OUTCOMES) == len(items), counted
    assert all(counted.get(f"simhash/{outcome}", 0) == 1 for outcome in OUTCOMES if outcome != "no_text")
    assert counted["simhash/no_text"] == 2
