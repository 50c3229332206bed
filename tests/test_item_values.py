"""Every value an item carries into the pipeline, whatever it holds: a value the pipeline cannot use
is that value's problem (counted, warned of once), never the item's loss."""

from __future__ import annotations

import dataclasses
import logging
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import attrs
import pytest
from crawling import crawl
from driving import make_pipeline, process, simhash_stats, stop
from scrapy.exceptions import DropItem
from sites import english_article, page, serve

from simhash_index.scrapy.pipeline import SimhashDedupPipeline

ARTICLE = page("Report", english_article(31))
TEXT = " ".join(english_article(32))
PAST_THE_END = "Fri, 31 Dec 9999 23:59:59 -1200"  # in UTC, past datetime's last day
KEPT_AND_A_COPY = {"simhash/kept": 1, "simhash/dropped": 1, "simhash/dropped_exact": 1}


@pytest.fixture
def pipeline(sqlite_url: str):
    p = make_pipeline(sqlite_url)
    yield p
    stop(p)


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name.startswith("simhash")]


def test_a_crawl_keeps_the_page_whose_last_modified_is_past_the_calendars_end(tmp_path: Path, sqlite_url: str) -> None:
    """Issue 50: the page was lost ("Error processing", a traceback, 2 of 3 items out, exit 0)."""
    root = tmp_path / "site"
    root.mkdir()
    names = ("a", "b", "c", "d")
    for n, name in enumerate(names):
        (root / f"{name}.html").write_text(page(name.upper(), english_article(33 + n)), encoding="utf-8")
    links = " ".join(f'<a href="/{name}.html">{name}</a>' for name in names)
    (root / "index.html").write_text(f"<html><body>{links}</body></html>")
    headers = {
        "/b.html": {"Last-Modified": PAST_THE_END},
        "/c.html": {"Last-Modified": "\xff\xfe not a date"},
        "/d.html": {"Content-type": "text/html; charset=x-no-such-charset"},
    }
    with serve(root, headers=headers) as base:
        result = crawl(f"{base}/index.html", sqlite_url, tmp_path / "run")
    assert result.returncode == 0, result.log[-3000:]
    assert "Traceback" not in result.log and "Error processing" not in result.log, result.log[-3000:]
    assert {item["url"] for item in result.kept} == {f"{base}/{name}.html" for name in ("index", *names)}
    assert result.stat("simhash/bad_last_modified") == 2 and result.stat("simhash/kept") == 5
    warned = [line for line in result.log.splitlines() if " WARNING: " in line and "last_modified" in line]
    assert len(warned) == 1 and "not a usable date" in warned[0], warned  # once a crawl


@pytest.mark.parametrize(
    "value",
    [
        PAST_THE_END,
        PAST_THE_END.encode(),  # as the header's bytes
        datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-12))),
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))),  # before datetime's first day in UTC
        "Mon, 01 Jan 2024 00:00:00 +9999",  # an offset of 99 hours
        "yesterday",
        1_700_000_000,  # a number
        date(2024, 1, 1),  # a date without its time
        ["Mon, 01 Jan 2024 00:00:00 GMT"],
    ],
    ids=repr,
)
def test_a_last_modified_that_is_no_date_is_counted_and_the_page_decided(
    pipeline: SimhashDedupPipeline, caplog: pytest.LogCaptureFixture, value: object
) -> None:
    item = {"url": "http://d/1", "html": ARTICLE, "last_modified": value}
    assert process(pipeline, item) is item
    with pytest.raises(DropItem, match="near-duplicate of http://d/1"):
        process(pipeline, {"url": "http://d/2", "html": ARTICLE, "last_modified": value})
    assert simhash_stats(pipeline) == KEPT_AND_A_COPY | {"simhash/bad_last_modified": 2}
    assert len(warnings(caplog)) == 1 and "http://d/1: last_modified" in warnings(caplog)[0]


@pytest.mark.parametrize("value", [None, "", "  "])
def test_no_last_modified_is_no_flaw(pipeline: SimhashDedupPipeline, value: object) -> None:
    process(pipeline, {"url": "http://n/1", "html": ARTICLE, "last_modified": value})
    assert simhash_stats(pipeline) == {"simhash/kept": 1}


def test_a_last_modified_to_the_microsecond_at_the_calendars_end_is_read_back(db_url: str) -> None:
    """datetime.max was stored; SQLite's whole seconds rounded it to year 10000, and every later
    check near that page raised (the index unusable for it, in this crawl and the next). Read
    back, it is the newer of the two: the later page is dropped."""
    first = make_pipeline(db_url, SIMHASH_PREFER="newest")
    process(first, {"url": "http://m/1", "html": ARTICLE, "last_modified": datetime.max})
    stop(first)
    again = make_pipeline(db_url, SIMHASH_PREFER="newest")
    try:
        with pytest.raises(DropItem, match="near-duplicate of http://m/1"):
            process(again, {"url": "http://m/2", "html": ARTICLE, "last_modified": datetime(2024, 1, 1)})
    finally:
        stop(again)


@dataclasses.dataclass(frozen=True)
class FrozenPage:
    url: str
    html: str
    text: str = ""
    simhash: str = ""


@attrs.frozen
class FrozenAttrsPage:
    url: str
    html: str
    text: str = ""
    simhash: str = ""


@pytest.mark.parametrize("kind", [FrozenPage, FrozenAttrsPage])
def test_an_item_that_cannot_take_the_fields_goes_on_without_them(
    pipeline: SimhashDedupPipeline, caplog: pytest.LogCaptureFixture, kind: type
) -> None:
    """A frozen item raised FrozenInstanceError after the page was stored: the item was lost."""
    item = kind("http://f/1", ARTICLE)
    assert process(pipeline, item) is item
    assert process(pipeline, kind("http://f/2", page("Other", english_article(35)))).text == ""
    assert simhash_stats(pipeline) == {"simhash/kept": 2}
    assert [line.split(" (")[0] for line in warnings(caplog)] == [  # one line a field
        f"simhash: {kind.__name__} items cannot take the 'text' field",
        f"simhash: {kind.__name__} items cannot take the 'simhash' field",
    ]


def test_a_text_with_lone_surrogates_is_decided_with_them_replaced(
    pipeline: SimhashDedupPipeline, caplog: pytest.LogCaptureFixture
) -> None:
    """It raised UnicodeEncodeError in the fingerprinting: passed on unchecked (errors/unexpected)."""
    kept = process(pipeline, {"url": "http://s/1", "text": TEXT + " caf\udce9"})
    assert kept["text"] == TEXT + " caf\ufffd" and len(kept["simhash"]) == 16
    with pytest.raises(DropItem, match="exact text"):
        process(pipeline, {"url": "http://s/2", "text": TEXT + " caf\ufffd"})
    assert simhash_stats(pipeline) == KEPT_AND_A_COPY | {"simhash/surrogates_replaced": 1}
    assert len(warnings(caplog)) == 1 and "lone surrogates" in warnings(caplog)[0]


@pytest.mark.parametrize(
    "item",
    [
        {"url": "http://b/1", "text": TEXT.encode()},
        {"url": "http://b/1", "html": bytearray(ARTICLE.encode())},
        {"url": "http://b/1", "html": memoryview(ARTICLE.encode())},
    ],
    ids=["text bytes", "html bytearray", "html memoryview"],
)
def test_bytes_of_any_kind_are_decided(pipeline: SimhashDedupPipeline, item: dict[str, Any]) -> None:
    """They passed through as items without a text or HTML field (simhash/no_html)."""
    assert process(pipeline, item) is item
    assert simhash_stats(pipeline) == {"simhash/kept": 1}


def failing_key(item: Any) -> str:
    raise KeyError("slug")


def test_a_key_function_that_fails_on_an_item_passes_it_through_counted(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    p = make_pipeline(sqlite_url, SIMHASH_KEY=failing_key)
    try:
        item = {"url": "http://k/1", "html": ARTICLE}
        assert process(p, item) is item
        assert process(p, dict(item)) == item
        assert simhash_stats(p) == {"simhash/errors": 2, "simhash/errors/key": 2}
    finally:
        stop(p)
    assert len(warnings(caplog)) == 1 and "SIMHASH_KEY failed on an item (KeyError: 'slug')" in warnings(caplog)[0]


@pytest.mark.parametrize("url", ["http://example.com:99999/", "http://example.com/\ud800", "http://[::1/"])
def test_a_url_canonicalize_url_refuses_is_a_bad_url(sqlite_url: str, url: str) -> None:
    p = make_pipeline(sqlite_url, SIMHASH_CANONICALIZE_URL=True)
    try:
        item = {"url": url, "html": ARTICLE}
        assert process(p, item) is item
        assert simhash_stats(p) == {"simhash/bad_url": 1}
    finally:
        stop(p)


def failing_policy(new: Any, stored: Any) -> bool:
    raise RuntimeError("the policy failed")


def test_a_decision_that_fails_passes_the_page_on_counted(sqlite_url: str, caplog: pytest.LogCaptureFixture) -> None:
    """A survivor policy of the user's that raises (inside the index's lock): the items were lost."""
    p = make_pipeline(sqlite_url, SIMHASH_PREFER=failing_policy)
    try:
        process(p, {"url": "http://p/1", "html": ARTICLE})
        copy = {"url": "http://p/2", "html": ARTICLE}
        assert process(p, copy) is copy
        assert simhash_stats(p) == {"simhash/kept": 1, "simhash/errors": 1, "simhash/errors/unexpected": 1}
    finally:
        stop(p)
    assert "unexpected RuntimeError on http://p/2: the policy failed; the item passes through" in caplog.text
