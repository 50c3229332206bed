"""How the pipeline stops a crawl it cannot serve: finish reasons, and a start that fails
with one clear error line (not a traceback)."""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

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
