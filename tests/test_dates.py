"""Dates at the edge of the calendar (issue 50, item 1): a WARC-Date or Last-Modified that UTC
cannot hold is no date, counted and warned of once, and every other page is decided."""

from __future__ import annotations

import doctest
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from archives import html_response
from commands import run
from sites import english_article, page
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from simhash_index import Signature, SimhashIndex
from simhash_index.text import dates

BEFORE_ONE = "0001-01-01T00:00:00+01:00"  # an hour before UTC's first day
AFTER_9999 = "Fri, 31 Dec 9999 23:59:59 -1200"  # half a day after its last
PAGES = 4


def test_the_conversion_to_utc_gives_none_outside_the_calendar() -> None:
    assert doctest.testmod(dates).failed == 0
    assert dates.utc(datetime(1, 1, 1, 1, tzinfo=timezone(timedelta(hours=1)))) == datetime(
        1, 1, 1, tzinfo=timezone.utc
    )
    assert dates.http_date(AFTER_9999) is None and dates.iso_date(BEFORE_ONE) is None
    assert dates.http_date(datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-12)))) is None


def test_the_library_names_a_date_utc_cannot_hold(tmp_path: Path) -> None:
    moment = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))
    with SimhashIndex(f"sqlite:///{tmp_path / 'l.db'}") as index:
        with pytest.raises(ValueError, match="outside UTC's calendar"):
            index.check_and_add("https://e.example/1", Signature(1, None, None, modified=moment))
        with pytest.raises(ValueError, match="outside UTC's calendar"):
            index.prune(before=moment)


def write_warc(path: Path) -> None:
    """Distinct pages; page 1's WARC-Date is before UTC's first day, page 2 has no WARC-Date and
    a Last-Modified after its last day."""
    with path.open("wb") as stream:
        writer = WARCWriter(stream, gzip=True)
        for number in range(PAGES):
            headers = [("Last-Modified", AFTER_9999)] if number == 2 else []
            html = page(f"Page {number}", english_article(500 + number))
            record = html_response(writer, f"https://e.example/{number}", html, headers=headers)
            if number == 1:
                record.rec_headers.replace_header("WARC-Date", BEFORE_ONE)
            if number == 2:
                record.rec_headers.remove_header("WARC-Date")
            writer.write_record(record)


def write_corpus(path: Path) -> None:
    """The same pages as JSON lines, page 2's last_modified after UTC's last day."""
    lines = [
        {"url": f"https://e.example/{n}", "html": page(f"Page {n}", english_article(500 + n))}
        | ({"last_modified": AFTER_9999} if n == 2 else {})
        for n in range(PAGES)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.mark.parametrize("prefer", ["first", "newest"])
@pytest.mark.parametrize("kind", ["warc", "jsonl"])
def test_an_unusable_date_is_no_date_and_every_page_is_decided(tmp_path: Path, kind: str, prefer: str) -> None:
    source = tmp_path / ("in.warc.gz" if kind == "warc" else "in.jsonl")
    (write_warc if kind == "warc" else write_corpus)(source)
    unusable = 2 if kind == "warc" else 1
    db = f"sqlite:///{tmp_path / 'i.db'}"
    result = run("import", "--db", db, "--workers", "0", "--prefer", prefer, str(source))
    assert result.exit_code == 0, result.output
    assert (
        result.stdout == f"kept {PAGES}, dropped 0, skipped 0 (no text); unusable dates (taken as none): {unusable}\n"
    )
    warnings = result.stderr.splitlines()
    assert len(warnings) == 1 and "is not a date within years 1 to 9999 UTC: taken as no date" in warnings[0]
    with SimhashIndex(db) as index:
        assert len(index) == PAGES
        assert all(index.page(f"https://e.example/{n}").signature.modified is None for n in (1, 2))  # type: ignore[union-attr]
    if kind == "warc":
        out = tmp_path / "out.warc.gz"
        result = run(
            "filter",
            "--db",
            f"sqlite:///{tmp_path / 'f.db'}",
            "--workers",
            "0",
            "--prefer",
            prefer,
            str(source),
            str(out),
        )
        assert result.exit_code == 0, result.output
        assert (
            result.stdout.endswith(f"; unusable dates (taken as none): {unusable}\n")
            and len(result.stderr.splitlines()) == 1
        )
        assert out.read_bytes() == source.read_bytes()
        with out.open("rb") as stream:
            assert sum(1 for _ in ArchiveIterator(stream)) == PAGES


def test_since_outside_the_calendar_is_a_usage_error(tmp_path: Path) -> None:
    result = run("duplicates", "--db", f"sqlite:///{tmp_path / 'd.db'}", "--since", BEFORE_ONE)
    assert result.exit_code == 2 and "within years 1 to 9999 UTC" in result.stderr and "Traceback" not in result.output
