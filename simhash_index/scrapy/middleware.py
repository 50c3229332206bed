"""On a recrawl, skip the requests to pages the index already logged as duplicates.

In the spirit of scrapy-deltafetch: a page dropped as a near-duplicate last time is not
downloaded again, unless it is a start request (a crawl always fetches where it starts;
the pages it reaches may be reachable through no other page). Opt in with
SIMHASH_SKIP_DUPLICATES = True (the Addon installs the middleware; it does nothing until
then). It looks requests up in the index the SimhashDedupPipeline opened, so the pipeline
must be enabled too.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Request
from twisted.python.threadpool import ThreadPool
from w3lib.url import canonicalize_url

from ..errors import SimhashIndexError
from ..index.records import Duplicate, check_key
from .failures import checked
from .logformatter import safe
from .pipeline import running_pipeline
from .settings import SkipSettings
from .stats import PREFIX
from .threads import in_thread

logger = logging.getLogger(__name__)

DONT_SKIP = "simhash_dont_skip"  # request meta key: fetch this request even if logged as a duplicate
SKIPPED = PREFIX + "skipped_requests"
LOOKUP_THREADS = 2  # lookups are one indexed read each; they need not wait behind page analyses


def is_start(request: Request) -> bool:
    """Whether a request is one the crawl starts from: Scrapy >= 2.13 marks them; before,
    they are the requests without a depth (DepthMiddleware gives the others theirs)."""
    if "is_start_request" in request.meta:
        return bool(request.meta["is_start_request"])
    return not request.meta.get("depth")


class SimhashSkipDuplicatesMiddleware:
    """Raises IgnoreRequest for a request whose URL the index logged as a duplicate.

    The URL is the key the pipeline stored (canonicalised with SIMHASH_CANONICALIZE_URL);
    counted in simhash/skipped_requests, logged at DEBUG. Start requests are never skipped,
    and `meta={"simhash_dont_skip": True}` fetches a request anyway.
    """

    def __init__(self, crawler: Crawler, *, canonicalize: bool) -> None:
        self.crawler = crawler
        self.canonicalize = canonicalize
        self._threads: ThreadPool | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SimhashSkipDuplicatesMiddleware:
        settings = checked(SkipSettings.from_settings, crawler.settings)
        if not settings.skip:
            raise NotConfigured  # opt-in: silent when off
        if not settings.enabled:
            raise NotConfigured("SIMHASH_SKIP_DUPLICATES needs the pipeline, and SIMHASH_ENABLED is False")
        if settings.keyed_otherwise:
            raise NotConfigured("SIMHASH_SKIP_DUPLICATES matches request URLs, and SIMHASH_KEY keys items otherwise")
        middleware = cls(crawler, canonicalize=settings.canonicalize_url)
        crawler.signals.connect(middleware.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    def spider_opened(self, spider: Any = None) -> None:
        if running_pipeline(self.crawler) is None:
            logger.warning(
                "simhash: SIMHASH_SKIP_DUPLICATES is on but SimhashDedupPipeline is not in ITEM_PIPELINES: "
                "nothing is skipped"
            )
            return
        self._threads = ThreadPool(minthreads=0, maxthreads=LOOKUP_THREADS, name="simhash-skip")
        self._threads.start()

    def spider_closed(self, spider: Any = None) -> None:
        if self._threads is not None:
            self._threads.stop()
            self._threads = None

    async def process_request(self, request: Request, spider: Any = None) -> None:
        if request.meta.get(DONT_SKIP) or self._threads is None or is_start(request):
            return
        key = canonicalize_url(request.url) if self.canonicalize else request.url
        logged = await self._lookup(key)
        if logged is None:
            return
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(SKIPPED)
        logger.debug("simhash: skipped %s: logged as a duplicate of %s", safe(request.url), safe(logged.duplicate_of))
        raise IgnoreRequest(f"logged as a duplicate of {safe(logged.duplicate_of)}")

    async def _lookup(self, key: str) -> Duplicate | None:
        """The logged duplicate under this key, read off the reactor; None when there is
        none, or the index cannot say (the request is then fetched and checked as usual)."""
        pipeline = running_pipeline(self.crawler)
        index = pipeline.index if pipeline is not None else None
        if index is None or self._threads is None:
            return None
        try:
            check_key(key)
            found: Duplicate | None = await in_thread(self._threads, index.duplicate, key)
        except (SimhashIndexError, ValueError):
            return None
        return found
