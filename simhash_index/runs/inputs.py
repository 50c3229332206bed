"""What a run reads: JSON lines corpora and web archives, as one line a page (or a line that is
none, with why), in input order."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import BinaryIO, Protocol

from ..archives.framing import BrokenArchive
from ..archives.records import CUT, Record, captured, scan
from ..fingerprinting.pages import PageJob
from ..text.dates import http_date, unusable_date
from ..text.extract import DEFAULT_MAX_BYTES


class Progress(Protocol):
    """Shows how far an input is read: `progress(total, description)` is a context whose value
    `advance(n)` is called as it goes (total and n in bytes, or records when total is None)."""

    def __call__(self, total: int | None, description: str) -> AbstractContextManager[Callable[[int], None]]: ...


@contextmanager
def no_progress(total: int | None, description: str) -> Iterator[Callable[[int], None]]:
    """A Progress that shows nothing."""
    yield lambda n: None


@dataclass(frozen=True)
class Line:
    """One line of a JSON lines corpus, or one page of an archive: where it is, and its url and
    page, or why it is unusable."""

    where: str
    url: str = ""
    job: PageJob | None = None  # None: neither a text nor an HTML to read
    error: str | None = None
    modified: datetime | None = None  # its Last-Modified, or an archive's capture date: for --prefer newest
    unusable_date: str | None = None  # the date given that could not be used (taken as none), and where
    warning: str | None = None  # why the page is skipped unread (over the page limit)
    fatal: bool = False  # the error ends the input (an archive cut short)
    cut: bool = False  # with `fatal` unset: the input was cut short there, and read to there (allow_truncated)
    record: Record | None = None  # an archive's page: its record


def read_corpus(file: str, *, progress: Progress = no_progress) -> Iterator[Line]:
    """Each non-blank line of a JSON lines corpus ('-': stdin); a line that is not an object with
    a "url" and a "text" or "html" string carries an error instead."""
    with open(file, "rb") if file != "-" else _stdin() as stream:
        try:
            total = os.fstat(stream.fileno()).st_size if file != "-" else None
        except (OSError, ValueError):
            total = None
        with progress(total, "importing") as advance:
            for number, line in enumerate(stream, 1):
                advance(len(line))
                if line.strip():
                    yield corpus_line(line, f"{file} line {number}")


@contextmanager
def _stdin() -> Iterator[BinaryIO]:
    yield sys.stdin.buffer  # left open: it is not ours


def corpus_line(line: bytes, where: str) -> Line:
    """A corpus line read: the text as the pipeline takes it, "text" if not blank, else "html"."""
    try:
        page = json.loads(line)
    except ValueError as exc:
        return Line(where, error=f"not JSON ({exc})")
    if not isinstance(page, dict) or not isinstance(page.get("url"), str) or not page["url"]:
        return Line(where, error='not an object with a "url" string')
    text, html = page.get("text"), page.get("html")
    if not isinstance(text, str) and not isinstance(html, str):
        return Line(where, error='needs a "text" or "html" string')
    given = page.get("last_modified")
    modified = http_date(given)  # as the pipeline reads an item's
    unusable = unusable_date("last_modified", given) if given and modified is None else None
    if isinstance(text, str) and text.strip():
        job: PageJob | None = PageJob(text, is_html=False)
    else:
        job = PageJob(html) if isinstance(html, str) else None
    return Line(where, page["url"], job, modified=modified, unusable_date=unusable)


def read_archive(
    file: str,
    not_pages: Counter[str],
    records: list[Record] | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    allow_truncated: bool = False,
    progress: Progress = no_progress,
) -> Iterator[Line]:
    """The pages of an archive as lines, in archive order; every other record is counted in
    `not_pages` by why it is not a page. Every record read is added to `records` when given
    (what `filter` writes from).

    A record whose framing is wrong is a line with its error, and a page over `max_bytes` one
    with a warning. Where the archive is cut short or cannot be read on, a last line with its
    error and `fatal` set; with `allow_truncated`, a cut archive ends there with a `cut` line.
    """
    try:
        with progress(None, "reading") as advance:
            for record, job in scan(file, pages=True, max_bytes=max_bytes, advance=advance):
                if records is not None:
                    records.append(record)
                where = f"{file} record at byte {record.offset}"
                if record.error is not None:
                    yield Line(where, record.target or "", error=record.error)
                elif record.why_not_page is not None:
                    not_pages[record.why_not_page] += 1
                elif isinstance(job, str):
                    yield Line(where, record.target or "", warning=job, record=record)
                else:
                    modified, unusable = captured(record)
                    yield Line(
                        where, record.target or "", job, modified=modified, unusable_date=unusable, record=record
                    )
    except BrokenArchive as exc:
        where = f"{file} record at byte {exc.offset}"
        if exc.cut and allow_truncated:
            yield Line(where, error=f"{exc.reason}: {CUT}, read to there (--allow-truncated)", cut=True)
        elif exc.cut:
            yield Line(where, error=f"{exc.reason}: {CUT} (--allow-truncated reads it to there)", fatal=True)
        else:
            yield Line(where, error=exc.reason, fatal=True)
