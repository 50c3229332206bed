"""The dedup pipeline in-process: settings, item types, bad input, stats and log summaries."""

from __future__ import annotations

import dataclasses

import pytest
import scrapy
from driving import make_pipeline, process, run, start, stop
from driving import simhash_stats as stats
from scrapy.exceptions import CloseSpider, DropItem, NotConfigured
from scrapy.utils.test import get_crawler
from sites import english_article, page

from simhash_index import SimhashIndex
from simhash_index.scrapy.failures import INDEX_UNAVAILABLE, StartupError
from simhash_index.scrapy.logformatter import SimhashLogFormatter, summarize
from simhash_index.scrapy.pipeline import NearDuplicate, RepeatedPage, SimhashDedupPipeline

ARTICLE = page("Report", english_article(11))
OTHER = page("Other", english_article(12))


@pytest.fixture
def pipeline(sqlite_url: str):
    p = make_pipeline(sqlite_url)
    yield p
    stop(p)


class PageItem(scrapy.Item):
    url = scrapy.Field()
    html = scrapy.Field()
    text = scrapy.Field()
    simhash = scrapy.Field()


@dataclasses.dataclass
class PageData:
    url: str
    html: str
    text: str = ""
    simhash: str = ""


@pytest.mark.parametrize("make", [dict, lambda **kw: PageItem(**kw), lambda **kw: PageData(**kw)])
def test_every_item_type_is_deduplicated(pipeline: SimhashDedupPipeline, make) -> None:
    kept = process(pipeline, make(url="http://a/1", html=ARTICLE))
    fields = dataclasses.asdict(kept) if dataclasses.is_dataclass(kept) else dict(kept)
    assert len(fields["simhash"]) == 16 and "Report" in fields["text"]
    with pytest.raises(DropItem, match=r"near-duplicate of http://a/1 \(distance 0, exact text\)"):
        process(pipeline, make(url="http://a/2", html=ARTICLE))
    process(pipeline, make(url="http://a/3", html=OTHER))
    assert stats(pipeline) == {"simhash/kept": 2, "simhash/dropped": 1, "simhash/dropped_exact": 1}


def test_text_field_skips_extraction(pipeline: SimhashDedupPipeline) -> None:
    text = " ".join(english_article(13))
    process(pipeline, {"url": "http://t/1", "text": text})
    with pytest.raises(DropItem):
        process(pipeline, {"url": "http://t/2", "text": text + " one more word"})


@pytest.mark.parametrize(
    ("item", "stat"),
    [
        ({"url": "http://x/empty", "html": ""}, "simhash/no_text"),
        ({"url": "http://x/binary", "html": "\x00\x01\x02PNG" * 500}, "simhash/no_text"),
        ({"url": "http://x/scripts", "html": "<html><script>var a = 1;</script></html>"}, "simhash/no_text"),
        ({"url": "http://x/punct", "text": "!!! ... ??? ---"}, "simhash/no_text"),
        ({"url": "http://x/nohtml"}, "simhash/no_html"),
        ({"html": ARTICLE}, "simhash/no_url"),
        ({"url": "http://x/huge", "html": "<p>" + "word " * 5_000_000 + "</p>"}, "simhash/errors/extract"),
    ],
)
def test_bad_input_passes_through_counted(pipeline: SimhashDedupPipeline, item: dict, stat: str) -> None:
    assert process(pipeline, dict(item)) == item
    assert stats(pipeline)[stat] == 1
    assert "simhash/kept" not in stats(pipeline)


def test_short_texts_match_only_exactly(pipeline: SimhashDedupPipeline) -> None:
    process(pipeline, {"url": "http://s/1", "text": "Opening hours: nine to five."})
    process(pipeline, {"url": "http://s/2", "text": "Opening hours: nine to six."})
    with pytest.raises(DropItem, match="exact text"):
        process(pipeline, {"url": "http://s/3", "text": "opening  HOURS: nine to five."})


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("SIMHASH_MAX_DISTANCE", 9),
        ("SIMHASH_MAX_DISTANCE", "three"),
        ("SIMHASH_MIN_TEXT_LENGTH", -1),
        ("SIMHASH_DROP_LOG_LEVEL", "LOUD"),
        ("SIMHASH_ON_DB_ERROR", "ignore"),
        ("SIMHASH_EXTRACT_FAVOR", "speed"),
    ],
)
def test_bad_setting_fails_at_start_naming_it(sqlite_url: str, setting: str, value: object) -> None:
    crawler = get_crawler(settings_dict={"SIMHASH_DATABASE_URL": sqlite_url, setting: value})
    with pytest.raises(StartupError, match=setting.replace("SIMHASH_EXTRACT_FAVOR", "SIMHASH_EXTRACT_")):
        SimhashDedupPipeline.from_crawler(crawler)


def test_disabled_raises_not_configured(sqlite_url: str) -> None:
    crawler = get_crawler(settings_dict={"SIMHASH_ENABLED": False})
    with pytest.raises(NotConfigured, match="SIMHASH_ENABLED"):
        SimhashDedupPipeline.from_crawler(crawler)


def test_an_index_that_cannot_be_opened_stops_the_start_naming_it(caplog: pytest.LogCaptureFixture) -> None:
    crawler = get_crawler(settings_dict={"SIMHASH_DATABASE_URL": "postgresql://user:hunter2@127.0.0.1:1/nowhere"})
    p = SimhashDedupPipeline.from_crawler(crawler)
    try:
        start(p)
    except CloseSpider as stopped:  # Scrapy 2.14+; before, the spider is closed once the engine runs
        assert stopped.reason == INDEX_UNAVAILABLE
    assert "simhash: cannot open the index, stopping the crawl" in caplog.text and "127.0.0.1:1" in caplog.text
    assert "hunter2" not in caplog.text
    assert p.index is None and p.core.writer is None and p.core.pool is None
    assert process(p, {"url": "http://a/1", "html": ARTICLE})["url"] == "http://a/1"  # passes through


def test_drop_log_level_is_configurable(sqlite_url: str) -> None:
    p = make_pipeline(sqlite_url, SIMHASH_DROP_LOG_LEVEL="debug")
    process(p, {"url": "http://l/1", "html": ARTICLE})
    with pytest.raises(DropItem) as dropped:
        process(p, {"url": "http://l/2", "html": ARTICLE})
    assert dropped.value.log_level == "DEBUG"
    stop(p)
    with SimhashIndex(sqlite_url, scheme=None) as index:
        assert [(d.key, d.duplicate_of) for d in index.duplicates()] == [("http://l/2", "http://l/1")]


def test_log_summaries_hide_bodies() -> None:
    body = "<p>" + "x" * 100_000 + "</p>"
    summary = summarize({"url": "http://big/1", "title": "Big", "html": body})
    assert "http://big/1" in summary and "Big" in summary
    assert "xxxx" not in summary and len(summary) < 400
    crawler = get_crawler(settings_dict={"LOG_FORMATTER": "simhash_index.scrapy.SimhashLogFormatter"})
    formatter = SimhashLogFormatter.from_crawler(crawler)
    spider = scrapy.Spider("s")
    spider.crawler = crawler
    result = formatter.dropped({"url": "http://big/1", "html": body}, DropItem("dup"), None, spider)
    assert len(result["msg"] % result["args"]) < 500


def test_worker_processes_decide_as_threads(tmp_path) -> None:
    items = [
        {"url": "http://w/1", "html": ARTICLE},
        {"url": "http://w/2", "html": ARTICLE.replace("Report", "Report (print)")},
        {"url": "http://w/3", "html": OTHER},
        {"url": "http://w/4", "html": ""},
        {"url": "http://w/5", "html": "<p>" + "word " * 5_000_000 + "</p>"},
        {"url": "http://w/6", "text": " ".join(english_article(14))},
    ]
    outcomes = []
    for workers in (0, 2):
        p = make_pipeline(f"sqlite:///{tmp_path / f'w{workers}.db'}", SIMHASH_WORKERS=workers)
        assert (p.core.pool is not None) is bool(workers)
        decided = []
        for item in items:
            try:
                kept = process(p, dict(item))
                decided.append(("kept", kept.get("simhash")))
            except DropItem as drop:
                decided.append(("dropped", str(drop)))
        outcomes.append((decided, stats(p)))
        stop(p)
    assert outcomes[0] == outcomes[1]


def test_a_page_passed_on_is_not_passed_on_again_unless_its_text_changed(pipeline: SimhashDedupPipeline) -> None:
    """Two copies of one URL met at once: one goes on. A page dropped is not remembered as passed
    on (met again, it is dropped again as a duplicate); one whose text changed is an update."""
    import asyncio

    async def both() -> list[object]:
        items = [pipeline.process_item({"url": "http://r/1", "html": ARTICLE}) for _ in range(2)]
        return await asyncio.gather(*items, return_exceptions=True)

    outcomes = run(both())
    assert sorted(type(o).__name__ for o in outcomes) == ["RepeatedPage", "dict"]
    for _ in range(2):
        with pytest.raises(NearDuplicate, match="near-duplicate of http://r/1"):
            process(pipeline, {"url": "http://r/2", "html": ARTICLE})
    changed = ARTICLE.replace("</article>", "<p>" + " ".join(english_article(15)) + "</p></article>")
    assert process(pipeline, {"url": "http://r/1", "html": changed})["url"] == "http://r/1"
    with pytest.raises(RepeatedPage):
        process(pipeline, {"url": "http://r/1", "html": changed})
    assert stats(pipeline) == {
        "simhash/kept": 2,
        "simhash/repeated": 2,
        "simhash/dropped": 2,
        "simhash/dropped_exact": 2,
    }
