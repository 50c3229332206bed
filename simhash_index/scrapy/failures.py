"""How the pipeline stops a crawl it cannot serve: finish reasons, and a start that fails
with one clear error line (not a traceback)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings
from scrapy.utils.defer import deferred_from_coro

from ..errors import one_line

logger = logging.getLogger(__name__)
T = TypeVar("T")

INDEX_UNAVAILABLE = "simhash_index_unavailable"  # the index could not be opened: nothing was fetched
INDEX_ERROR = "simhash_index_error"  # the index failed mid-crawl, with SIMHASH_ON_DB_ERROR=stop
WORKERS_UNAVAILABLE = "simhash_workers_unavailable"  # the worker processes could not start
FAILURE_REASONS = (INDEX_UNAVAILABLE, INDEX_ERROR, WORKERS_UNAVAILABLE)


class StartupError(RuntimeError):
    """The pipeline cannot start (a bad setting): the crawl stops before it begins, with one
    error line and exit status 1."""


class _ReportedAlready(logging.Filter):
    """Drops the traceback Scrapy's crawler process logs for a StartupError, which has been
    logged as one clear line already."""

    def filter(self, record: logging.LogRecord) -> bool:
        failure = getattr(record.msg, "event", {}).get("log_failure")  # Twisted's "Unhandled error in Deferred"
        error = record.exc_info[1] if record.exc_info else getattr(failure, "value", None)
        return not isinstance(error, StartupError)


def startup_error(message: str) -> StartupError:
    """Log the message as one error line and return the StartupError to raise."""
    logger.error("simhash: %s", message)
    for name in ("asyncio", "twisted"):  # where Scrapy's crawler processes log a failed start
        target = logging.getLogger(name)
        if not any(isinstance(f, _ReportedAlready) for f in target.filters):
            target.addFilter(_ReportedAlready())
    return StartupError(message)


def checked(read: Callable[[BaseSettings], T], settings: BaseSettings) -> T:
    """What `read` makes of the settings; a bad value (its ValueError naming the setting)
    stops the start with one error line (startup_error)."""
    try:
        return read(settings)
    except ValueError as exc:
        raise startup_error(str(exc)) from None


# Which setting changes each part of a fingerprint scheme (Fingerprinter.scheme's key=value words).
_SCHEME_SETTINGS = {"min_length": "SIMHASH_MIN_TEXT_LENGTH", "weights": "SIMHASH_WORD_WEIGHTS"}


def scheme_difference(error: object, recorded: str | None, asked: str) -> str:
    """A scheme mismatch explained: the parts of the scheme that differ, and the settings
    that set them.

    >>> scheme_difference("db holds another scheme:", "x min_length=100", "x min_length=50")[:63]
    'db holds another scheme: its min_length=100, the settings give '
    """
    first = str(error).splitlines()[0] if str(error) else "the index holds fingerprints of another scheme"
    if recorded is None:
        return f"{one_line(error)}: SIMHASH_FINGERPRINTER, SIMHASH_MIN_TEXT_LENGTH and SIMHASH_WORD_WEIGHTS set it"
    there, here = _scheme_parts(recorded), _scheme_parts(asked)
    differ = [name for name in dict.fromkeys([*there, *here]) if there.get(name) != here.get(name)]
    shown = ", ".join(f"{name}={there.get(name, '(unset)')}" for name in differ)
    given = ", ".join(f"{name}={here.get(name, '(unset)')}" for name in differ)
    settings = sorted({_SCHEME_SETTINGS.get(name, "SIMHASH_FINGERPRINTER") for name in differ})
    return (
        f"{first.rstrip(':')}: its {shown}, the settings give {given}: make {' and '.join(settings)} "
        "what the index was built with, or use a new SIMHASH_DATABASE_URL"
    )


def _scheme_parts(scheme: str) -> dict[str, str]:
    parts = dict(part.split("=", 1) for part in scheme.split() if "=" in part)
    parts["hash"] = scheme.split(" ", 1)[0]
    return parts


def layout_hint(error: object) -> str:
    """A layout mismatch, with the settings that cause it."""
    return (
        f"{one_line(error)} (SIMHASH_INDEX_LAYOUT and SIMHASH_BLOCK_ASSIGNMENT choose the layout of a new index: "
        "leave them unset to open this one)"
    )


def close_spider(crawler: Crawler | None, reason: str) -> None:
    """Ask the crawl's engine to close the spider (nothing when there is no crawl yet)."""
    try:
        engine = crawler.engine if crawler is not None else None
    except RuntimeError:  # Scrapy >= 2.14 before the crawl starts
        engine = None
    if engine is None or crawler is None:
        return
    if hasattr(engine, "close_spider_async"):  # Scrapy >= 2.14
        deferred_from_coro(engine.close_spider_async(reason=reason))
    elif crawler.spider is not None:
        engine.close_spider(crawler.spider, reason)
