"""The dedup item pipeline: drops items whose main text is a near-duplicate of a stored page.

A thin adapter over the dedup core (simhash_index.dedup.Deduplicator), which analyses pages in
worker processes (a crash there costs one page, not the crawl) and decides them against the
index in batches: an item is released (kept or dropped) only after its batch committed. Here
items become pages, and decisions become stats, log lines and DropItem. Nothing blocks the
reactor: the core answers with futures, awaited on it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from dataclasses import replace
from typing import Any
from weakref import WeakKeyDictionary

from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider, DropItem, NotConfigured

from ..dedup import Deduplicator
from ..errors import LayoutMismatchError, SchemeMismatchError, SimhashIndexError, one_line
from ..fingerprinting.pages import Analysed, PageSetup
from ..fingerprinting.simhash import to_hex
from ..index.base import Index
from ..index.factory import open_index
from ..index.records import Match
from ..workers import WorkerCrashed, WorkerStartError, WorkerTimeout
from .addon import warn_of_pipelines_before
from .failures import (
    INDEX_ERROR,
    INDEX_UNAVAILABLE,
    WORKERS_UNAVAILABLE,
    checked,
    close_spider,
    layout_hint,
    scheme_difference,
)
from .items import Checkable, PassThrough, checkable
from .logformatter import safe
from .repeats import PassedOn
from .settings import PipelineSettings, enabled, unknown_settings
from .signals import page_superseded
from .stats import Outcomes
from .threads import AWAITS_PIPELINE_COROUTINES, awaitable, for_scrapy, on_next_turn

logger = logging.getLogger(__name__)

# The pipeline of each running crawl, so SimhashSkipDuplicatesMiddleware uses its index
# rather than open a second one (a memory:// index could not be shared otherwise).
_RUNNING: WeakKeyDictionary[Crawler, SimhashDedupPipeline] = WeakKeyDictionary()


def opened(index: Index | None, stored: int) -> str:
    """What the crawl deduplicates against: a new index and where it was created (a mistyped
    path shows here), or an existing one and how many pages it holds."""
    if index is None:
        return "no index"
    if index.created:
        return f"a new index, created at {index.location} (radius {index.max_distance})"
    return f"the index at {index.location} holds {stored:,} pages (radius {index.max_distance})"


def running_pipeline(crawler: Crawler) -> SimhashDedupPipeline | None:
    """The crawl's SimhashDedupPipeline, if it has one."""
    return _RUNNING.get(crawler)


class RepeatedPage(DropItem):
    """The crawl passed this page on before, under the same key and with the same text (Scrapy
    fetched its URL again): it is not passed on twice. `key` is its key in the index."""

    one_line = True
    key: str = ""


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

    Kept items leave with `text` and `simhash` (16 hex digits) added. The work is done by
    `core`, a Deduplicator made from the settings.
    """

    def __init__(self, settings: PipelineSettings, crawler: Crawler | None = None) -> None:
        self.settings = settings
        self.fingerprinter = settings.fingerprinter
        self.crawler = crawler
        self.stats = crawler.stats if crawler is not None else None
        self.outcomes = Outcomes(self.stats)
        self.core = Deduplicator(
            self._open_index,
            PageSetup(settings.fingerprinter, settings.extract, dates=settings.prefer == "newest"),
            workers=settings.workers,
            worker_timeout=settings.worker_timeout,
            batch_size=settings.batch_size,
            on_index_lost=lambda: self.outcomes.note("index_lost"),
        )
        self.passed = PassedOn()
        self._warned: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SimhashDedupPipeline:
        for warning in unknown_settings(crawler.settings):
            logger.warning("%s", warning)
        if not checked(enabled, crawler.settings):
            raise NotConfigured("SIMHASH_ENABLED is False")
        settings = checked(PipelineSettings.from_settings, crawler.settings)
        warn_of_pipelines_before(crawler.settings, cls)
        pipeline = cls(settings, crawler)
        _RUNNING[crawler] = pipeline
        return pipeline

    @property
    def index(self) -> Index | None:
        """The open index (None before open_spider finished, and after close_spider)."""
        return self.core.index

    # -- lifecycle ----------------------------------------------------------------

    def open_spider(self, spider: Any = None) -> Awaitable[None]:
        """Opens the index and starts the workers, off the reactor; when either fails the
        spider closes before fetching anything (`crawl` from simhash_index.scrapy.commands
        then exits with status 1). Awaitable, in the form the running Scrapy takes."""
        return for_scrapy(self._open())

    def close_spider(self, spider: Any = None) -> Awaitable[None]:
        """Decides what is queued, stops the writer, the workers and the index, then logs the
        summary. Awaitable, in the form the running Scrapy takes."""
        return for_scrapy(self._close())

    async def _open(self) -> None:
        try:
            await awaitable(self.core.open())
        except SimhashIndexError as exc:
            self.outcomes.note("errors/db_open")
            if isinstance(exc, SchemeMismatchError):
                recorded = await awaitable(self.core.call(self._recorded_scheme))
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
            "simhash: %s; %s",
            opened(self.core.index, self.core.stored_at_start),
            f"{self.settings.workers} worker processes"
            if self.core.pool
            else "extraction in threads (SIMHASH_WORKERS=0)",
        )

    def _cannot_start(self, reason: str) -> None:
        """Stop the crawl before it fetches anything: CloseSpider from open_spider. Scrapy < 2.14
        takes that for a failed start (its CoreStats then fails with a traceback, and the finish
        reason is "shutdown"): there the spider is closed instead as soon as the engine runs."""
        if AWAITS_PIPELINE_COROUTINES:
            raise CloseSpider(reason) from None
        on_next_turn(close_spider, self.crawler, reason)

    def _open_index(self) -> Index:
        settings = self.settings
        return open_index(
            settings.database_url,
            max_distance=settings.max_distance,
            min_similarity=settings.min_similarity,
            added_words=settings.added_words,
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
        opened = self.core.ready
        stored = await awaitable(self.core.close())
        if opened:
            logger.info("%s", self.outcomes.summary(stored))
            if self.outcomes.total() == 0:
                logger.warning("simhash: no item reached the pipeline: did the crawl fetch anything?")

    # -- items ----------------------------------------------------------------------

    async def process_item(self, item: Any, spider: Any = None) -> Any:
        """Returns the item (kept, or passed through unchecked) or raises DropItem.

        Each item is counted in exactly one outcome stat (docs/scrapy.md, "Stats").
        """
        checked = self._prepare(item)
        if checked is None:
            return item
        key = checked.key
        try:
            page = await awaitable(self.core.analyse(checked.job))
        except Exception as exc:
            return self._failed(item, key, exc)
        if page.signature is None:
            return self._unchecked(item, key, page)
        if self.passed.again(key, page.signature):
            return self._repeated(key)
        claim = self.passed.claim(key, page.signature)
        try:
            signature = replace(page.signature, modified=checked.modified)
            match = await awaitable(self.core.decide(key, signature, page.text))
        except SimhashIndexError as exc:
            self._db_error(exc)
            return item  # never lost: it goes on un-deduplicated
        except Exception as exc:  # a bug, not the page's doing: the page is not lost for it
            return self._failed(item, key, exc)
        if match is not None and match.superseded is None:
            self.passed.release(claim)
        return self._conclude(item, checked.adapter, key, page, match)

    def _prepare(self, item: Any) -> Checkable | None:
        """(adapter, key, what to analyse), or None for an item that passes through unchecked (counted)."""
        checked = checkable(item, self.settings, index_ready=self.core.ready)
        if not isinstance(checked, PassThrough):
            for flaw in checked.flaws:
                self.outcomes.note(flaw.stat)
                self._warn_once(flaw.stat, flaw.warning, *flaw.arguments)
            return checked
        self.outcomes.count(checked.outcome, f"errors/{checked.reason}" if checked.reason else None)
        if checked.reason == "no_index":
            self._index_not_open()
        elif checked.warning and checked.once:
            self._warn_once(checked.outcome, checked.warning, *checked.arguments)
        elif checked.warning:
            logger.warning(checked.warning, *checked.arguments)
        return None

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

    def _repeated(self, key: str) -> Any:
        """A page passed on before, unchanged: counted, dropped with one line."""
        self.outcomes.count("repeated")
        message = f"{safe(key)} was passed on earlier in this crawl, with the same text"
        repeat = RepeatedPage(message, log_level=self.settings.drop_log_level)
        repeat.key = key
        raise repeat

    def _unchecked(self, item: Any, key: str, page: Analysed) -> Any:
        """A page with no signature to check (extraction failed, or no text): counted, passed through."""
        if page.failure is not None:
            self.outcomes.count("errors", "errors/extract")
            logger.warning("simhash: %s: %s; the item passes through", safe(key), safe(page.failure))
        else:
            self.outcomes.count("no_text")
        return item

    def _conclude(self, item: Any, adapter: ItemAdapter, key: str, page: Analysed, match: Match | None) -> Any:
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
        """The item's field set, when it takes it: a class without the field, a frozen dataclass
        or attrs class, a model refusing the value is warned of once, and the item goes on as it is."""
        try:
            adapter[field] = value
        except KeyError:
            self._warn_once(
                f"field:{field}",
                "simhash: %s has no %r field to receive it; declare it",
                type(adapter.item).__name__,
                field,
            )
        except Exception as exc:  # the item's own class refuses it (FrozenInstanceError, a validation error)
            self._warn_once(
                f"field:{field}",
                "simhash: %s items cannot take the %r field (%s: %s); they go on without it",
                type(adapter.item).__name__,
                field,
                type(exc).__name__,
                safe(exc, 200),
            )
