"""The dedup item pipeline: drops items whose main text is a near-duplicate of a stored page.

Extraction and fingerprinting run in worker processes (a crash there costs one page, not the
crawl); one writer thread decides pages against the index in batches, and an item is released
(kept or dropped) only after its batch committed. Nothing blocks the reactor: the index is
opened, and every database call made, off it.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider, DropItem, NotConfigured
from twisted.python.threadpool import ThreadPool

from ..errors import (
    IndexNotFoundError,
    IndexUnavailableError,
    LayoutMismatchError,
    SchemeMismatchError,
    SimhashIndexError,
)
from ..fingerprinting.fingerprinter import Signature
from ..fingerprinting.pages import Page, PageJob, PageSetup, analyse
from ..fingerprinting.simhash import to_hex
from ..index.base import Index
from ..index.factory import open_index
from ..index.records import Match
from ..index.writer import BatchWriter
from ..text.dates import http_date
from ..workers import WorkerCrashed, WorkerPool, WorkerStartError, WorkerTimeout
from .addon import warn_of_pipelines_before
from .failures import (
    INDEX_ERROR,
    INDEX_UNAVAILABLE,
    WORKERS_UNAVAILABLE,
    checked,
    close_spider,
    layout_hint,
    one_line,
    scheme_difference,
)
from .items import Checkable, PassThrough, checkable
from .logformatter import safe
from .settings import PipelineSettings, enabled
from .signals import page_superseded
from .stats import Outcomes
from .threads import AWAITS_PIPELINE_COROUTINES, awaitable, for_scrapy, in_thread, on_next_turn

T = TypeVar("T")
PROBE_EVERY_S = 1.0
logger = logging.getLogger(__name__)

# The pipeline of each running crawl, so SimhashSkipDuplicatesMiddleware uses its index
# rather than open a second one (a memory:// index could not be shared otherwise).
_RUNNING: WeakKeyDictionary[Crawler, SimhashDedupPipeline] = WeakKeyDictionary()


def dated(signature: Signature, adapter: ItemAdapter) -> Signature:
    """The page's date, when it has none of its own, from the item's `last_modified` (an
    HTTP Last-Modified value or a datetime); else the index dates it by the time it is checked."""
    if signature.dated is not None or "last_modified" not in adapter:
        return signature
    return replace(signature, dated=http_date(adapter.get("last_modified")))


def running_pipeline(crawler: Crawler) -> SimhashDedupPipeline | None:
    """The crawl's SimhashDedupPipeline, if it has one."""
    return _RUNNING.get(crawler)


class NearDuplicate(DropItem):
    """The item duplicates a stored page; the message names both pages (one log line).

    `key` is the dropped page's key in the index, `match` the stored page it duplicates
    (its key, distance, similarity, and whether the texts are identical): for handlers of
    Scrapy's item_dropped signal.
    """

    one_line = True
    key: str = ""
    match: Match | None = None


class SimhashDedupPipeline:
    """Drops items whose main text is a near-duplicate of a page already stored.

    Kept items leave with `text` and `simhash` (16 hex digits) added. Scrapy calls the async
    methods; `start`, `process_item_blocking` and `stop` do the same work blocking, for use
    outside a reactor.
    """

    def __init__(self, settings: PipelineSettings, crawler: Crawler | None = None) -> None:
        self.settings = settings
        self.fingerprinter = settings.fingerprinter
        self.crawler = crawler
        self.stats = crawler.stats if crawler is not None else None
        self.outcomes = Outcomes(self.stats)
        self.index: Index | None = None
        self.pool: WorkerPool | None = None
        self.writer: BatchWriter[tuple[str, Signature], Match | None] | None = None
        self._setup = PageSetup(settings.fingerprinter, settings.extract, dates=settings.prefer == "newest")
        self._threads: ThreadPool | None = None
        self._warned: set[str] = set()
        self._stored_at_start = 0
        self._outage: str | None = None  # why the index is taken to be down, until a probe reaches it
        self._texts: collections.deque[tuple[str, str]] = collections.deque()  # SIMHASH_KEEP_TEXTS, to store

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SimhashDedupPipeline:
        if not checked(enabled, crawler.settings):
            raise NotConfigured("SIMHASH_ENABLED is False")
        settings = checked(PipelineSettings.from_settings, crawler.settings)
        warn_of_pipelines_before(crawler.settings, cls)
        pipeline = cls(settings, crawler)
        _RUNNING[crawler] = pipeline
        return pipeline

    # -- lifecycle ----------------------------------------------------------------

    def open_spider(self, spider: Any = None) -> Awaitable[None]:
        """Opens the index and starts the workers, off the reactor; when either fails the
        spider closes before fetching anything (`crawl` from simhash_index.scrapy.commands
        then exits with status 1). Awaitable, in the form the running Scrapy takes."""
        return for_scrapy(self._open())

    def close_spider(self, spider: Any = None) -> Awaitable[None]:
        """Decides what is queued, logs the summary, then stops the writer, the workers and the
        index. Awaitable, in the form the running Scrapy takes."""
        return for_scrapy(self._close())

    async def _open(self) -> None:
        self._threads = ThreadPool(minthreads=0, maxthreads=self.settings.workers + 2, name="simhash")
        self._threads.start()
        try:
            await self._in_thread(self.start)
        except SimhashIndexError as exc:
            self.outcomes.note("errors/db_open")
            if isinstance(exc, SchemeMismatchError):
                recorded = await self._in_thread(self._recorded_scheme)
                message = scheme_difference(exc, recorded, self.fingerprinter.scheme)
            elif isinstance(exc, LayoutMismatchError):
                message = layout_hint(exc)
            else:
                message = one_line(exc)
            logger.error("simhash: cannot open the index, stopping the crawl: %s", safe(message, 2000))
            await self._close()
            self._cannot_start(INDEX_UNAVAILABLE)
            return
        except WorkerStartError as exc:
            logger.error("simhash: %s; stopping the crawl", safe(exc, 2000))
            await self._close()
            self._cannot_start(WORKERS_UNAVAILABLE)
            return
        logger.info(
            "simhash: index %r holds %d pages; %s",
            self.index,
            self._stored_at_start,
            f"{self.settings.workers} worker processes" if self.pool else "extraction in threads (SIMHASH_WORKERS=0)",
        )

    def _cannot_start(self, reason: str) -> None:
        """Stop the crawl before it fetches anything: CloseSpider from open_spider. Scrapy < 2.14
        takes that for a failed start (its CoreStats then fails with a traceback, and the finish
        reason is "shutdown"): there the spider is closed instead as soon as the engine runs."""
        if AWAITS_PIPELINE_COROUTINES:
            raise CloseSpider(reason) from None
        on_next_turn(close_spider, self.crawler, reason)

    def start(self) -> None:
        """Open the index, start the worker processes and the writer (blocking)."""
        for noisy in ("trafilatura", "htmldate", "courlan", "justext"):
            logging.getLogger(noisy).setLevel(max(logging.INFO, logging.getLogger(noisy).getEffectiveLevel()))
        settings = self.settings
        self.index = self._open_index()
        try:
            self._stored_at_start = len(self.index)
            if settings.workers:
                self.pool = WorkerPool(analyse, self._setup, size=settings.workers, timeout=settings.worker_timeout)
        except BaseException:
            self.stop()
            raise
        self.writer = BatchWriter(self._decide, batch_size=settings.batch_size)

    def _open_index(self) -> Index:
        settings = self.settings
        return open_index(
            settings.database_url,
            max_distance=settings.max_distance,
            min_similarity=settings.min_similarity,
            window=settings.window,
            keep_texts=settings.keep_texts,
            prefer=settings.prefer,
            scheme=self.fingerprinter.scheme,
            layout=settings.layout,
            block_assignment=settings.block_assignment,
            connect_timeout=settings.connect_timeout,
            statement_timeout=settings.statement_timeout,
        )

    def _recorded_scheme(self) -> str | None:
        """The scheme an existing index was built with (None when it cannot be read)."""
        try:
            with open_index(self.settings.database_url, scheme=None, create=False) as index:
                return index.scheme
        except SimhashIndexError:
            return None

    async def _close(self) -> None:
        if self._threads is None:
            self.stop()
            return
        await self._in_thread(self.stop)
        self._threads.stop()
        self._threads = None

    def _store_texts(self, index: Index) -> None:
        """Store the texts of the pages concluded so far (SIMHASH_KEEP_TEXTS)."""
        pending = []
        while self._texts:
            pending.append(self._texts.popleft())
        if pending:
            index.store_texts(pending)

    def stop(self) -> None:
        """The blocking half of close_spider."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        if self.index is not None and self._texts:
            try:
                self._store_texts(self.index)
            except SimhashIndexError as exc:
                logger.warning("simhash: the last pages' texts were not kept: %s", safe(exc, 400))
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        if self.index is not None:
            stored = None
            with contextlib.suppress(SimhashIndexError):  # the summary goes out with or without the count
                stored = len(self.index)
            logger.info("%s", self.outcomes.summary(stored))
            if self.outcomes.total() == 0:
                logger.warning("simhash: no item reached the pipeline: did the crawl fetch anything?")
            self.index.close()
            self.index = None

    def _in_thread(self, function: Callable[..., T], *args: Any) -> Awaitable[T]:
        assert self._threads is not None, "open_spider() starts the threads"
        return in_thread(self._threads, function, *args)

    # -- items ----------------------------------------------------------------------

    async def process_item(self, item: Any, spider: Any = None) -> Any:
        """Returns the item (kept, or passed through unchecked) or raises DropItem.

        Each item is counted in exactly one outcome stat (see the README's Stats).
        """
        checked = self._prepare(item)
        if checked is None:
            return item
        adapter, key, job = checked
        try:
            page = await self._in_thread(self._analyse, job)
        except Exception as exc:
            return self._failed(item, key, exc)
        if not self._checkable(key, page):
            return item
        assert page.signature is not None and self.writer is not None
        try:
            match = await awaitable(self.writer.submit((key, dated(page.signature, adapter))))
        except SimhashIndexError as exc:
            self._db_error(exc)
            return item  # never lost: it goes on un-deduplicated
        return self._conclude(item, adapter, key, page, match)

    def process_item_blocking(self, item: Any) -> Any:
        """process_item without a reactor: returns the item or raises DropItem."""
        checked = self._prepare(item)
        if checked is None:
            return item
        adapter, key, job = checked
        try:
            page = self._analyse(job)
        except Exception as exc:
            return self._failed(item, key, exc)
        if not self._checkable(key, page):
            return item
        assert page.signature is not None and self.writer is not None
        try:
            match = self.writer.submit((key, dated(page.signature, adapter))).result()
        except SimhashIndexError as exc:
            self._db_error(exc)
            return item
        return self._conclude(item, adapter, key, page, match)

    def _prepare(self, item: Any) -> Checkable | None:
        """(adapter, key, what to analyse), or None for an item that passes through unchecked (counted)."""
        checked = checkable(item, self.settings, index_ready=self.writer is not None)
        if not isinstance(checked, PassThrough):
            return checked
        self.outcomes.count(checked.outcome, f"errors/{checked.reason}" if checked.reason else None)
        if checked.reason == "no_index":
            self._index_not_open()
        elif checked.warning and checked.once:
            self._warn_once(checked.outcome, checked.warning, *checked.arguments)
        elif checked.warning:
            logger.warning(checked.warning, *checked.arguments)
        return None

    def _analyse(self, job: PageJob) -> Page:
        if self.pool is not None:
            page: Page = self.pool.run(job)
            return page
        return analyse(self._setup, job)

    def _failed(self, item: Any, key: str, exc: Exception) -> Any:
        """A page whose analysis failed: counted, logged once with its URL, passed through."""
        if isinstance(exc, (WorkerCrashed, WorkerTimeout)):
            self.outcomes.count(
                "errors", "errors/" + ("worker_crash" if isinstance(exc, WorkerCrashed) else "worker_timeout")
            )
            logger.error("simhash: %s while analysing %s; the item passes through", exc, safe(key))
        else:  # an unforeseen failure on one page must not lose it or stop the crawl
            self.outcomes.count("errors", "errors/unexpected")
            logger.error(
                "simhash: unexpected %s on %s: %s; the item passes through", type(exc).__name__, safe(key), safe(exc)
            )
        return item

    def _checkable(self, key: str, page: Page) -> bool:
        """Whether the page has a signature to check; counts the ones that do not."""
        if page.failure is not None:
            self.outcomes.count("errors", "errors/extract")
            logger.warning("simhash: %s: %s; the item passes through", safe(key), safe(page.failure))
            return False
        if page.signature is None:
            self.outcomes.count("no_text")
            return False
        return True

    def _conclude(self, item: Any, adapter: ItemAdapter, key: str, page: Page, match: Match | None) -> Any:
        if self.settings.keep_texts and page.text is not None:
            self._texts.append((key, page.text))  # stored by the writer thread, with its next batch
        if match is not None and match.superseded is not None:  # kept, in place of match.key
            self._superseded(item, key, match)
        elif match is not None:
            self.outcomes.count("dropped", "dropped_exact" if match.exact else None)
            evidence = (
                "exact text"
                if match.exact
                else (f"similarity {match.similarity:.2f}" if match.similarity is not None else "not verified")
            )
            drop = NearDuplicate(
                f"{safe(key)} is a near-duplicate of {safe(match.key)} (distance {match.distance}, {evidence})",
                log_level=self.settings.drop_log_level,
            )
            drop.key, drop.match = key, match
            raise drop
        else:
            self.outcomes.count("kept")
        self._set(adapter, "text", page.text)
        if page.signature is not None and page.signature.simhash is not None:
            self._set(adapter, "simhash", to_hex(page.signature.simhash))
        return item

    def _superseded(self, item: Any, key: str, match: Match) -> None:
        """The page is kept in place of match.key (SIMHASH_PREFER): counted, logged, signalled."""
        self.outcomes.count("kept", "superseded")
        logger.info("simhash: %s supersedes %s (%s)", safe(key), safe(match.key), match.superseded)
        if self.crawler is not None:
            self.crawler.signals.send_catch_log(
                page_superseded, old_key=match.key, new_key=key, evidence=match, item=item, spider=self.crawler.spider
            )

    def _decide(self, batch: Sequence[tuple[str, Signature]]) -> list[Match | None]:
        """The writer thread's call: the batch checked and stored in one transaction.

        Once the index could not be reached, batches fail at once, without waiting for a
        server that is down (a frozen one costs a statement timeout a call): items pass
        through (SIMHASH_ON_DB_ERROR=pass) without delay while a probe pings the index every
        PROBE_EVERY_S seconds, and dedup resumes as soon as it answers.
        """
        index = self.index
        if index is None:
            raise SimhashIndexError("the index is closed")
        outage = self._outage
        if outage is not None:
            raise IndexUnavailableError(f"{outage} (waiting for it to answer again)")
        try:
            try:
                answers = index.check_and_add_many(batch)
            except IndexNotFoundError as exc:
                index = self._start_anew(index, exc)
                answers = index.check_and_add_many(batch)
        except IndexUnavailableError as exc:
            self._outage = str(exc)
            threading.Thread(target=self._probe, args=(index,), name="simhash-probe", daemon=True).start()
            raise
        try:
            self._store_texts(index)
        except SimhashIndexError as exc:  # the decisions stand; only these texts are not kept
            logger.warning("simhash: pages' texts were not kept: %s", safe(exc, 400))
        return answers

    def _start_anew(self, vanished: Index, exc: IndexNotFoundError) -> Index:
        """The index is gone from a server that answers (Redis restarted without persistence,
        or flushed): a new, empty one is opened in its place, so that the rest of the crawl is
        deduplicated; the pages decided before are not remembered."""
        logger.warning(
            "simhash: %s; starting a new, empty index there: the pages decided before it was lost are forgotten",
            safe(one_line(exc), 1000),
        )
        self.outcomes.note("index_lost")
        index = self._open_index()
        self.index = index
        vanished.close()
        return index

    def _probe(self, index: Index) -> None:
        """Ping the index until it answers (or the pipeline stops), then let batches through again."""
        while self.index is index:
            time.sleep(PROBE_EVERY_S)
            try:
                index.ping()
            except SimhashIndexError:
                continue
            logger.info("simhash: the index answers again; deduplicating")
            self._outage = None
            return

    # -- failures and helpers ---------------------------------------------------------

    def _db_error(self, exc: Exception) -> None:
        self.outcomes.count("errors", "errors/db")
        if self.settings.on_db_error == "stop":
            if "db" not in self._warned:
                self._warned.add("db")
                logger.error("simhash: index error, closing the spider (SIMHASH_ON_DB_ERROR=stop): %s", safe(exc, 2000))
                close_spider(self.crawler, INDEX_ERROR)
            return
        self._warn_once(
            "db", "simhash: index error, items pass through un-deduplicated until it is back: %s", safe(exc, 2000)
        )

    def _index_not_open(self) -> None:
        """An item came before the index was opened (open_spider never ran, or never finished):
        the crawl stops, or with SIMHASH_ON_DB_ERROR=pass goes on saying nothing is deduplicated."""
        if "no_index" in self._warned:
            return
        self._warned.add("no_index")
        if self.settings.on_db_error == "stop":
            logger.error(
                "simhash: an item came before the index was opened (open_spider did not run); stopping the crawl"
            )
            close_spider(self.crawler, INDEX_UNAVAILABLE)
        else:
            logger.error(
                "simhash: an item came before the index was opened (open_spider did not run): NOTHING IS "
                "DEDUPLICATED, every item passes through (SIMHASH_ON_DB_ERROR=pass)"
            )

    def _warn_once(self, topic: str, message: str, *args: Any) -> None:
        if topic not in self._warned:
            self._warned.add(topic)
            logger.warning(message, *args)

    def _set(self, adapter: ItemAdapter, field: str, value: str | None) -> None:
        try:
            adapter[field] = value
        except KeyError:
            self._warn_once(
                f"field:{field}",
                "simhash: %s has no %r field to receive it; declare it",
                type(adapter.item).__name__,
                field,
            )
