"""`scrapy crawl`, exiting with status 1 when the crawl did nothing useful.

Scrapy exits 0 whatever the finish reason. A crawl whose index could not be opened (or
failed with SIMHASH_ON_DB_ERROR=stop) deduplicated nothing, and one that got no response
at all (no network, a wrong start URL), or only error pages (a start URL that is a 404),
fetched nothing useful: a script running it must be able to tell. A spider that refuses its
arguments (`-a start_url=htp://...`) is one error line, not a traceback. Enable with
`COMMANDS_MODULE = "simhash_index.scrapy.commands"` (an add-on cannot: Scrapy loads its
commands before add-ons).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from functools import partial
from typing import Any

from scrapy.commands import crawl
from scrapy.exceptions import UsageError
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from ...errors import one_line
from ..failures import FAILURE_REASONS, StartupError

logger = logging.getLogger(__name__)
EXCEPTION_TYPES = "downloader/exception_type_count/"
STATUS = "downloader/response_status_count/"
ROBOTS_STATUS = "robotstxt/response_status_count/"


class Command(crawl.Command):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError(
                "give one spider: scrapy crawl SPIDER"
                if not args
                else "running 'scrapy crawl' with more than one spider is not supported"
            )
        assert self.crawler_process is not None
        crawler = self.crawler_process.create_crawler(args[0])
        failed: list[object] = []
        started = self.crawler_process.crawl(crawler, **opts.spargs)
        if isinstance(started, Deferred):
            started.addErrback(_failed_start, failed)
        elif isinstance(started, asyncio.Future):
            started.add_done_callback(partial(_failed_task, failed=failed))
        self.crawler_process.start()
        stats = crawl_stats(crawler)
        reason = stats.get("finish_reason")
        if self.crawler_process.bootstrap_failed or failed or reason in FAILURE_REASONS:
            self.exitcode = 1
        elif fetched_nothing(stats):
            logger.error("%s", nothing_fetched_message(stats))
            self.exitcode = 1
        elif fetched_only_errors(stats):
            logger.error("%s", only_errors_message(stats))
            self.exitcode = 1
        elif "start_time" in stats and not stats.get("downloader/request_count"):
            # not a failure: a crawler sharing a queue (scrapy-redis) may find no work left
            logger.warning("%s", nothing_fetched_message(stats))


def crawl_stats(crawler: Any) -> dict[str, Any]:
    """The crawl's stats; none when it never started."""
    try:
        stats = crawler.stats
    except RuntimeError:  # Scrapy >= 2.14: not set before the crawl starts
        return {}
    return stats.get_stats() if stats is not None else {}


def _failed_start(failure: Failure, failed: list[object]) -> None:
    """Notes and reports a crawl that failed to start (a Deferred's failure)."""
    failed.append(failure)
    report_failed_start(failure.value)


def _failed_task(task: asyncio.Future[Any], failed: list[object]) -> None:
    """Notes and reports a crawl that failed to start (an asyncio task's exception, which
    asyncio would otherwise print with its traceback as "never retrieved")."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        failed.append(exc)
        report_failed_start(exc)


def report_failed_start(exc: BaseException | None) -> None:
    """One error line for a crawl that could not start. A bad setting of ours was logged
    already; a spider's refusal of its arguments (a ValueError: `-a start_url=htp://...`)
    needs no traceback; anything else keeps it."""
    if exc is None or _from_startup_error(exc):
        return
    if isinstance(exc, ValueError):
        logger.error("cannot start the crawl: %s", one_line(exc))
    else:
        logger.error("cannot start the crawl: %s: %s", type(exc).__name__, one_line(exc), exc_info=exc)


def _from_startup_error(exc: BaseException | None) -> bool:
    """Whether a StartupError is the exception or what led to it: Scrapy 2.13.0 closing an engine
    whose downloader middleware refused to start raises an AttributeError over it."""
    while exc is not None:
        if isinstance(exc, StartupError):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def fetched_nothing(stats: dict[str, Any]) -> bool:
    """Whether a crawl that ran sent requests and received no response at all (no network,
    a wrong start URL)."""
    return (
        "start_time" in stats
        and bool(stats.get("downloader/request_count"))
        and not stats.get("response_received_count")
    )


def _error_statuses(stats: dict[str, Any], prefix: str) -> dict[str, int]:
    """HTTP status (400 and up) -> responses, from stats named prefix + status."""
    return {
        name[len(prefix) :]: int(count)
        for name, count in stats.items()
        if name.startswith(prefix) and name[len(prefix) :] >= "400"
    }


def page_errors(stats: dict[str, Any]) -> dict[str, int]:
    """HTTP status -> error responses to page requests (robots.txt's left out)."""
    robots = _error_statuses(stats, ROBOTS_STATUS)
    found = {status: count - robots.get(status, 0) for status, count in _error_statuses(stats, STATUS).items()}
    return {status: count for status, count in sorted(found.items()) if count > 0}


def fetched_only_errors(stats: dict[str, Any]) -> bool:
    """Whether every page response of a crawl that ran was an HTTP error (4xx, 5xx) and it
    yielded no item: a start URL that is a 404, say.

    >>> fetched_only_errors({"start_time": 0, "response_received_count": 2, "robotstxt/response_count": 1,
    ...     "downloader/response_status_count/404": 1, "downloader/response_status_count/200": 1})
    True
    """
    pages = int(stats.get("response_received_count", 0)) - int(stats.get("robotstxt/response_count", 0))
    items = stats.get("item_scraped_count", 0) or stats.get("item_dropped_count", 0)
    return "start_time" in stats and pages > 0 and not items and sum(page_errors(stats).values()) >= pages


def only_errors_message(stats: dict[str, Any]) -> str:
    """One line: the error pages the crawl got instead of pages.

    >>> only_errors_message({"downloader/response_status_count/404": 1})
    'the crawl fetched nothing useful: every page was an HTTP error (1 HTTP 404): check the start URLs'
    """
    shown = ", ".join(f"{count} HTTP {status}" for status, count in page_errors(stats).items())
    return f"the crawl fetched nothing useful: every page was an HTTP error ({shown}): check the start URLs"


def nothing_fetched_message(stats: dict[str, Any]) -> str:
    """One line: what was tried and why it failed, from the crawl's stats.

    >>> nothing_fetched_message({"downloader/request_count": 2,
    ...     "downloader/exception_type_count/twisted.internet.error.DNSLookupError": 2})
    'the crawl fetched nothing: 2 requests, no response (2 DNSLookupError): check the start URLs and the network'
    """
    requests = int(stats.get("downloader/request_count", 0))
    failures = sorted(
        (
            (count, name[len(EXCEPTION_TYPES) :].rpartition(".")[2])
            for name, count in stats.items()
            if name.startswith(EXCEPTION_TYPES)
        ),
        reverse=True,
    )
    why = f" ({', '.join(f'{count} {name}' for count, name in failures)})" if failures else ""
    if not requests:
        return "the crawl fetched nothing: no request was sent (no start URL, or every one filtered out)"
    return f"the crawl fetched nothing: {requests} requests, no response{why}: check the start URLs and the network"
