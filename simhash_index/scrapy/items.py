"""What the pipeline takes from an item: its key and the page to analyse, or why it passes through."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from itemadapter import ItemAdapter
from w3lib.url import canonicalize_url

from ..fingerprinting.pages import PageJob
from ..index.records import check_key
from .logformatter import safe
from .settings import PipelineSettings


@dataclass(frozen=True)
class PassThrough:
    """An item that goes on unchecked: its outcome stat, and what to log about it."""

    outcome: str
    reason: str | None = None  # a sub-reason stat (errors/<reason>)
    warning: str = ""  # a log message (%-style), with its `arguments`
    arguments: tuple[Any, ...] = ()
    once: bool = True  # warn once a crawl (one line for a whole class of items), else for each item


Checkable = tuple[ItemAdapter, str, PageJob]


def checkable(item: Any, settings: PipelineSettings, *, index_ready: bool) -> Checkable | PassThrough:
    """(adapter, key, what to analyse) of an item, or why it passes through unchecked."""
    if not ItemAdapter.is_item(item):
        message = "simhash: %s items are not dicts or Scrapy items; they pass through"
        return PassThrough("not_an_item", warning=message, arguments=(type(item).__name__,))
    adapter = ItemAdapter(item)
    key = settings.key(item) if settings.key is not None else adapter.get(settings.url_field)
    if not key or not isinstance(key, str):
        message = "simhash: items without a %r field pass through un-deduplicated"
        return PassThrough("no_url", warning=message, arguments=(settings.url_field,))
    if settings.canonicalize_url:
        key = canonicalize_url(key)
    try:
        check_key(key)
    except ValueError as exc:
        message = "simhash: %s; the item passes through"
        return PassThrough("bad_url", warning=message, arguments=(safe(exc, 400),), once=False)
    if not index_ready:
        return PassThrough("errors", "no_index")
    given = adapter.get(settings.text_field) if settings.text_field else None
    if isinstance(given, str) and given.strip():
        return adapter, key, PageJob(given, is_html=False)
    html = adapter.get(settings.html_field) if settings.html_field else None
    if isinstance(html, (str, bytes)):
        return adapter, key, PageJob(html)
    if isinstance(given, str):  # a blank text is no text
        return PassThrough("no_text")
    fields = safe(", ".join(map(str, adapter.keys())), 200)
    message = "simhash: items without a %r or %r field pass through un-deduplicated (fields: %s)"
    return PassThrough("no_html", warning=message, arguments=(settings.html_field, settings.text_field, fields))
