"""The Scrapy glue: the only part of simhash_index that imports Scrapy.

ADDONS = {"simhash_index.scrapy.Addon": 100}  # Scrapy 2.10+: everything below in one line
ITEM_PIPELINES = {"simhash_index.scrapy.SimhashDedupPipeline": 200}
LOG_FORMATTER = "simhash_index.scrapy.SimhashLogFormatter"
EXTENSIONS = {"simhash_index.scrapy.SimhashLogStats": 0}
DOWNLOADER_MIDDLEWARES = {"simhash_index.scrapy.SimhashSkipDuplicatesMiddleware": 60}  # with SIMHASH_SKIP_DUPLICATES
"""

from __future__ import annotations

from .addon import Addon
from .logformatter import SimhashLogFormatter
from .middleware import SimhashSkipDuplicatesMiddleware
from .pipeline import NearDuplicate, SimhashDedupPipeline
from .stats import SimhashLogStats

__all__ = [
    "Addon",
    "NearDuplicate",
    "SimhashDedupPipeline",
    "SimhashLogFormatter",
    "SimhashLogStats",
    "SimhashSkipDuplicatesMiddleware",
]
