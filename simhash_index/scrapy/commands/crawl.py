"""`scrapy crawl`, exiting with status 1 when the index stopped the crawl.

Scrapy exits 0 whatever the finish reason; a crawl whose index could not be opened (or
failed with SIMHASH_ON_DB_ERROR=stop) deduplicated nothing, and a script running it must
be able to tell. Enable with `COMMANDS_MODULE = "simhash_index.scrapy.commands"`.
"""

from __future__ import annotations

import argparse

from scrapy.commands import crawl
from scrapy.exceptions import UsageError

from ..failures import FAILURE_REASONS


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
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        reason = crawler.stats.get_value("finish_reason") if crawler.stats is not None else None
        if self.crawler_process.bootstrap_failed or reason in FAILURE_REASONS:
            self.exitcode = 1
