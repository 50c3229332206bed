"""The Scrapy glue: the only part of simhash_index that imports Scrapy.

ITEM_PIPELINES = {"simhash_index.scrapy.SimhashDedupPipeline": 300}
LOG_FORMATTER = "simhash_index.scrapy.SimhashLogFormatter"
"""

from __future__ import annotations

from .pipeline import SimhashDedupPipeline, SimhashLogFormatter

__all__ = ["SimhashDedupPipeline", "SimhashLogFormatter"]
