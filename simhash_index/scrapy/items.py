"""What the pipeline takes from an item: its key, the page to analyse and its Last-Modified, or
why it passes through.

Every value is the user's: whatever it holds, reading it never raises. A value the pipeline cannot
use as it is (a Last-Modified that is no date, a text holding lone surrogates) is a Flaw of the
item, counted and warned of, and the item is decided all the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from itemadapter import ItemAdapter
from w3lib.url import canonicalize_url

from ..fingerprinting.pages import PageJob
from ..index.records import check_key
from ..text.dates import http_date
from .logformatter import safe
from .settings import PipelineSettings

LAST_MODIFIED = "last_modified"  # the item field holding the page's HTTP Last-Modified
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class PassThrough:
    """An item that goes on unchecked: its outcome stat, and what to log about it."""

    outcome: str
    reason: str | None = None  # a sub-reason stat (errors/<reason>)
    warning: str = ""  # a log message (%-style), with its `arguments`
    arguments: tuple[Any, ...] = ()
    once: bool = True  # warn once a crawl (one line for a whole class of items), else for each item


@dataclass(frozen=True)
class Flaw:
    """A value of the item the pipeline could not use as it is: counted in simhash/<stat>, and
    warned of once a crawl (the message, %-style, with its `arguments`)."""

    stat: str
    warning: str
    arguments: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Checkable:
    """An item to decide: its adapter, its key in the index, what to analyse, its Last-Modified
    (None: not known), and the flaws found on the way."""

    adapter: ItemAdapter
    key: str
    job: PageJob
    modified: datetime | None = None
    flaws: tuple[Flaw, ...] = ()


def checkable(item: Any, settings: PipelineSettings, *, index_ready: bool) -> Checkable | PassThrough:
    """What the pipeline decides of an item, or why it passes through unchecked."""
    if not ItemAdapter.is_item(item):
        message = "simhash: %s items are not dicts or Scrapy items; they pass through"
        return PassThrough("not_an_item", warning=message, arguments=(type(item).__name__,))
    adapter = ItemAdapter(item)
    key = _key(item, adapter, settings)
    if isinstance(key, PassThrough):
        return key
    if not index_ready:
        return PassThrough("errors", "no_index")
    found = _job(adapter, settings, key)
    if isinstance(found, PassThrough):
        return found
    job, flaws = found
    modified = _modified(adapter.get(LAST_MODIFIED), key) if LAST_MODIFIED in adapter else None
    if isinstance(modified, Flaw):
        return Checkable(adapter, key, job, None, (*flaws, modified))
    return Checkable(adapter, key, job, modified, flaws)


def _key(item: Any, adapter: ItemAdapter, settings: PipelineSettings) -> str | PassThrough:
    """The item's key in the index: its URL field, or what SIMHASH_KEY makes of it."""
    if settings.key is not None:
        try:
            key = settings.key(item)
        except Exception as exc:  # the user's function: its failure on one item is that item's
            message = "simhash: SIMHASH_KEY failed on an item (%s: %s); such items pass through un-deduplicated"
            return PassThrough("errors", "key", warning=message, arguments=(type(exc).__name__, safe(exc, 400)))
    else:
        key = adapter.get(settings.url_field)
    if not key or not isinstance(key, str):
        shown = "none" if key is None else f"{type(key).__name__} {safe(repr(key), 60)}"
        message = "simhash: items without a %r field (text) pass through un-deduplicated (this one's: %s)"
        return PassThrough("no_url", warning=message, arguments=(settings.url_field, shown))
    message = "simhash: %s; the item passes through"
    if settings.canonicalize_url:
        try:
            key = canonicalize_url(key)
        except ValueError as exc:  # a port out of range, a lone surrogate, a broken IPv6 host
            return PassThrough("bad_url", warning=message, arguments=(safe(f"{key!r}: {exc}", 400),), once=False)
    try:
        return check_key(key)
    except ValueError as exc:
        return PassThrough("bad_url", warning=message, arguments=(safe(exc, 400),), once=False)


def _job(adapter: ItemAdapter, settings: PipelineSettings, key: str) -> tuple[PageJob, tuple[Flaw, ...]] | PassThrough:
    """The page to analyse: the text given (bytes are decoded), else the HTML."""
    given = adapter.get(settings.text_field) if settings.text_field else None
    if isinstance(given, bytes):
        given = given.decode("utf-8", "replace")
    if isinstance(given, str) and given.strip():
        text, replaced = without_surrogates(given)
        if not replaced:
            return PageJob(text, is_html=False), ()
        message = "simhash: %s: its %r holds lone surrogates (not text); checked with each replaced by U+FFFD"
        flaw = Flaw("surrogates_replaced", message, (safe(key), settings.text_field))
        return PageJob(text, is_html=False), (flaw,)
    html = adapter.get(settings.html_field) if settings.html_field else None
    if isinstance(html, (bytearray, memoryview)):
        html = bytes(html)
    if isinstance(html, (str, bytes)):
        return PageJob(html), ()
    if isinstance(given, str):  # a blank text is no text
        return PassThrough("no_text")
    fields = safe(", ".join(f"{name}: {type(value).__name__}" for name, value in adapter.items()), 200)
    message = "simhash: items without a %r (str or bytes) or %r field pass through un-deduplicated (fields: %s)"
    return PassThrough("no_html", warning=message, arguments=(settings.html_field, settings.text_field, fields))


def without_surrogates(text: str) -> tuple[str, bool]:
    """The text with each lone surrogate (a bad decoding's leftover, which no encoder takes)
    replaced by U+FFFD, and whether there was one.

    >>> without_surrogates("caf\\udce9")
    ('caf\ufffd', True)
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text), True
    return text, False


def _modified(value: object, key: str) -> datetime | Flaw | None:
    """An item's Last-Modified (an HTTP date, as text or bytes, or a datetime) as an aware UTC
    datetime to the second, as every index stores it; None when there is none (None, or blank);
    a Flaw for a value that is no date the index can store."""
    if value is None or (isinstance(value, (str, bytes)) and not value.strip()):
        return None
    try:
        moment = http_date(value)
    except Exception:  # the item's value: out of datetime's range, a datetime subclass's own failure...
        moment = None
    if moment is None:
        message = "simhash: %s: %s %s is not a usable date; checked as if it had none"
        return Flaw("bad_last_modified", message, (safe(key), LAST_MODIFIED, safe(repr(value), 120)))
    return moment.replace(microsecond=0)
