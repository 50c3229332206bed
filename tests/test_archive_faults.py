"""`import` and `filter` on broken archives: cut short, corrupt gzip data, a Content-Length that
does not match its record (too large, too small, past any file), a gzip bomb. Each is one line naming the
record's byte offset, never a traceback or warcio's raw warning, and never hides the pages
around it."""

from __future__ import annotations

import gzip
import io
import os
import random
import re
import threading
import tracemalloc
import zlib
from pathlib import Path

import pytest
from click.testing import Result
from commands import ok, run
from sites import english_article, page
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simhash_index import SimhashIndex
from simhash_index.archives.framing import BrokenArchive
from simhash_index.archives.records import scan

PAGES = 6


def write_pages(path: Path, *, compress: bool, pages: int = PAGES) -> list[int]:
    """An archive of distinct pages, one response each; the offset of each record, and the
    file's size last."""
    offsets = []
    with path.open("wb") as stream:
        writer = WARCWriter(stream, gzip=compress)
        for number in range(pages):
            body = page(f"Page {number}", english_article(300 + number)).encode()
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            url = f"https://example.com/{number}"
            payload = io.BytesIO(body)
            record = writer.create_warc_record(url, "response", payload=payload, length=len(body), http_headers=http)
            offsets.append(stream.tell())
            writer.write_record(record)
        offsets.append(stream.tell())
    return offsets


def with_content_length(path: Path, offsets: list[int], number: int, change: object, *, compress: bool) -> None:
    """The archive with record `number`'s Content-Length changed: `change` is added to it, or
    (a string) replaces it."""
    data = path.read_bytes()
    start, end = offsets[number], offsets[number + 1]
    record = gzip.decompress(data[start:end]) if compress else data[start:end]
    found = re.search(rb"\r\nContent-Length: (\d+)\r\n", record)
    assert found is not None
    value = str(change).encode() if isinstance(change, str) else str(int(found.group(1)) + int(change)).encode()  # type: ignore[call-overload]
    record = record[: found.start(1)] + value + record[found.end(1) :]
    path.write_bytes(data[:start] + (gzip.compress(record) if compress else record) + data[end:])


def import_traced(db: Path, archive: Path) -> tuple[Result, int]:
    """`import` of the archive into a new SQLite index, and the most memory Python held meanwhile."""
    tracemalloc.start()
    try:
        result = run("import", "--db", f"sqlite:///{db}", "--workers", "0", str(archive))
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def pages_in(db: str) -> int:
    with SimhashIndex(db) as index:
        return len(index)


# -- cut short ----------------------------------------------------------------------


CUTS = {  # (compressed, where the archive is cut: bytes before the start of the record cut, or from the end)
    "gzip member cut": (True, lambda offsets: (offsets[4] + offsets[5]) // 2),
    "gzip end of stream missing": (True, lambda offsets: offsets[-1] - 6),  # in the member's CRC and size
    "plain record cut short": (False, lambda offsets: (offsets[4] + offsets[5]) // 2),
    "plain record without its blank lines": (False, lambda offsets: offsets[-1] - 3),
    "plain record cut in its headers": (False, lambda offsets: offsets[4] + 30),
}


@pytest.mark.parametrize("case", CUTS)
def test_an_archive_cut_short_is_an_error_after_the_pages_before_it(tmp_path: Path, case: str) -> None:
    compress, where = CUTS[case]
    archive = tmp_path / ("in.warc.gz" if compress else "in.warc")
    offsets = write_pages(archive, compress=compress)
    cut = where(offsets)
    archive.write_bytes(archive.read_bytes()[:cut])
    cut_record = max(offset for offset in offsets if offset < cut)
    whole = offsets.index(cut_record)  # the records before the cut one
    db = f"sqlite:///{tmp_path / 'i.db'}"
    result = run("import", "--db", db, "--workers", "0", str(archive))
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith(f"Error: {archive} record at byte {cut_record}: ")
    assert "cut short" in result.stderr and result.stderr.count("\n") == 1
    assert pages_in(db) == whole  # what was decided before the cut is kept

    db = f"sqlite:///{tmp_path / 'a.db'}"
    allowed = run("import", "--db", db, "--workers", "0", "--allow-truncated", str(archive))
    assert allowed.exit_code == 0 and allowed.stdout == f"kept {whole}, dropped 0, skipped 0 (no text)\n"
    assert allowed.stderr.startswith(f"Warning: {archive} record at byte {cut_record}: ")

    out, db = tmp_path / "out.warc", f"sqlite:///{tmp_path / 'f.db'}"
    refused = run("filter", "--db", db, "--workers", "0", str(archive), str(out))
    assert refused.exit_code == 1 and f"record at byte {cut_record}" in refused.stderr
    assert "nothing written" in refused.stderr
    assert not out.exists() and not (tmp_path / "f.db").exists()  # nothing decided, nothing written
    filtered = run("filter", "--db", db, "--workers", "0", "--allow-truncated", str(archive), str(out))
    assert filtered.exit_code == 0 and f"wrote {whole} records" in filtered.stdout
    assert out.read_bytes() == archive.read_bytes()[:cut_record]  # the whole records, not the cut one


def test_a_whole_archive_is_read_without_a_word(tmp_path: Path) -> None:
    for compress in (True, False):
        archive = tmp_path / ("in.warc.gz" if compress else "in.warc")
        write_pages(archive, compress=compress)
        db = f"sqlite:///{tmp_path / f'{compress}.db'}"
        summary = ok("import", "--db", db, "--workers", "0", str(archive))
        assert summary == f"kept {PAGES}, dropped 0, skipped 0 (no text)\n"


# -- Content-Length -------------------------------------------------------------------


LENGTHS = {"too large": 300, "too small": -300, "past any file": "99999999999999999999", "not a number": "12a"}


@pytest.mark.parametrize("compress", [True, False], ids=["gzip", "plain"])
@pytest.mark.parametrize("change", LENGTHS)
def test_a_wrong_content_length_is_one_line_and_hides_no_page(tmp_path: Path, compress: bool, change: str) -> None:
    archive = tmp_path / ("in.warc.gz" if compress else "in.warc")
    offsets = write_pages(archive, compress=compress)
    with_content_length(archive, offsets, 2, LENGTHS[change], compress=compress)
    assert_one_bad_record(tmp_path, archive, offsets[2], "its Content-Length ")


def assert_one_bad_record(tmp_path: Path, archive: Path, offset: int, error: str) -> None:
    """`import` skips the record at `offset` on one line that gives `error`, and reads every page
    after it; `filter` copies every record, the bad one too, and exits 1."""
    db = f"sqlite:///{tmp_path / 'i.db'}"
    result = run("import", "--db", db, "--workers", "0", str(archive))
    assert result.exit_code == 1
    assert result.stdout == f"kept {PAGES - 1}, dropped 0, skipped 0 (no text), 1 bad records skipped\n"
    [line] = result.stderr.splitlines()  # one line: no warcio warning, no piece of the page
    assert line.startswith(f"Error: {archive} record at byte {offset}: {error}") and "skipped" in line
    assert pages_in(db) == PAGES - 1  # the pages after it are all read

    out = tmp_path / f"out{''.join(archive.suffixes)}"
    filtered = run("filter", "--db", f"sqlite:///{tmp_path / 'f.db'}", "--workers", "0", str(archive), str(out))
    assert filtered.exit_code == 1 and filtered.stderr.count("\n") == 1 and error in filtered.stderr
    assert out.read_bytes() == archive.read_bytes()  # every record copied, the bad one too
    assert "Traceback" not in result.output + filtered.output


# -- a header line without end ---------------------------------------------------------


@pytest.mark.parametrize("compress", [True, False], ids=["gzip", "plain"])
def test_a_header_line_without_end_is_read_no_further_than_the_header_limit(tmp_path: Path, compress: bool) -> None:
    """A record whose WARC-Target-URI runs on for 24 MiB (in a gzip member of its own, or up to
    the blank line before the next record) is one bad record, read no further than 1 MiB at a
    time (issue 50, item 5: a 1.5 GiB line was read whole, minutes and gigabytes)."""
    archive = tmp_path / ("in.warc.gz" if compress else "in.warc")
    offsets = write_pages(archive, compress=compress)
    head = b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: https://example.com/"
    line = head + b"a" * (24 << 20)
    bad = gzip.compress(line, compresslevel=1) if compress else line + b"\r\n\r\n"
    data = archive.read_bytes()
    archive.write_bytes(data[: offsets[2]] + bad + data[offsets[2] :])
    result, peak = import_traced(tmp_path / "m.db", archive)
    assert peak < 16_000_000, peak  # the line alone is 25 MB
    assert result.exit_code == 1 and result.stdout.startswith(f"kept {PAGES}, dropped 0, skipped 0 (no text), 1 bad")
    assert result.stderr == (
        f"Error: {archive} record at byte {offsets[2]}: its headers run past 1,048,576 bytes without ending; skipped\n"
    )
    out = tmp_path / f"out{''.join(archive.suffixes)}"
    filtered = run("filter", "--db", f"sqlite:///{tmp_path / 'f.db'}", "--workers", "0", str(archive), str(out))
    assert filtered.exit_code == 1 and "its headers run past 1,048,576 bytes" in filtered.stderr
    assert out.read_bytes() == archive.read_bytes()  # every record copied, the bad one too


# -- cut while filter copies it ----------------------------------------------------------


@pytest.mark.parametrize("compress", [True, False], ids=["gzip", "plain"])
def test_an_archive_cut_while_filter_copies_it_is_an_error(tmp_path: Path, compress: bool) -> None:
    """OUT is a FIFO, so that the second pass waits for its reader: the reader takes the first
    byte, cuts the archive in its last pages, then reads on (issue 50, item 7: a short OUT, exit 0;
    gzipped, the wrong error)."""
    archive = tmp_path / ("in.warc.gz" if compress else "in.warc")
    with archive.open("wb") as stream:  # a large record first: OUT's reader holds the copy up in it
        writer = WARCWriter(stream, gzip=compress)
        blob = random.Random(7).randbytes(3 << 20)
        writer.write_record(
            writer.create_warc_record("https://e.example/v", "resource", payload=io.BytesIO(blob), length=len(blob))
        )
    pages = tmp_path / "pages.warc"
    offsets = write_pages(pages, compress=compress)
    start = archive.stat().st_size
    with archive.open("ab") as stream:
        stream.write(pages.read_bytes())
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    received: list[int] = []

    def read_and_cut() -> None:
        with fifo.open("rb") as out:
            first = out.read(1)  # the second pass has begun
            os.truncate(archive, start + (offsets[3] + offsets[4]) // 2)
            received.append(len(first + out.read()))

    reader = threading.Thread(target=read_and_cut, daemon=True)
    reader.start()
    result = run("filter", "--db", f"sqlite:///{tmp_path / 'f.db'}", "--workers", "0", str(archive), str(fifo))
    reader.join(timeout=60)
    assert result.exit_code == 1
    changed = f"its record at byte {start + offsets[3]} is not what it was"
    assert result.stderr == f"Error: {archive} changed while it was read ({changed}): is it being written to?\n"
    assert received and received[0] < start + offsets[4]  # nothing past the cut


# -- corrupt gzip data ----------------------------------------------------------------


@pytest.mark.parametrize("where", [0.1, 0.5, 0.9, -6], ids=["start", "middle", "end", "checksum"])
def test_a_corrupt_gzip_member_is_one_line_and_hides_no_page(tmp_path: Path, where: float) -> None:
    archive = tmp_path / "in.warc.gz"
    offsets = write_pages(archive, compress=True)
    data = bytearray(archive.read_bytes())
    start, end = offsets[2], offsets[3]
    at = end + int(where) if where < 0 else start + 10 + int((end - start - 18) * where)  # past the gzip header
    data[at : at + 4] = bytes(byte ^ 0x5A for byte in data[at : at + 4])
    archive.write_bytes(bytes(data))
    assert_one_bad_record(tmp_path, archive, offsets[2], "its gzip data is broken (")


def test_a_corrupt_last_gzip_member_ends_the_archive_as_a_bad_record(tmp_path: Path) -> None:
    archive = tmp_path / "in.warc.gz"
    offsets = write_pages(archive, compress=True)
    data = bytearray(archive.read_bytes())
    middle = (offsets[-2] + offsets[-1]) // 2
    data[middle : middle + 4] = bytes(byte ^ 0x5A for byte in data[middle : middle + 4])
    archive.write_bytes(bytes(data))
    records = list(scan(str(archive), pages=False))
    assert [record.offset for record, _ in records] == offsets[:-1]
    assert [record.error is not None for record, _ in records] == [False] * (PAGES - 1) + [True]


# -- a gzip bomb ----------------------------------------------------------------------


def bomb_member(url: str, size: int) -> bytes:
    """One gzip member: a response whose HTML page is `size` bytes, of a few kilobytes."""
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
    head = b"<html><head><title>Bomb</title></head><body><p>"
    warc = (
        "WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:6d058e00-4b3c-4b6e-9a3c-2f1f5b1b5b1b>\r\n"
        f"WARC-Date: 2024-01-01T00:00:00Z\r\nWARC-Target-URI: {url}\r\n"
        f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(http) + size}\r\n\r\n"
    ).encode()
    deflate = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [deflate.compress(warc + http + head)]
    chunk, left = b"a " * (1 << 20), size - len(head)
    while left > 0:
        parts.append(deflate.compress(chunk[:left]))
        left -= len(chunk)
    parts += [deflate.compress(b"\r\n\r\n"), deflate.flush()]
    return b"".join(parts)


def test_a_gzip_bomb_is_read_no_further_than_the_page_limit(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.warc.gz"
    offsets = write_pages(archive, compress=True, pages=2)
    bomb = bomb_member("https://example.com/bomb", 100_000_000)  # five times the 20 MB page limit
    archive.write_bytes(archive.read_bytes()[: offsets[1]] + bomb + archive.read_bytes()[offsets[1] :])
    assert archive.stat().st_size < 2_000_000
    assert_bomb_skipped(tmp_path, archive, offsets[1], kept=2)


def assert_bomb_skipped(tmp_path: Path, archive: Path, offset: int, kept: int) -> None:
    """`import` reads the page at `offset`, of 100 MB, no further than the page limit: a warning,
    the page skipped, the memory bounded."""
    result, peak = import_traced(tmp_path / "b.db", archive)
    assert peak < 80_000_000  # reading the whole page took 200 MB and more
    assert result.exit_code == 0 and result.stdout == f"kept {kept}, dropped 0, skipped 1 (no text)\n"
    assert result.stderr == (
        f"Warning: {archive} record at byte {offset}: "
        "page of more than 20,000,000 bytes is over the 20,000,000 limit; skipped\n"
    )


# -- brotli payloads --------------------------------------------------------------------


def write_encoded(path: Path, bodies: list[tuple[bytes, list[tuple[str, str]]]]) -> list[int]:
    """A gzipped archive of one response a body, each with its extra HTTP headers; the offsets."""
    offsets = []
    with path.open("wb") as stream:
        writer = WARCWriter(stream, gzip=True)
        for number, (body, headers) in enumerate(bodies):
            http = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8"), *headers], protocol="HTTP/1.1"
            )
            url, payload = f"https://example.com/{number}", io.BytesIO(body)
            record = writer.create_warc_record(url, "response", payload=payload, length=len(body), http_headers=http)
            offsets.append(stream.tell())
            writer.write_record(record)
    return offsets


def chunked(body: bytes, size: int = 1000) -> bytes:
    pieces = [body[start : start + size] for start in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"


def test_a_brotli_page_is_read_as_its_html(tmp_path: Path) -> None:
    brotli = pytest.importorskip("brotli")
    html = page("Roses", english_article(7)).encode()
    archive = tmp_path / "br.warc.gz"
    write_encoded(
        archive,
        [
            (html, []),
            (brotli.compress(html), [("Content-Encoding", "br")]),
            (chunked(brotli.compress(html)), [("Content-Encoding", "br"), ("Transfer-Encoding", "chunked")]),
            (html, [("Content-Encoding", "br")]),  # said to be brotli, and is not: read as it is
        ],
    )
    result = run("import", "--db", f"sqlite:///{tmp_path / 'i.db'}", "--workers", "0", str(archive))
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == "kept 1, dropped 3, skipped 0 (no text)\n"  # the same text four times


def test_a_brotli_bomb_is_read_no_further_than_the_page_limit(tmp_path: Path) -> None:
    brotli = pytest.importorskip("brotli")
    if not hasattr(brotli.Decompressor(), "can_accept_more_data"):
        pytest.skip("this brotli has no bounded stream: its pages are read as they are")
    head = b"<html><head><title>Bomb</title></head><body><p>"
    bomb = brotli.compress(head + b"a " * 50_000_000)  # 100 MB, five times the 20 MB page limit
    archive = tmp_path / "bomb.warc.gz"
    plain = page("A", english_article(1)).encode()
    offsets = write_encoded(archive, [(plain, []), (bomb, [("Content-Encoding", "br")])])
    assert archive.stat().st_size < 100_000
    assert_bomb_skipped(tmp_path, archive, offsets[1], kept=1)


@pytest.mark.parametrize("compress", [True, False], ids=["gzip", "plain"])
def test_every_cut_is_found_or_falls_between_records(tmp_path: Path, compress: bool) -> None:
    archive, cut_archive = tmp_path / "in.warc", tmp_path / "cut.warc"
    offsets = write_pages(archive, compress=compress, pages=3)
    data = archive.read_bytes()
    for cut in range(offsets[0] + 40, len(data), 5 if compress else 13):
        cut_archive.write_bytes(data[:cut])
        read: list[int] = []
        try:
            read.extend(record.offset for record, _ in scan(str(cut_archive), pages=True))
        except BrokenArchive as exc:
            assert exc.cut, (cut, exc)
            assert exc.offset == max(offset for offset in offsets if offset < cut), cut
            assert read == [offset for offset in offsets if offset < exc.offset], cut
        else:
            assert cut in offsets, cut  # read whole: the cut falls between two records
            assert read == [offset for offset in offsets if offset < cut]
