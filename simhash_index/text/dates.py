"""Dates of pages and captures as aware UTC datetimes: a page's own date (its metadata), an HTTP
date, an ISO 8601 date; the one conversion to UTC every reader of a date goes through."""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

from . import parsers

logger = logging.getLogger(__name__)


def utc(moment: datetime) -> datetime | None:
    """`moment` as an aware UTC datetime (a naive one is UTC already); None when UTC's calendar
    cannot hold it: datetime's years are 1 to 9999, and 0001-01-01T00:00:00+01:00 is an hour
    before the first, 9999-12-31T23:59:59-12:00 half a day after the last.

    >>> utc(datetime.fromisoformat("2015-10-21T09:28:00+02:00"))
    datetime.datetime(2015, 10, 21, 7, 28, tzinfo=datetime.timezone.utc)
    >>> utc(datetime.fromisoformat("0001-01-01T00:00:00+01:00")) is None
    True
    """
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc)
    except OverflowError:
        return None


def page_date(html: str | bytes) -> datetime | None:
    """When the page says it was last changed (htmldate, trafilatura's date finder: its
    metadata, time elements, visible dates), as an aware UTC datetime; None when it says nothing."""
    import htmldate  # trafilatura's dependency; heavy, imported on first use
    from lxml import etree
    from lxml import html as lxml_html

    try:  # parsed by this thread's own parser (parsers.py), then searched
        tree = lxml_html.fromstring(html, parser=parsers.thread_parser())
        found = htmldate.find_date(tree, extensive_search=False, outputformat="%Y-%m-%dT%H:%M:%S")
    except (etree.ParserError, ValueError, TypeError) as exc:
        logger.debug("no date read from a page: %s", exc)
        return None
    return None if found is None else datetime.fromisoformat(found).replace(tzinfo=timezone.utc)


def http_date(value: object) -> datetime | None:
    """An HTTP date (a Last-Modified header, as text or bytes) or a datetime, as an aware UTC
    datetime; None for anything else, and for a date UTC cannot hold (utc).

    >>> http_date("Wed, 21 Oct 2015 07:28:00 GMT")
    datetime.datetime(2015, 10, 21, 7, 28, tzinfo=datetime.timezone.utc)
    >>> http_date("Fri, 31 Dec 9999 23:59:59 -1200") is None
    True
    """
    if isinstance(value, datetime):
        return utc(value)
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if not isinstance(value, str):
        return None
    try:
        return utc(parsedate_to_datetime(value))
    except (TypeError, ValueError):
        return None


def iso_date(value: str | None) -> datetime | None:
    """An ISO 8601 date or datetime (a WARC-Date; a date alone is its midnight), as an aware UTC
    datetime, UTC unless it carries an offset; None when absent, unreadable or not in UTC's calendar.

    >>> iso_date("2024-05-01T12:00:00Z"), iso_date("0001-01-01T00:00:00+01:00")
    (datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.timezone.utc), None)
    """
    if not value:
        return None
    text = value.strip()
    if text.endswith(("z", "Z")):  # Python 3.10's fromisoformat does not read Z
        text = text[:-1] + "+00:00"
    try:
        return utc(datetime.fromisoformat(text))
    except ValueError:
        return None


def unusable_date(name: str, value: object) -> str:
    """A date given but unusable (unreadable, or outside UTC's calendar), as a warning names it:
    the field and its value, cut short."""
    text = str(value)
    shown = text[:60] + ("..." if len(text) > 60 else "")
    return f"its {name} '{shown}' is not a date within years 1 to 9999 UTC"
