"""Scrapy glue: the dedup item pipeline and a log formatter that never logs page bodies.

The only module of simhash_index that imports Scrapy.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from itemadapter import ItemAdapter
from scrapy import logformatter
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider, DropItem, NotConfigured
from scrapy.settings import BaseSettings
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool
from twisted.python.threadpool import ThreadPool

from .. import defaults
from ..errors import SimhashIndexError
from ..fingerprinting.fingerprinter import Fingerprinter, Signature
from ..fingerprinting.pages import Page, PageJob, PageSetup, analyse
from ..fingerprinting.simhash import to_hex
from ..index.base import Index
from ..index.factory import open_index
from ..index.records import Match, check_key
from ..index.writer import BatchWriter
from ..text.extract import ExtractOptions
from ..workers import WorkerCrashed, WorkerPool, WorkerStartError, WorkerTimeout, default_size

T = TypeVar("T")

logger = logging.getLogger(__name__)

ON_DB_ERROR = ("stop", "pass")
INDEX_UNAVAILABLE = "simhash_index_unavailable"  # finish reasons of a crawl the index stopped
INDEX_ERROR = "simhash_index_error"
WORKERS_UNAVAILABLE = "simhash_workers_unavailable"
FAILURE_REASONS = (INDEX_UNAVAILABLE, INDEX_ERROR, WORKERS_UNAVAILABLE)
# Every item lands in exactly one of these stats (simhash/<outcome>); dropped_exact and
# errors/<why> are sub-reasons, counted beside dropped and errors.
OUTCOMES = ("kept", "dropped", "no_url", "bad_url", "no_html", "no_text", "not_an_item", "errors")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
MAX_LOGGED_CHARS = 300


def shorten(value: object, limit: int = MAX_LOGGED_CHARS) -> str:
    """A value as at most `limit` characters, for log lines."""
    text = str(value)
    return text if len(text) <= limit else f"{text[: limit - 20]}... ({len(text):,} chars)"


@dataclass(frozen=True)
class PipelineSettings:
    """The SIMHASH_* settings, read and checked once."""

    database_url: str = defaults.DATABASE_URL
    max_distance: int = defaults.MAX_DISTANCE
    min_text_length: int = Fingerprinter.min_length
    html_field: str = "html"
    text_field: str = "text"
    url_field: str = "url"
    drop_log_level: str = "INFO"
    on_db_error: str = "stop"
    workers: int = field(default_factory=default_size)
    worker_timeout: float = defaults.WORKER_TIMEOUT_S
    batch_size: int = defaults.BATCH_SIZE
    extract: ExtractOptions = ExtractOptions()

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> PipelineSettings:
        def get(name: str, kind: type, default: Any) -> Any:
            setting = f"SIMHASH_{name}"
            raw = settings.get(setting, default)
            try:
                if kind is bool:
                    return settings.getbool(setting, default)
                return kind(raw) if raw is not None else None
            except (TypeError, ValueError):
                raise ValueError(f"{setting} must be a {kind.__name__}; got {raw!r}") from None

        defaults = cls()
        values = cls(
            database_url=get("DATABASE_URL", str, defaults.database_url),
            max_distance=get("MAX_DISTANCE", int, defaults.max_distance),
            min_text_length=get("MIN_TEXT_LENGTH", int, defaults.min_text_length),
            html_field=get("HTML_FIELD", str, defaults.html_field),
            text_field=get("TEXT_FIELD", str, defaults.text_field),
            url_field=get("URL_FIELD", str, defaults.url_field),
            drop_log_level=get("DROP_LOG_LEVEL", str, defaults.drop_log_level).upper(),
            on_db_error=get("ON_DB_ERROR", str, defaults.on_db_error).lower(),
            workers=get("WORKERS", int, defaults.workers),
            worker_timeout=get("WORKER_TIMEOUT", float, defaults.worker_timeout),
            batch_size=get("BATCH_SIZE", int, defaults.batch_size),
            extract=_extract_options(settings),
        )
        values.check()
        return values

    def check(self) -> None:
        if not 0 <= self.max_distance <= defaults.MAX_SUPPORTED_DISTANCE:
            raise ValueError(f"SIMHASH_MAX_DISTANCE must be 0 to {defaults.MAX_SUPPORTED_DISTANCE}; got {self.max_distance}")
        if self.min_text_length < 0:
            raise ValueError(f"SIMHASH_MIN_TEXT_LENGTH must be >= 0; got {self.min_text_length}")
        if self.drop_log_level not in LOG_LEVELS:
            raise ValueError(f"SIMHASH_DROP_LOG_LEVEL must be one of {LOG_LEVELS}; got {self.drop_log_level!r}")
        if self.on_db_error not in ON_DB_ERROR:
            raise ValueError(f"SIMHASH_ON_DB_ERROR must be one of {ON_DB_ERROR}; got {self.on_db_error!r}")
        if self.workers < 0:
            raise ValueError(f"SIMHASH_WORKERS must be >= 0 (0: extract in threads, no crash isolation); got {self.workers}")
        if self.worker_timeout <= 0:
            raise ValueError(f"SIMHASH_WORKER_TIMEOUT must be positive seconds; got {self.worker_timeout}")
        if self.batch_size < 1:
            raise ValueError(f"SIMHASH_BATCH_SIZE must be >= 1; got {self.batch_size}")
        if not self.url_field or not (self.html_field or self.text_field):
            raise ValueError("SIMHASH_URL_FIELD and one of SIMHASH_HTML_FIELD / SIMHASH_TEXT_FIELD must be set")


def _extract_options(settings: BaseSettings) -> ExtractOptions:
    favor = settings.get("SIMHASH_EXTRACT_FAVOR") or None
    try:
        return ExtractOptions(
            favor=favor,
            include_comments=settings.getbool("SIMHASH_EXTRACT_COMMENTS", True),
            include_tables=settings.getbool("SIMHASH_EXTRACT_TABLES", True),
            max_bytes=settings.getint("SIMHASH_EXTRACT_MAX_BYTES", ExtractOptions().max_bytes),
        )
    except ValueError as exc:
        raise ValueError(f"SIMHASH_EXTRACT_*: {exc}") from None


class StartupError(RuntimeError):
    """The pipeline cannot start (a bad setting, an index that cannot be opened): the crawl
    stops before it fetches anything, with one error line and a non-zero exit status."""


class _ReportedAlready(logging.Filter):
    """Drops the traceback Scrapy's crawler process logs for a StartupError, which the
    pipeline has logged as one clear line already."""

    def filter(self, record: logging.LogRecord) -> bool:
        failure = getattr(record.msg, "event", {}).get("log_failure")  # Twisted's "Unhandled error in Deferred"
        error = record.exc_info[1] if record.exc_info else getattr(failure, "value", None)
        return not isinstance(error, StartupError)


def _abort(message: str) -> StartupError:
    logger.error("simhash: %s", message)
    for name in ("asyncio", "twisted"):  # where Scrapy's crawler processes log a failed start
        target = logging.getLogger(name)
        if not any(isinstance(f, _ReportedAlready) for f in target.filters):
            target.addFilter(_ReportedAlready())
    return StartupError(message)


class SimhashDedupPipeline:
    """Drops items whose main text is a near-duplicate of a page already stored.

    Kept items leave with `text` and `simhash` (16 hex digits) added. Extraction and
    fingerprinting run in worker processes (a crash there costs one page, not the crawl);
    one writer thread decides pages against the index in batches. Scrapy calls the async
    methods; `start`, `process_item_blocking` and `stop` do the same work blocking, for
    use outside a reactor.
    """

    def __init__(self, settings: PipelineSettings, crawler: Crawler | None = None) -> None:
        self.settings = settings
        self.fingerprinter = Fingerprinter(min_length=settings.min_text_length)
        self.crawler = crawler
        self.stats = crawler.stats if crawler is not None else None
        self.index: Index | None = None
        self.pool: WorkerPool | None = None
        self.writer: BatchWriter[tuple[str, Signature], Match | None] | None = None
        self._setup = PageSetup(self.fingerprinter, settings.extract)
        self._threads: ThreadPool | None = None
        self._warned: set[str] = set()
        self._stored_at_start = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SimhashDedupPipeline:
        if not crawler.settings.getbool("SIMHASH_ENABLED", True):
            raise NotConfigured("SIMHASH_ENABLED is False")
        try:
            settings = PipelineSettings.from_settings(crawler.settings)
        except ValueError as exc:
            raise _abort(str(exc)) from None
        return cls(settings, crawler)

    # -- lifecycle ----------------------------------------------------------------

    async def open_spider(self, spider: Any = None) -> None:
        """Opens the index and starts the workers, off the reactor; an index that cannot
        be opened closes the spider before it fetches anything (finish reason
        INDEX_UNAVAILABLE; `crawl` from simhash_index's commands then exits with status 1)."""
        self._threads = ThreadPool(minthreads=0, maxthreads=self.settings.workers + 2, name="simhash")
        self._threads.start()
        try:
            await self._in_thread(self.start)
        except SimhashIndexError as exc:
            self._inc("simhash/errors/db_open")
            logger.error("simhash: cannot open the index, stopping the crawl: %s", exc)
            await self.close_spider()
            raise CloseSpider(INDEX_UNAVAILABLE) from None
        except WorkerStartError as exc:
            logger.error("simhash: %s; stopping the crawl", exc)
            await self.close_spider()
            raise CloseSpider(WORKERS_UNAVAILABLE) from None
        assert self.index is not None
        logger.info(
            "simhash: index %r holds %d pages; %s", self.index, self._stored_at_start,
            f"{self.settings.workers} worker processes" if self.pool else "extraction in threads (SIMHASH_WORKERS=0)",
        )

    def start(self) -> None:
        """Open the index, start the worker processes and the writer (blocking)."""
        for noisy in ("trafilatura", "htmldate", "courlan", "justext"):
            logging.getLogger(noisy).setLevel(max(logging.INFO, logging.getLogger(noisy).getEffectiveLevel()))
        self.index = open_index(
            self.settings.database_url, max_distance=self.settings.max_distance, scheme=self.fingerprinter.scheme
        )
        try:
            self._stored_at_start = len(self.index)
        except SimhashIndexError:
            self.stop()
            raise
        if self.settings.workers:
            self.pool = WorkerPool(analyse, self._setup, size=self.settings.workers, timeout=self.settings.worker_timeout)
        self.writer = BatchWriter(self._decide, batch_size=self.settings.batch_size)

    async def close_spider(self, spider: Any = None) -> None:
        """Decides what is queued, then stops the writer, the workers and the index."""
        if self._threads is None:
            self.stop()
            return
        await self._in_thread(self.stop)
        self._threads.stop()
        self._threads = None

    def stop(self) -> None:
        """The blocking half of close_spider."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        if self.index is not None:
            self.index.close()
            self.index = None

    def _in_thread(self, function: Callable[..., T], *args: Any) -> Awaitable[T]:
        """Run a blocking call on the pipeline's threads; awaitable from process_item."""
        from twisted.internet import reactor  # imported late: installing a reactor is Scrapy's decision

        assert self._threads is not None, "open_spider() starts the threads"
        return maybe_deferred_to_future(deferToThreadPool(reactor, self._threads, function, *args))

    # -- items ----------------------------------------------------------------------

    async def process_item(self, item: Any, spider: Any = None) -> Any:
        """Returns the item (kept, or passed through unchecked) or raises DropItem.

        Each item is counted in exactly one outcome stat (see the README's Stats).
        """
        checked = self._prepare(item)
        if checked is None:
            return item
        adapter, url, job = checked
        try:
            page = await self._in_thread(self._analyse, job)
        except Exception as exc:
            return self._failed(item, url, exc)
        if not self._checkable(url, page):
            return item
        assert page.signature is not None and self.writer is not None
        try:
            match = await maybe_deferred_to_future(_deferred(self.writer.submit((url, page.signature))))
        except SimhashIndexError as exc:
            self._db_error(exc)
            return item  # never lost: it goes on un-deduplicated
        return self._conclude(item, adapter, page, match)

    def process_item_blocking(self, item: Any) -> Any:
        """process_item without a reactor: returns the item or raises DropItem."""
        checked = self._prepare(item)
        if checked is None:
            return item
        adapter, url, job = checked
        try:
            page = self._analyse(job)
        except Exception as exc:
            return self._failed(item, url, exc)
        if not self._checkable(url, page):
            return item
        assert page.signature is not None and self.writer is not None
        try:
            match = self.writer.submit((url, page.signature)).result()
        except SimhashIndexError as exc:
            self._db_error(exc)
            return item
        return self._conclude(item, adapter, page, match)

    def _prepare(self, item: Any) -> tuple[ItemAdapter, str, PageJob] | None:
        """(adapter, url, what to analyse), or None for an item that passes through unchecked (counted)."""
        if not ItemAdapter.is_item(item):
            self._inc("simhash/not_an_item")
            self._warn_once("not_an_item", "simhash: %s items are not dicts or Scrapy items; they pass through", type(item).__name__)
            return None
        adapter = ItemAdapter(item)
        url = adapter.get(self.settings.url_field)
        if not url or not isinstance(url, str):
            self._inc("simhash/no_url")
            self._warn_once(
                "no_url", "simhash: items without a %r field pass through un-deduplicated", self.settings.url_field
            )
            return None
        try:
            check_key(url)
        except ValueError as exc:
            self._inc("simhash/bad_url")
            logger.warning("simhash: %s; the item passes through", exc)
            return None
        if self.writer is None:
            self._error("no_index")
            return None
        given = adapter.get(self.settings.text_field) if self.settings.text_field else None
        if isinstance(given, str) and given.strip():
            return adapter, url, PageJob(given, is_html=False)
        html = adapter.get(self.settings.html_field) if self.settings.html_field else None
        if not isinstance(html, (str, bytes)):
            self._inc("simhash/no_text" if isinstance(given, str) else "simhash/no_html")  # a blank text is no text
            return None
        return adapter, url, PageJob(html)

    def _analyse(self, job: PageJob) -> Page:
        if self.pool is not None:
            return self.pool.run(job)
        return analyse(self._setup, job)

    def _failed(self, item: Any, url: str, exc: Exception) -> Any:
        """A page whose analysis failed: counted, logged once with its URL, passed through."""
        if isinstance(exc, (WorkerCrashed, WorkerTimeout)):
            self._error("worker_crash" if isinstance(exc, WorkerCrashed) else "worker_timeout")
            logger.error("simhash: %s while analysing %s; the item passes through", exc, shorten(url))
        else:  # an unforeseen failure on one page must not lose it or stop the crawl
            self._error("unexpected")
            logger.error(
                "simhash: unexpected %s on %s: %s; the item passes through", type(exc).__name__, shorten(url), shorten(exc)
            )
        return item

    def _checkable(self, url: str, page: Page) -> bool:
        """Whether the page has a signature to check; counts the ones that do not."""
        if page.failure is not None:
            self._error("extract")
            logger.warning("simhash: %s: %s; the item passes through", shorten(url), page.failure)
            return False
        if page.signature is None:
            self._inc("simhash/no_text")
            return False
        return True

    def _conclude(self, item: Any, adapter: ItemAdapter, page: Page, match: Match | None) -> Any:
        if match is not None:
            self._inc("simhash/dropped")
            if match.exact:
                self._inc("simhash/dropped_exact")
            raise DropItem(
                f"near-duplicate of {shorten(match.key)} (distance {match.distance}"
                f"{', exact text' if match.exact else ''})",
                log_level=self.settings.drop_log_level,
            )
        self._inc("simhash/kept")
        self._set(adapter, "text", page.text)
        if page.signature is not None and page.signature.simhash is not None:
            self._set(adapter, "simhash", to_hex(page.signature.simhash))
        return item

    def _decide(self, batch: Sequence[tuple[str, Signature]]) -> list[Match | None]:
        """The writer thread's call: the batch checked and stored in one transaction."""
        index = self.index
        if index is None:
            raise SimhashIndexError("the index is closed")
        return index.check_and_add_many(batch)

    # -- failures -------------------------------------------------------------------

    def _error(self, reason: str) -> None:
        self._inc("simhash/errors")
        self._inc(f"simhash/errors/{reason}")

    def _db_error(self, exc: Exception) -> None:
        self._error("db")
        if self.settings.on_db_error == "stop":
            if "db" not in self._warned:
                self._warned.add("db")
                logger.error("simhash: index error, closing the spider (SIMHASH_ON_DB_ERROR=stop): %s", exc)
                self._close_spider(INDEX_ERROR)
            return
        self._warn_once("db", "simhash: index error, items pass through un-deduplicated until it is back: %s", exc)

    def _close_spider(self, reason: str) -> None:
        try:
            engine = self.crawler.engine if self.crawler is not None else None
        except RuntimeError:  # Scrapy >= 2.14 before the crawl starts
            engine = None
        if engine is None:
            return
        if hasattr(engine, "close_spider_async"):  # Scrapy >= 2.14
            deferred_from_coro(engine.close_spider_async(reason=reason))
        else:
            engine.close_spider(self.crawler.spider, reason)

    # -- small helpers --------------------------------------------------------------

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)

    def _warn_once(self, topic: str, message: str, *args: Any) -> None:
        if topic not in self._warned:
            self._warned.add(topic)
            logger.warning(message, *args)

    def _set(self, adapter: ItemAdapter, field: str, value: str | None) -> None:
        try:
            adapter[field] = value
        except KeyError:
            self._warn_once(
                f"field:{field}", "simhash: %s has no %r field to receive it; declare it", type(adapter.item).__name__, field
            )


def _deferred(future: Future[T]) -> Deferred[T]:
    """A Deferred fired in the reactor thread when a concurrent Future completes."""
    from twisted.internet import reactor

    deferred: Deferred[T] = Deferred()

    def done(completed: Future[T]) -> None:
        error = completed.exception()
        if error is not None:
            reactor.callFromThread(deferred.errback, error)
        else:
            reactor.callFromThread(deferred.callback, completed.result())

    future.add_done_callback(done)
    return deferred


def summarize(item: Any) -> str:
    """A one-line summary of an item for logs: its small fields, never a page body."""
    try:
        fields = ItemAdapter(item).asdict()
    except TypeError:
        return shorten(repr(item))
    parts = []
    for name, value in fields.items():
        shown = shorten(value, 120) if isinstance(value, str) and len(value) <= 1000 else f"<{len(str(value)):,} chars>"
        parts.append(f"{name}: {shown!r}" if not shown.startswith("<") else f"{name}: {shown}")
    return shorten("{" + ", ".join(parts) + "}", 1000)


class SimhashLogFormatter(logformatter.LogFormatter):
    """Scrapy's log formatter, with items summarised so no log line carries a page body."""

    def scraped(self, item: Any, response: Any, spider: Any) -> dict:
        result = super().scraped(item, response, spider)
        result["args"]["item"] = summarize(item)
        return result

    def dropped(self, item: Any, exception: BaseException, response: Any, spider: Any) -> dict:
        result = super().dropped(item, exception, response, spider)
        result["args"]["item"] = summarize(item)
        return result

    def item_error(self, item: Any, exception: BaseException, response: Any, spider: Any) -> dict:
        result = super().item_error(item, exception, response, spider)
        result["args"]["item"] = summarize(item)
        return result
