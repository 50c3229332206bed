"""The pipeline driven as Scrapy drives it: open_spider, process_item and close_spider run on the
reactor (the asyncio one, installed by conftest), whose event loop runs here for each call."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from conftest import open_stats
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred

from simhash_index.scrapy.pipeline import SimhashDedupPipeline

T = TypeVar("T")


def run(awaitable: Awaitable[T]) -> T:
    """Run a coroutine or Deferred to its end on the reactor's event loop; its result."""
    loop = asyncio.get_event_loop()  # the reactor's: installing it set it as the current loop
    if isinstance(awaitable, Deferred):
        return loop.run_until_complete(awaitable.asFuture(loop))
    return loop.run_until_complete(awaitable)  # type: ignore[arg-type]


def make_pipeline(db_url: str, **settings: Any) -> SimhashDedupPipeline:
    """A started pipeline; extraction in threads unless SIMHASH_WORKERS is given (worker
    processes run the same function: test_worker_processes_decide_as_threads does)."""
    crawler = get_crawler(settings_dict={"SIMHASH_DATABASE_URL": db_url, "SIMHASH_WORKERS": 0, **settings})
    open_stats(crawler)
    return start(SimhashDedupPipeline.from_crawler(crawler))


def simhash_stats(pipeline: SimhashDedupPipeline) -> dict[str, Any]:
    """The pipeline's simhash/* stats."""
    assert pipeline.stats is not None
    return {k: v for k, v in pipeline.stats.get_stats().items() if k.startswith("simhash/")}


def start(pipeline: SimhashDedupPipeline) -> SimhashDedupPipeline:
    """The pipeline opened, as Scrapy opens it for a crawl."""
    run(pipeline.open_spider())
    return pipeline


def process(pipeline: SimhashDedupPipeline, item: Any) -> Any:
    """process_item as Scrapy runs it: the item, or the DropItem raised."""
    return run(pipeline.process_item(item))


def stop(pipeline: SimhashDedupPipeline) -> None:
    """The pipeline closed, as Scrapy closes it at the end of a crawl."""
    run(pipeline.close_spider())
