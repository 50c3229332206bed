"""The dedup core (simhash_index.dedup) on its own: what the pipeline and `import` both run."""

from __future__ import annotations

import asyncio
import functools
import sys
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path

import pytest
from conftest import open_stats
from driving import run, start, stop
from scrapy.exceptions import DropItem
from scrapy.utils.test import get_crawler
from sites import english_article, page

from simhash_index import Fingerprinter, SimhashIndex, dedup
from simhash_index.dedup import Deduplicator
from simhash_index.fingerprinting.pages import PageJob, PageSetup, analyse
from simhash_index.index.factory import open_index
from simhash_index.scrapy.pipeline import SimhashDedupPipeline

TEXTS = [" ".join(english_article(seed)) for seed in range(6)]


def core_for(db_url: str, **options: object) -> Deduplicator:
    opener = functools.partial(open_index, db_url, scheme=Fingerprinter().scheme, **options)
    core = Deduplicator(opener, PageSetup(Fingerprinter()), batch_size=16)
    core.open().result()
    return core


def test_decisions_come_back_as_futures_committed_with_their_texts(db_url: str) -> None:
    core = core_for(db_url, keep_texts=True)
    try:
        pages = [core.analyse(PageJob(text, is_html=False)).result() for text in TEXTS + TEXTS[:2]]
        decided = [core.decide(f"http://d/{i}", p.signature, p.text) for i, p in enumerate(pages)]  # type: ignore[arg-type]
        matches = [future.result() for future in decided]
        assert [m.key if m else None for m in matches] == [None] * 6 + ["http://d/0", "http://d/1"]
        with SimhashIndex(db_url) as index:  # committed, texts kept, before the core closes
            assert len(index) == 6 and index.text("http://d/7") == TEXTS[1]
    finally:
        assert core.close().result() == 6
    assert core.index is None and not core.ready


def test_an_analysis_only_core_analyses_in_order_and_decides_nothing() -> None:
    core = Deduplicator(None, PageSetup(Fingerprinter()), workers=2)
    core.open().result()
    try:
        analysed = list(core.analyse_many((i, PageJob(text, is_html=False)) for i, text in enumerate(TEXTS)))
        assert [i for i, _ in analysed] == list(range(6))
        assert [page.text for _, page in analysed] == TEXTS
        with pytest.raises(RuntimeError, match="not open"):
            core.decide("http://d/1", analysed[0][1].signature)  # type: ignore[arg-type]
    finally:
        assert core.close().result() is None


def test_bad_options_name_the_argument() -> None:
    with pytest.raises(ValueError, match="workers"):
        Deduplicator(None, PageSetup(Fingerprinter()), workers=-1)
    with pytest.raises(ValueError, match="batch_size"):
        Deduplicator(None, PageSetup(Fingerprinter()), batch_size=0)


def test_concurrent_items_keep_one_copy_of_each_text(sqlite_url: str) -> None:
    """Scrapy hands the pipeline many items at once (CONCURRENT_ITEMS): one copy of each text
    is kept, whichever order the batches decide them in."""
    crawler = get_crawler(settings_dict={"SIMHASH_DATABASE_URL": sqlite_url, "SIMHASH_WORKERS": 0})
    open_stats(crawler)
    pipeline = start(SimhashDedupPipeline.from_crawler(crawler))
    items = [{"url": f"http://c/{copy}/{i}", "text": text} for copy in range(3) for i, text in enumerate(TEXTS)]

    async def all_items() -> list[object]:
        return await asyncio.gather(*(pipeline.process_item(item) for item in items), return_exceptions=True)

    try:
        outcomes = run(all_items())
    finally:
        stop(pipeline)
    kept = [o for o in outcomes if isinstance(o, dict)]
    assert sorted(o["text"] for o in kept) == sorted(TEXTS)
    assert sum(isinstance(o, DropItem) for o in outcomes) == 12
    assert pipeline.stats.get_value("simhash/kept") == 6  # type: ignore[union-attr]


def test_a_chunk_brings_back_only_what_the_caller_lacks() -> None:
    """Worker processes send back the text they extracted from HTML, never a text they were given."""
    from simhash_index.fingerprinting.pages import analyse, analyse_all, with_given_text

    setup = PageSetup(Fingerprinter())
    html = f"<html><body><article><p>{TEXTS[0]}</p></article></body></html>"
    jobs = [PageJob(TEXTS[1], is_html=False), PageJob(html), PageJob(TEXTS[2].encode(), is_html=False)]
    pages = analyse_all(setup, jobs)
    assert pages[0].text is None and pages[2].text is None
    assert pages[1].text is not None and TEXTS[0][:200] in pages[1].text
    assert [with_given_text(job, page) for job, page in zip(jobs, pages)] == [analyse(setup, job) for job in jobs]


def test_a_lingering_writer_fills_its_batches_and_close_does_not_wait_out_the_linger() -> None:
    import time

    from simhash_index.index.writer import BatchWriter

    batches: list[list[int]] = []

    def decide(batch: list[int]) -> list[int]:
        batches.append(list(batch))
        return [item * 2 for item in batch]

    writer: BatchWriter[int, int] = BatchWriter(decide, batch_size=4, linger=60.0)
    futures = []
    for item in range(6):
        futures.append(writer.submit(item))
        time.sleep(0.01)  # pages arriving a few at a time
    assert futures[3].result(timeout=30) == 6  # a full batch goes at once, without the linger
    writer.close()  # the partial batch is decided now, not a minute later
    assert [future.result(timeout=0) for future in futures] == [0, 2, 4, 6, 8, 10]
    assert batches == [[0, 1, 2, 3], [4, 5]]
    with pytest.raises(ValueError, match="linger"):
        BatchWriter(decide, linger=-1)


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_closing_now_analyses_no_queued_page_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 51, item 2: Ctrl-C closes the core now; the chunk its killed worker held, and the
    chunks queued behind it, were then analysed one page at a time in the command's own process
    (seconds under load) before it could exit. Now they are not analysed at all."""
    here: list[PageJob] = []
    monkeypatch.setattr(dedup, "analyse", lambda setup, job: here.append(job) or analyse(setup, job))
    core = Deduplicator(None, PageSetup(Fingerprinter()), workers=1)
    core.open().result()
    pages = core.analyse_many((n, PageJob(page(f"Story {n}", english_article(n)))) for n in range(8 * dedup.CHUNK))
    next(pages)
    assert core.pool is not None
    [worker] = core.pool.pids()
    deadline = time.monotonic() + 30
    while Path(f"/proc/{worker}/stat").read_text().rsplit(")", 1)[1].split()[0] != "R":  # on the next chunk
        assert time.monotonic() < deadline, "the worker never took the next chunk"
        time.sleep(0.01)
    core.close(now=True).result()
    with pytest.raises((RuntimeError, CancelledError)):
        for _ in pages:
            pass
    for thread in threading.enumerate():  # as the interpreter joins them before it exits
        if thread.name.startswith("simhash_"):
            thread.join(timeout=60)
    assert here == []
