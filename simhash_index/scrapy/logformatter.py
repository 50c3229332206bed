"""Log lines that never carry a page body or a raw line break from a page, however short."""

from __future__ import annotations

from typing import Any

from itemadapter import ItemAdapter
from scrapy import logformatter
from scrapy.crawler import Crawler

BODY_FIELDS = frozenset({"html", "text", "body", "content"})  # shown as their length, never their value
MAX_LOGGED_CHARS = 300
MAX_FIELD_CHARS = 120


def safe(value: object, limit: int = MAX_LOGGED_CHARS) -> str:
    """A value for a log line: control characters, line breaks and lone surrogates escaped
    (a log file's encoder would fail on a surrogate), at most `limit` characters."""
    text = str(value)
    shown = "".join(_escaped(char) for char in text[: limit * 2])
    if len(shown) <= limit and len(text) <= limit * 2:
        return shown
    return f"{shown[: limit - 20]}... ({len(text):,} chars)"


def _escaped(char: str) -> str:
    code = ord(char)
    if code < 0x20 or code == 0x7F or 0xD800 <= code <= 0xDFFF or char in "\u2028\u2029\x85":
        return char.encode("unicode_escape", "backslashreplace").decode("ascii")
    return char


def summarize(item: Any, body_fields: frozenset[str] = BODY_FIELDS) -> str:
    """A one-line summary of an item: its short fields escaped, its body fields as lengths."""
    if not ItemAdapter.is_item(item):
        return safe(repr(item), MAX_FIELD_CHARS)
    parts = []
    for name, value in ItemAdapter(item).items():
        if name in body_fields or (isinstance(value, (str, bytes)) and len(value) > MAX_FIELD_CHARS):
            size = len(value) if isinstance(value, (str, bytes)) else len(str(value))
            parts.append(f"{safe(name, 40)}: <{size:,} chars>")
        else:
            parts.append(f"{safe(name, 40)}: {safe(repr(value), MAX_FIELD_CHARS)}")
    return safe("{" + ", ".join(parts) + "}", 1000)


class SimhashLogFormatter(logformatter.LogFormatter):
    """Scrapy's log formatter, one line per item, with items summarised: no body in any line.

    The body fields are SIMHASH_HTML_FIELD and SIMHASH_TEXT_FIELD (and body, content).
    """

    def __init__(self, body_fields: frozenset[str] = BODY_FIELDS) -> None:
        super().__init__()
        self.body_fields = body_fields

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SimhashLogFormatter:
        settings = crawler.settings
        fields = {settings.get("SIMHASH_HTML_FIELD", "html"), settings.get("SIMHASH_TEXT_FIELD", "text")}
        return cls(BODY_FIELDS | {field for field in fields if isinstance(field, str) and field})

    def _one_line(self, result: Any, item: Any) -> Any:
        result["msg"] = result["msg"].replace("\r\n", " ").replace("\n", " ")
        result["args"]["item"] = summarize(item, self.body_fields)
        return result

    def scraped(self, item: Any, response: Any, spider: Any) -> Any:
        return self._one_line(super().scraped(item, response, spider), item)

    def dropped(self, item: Any, exception: BaseException, response: Any, spider: Any) -> Any:
        result = self._one_line(super().dropped(item, exception, response, spider), item)
        if getattr(exception, "one_line", False):  # a duplicate's message names the page: nothing to add
            result["msg"] = "Dropped: %(exception)s"
        return result

    def item_error(self, item: Any, exception: BaseException, response: Any, spider: Any) -> Any:
        return self._one_line(super().item_error(item, exception, response, spider), item)
