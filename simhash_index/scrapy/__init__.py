"""The Scrapy glue: the only part of simhash_index that imports Scrapy.

ITEM_PIPELINES = {"simhash_index.scrapy.SimhashDedupPipeline": 300}
LOG_FORMATTER = "simhash_index.scrapy.SimhashLogFormatter"
"""

from __future__ import annotations

from .logformatter import SimhashLogFormatter
from .pipeline import NearDuplicate, SimhashDedupPipeline
from .stats import SimhashLogStats

__all__ = ["NearDuplicate", "SimhashDedupPipeline", "SimhashLogFormatter", "SimhashLogStats"]
