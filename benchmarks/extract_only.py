"""A pipeline that only extracts the main text, the same way and off the reactor like the
dedup pipeline: the baseline crawl_eval.py measures the dedup overhead against."""

from __future__ import annotations

from typing import Any

from itemadapter import ItemAdapter
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from simhash_index.text.extract import extract_text


class ExtractOnlyPipeline:
    async def process_item(self, item: Any, spider: Any = None) -> Any:
        adapter = ItemAdapter(item)
        adapter["text"] = await maybe_deferred_to_future(deferToThread(extract_text, adapter.get("html") or ""))
        return item
