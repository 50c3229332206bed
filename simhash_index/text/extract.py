"""Main text of an HTML page, with trafilatura (the same way in the pipeline and the CLI)."""

from __future__ import annotations

import functools
import inspect
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import parsers

FAVOR = (None, "precision", "recall")
DEFAULT_MAX_BYTES = 20_000_000  # trafilatura's own limit: larger pages are not parsed

logger = logging.getLogger(__name__)

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
_HTML_TAG = re.compile(r"<(?:!doctype\s+html|html|body|p)[\s>/]", re.IGNORECASE)
SNIFF_CHARS = 100_000  # of a file's content, read to tell whether it is HTML
_DOCUMENT = re.compile(r"<(?:html|head|body)[\s>/]", re.IGNORECASE)  # a whole page, not a fragment
_NOT_TEXT = ("script", "style", "noscript", "template", "head", "title")
_BLOCKS = frozenset(  # elements whose text is a line of its own
    {"p", "div", "br", "li", "ul", "ol", "dl", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "hr"}
    | {"table", "tr", "td", "th", "blockquote", "pre", "section", "article", "aside", "header", "footer"}
    | {"nav", "main", "figure", "figcaption", "address"}
)


class ExtractionError(ValueError):
    """trafilatura failed on a page (broken or pathological HTML)."""


@dataclass(frozen=True)
class ExtractOptions:
    """How the main text is extracted (trafilatura's options of the same names). `fast`
    skips trafilatura's fallback extractors: faster, and another text on some pages
    (docs/accuracy.md, "Options and what they were measured to do")."""

    favor: str | None = None
    include_comments: bool = True
    include_tables: bool = True
    max_bytes: int = DEFAULT_MAX_BYTES
    fast: bool = False

    def __post_init__(self) -> None:
        if self.favor not in FAVOR:
            raise ValueError(f"favor must be one of {FAVOR}; got {self.favor!r}")
        if self.max_bytes < 1:
            raise ValueError(f"max_bytes must be positive; got {self.max_bytes!r}")


def decode(body: bytes) -> str:
    """Bytes of unknown encoding as text: UTF-8, else GB18030, else Latin-1 (never fails)."""
    for encoding in ("utf-8", "gb18030"):
        try:
            return body.decode(encoding)
        except UnicodeDecodeError:
            continue
    return body.decode("latin-1")


def looks_binary(html: str) -> bool:
    """NUL or many control characters in the first 4 KiB: not a text page."""
    head = html[:4096]
    if "\x00" in head:
        return True
    controls = sum(1 for c in head if ord(c) < 32 and c not in "\t\n\r\f")
    return controls > len(head) // 20


def looks_like_html(name: str, content: str) -> bool:
    """HTML by extension, or by content: starts with '<' and has an html, body or p tag."""
    if name.lower().endswith(HTML_SUFFIXES):
        return True
    head = content[:SNIFF_CHARS]
    return head.lstrip().startswith("<") and _HTML_TAG.search(head) is not None


@functools.cache
def _fast_argument(extract: Callable[..., str | None]) -> str:
    """trafilatura's name for skipping the fallback extractors: `fast` from 2.0, `no_fallback`
    before (trafilatura 1.x takes `fast=` too, and ignores it)."""
    return "fast" if "fast" in inspect.signature(extract).parameters else "no_fallback"


def extract_text(html: str | bytes, options: ExtractOptions = ExtractOptions()) -> str | None:
    """The main text of a page, or None when it has none.

    Raises ExtractionError when trafilatura fails on the input, so callers can
    count it; a page over `options.max_bytes` is refused the same way.
    """
    if isinstance(html, bytes):
        html = decode(html)
    if not html.strip() or looks_binary(html):
        return None
    if len(html) > options.max_bytes:
        raise ExtractionError(f"page of {len(html):,} characters is over the {options.max_bytes:,} limit")
    import trafilatura  # heavy import, paid once on first use

    parsers.install()  # one lxml parser per thread: a shared one corrupts the heap (parsers.py)
    skip_fallbacks: dict[str, Any] = {_fast_argument(trafilatura.extract): options.fast}
    try:
        text = trafilatura.extract(
            html,
            favor_precision=options.favor == "precision",
            favor_recall=options.favor == "recall",
            include_comments=options.include_comments,
            include_tables=options.include_tables,
            **skip_fallbacks,
        )
    except (RecursionError, ValueError, TypeError, MemoryError) as exc:
        raise ExtractionError(f"trafilatura failed: {type(exc).__name__}: {str(exc)[:200]}") from exc
    if not text and not _DOCUMENT.search(html):
        text = fragment_text(html)
    return text or None


def fragment_text(html: str) -> str:
    r"""The text of an HTML fragment (`<p>...</p>`, an article body a spider extracted), a line
    per block, without scripts and styles: trafilatura looks for a page's main text, and finds
    none in a fragment of a few paragraphs.

    >>> fragment_text("<p>One <b>bold</b> word.</p><script>x()</script><p>Two.</p>")
    'One bold word.\nTwo.'
    """
    from lxml import etree
    from lxml import html as lxml_html

    try:
        root = lxml_html.fromstring(html, parser=parsers.thread_parser())
    except (etree.ParserError, ValueError):  # nothing but comments or whitespace
        return ""
    for element in list(root.iter(*_NOT_TEXT)):
        element.drop_tree()
    for element in root.iter():
        if isinstance(element.tag, str) and element.tag in _BLOCKS:
            element.text = "\n" + (element.text or "")
            element.tail = "\n" + (element.tail or "")
    lines = (" ".join(line.split()) for line in root.text_content().splitlines())
    return "\n".join(line for line in lines if line)
