"""A page's own date, for the "newest" survivor policy: its metadata, else an HTTP date."""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

from . import parsers

logger = logging.getLogger(__name__)


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
    datetime; None for anything else.

    >>> http_date("Wed, 21 Oct 2015 07:28:00 GMT")
    datetime.datetime(2015, 10, 21, 7, 28, tzinfo=datetime.timezone.utc)
    """
    if isinstance(value, datetime):
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if not isinstance(value, str):
        return None
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)
