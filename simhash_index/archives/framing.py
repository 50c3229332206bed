"""An archive's records as warcio reads them, each checked against its framing.

warcio reads on where a record's framing is wrong: a record whose Content-Length is too large
swallows the records after it, one too small leaves the rest of its block to be read as
records (with a warning and a piece of the page on stderr), and an archive cut short (a
download cut, an archive still being written) ends with a partial record read as a whole
one. Each record here is checked once read to its end:

- cut short: its gzip member ends before its end of stream, or the file ends inside the
  record or before the blank line that ends it. Raises `BrokenArchive` naming its offset,
  after every whole record before it.
- framing: its block is not as long as its Content-Length says (or it has none). The record
  comes with `error` set, and reading starts again at the next record: the next gzip member,
  or, in a plain archive, the next line that starts a record.
- corrupt: a gzip member whose data cannot be inflated comes as a record with `error` set, and
  reading starts again at the next gzip member whose data begins with a record.

This leans on warcio's internals (the iterator's `reader`, `offset`, `next_line`, `err_count`
and `read_to_end`, the reader's `_decompress`, `decompressor` and `rem_length`, a LimitReader's
`limit`): pyproject.toml bounds warcio to the versions the tests passed with.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import IO, Any, Generic, TypeVar

T = TypeVar("T")
CHUNK = 1 << 20  # bytes read at a time when skipping to a record's end
# bytes of a record's WARC and HTTP header lines read at most (and of the blank lines after its
# block): a line without end would be read whole. Servers refuse HTTP headers past 8-64 KiB.
HEADER_LIMIT = 1 << 20
_INFLATE_AT_ONCE = 1 << 20  # bytes of a gzip member inflated at a time when skipping it
# where a record starts in a plain archive: a WARC version line after a blank line, or an ARC
# record's header line (URL, IP address, 14-digit date, media type, length)
_WARC_LINE = rb"WARC/1\.[01]\r?\n"
_ARC_LINE = rb"(?:https?|ftp|dns|filedesc):\S* \S+ \d{14} \S+ \d+\r?\n"
_RECORD_START = re.compile(rb"\n\r?\n(?=" + _WARC_LINE + rb")|\n(?=" + _ARC_LINE + rb")")
_FIRST_LINE = {"warc": re.compile(_WARC_LINE), "arc": re.compile(_ARC_LINE)}
_GZIP_MAGIC = b"\x1f\x8b\x08"
TOO_LARGE = "its Content-Length is too large to be read"
LONG_HEADER = f"its headers run past {HEADER_LIMIT:,} bytes without ending"
LONG_AFTER = f"more than {HEADER_LIMIT:,} bytes follow its block before the next record"
WHOLE_GZIP = "gzipped as one stream, not record by record: recompress it (warcio recompress IN OUT)"


class BrokenArchive(Exception):
    """The archive cannot be read on from `offset`: cut short there (`cut`), or unreadable."""

    def __init__(self, offset: int, reason: str, *, cut: bool) -> None:
        super().__init__(f"at byte {offset}: {reason}")
        self.offset = offset
        self.reason = reason
        self.cut = cut


class HeaderTooLong(Exception):
    """A record's header lines, or the blank lines after it, run past HEADER_LIMIT."""


class BrokenMember(BrokenArchive):
    """A gzip member whose data is corrupt: the records after it are read from the next member."""

    def __init__(self, offset: int, problem: str) -> None:
        super().__init__(offset, f"its gzip data is broken ({problem})", cut=False)


@dataclass(frozen=True)
class Framed(Generic[T]):
    """A record read to its end: where it starts and where the next one does, what `look`
    took from it (None when it could not be parsed), and why its framing is wrong (None
    when it is right)."""

    record: Any  # warcio's ArcWarcRecord; None when it could not be parsed
    offset: int
    end: int
    looked: T | None
    error: str | None


def framed_records(
    stream: IO[bytes], size: int, kind: str, gzipped: bool, look: Callable[[Any], T]
) -> Iterator[Framed[T]]:
    """Each record of the `kind` ("warc" or "arc") archive in `stream` (`size` bytes), with
    `look(record)` called on it before it is read to its end. A gzip member whose data is
    corrupt comes as a record with `error` set, up to the next member that holds a record.
    Raises BrokenArchive at a record cut short, or where warcio cannot read on."""
    position: int | None = stream.tell()
    while position is not None and position < size:
        try:
            position = yield from _read_on(stream, position, size, kind, gzipped, look)
        except BrokenMember as exc:
            position = _next_member(stream, exc.offset + 1, size, kind)
            yield Framed(None, exc.offset, position, None, exc.reason)


def _read_on(
    stream: IO[bytes], position: int, size: int, kind: str, gzipped: bool, look: Callable[[Any], T]
) -> Generator[Framed[T], None, int | None]:
    """The records from `position` on as one warcio iterator reads them; returns where to read
    on after a record whose framing is wrong, or None at the archive's end."""
    iterator = _iterator(stream, position)
    while True:
        offset, warnings = iterator.offset, iterator.err_count
        iterator.reader.header_bytes = 0
        try:
            record = next(iterator, None)
        except (OverflowError, HeaderTooLong) as exc:  # warcio cannot read so many bytes, or should not
            position = _resync(stream, offset, size, gzipped, None)
            yield Framed(None, offset, position, None, TOO_LARGE if isinstance(exc, OverflowError) else LONG_HEADER)
            return position
        except Exception as exc:  # warcio raises what it meets on bytes that are no record (AttributeError, ...)
            raise _unreadable(stream, offset, size, gzipped, exc) from None
        if record is None:
            if iterator.offset < size:  # what follows the last record is not one
                raise _unreadable(stream, iterator.offset, size, gzipped, None)
            return None
        looked = look(record)
        missing = _read_block(record)
        block_end = _position(iterator)
        iterator.reader.header_bytes = 0
        try:
            iterator.read_to_end()
        except HeaderTooLong:
            position = _resync(stream, offset, size, gzipped, None)
            yield Framed(record, offset, position, looked, LONG_AFTER)
            return position
        error = _framing_error(record, iterator, missing, iterator.err_count > warnings, gzipped)
        if error is None:
            _check_whole(stream, iterator, offset, block_end, gzipped, size, 1 if kind == "arc" else 2)
            yield Framed(record, offset, iterator.offset, looked, None)
            continue
        if gzipped and missing and _member_ended(iterator):  # the next member is a record of its own
            yield Framed(record, offset, iterator.offset, looked, error)
            continue
        cut = None if missing == 0 else _cut_inside(record, missing)
        position = _resync(stream, offset, size, gzipped, cut)
        yield Framed(record, offset, position, looked, error)
        return position


def _iterator(stream: IO[bytes], position: int) -> Any:
    """warcio's iterator from `position`: its warning on a wrong Content-Length off stderr (it
    is counted in err_count, and reported here on one line), and a gzip member's broken data
    kept in `reader.broken` instead of printed."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.bufferedreaders import DecompressingBufferedReader

    class Reader(DecompressingBufferedReader):  # type: ignore[misc]
        broken: str | None = None
        header_bytes = 0  # read by readline since the record began, or since a read

        def readline(self, length: int | None = None) -> bytes:
            room = HEADER_LIMIT + 1 - self.header_bytes
            line: bytes = super().readline(room if length is None else min(length, room))
            self.header_bytes += len(line)
            if self.header_bytes > HEADER_LIMIT:
                raise HeaderTooLong()
            return line

        def read(self, length: int | None = None) -> bytes:
            self.header_bytes = 0
            return super().read(length)  # type: ignore[no-any-return]

        def _decompress(self, data: bytes) -> bytes:
            if self.decompressor is None or not data or self.num_block_read == 0:
                return super()._decompress(data)  # type: ignore[no-any-return]
            try:
                return self.decompressor.decompress(data)  # type: ignore[no-any-return]
            except zlib.error as exc:
                self.broken = str(exc)
                return b""

    class Records(ArchiveIterator):  # type: ignore[misc]
        INC_RECORD = ""

    stream.seek(position)
    iterator = Records(stream, arc2warc=True)
    iterator.reader = Reader(stream)
    return iterator


def _read_block(record: Any) -> int | None:
    """Read the rest of the record's block; the bytes its Content-Length says are missing
    from it (None: it has no Content-Length to check)."""
    from warcio.limitreader import LimitReader

    while record.raw_stream.read(CHUNK // 16):
        pass
    return int(record.raw_stream.limit) if isinstance(record.raw_stream, LimitReader) else None


def _position(iterator: Any) -> int:
    """Where the iterator's reader is in the file (in a gzipped archive: the compressed bytes
    read, which is not where the record's block ends)."""
    return int(iterator.fh.tell() - iterator.reader.rem_length())


def _member_ended(iterator: Any) -> bool:
    decompressor = iterator.reader.decompressor
    return decompressor is not None and bool(decompressor.eof)


def _framing_error(record: Any, iterator: Any, missing: int | None, followed: bool, gzipped: bool) -> str | None:
    """Why the record's block does not match its Content-Length, or None. `followed`: warcio
    found other bytes than blank lines after the block."""
    declared = (record.rec_headers.get_header("Content-Length") or "").strip()
    if missing is None:
        return "it has no Content-Length"
    if not declared.isdigit():
        return f"its Content-Length ({declared[:40]}) is not a number of bytes"
    if missing:
        if gzipped and not _member_ended(iterator):
            return None  # its gzip member is cut short: _check_whole says so
        return f"its Content-Length ({declared}) is {missing} bytes more than the record holds"
    if followed:
        return f"its Content-Length ({declared}) does not match the record: other bytes follow where it ends"
    return None


def _cut_inside(record: Any, missing: int | None) -> str:
    if missing is None:
        return "the archive ends inside this record, which has no Content-Length"
    declared = record.rec_headers.get_header("Content-Length")
    return f"the archive ends {missing} bytes before this record does (its Content-Length: {declared})"


def _check_whole(
    stream: IO[bytes], iterator: Any, offset: int, block_end: int, gzipped: bool, size: int, line_ends: int
) -> None:
    """Raise BrokenArchive when the record read is cut short (the last of a plain archive:
    without the `line_ends` that end a record), or its gzip data is broken."""
    if gzipped:
        if iterator.reader.broken:
            raise BrokenMember(offset, iterator.reader.broken)
        if iterator.next_line is None and not _member_ended(iterator):
            raise BrokenArchive(offset, "its gzip member ends before its end of stream", cut=True)
        return
    if iterator.next_line is None and iterator.offset >= size:  # the last record: blank lines end it
        here = stream.tell()
        stream.seek(block_end)
        ends = stream.read(8).count(b"\n")
        stream.seek(here)
        if ends < line_ends:
            raise BrokenArchive(offset, "the archive ends before the blank line that ends this record", cut=True)


def _unreadable(stream: IO[bytes], offset: int, size: int, gzipped: bool, exc: Exception | None) -> BrokenArchive:
    """Why warcio cannot read a record at `offset`: the gzip member or the archive cut short
    there, or not a record."""
    if exc is not None and "non-chunked gzip" in str(exc):
        return BrokenArchive(offset, WHOLE_GZIP, cut=False)
    if gzipped and _member_end(stream, offset) is None:
        return BrokenArchive(offset, "its gzip member ends before its end of stream", cut=True)
    if not gzipped and _next_record_start(stream, offset + 1, size) == size:
        return BrokenArchive(offset, "the archive ends inside this record's headers", cut=True)
    reason = " ".join(str(exc or "not a record").split())[:300]
    return BrokenArchive(offset, f"not a readable WARC or ARC record ({reason})", cut=False)


def _resync(stream: IO[bytes], offset: int, size: int, gzipped: bool, cut: str | None) -> int:
    """Where the record after the one at `offset` starts: its gzip member's end, or the next
    line that starts a record in a plain archive. Raises BrokenArchive when the gzip member is
    cut short, or, with the reason `cut`, when no record follows a plain one read to the end."""
    if gzipped:
        end = _member_end(stream, offset)
        if end is None:
            raise BrokenArchive(offset, "its gzip member ends before its end of stream", cut=True)
        return end
    start = _next_record_start(stream, offset + 1, size)
    if start == size and cut is None and _headers_cut(stream, offset):
        cut = "the archive ends inside this record's headers"
    if start == size and cut is not None:
        raise BrokenArchive(offset, cut, cut=True)
    return start


def _headers_cut(stream: IO[bytes], offset: int) -> bool:
    """Whether the file ends before the blank line that ends the headers of the record at `offset`."""
    stream.seek(offset)
    head = stream.read(CHUNK)
    return b"\n\r\n" not in head and b"\n\n" not in head


def _member_end(stream: IO[bytes], offset: int) -> int | None:
    """Where the gzip member at `offset` ends, or None when the file ends first; inflated a
    piece at a time, so memory stays bounded whatever the member holds."""
    stream.seek(offset)
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    read = 0
    while not inflater.eof:
        data = stream.read(CHUNK)
        if not data:
            return None
        read += len(data)
        try:
            inflater.decompress(data, _INFLATE_AT_ONCE)
            while inflater.unconsumed_tail and not inflater.eof:
                inflater.decompress(inflater.unconsumed_tail, _INFLATE_AT_ONCE)
        except zlib.error as exc:
            raise BrokenMember(offset, str(exc)) from None
    return offset + read - len(inflater.unused_data)


def _next_record_start(stream: IO[bytes], start: int, size: int) -> int:
    """The offset of the first line from `start` on that starts a record, else `size`."""
    stream.seek(start)
    carried, base = b"", start
    while True:
        data = stream.read(CHUNK)
        if not data:
            return size
        window = carried + data
        found = _RECORD_START.search(window)
        if found is not None:
            return base + found.end()
        carried = window[-64:]
        base += len(window) - len(carried)


def _next_member(stream: IO[bytes], start: int, size: int, kind: str) -> int:
    """The offset of the first gzip member from `start` on whose data begins with a record's
    first line, else `size`."""
    position = start
    while position < size:
        stream.seek(position)
        window = stream.read(CHUNK + len(_GZIP_MAGIC) - 1)  # a magic across two windows is found in the second
        found = window.find(_GZIP_MAGIC)
        while found != -1:
            if _opens_record(stream, position + found, kind):
                return position + found
            found = window.find(_GZIP_MAGIC, found + 1)
        position += max(1, len(window) - len(_GZIP_MAGIC) + 1)
    return size


def opens_record(head: bytes, kind: str, gzipped: bool) -> bool:
    """Whether `head`, the first bytes of a record as the archive holds it, can start one: a gzip
    member, or a WARC record's version line (an ARC record's first line has too many forms)."""
    if gzipped:
        return head.startswith(_GZIP_MAGIC)
    return kind == "arc" or head.startswith(b"WARC/")


def _opens_record(stream: IO[bytes], offset: int, kind: str) -> bool:
    """Whether a gzip member starts at `offset` and its data begins with a record's first line."""
    stream.seek(offset)
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        head = inflater.decompress(stream.read(4096), 512)
    except zlib.error:
        return False
    return _FIRST_LINE[kind].match(head) is not None
