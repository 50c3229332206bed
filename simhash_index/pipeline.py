"""Scrapy glue: the dedup item pipeline and a log formatter that never logs page bodies.

The only module of simhash_index that imports Scrapy.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from itemadapter import ItemAdapter
from scrapy import logformatter
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.settings import BaseSettings
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from .errors import SimhashIndexError
from .extract import ExtractionError, ExtractOptions, extract_text
from .fingerprint import Fingerprinter
from .index import MAX_SUPPORTED_DISTANCE, SimhashIndex
from .simhash import to_hex

logger = logging.getLogger(__name__)

ON_DB_ERROR = ("stop", "pass")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
MAX_LOGGED_CHARS = 300


def shorten(value: object, limit: int = MAX_LOGGED_CHARS) -> str:
    """A value as at most `limit` characters, for log lines."""
    text = str(value)
    return text if len(text) <= limit else f"{text[: limit - 20]}... ({len(text):,} chars)"


@dataclass(frozen=True)
class PipelineSettings:
    """The SIMHASH_* settings, read and checked once."""

    database_url: str = "sqlite:///simhash.db"
    max_distance: int = 3
    min_text_length: int = Fingerprinter.min_length
    html_field: str = "html"
    text_field: str = "text"
    url_field: str = "url"
    drop_log_level: str = "INFO"
    on_db_error: str = "stop"
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
            extract=_extract_options(settings),
        )
        values.check()
        return values

    def check(self) -> None:
        if not 0 <= self.max_distance <= MAX_SUPPORTED_DISTANCE:
            raise ValueError(f"SIMHASH_MAX_DISTANCE must be 0 to {MAX_SUPPORTED_DISTANCE}; got {self.max_distance}")
        if self.min_text_length < 0:
            raise ValueError(f"SIMHASH_MIN_TEXT_LENGTH must be >= 0; got {self.min_text_length}")
        if self.drop_log_level not in LOG_LEVELS:
            raise ValueError(f"SIMHASH_DROP_LOG_LEVEL must be one of {LOG_LEVELS}; got {self.drop_log_level!r}")
        if self.on_db_error not in ON_DB_ERROR:
            raise ValueError(f"SIMHASH_ON_DB_ERROR must be one of {ON_DB_ERROR}; got {self.on_db_error!r}")
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


class SimhashDedupPipeline:
    """Drops items whose main text is a near-duplicate of a page already stored.

    Kept items leave with `text` and `simhash` (16 hex digits) added.
    """

    def __init__(self, settings: PipelineSettings, crawler: Crawler | None = None) -> None:
        self.settings = settings
        self.fingerprinter = Fingerprinter(min_length=settings.min_text_length)
        self.crawler = crawler
        self.stats = crawler.stats if crawler is not None else None
        self.index: SimhashIndex | None = None
        self._warned: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SimhashDedupPipeline:
        if not crawler.settings.getbool("SIMHASH_ENABLED", True):
            raise NotConfigured("SIMHASH_ENABLED is False")
        return cls(PipelineSettings.from_settings(crawler.settings), crawler)

    # -- lifecycle ----------------------------------------------------------------

    def open_spider(self, spider: Any = None) -> None:
        for noisy in ("trafilatura", "htmldate", "courlan", "justext"):
            logging.getLogger(noisy).setLevel(max(logging.INFO, logging.getLogger(noisy).getEffectiveLevel()))
        try:
            self.index = SimhashIndex(
                self.settings.database_url, max_distance=self.settings.max_distance, scheme=self.fingerprinter.scheme
            )
        except SimhashIndexError as exc:
            logger.error("simhash: cannot open the index, stopping the crawl: %s", exc)
            self._inc("simhash/errors/db_open")
            self._close_spider("simhash_index_unavailable")
            return
        logger.info("simhash: index %r holds %d pages", self.index, len(self.index))

    def close_spider(self, spider: Any = None) -> None:
        if self.index is not None:
            self.index.close()
            self.index = None

    # -- items ----------------------------------------------------------------------

    async def process_item(self, item: Any, spider: Any = None) -> Any:
        """Extraction and the DB call run in a thread, so the crawl keeps downloading."""
        try:
            return await maybe_deferred_to_future(deferToThread(self.process_item_blocking, item))
        except DropItem:
            raise
        except SimhashIndexError as exc:
            self._db_error(exc)
            return item  # never lost: it goes on un-deduplicated
        except Exception as exc:  # an unforeseen failure on one page must not lose it or stop the crawl
            self._inc("simhash/errors")
            self._inc("simhash/errors/unexpected")
            logger.error(
                "simhash: unexpected %s on %s: %s; the item passes through",
                type(exc).__name__, shorten(ItemAdapter(item).get(self.settings.url_field)), shorten(exc),
            )
            return item

    def process_item_blocking(self, item: Any) -> Any:
        """The whole check for one item, blocking: returns the item or raises DropItem.

        Raises SimhashIndexError when the index fails; `process_item` handles it.
        """
        adapter = ItemAdapter(item)
        url = adapter.get(self.settings.url_field)
        if not url or not isinstance(url, str):
            self._inc("simhash/no_url")
            self._warn_once("no_url", "simhash: items without a %r field pass through un-deduplicated", self.settings.url_field)
            return item
        if self.index is None:
            self._inc("simhash/errors/no_index")
            return item
        text = self._text(adapter)
        signature = self.fingerprinter.signature(text) if text is not None else None
        if signature is None:
            if text is not None:
                self._inc("simhash/no_text")
            return item
        match = self.index.check_and_add(url, signature)
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
        self._set(adapter, "text", text)
        if signature.simhash is not None:
            self._set(adapter, "simhash", to_hex(signature.simhash))
        return item

    def _text(self, adapter: ItemAdapter) -> str | None:
        field = self.settings.text_field
        given = adapter.get(field) if field else None
        if isinstance(given, str) and given.strip():
            return given
        html = adapter.get(self.settings.html_field) if self.settings.html_field else None
        if not isinstance(html, (str, bytes)):
            self._inc("simhash/no_text")
            self._inc("simhash/no_html")
            return None
        try:
            text = extract_text(html, self.settings.extract)
        except ExtractionError as exc:
            self._inc("simhash/errors")
            self._inc("simhash/errors/extract")
            logger.warning("simhash: %s: %s; the item passes through", shorten(adapter.get(self.settings.url_field)), exc)
            return None
        if text is None:
            self._inc("simhash/no_text")
        return text

    # -- failures -------------------------------------------------------------------

    def _db_error(self, exc: Exception) -> None:
        self._inc("simhash/errors")
        self._inc("simhash/errors/db")
        if self.settings.on_db_error == "stop":
            if "db" not in self._warned:
                self._warned.add("db")
                logger.error("simhash: index error, closing the spider (SIMHASH_ON_DB_ERROR=stop): %s", exc)
                self._close_spider("simhash_index_error")
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

    def _set(self, adapter: ItemAdapter, field: str, value: str) -> None:
        try:
            adapter[field] = value
        except KeyError:
            self._warn_once(
                f"field:{field}", "simhash: %s has no %r field to receive it; declare it", type(adapter.item).__name__, field
            )


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
