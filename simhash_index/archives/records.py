"""A web archive's records (WARC, and ARC read as WARC): where each lies, what links it, and
which are pages, with their payloads; read with warcio (docs/performance.md, "Archives", says why).

A page is a `response` record with an HTTP 2xx status and an HTML payload (Content-Type
text/html or application/xhtml+xml, or none and HTML content); its key is WARC-Target-URI.
Every other record is counted by why it is not a page.
"""

from __future__ import annotations

import codecs
import os
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import ArchiveError, install_extra
from ..fingerprinting.pages import PageJob
from ..text.dates import http_date, iso_date, unusable_date
from ..text.extract import DEFAULT_MAX_BYTES, SNIFF_CHARS, decode, looks_like_html
from .framing import framed_records
from .payloads import payload

MISSING = f"reading WARC and ARC archives needs warcio: {install_extra('warc')}"
GZIP_MAGIC = b"\x1f\x8b"
HTML_TYPES = ("text/html", "application/xhtml+xml")
CUT = "the archive is cut short"
_SNIFF_BYTES = 4 * SNIFF_CHARS  # the characters looks_like_html reads, at 4 bytes a character


@dataclass(frozen=True)
class Record:
    """Where a record lies in its archive (compressed bytes when gzipped), and what links it."""

    offset: int
    length: int
    kind: str  # WARC-Type; ARC records read as response
    record_id: str | None
    target: str | None
    date: str | None
    links: tuple[str, ...]  # record ids in WARC-Concurrent-To and WARC-Refers-To
    why_not_page: str | None  # None: an HTML response, a page
    last_modified: str | None = None  # the HTTP Last-Modified header
    error: str | None = None  # why its framing is wrong (its Content-Length does not match its block)
    refers_to: tuple[str | None, str | None] = (None, None)  # a revisit's WARC-Refers-To-Target-URI and -Date


def archive_format(file: str) -> tuple[str, bool] | None:
    """("warc" or "arc", gzipped) for a WARC or ARC archive, else None (stdin is never one).
    A gzip file cut short before its first record's first line is whole is taken for an
    archive, so that reading it says where it is cut."""
    if file == "-":
        return None
    with open(file, "rb") as stream:
        start = stream.read(4096)
    gzipped = start.startswith(GZIP_MAGIC)
    head = start[:16]
    if gzipped:
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(start, 16)
        except zlib.error:
            return None
    cut = gzipped and len(head) < 16
    for kind, signature in (("warc", b"WARC/"), ("arc", b"filedesc://")):
        if head.startswith(signature) or (cut and signature.startswith(head)):
            return kind, gzipped
    return None


def is_archive(file: str) -> bool:
    """Whether a file is a WARC or ARC archive, plain or gzipped."""
    return archive_format(file) is not None


def _ids(value: str | None) -> list[str]:
    return value.split() if value else []


def why_not_page(record: Any) -> str | None:
    """None for an HTML response with a 2xx status, else why it is not a page."""
    if record.rec_type != "response":
        return record.rec_type or "untyped"
    if not record.rec_headers.get_header("WARC-Target-URI"):
        return "response without WARC-Target-URI"
    if record.http_headers is None:
        return "response not HTTP"
    if not record.http_headers.get_statuscode().startswith("2"):
        return "response not 2xx"
    media = (record.http_headers.get_header("Content-Type") or "").split(";")[0].strip().lower()
    if media and media not in HTML_TYPES:
        return "response not HTML"
    return None


def charset_of(record: Any) -> str | None:
    """The payload's charset from its HTTP Content-Type, when Python knows it."""
    for part in (record.http_headers.get_header("Content-Type") or "").split(";")[1:]:
        name, _, value = part.partition("=")
        if name.strip().lower() == "charset":
            try:
                return codecs.lookup(value.strip().strip("\"'")).name
            except LookupError:
                return None
    return None


def scan(
    file: str, *, pages: bool, max_bytes: int = DEFAULT_MAX_BYTES, advance: Callable[[int], None] | None = None
) -> Iterator[tuple[Record, PageJob | str | None]]:
    """Each record of the archive, with its page's payload when `pages` and it is one (or,
    for a page over `max_bytes`, why it is not read: at most that much of a payload is).

    A page without a declared media type is one only when its content looks like HTML. A
    record whose framing is wrong comes with `error` set, and the records after it follow;
    raises BrokenArchive (framing.py) where the archive is cut short or cannot be read on,
    after the records before it. `advance(1)` is called at each record read.
    """
    kind, gzipped = archive_format(file) or ("warc", False)
    _require_warcio()
    with open(file, "rb") as stream:
        size = stream.seek(0, os.SEEK_END)
        stream.seek(0)
        for framed in framed_records(stream, size, kind, gzipped, lambda record: _look(record, pages, max_bytes)):
            if advance is not None:
                advance(1)
            length = framed.end - framed.offset
            if framed.error is not None:  # not a page, whatever its headers say
                yield _record(framed.record, framed.offset, length, "unreadable", framed.error), None
                continue
            reason, job = framed.looked or (None, None)
            yield _record(framed.record, framed.offset, length, reason), job


def _require_warcio() -> None:
    try:
        import warcio.archiveiterator  # noqa: F401
    except ImportError:
        raise ArchiveError(MISSING) from None


def _look(record: Any, pages: bool, max_bytes: int) -> tuple[str | None, PageJob | str | None]:
    """Why the record is not a page (None: it is one), and, when `pages`, its payload (or why
    it is not read); at most `max_bytes` of it are read."""
    reason = why_not_page(record)
    declared = reason is None and record.http_headers.get_header("Content-Type")
    if reason is not None or (declared and not pages):
        return reason, None
    body = payload(record, max_bytes + 1)
    if not declared:
        head = _decoded(record, body[:_SNIFF_BYTES])
        if not looks_like_html("", head if isinstance(head, str) else decode(head)):
            return "response not HTML", None
    if not pages:
        return None, None
    if len(body) > max_bytes:
        return None, f"page of more than {max_bytes:,} bytes is over the {max_bytes:,} limit"
    return None, PageJob(_decoded(record, body))


def _decoded(record: Any, body: bytes) -> str | bytes:
    """The HTTP payload (its transfer and content encodings undone), decoded from its
    declared charset when Python knows it (else bytes, decoded as a crawled page is)."""
    charset = charset_of(record)
    return body.decode(charset, "replace") if charset else body


def _record(record: Any, offset: int, length: int, reason: str | None, error: str | None = None) -> Record:
    if record is None:  # warcio could not parse it
        return Record(offset, length, "unreadable", None, None, None, (), reason, error=error)
    headers = record.rec_headers
    links = _ids(headers.get_header("WARC-Concurrent-To")) + _ids(headers.get_header("WARC-Refers-To"))
    return Record(
        offset=offset,
        length=length,
        kind=record.rec_type or "untyped",
        record_id=headers.get_header("WARC-Record-ID"),
        target=headers.get_header("WARC-Target-URI"),
        date=headers.get_header("WARC-Date"),
        links=tuple(links),
        why_not_page=reason,
        last_modified=record.http_headers.get_header("Last-Modified") if record.http_headers else None,
        error=error,
        refers_to=(headers.get_header("WARC-Refers-To-Target-URI"), headers.get_header("WARC-Refers-To-Date")),
    )


def captured(record: Record) -> tuple[datetime | None, str | None]:
    """When the capture was made, as the "newest" survivor policy takes it after the page's own
    date: its WARC-Date, else its HTTP Last-Modified (None when neither can be read); and the
    first of them given but unusable (unreadable, or outside UTC's calendar), which counts as not given."""
    unusable = None
    for name, value, read in (("WARC-Date", record.date, iso_date), ("Last-Modified", record.last_modified, http_date)):
        moment = read(value)
        if moment is not None:
            return moment, unusable
        if value and unusable is None:
            unusable = unusable_date(name, value)
    return None, unusable
