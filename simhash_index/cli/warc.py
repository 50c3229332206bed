"""Web archives (WARC, and ARC read as WARC) for the command line: which records are pages,
and the pages themselves, read with warcio (docs/performance.md, "Archives", says why).

A page is a `response` record with an HTTP 2xx status and an HTML payload (Content-Type
text/html or application/xhtml+xml, or none and HTML content); its key is WARC-Target-URI.
Every other record is counted by why it is not a page.
"""

from __future__ import annotations

import codecs
import gzip
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import IO, Any

import click

from ..errors import install_extra
from ..fingerprinting.pages import PageJob
from ..text.dates import http_date
from ..text.extract import decode
from .inputs import CorpusLine, looks_like_html, progress

MISSING = f"reading WARC and ARC archives needs warcio: {install_extra('warc')}"
GZIP_MAGIC = b"\x1f\x8b"
WHOLE_GZIP = "gzipped as one stream, not record by record: recompress it (warcio recompress IN OUT)"
HTML_TYPES = ("text/html", "application/xhtml+xml")


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


def archive_format(file: str) -> tuple[str, bool] | None:
    """("warc" or "arc", gzipped) for a WARC or ARC archive, else None (stdin is never one)."""
    if file == "-":
        return None
    with open(file, "rb") as stream:
        gzipped = stream.read(2) == GZIP_MAGIC
        stream.seek(0)
        try:
            head = gzip.GzipFile(fileobj=stream).read(16) if gzipped else stream.read(16)
        except (OSError, EOFError):
            return None
    if head.startswith(b"WARC/"):
        return "warc", gzipped
    if head.startswith(b"filedesc://"):
        return "arc", gzipped
    return None


def is_archive(file: str) -> bool:
    """Whether a file is a WARC or ARC archive, plain or gzipped."""
    return archive_format(file) is not None


def _iterator(stream: IO[bytes]) -> Any:
    try:
        from warcio.archiveiterator import ArchiveIterator
    except ImportError:
        raise click.ClickException(MISSING) from None
    return ArchiveIterator(stream, arc2warc=True)


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


def scan(file: str, *, pages: bool) -> Iterator[tuple[Record, PageJob | None]]:
    """Each record of the archive, with its page's payload when `pages` and it is one.

    A page without a declared media type is one only when its content looks like HTML.
    """
    with open(file, "rb") as stream, progress(None, "reading") as advance:
        size = stream.seek(0, os.SEEK_END)
        stream.seek(0)
        records = _iterator(stream)
        previous: tuple[Record, PageJob | None] | None = None
        for record in _checked(records, file):
            reason, job = why_not_page(record), None
            declared = reason is None and record.http_headers.get_header("Content-Type")
            if reason is None and (pages or not declared):
                content = _payload(record)
                if not declared and not looks_like_html("", content if isinstance(content, str) else decode(content)):
                    reason = "response not HTML"
                elif pages:
                    job = PageJob(content)
            # warcio knows where a record starts once it is read to its end; it ends where the
            # next one starts (warcio's own length leaves out a plain record's blank lines)
            current = _record(record, records.get_record_offset(), reason)
            if previous is not None:
                yield replace(previous[0], length=current.offset - previous[0].offset), previous[1]
                advance(1)
            previous = current, job
        if previous is not None:
            yield replace(previous[0], length=size - previous[0].offset), previous[1]


def _checked(records: Any, file: str) -> Iterator[Any]:
    """The records, with warcio's errors on a malformed archive as one line naming the file."""
    from warcio.exceptions import ArchiveLoadFailed

    try:
        yield from records
    except ArchiveLoadFailed as exc:
        if "non-chunked gzip" in str(exc):
            raise click.ClickException(f"{file}: {WHOLE_GZIP}") from None
        reason = " ".join(str(exc).split())
        raise click.ClickException(f"{file}: not a readable WARC or ARC archive ({reason})") from None


def _payload(record: Any) -> str | bytes:
    """The HTTP payload, decoded from its transfer and content encodings, and from its
    declared charset when Python knows it (else bytes, decoded as a crawled page is)."""
    body: bytes = record.content_stream().read()
    charset = charset_of(record)
    return body.decode(charset, "replace") if charset else body


def _record(record: Any, offset: int, reason: str | None) -> Record:
    headers = record.rec_headers
    links = _ids(headers.get_header("WARC-Concurrent-To")) + _ids(headers.get_header("WARC-Refers-To"))
    return Record(
        offset=offset,
        length=0,  # known when the next record starts
        kind=record.rec_type or "untyped",
        record_id=headers.get_header("WARC-Record-ID"),
        target=headers.get_header("WARC-Target-URI"),
        date=headers.get_header("WARC-Date"),
        links=tuple(links),
        why_not_page=reason,
        last_modified=record.http_headers.get_header("Last-Modified") if record.http_headers else None,
    )


def read_archive(file: str, counts: Counter[str], records: list[Record] | None = None) -> Iterator[CorpusLine]:
    """The pages of an archive as corpus lines, in archive order; every other record is
    counted in `counts` under "record: <why it is not a page>". Every record read is added
    to `records` when given (what `filter` writes from)."""
    for record, job in scan(file, pages=True):
        if records is not None:
            records.append(record)
        if record.why_not_page is not None:
            counts[f"record: {record.why_not_page}"] += 1
            continue
        yield CorpusLine(f"{file} record at byte {record.offset}", record.target or "", job, modified=captured(record))


def captured(record: Record) -> datetime | None:
    """When the capture was made, as the "newest" survivor policy takes it after the page's own
    date: its WARC-Date, else its HTTP Last-Modified (None when neither can be read)."""
    return warc_date(record.date) or http_date(record.last_modified)


def warc_date(value: str | None) -> datetime | None:
    """A WARC-Date (ISO 8601, UTC) as an aware datetime; None when absent or unreadable."""
    if not value:
        return None
    text = value.strip()
    if text.endswith(("z", "Z")):  # Python 3.10's fromisoformat does not read Z
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def not_pages(counts: Counter[str]) -> str:
    """The records an import read but did not take as pages, by reason, most first."""
    found = sorted(((n, k[len("record: ") :]) for k, n in counts.items() if k.startswith("record: ")), reverse=True)
    return ", ".join(f"{n} {reason}" for n, reason in found)
