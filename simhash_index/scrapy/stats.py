"""What the pipeline did, in Scrapy's stats: one outcome per item, a summary line at the end,
and (SimhashLogStats) the drops' progress beside Scrapy's "Crawled N pages" line."""

from __future__ import annotations

import logging
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.statscollectors import StatsCollector

from .failures import checked
from .settings import enabled

logger = logging.getLogger(__name__)

PREFIX = "simhash/"
# Every item lands in exactly one of these stats (simhash/<outcome>); dropped_exact and
# errors/<why> are sub-reasons, counted beside dropped and errors.
OUTCOMES = ("kept", "dropped", "repeated", "no_url", "bad_url", "no_html", "no_text", "not_an_item", "errors")
UNCHECKED = {
    "no_url": "no URL",
    "bad_url": "URL no database stores",
    "no_html": "no HTML or text field",
    "no_text": "no text",
    "not_an_item": "not an item",
    "errors": "errors",
}


class Outcomes:
    """Counts each item's outcome in the crawl's stats (nothing without a crawler)."""

    def __init__(self, stats: StatsCollector | None) -> None:
        self.stats = stats

    def count(self, outcome: str, reason: str | None = None) -> None:
        """One item's outcome; `reason` a sub-reason (errors/<reason>, dropped_exact)."""
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}; got {outcome!r}")
        if self.stats is None:
            return
        self.stats.inc_value(PREFIX + outcome)
        if reason:
            self.stats.inc_value(PREFIX + reason)

    def note(self, name: str) -> None:
        """A stat beside the outcomes (simhash/<name>), e.g. errors/db_open."""
        if self.stats is not None:
            self.stats.inc_value(PREFIX + name)

    def value(self, name: str) -> int:
        return int(self.stats.get_value(PREFIX + name, 0)) if self.stats is not None else 0

    def total(self) -> int:
        return sum(self.value(outcome) for outcome in OUTCOMES)

    def summary(self, stored: int | None) -> str:
        """One line: pages checked, kept, dropped (exact / near), passed through and why, the index's size."""
        kept, dropped, exact = self.value("kept"), self.value("dropped"), self.value("dropped_exact")
        unchecked = {label: self.value(name) for name, label in UNCHECKED.items() if self.value(name)}
        passed = sum(unchecked.values())
        why = f" ({', '.join(f'{count:,} {label}' for label, count in unchecked.items())})" if passed else ""
        repeats = self.value("repeated")
        repeated = f"; {repeats:,} not passed on again (URLs passed on earlier, the same text)" if repeats else ""
        index = f"; the index holds {stored:,} pages" if stored is not None else ""
        skipped = self.value("skipped_requests")
        not_fetched = (
            f"; {skipped:,} requests skipped (logged duplicates), so the links on those pages were not followed"
            if skipped
            else ""
        )
        return (
            f"simhash: {kept + dropped:,} pages checked: {kept:,} kept, {dropped:,} dropped "
            f"({exact:,} exact, {dropped - exact:,} near){repeated}; {passed:,} passed through unchecked{why}{index}"
            f"{not_fetched}"
        )


class SimhashLogStats:
    """Every LOGSTATS_INTERVAL seconds, a line of the pipeline's progress: pages checked and
    dropped, and their rates, in the style of Scrapy's LogStats ("Crawled N pages ...")."""

    def __init__(self, stats: StatsCollector, interval: float) -> None:
        self.stats = stats
        self.interval = interval
        self._last = (0, 0)
        self._task: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SimhashLogStats:
        interval = crawler.settings.getfloat("LOGSTATS_INTERVAL")
        if not interval or not checked(enabled, crawler.settings):
            raise NotConfigured  # off, as Scrapy's LogStats, without a warning
        assert crawler.stats is not None
        extension = cls(crawler.stats, interval)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider: Any = None) -> None:
        from twisted.internet import task

        self._task = task.LoopingCall(self.log)
        self._task.start(self.interval, now=False)

    def log(self) -> None:
        outcomes = Outcomes(self.stats)
        checked = outcomes.value("kept") + outcomes.value("dropped")
        dropped = outcomes.value("dropped")
        per_minute = 60.0 / self.interval
        checked_rate = (checked - self._last[0]) * per_minute
        dropped_rate = (dropped - self._last[1]) * per_minute
        self._last = (checked, dropped)
        logger.info(
            "simhash: checked %d pages (at %d pages/min), dropped %d (at %d pages/min)",
            checked,
            checked_rate,
            dropped,
            dropped_rate,
        )

    def spider_closed(self, spider: Any = None, reason: str | None = None) -> None:
        if self._task is not None and self._task.running:
            self._task.stop()
