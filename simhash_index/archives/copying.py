"""A copy of web archives, as one, without some of their responses: what `filter` writes in its
second pass, once every page is decided.

The copy holds every record of the archives, in order, byte for byte (gzip members included),
except the responses left out (each a copy of a page that survived: `Gone`), the crawler's revisit
records of them, and the request and metadata records that belong to either. With
`keep_revisits` each of those responses and revisits becomes a `revisit` record naming the page
that survived, and the companions stay.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from ..errors import ArchiveError
from .framing import BrokenArchive, opens_record
from .records import Record, archive_format, scan

REVISIT_PROFILE = "urn:simhash-index:revisit:near-duplicate"
COMPANION_KINDS = ("request", "metadata")
COPY_PIECE = 1 << 20  # bytes of a record copied at a time

State = tuple[int, int, int, int]  # an archive's inode, size, and times of change: seen to change


@dataclass(frozen=True)
class Gone:
    """A response left out of the copy: the key of the page that survived in its place, that
    page's record when it is in the copy, and the evidence (distance, exact text)."""

    duplicate_of: str
    survivor: Record | None
    distance: int
    exact: bool


@dataclass(frozen=True)
class Written:
    """What the copy holds: records and bytes, the revisit records written in place of responses
    (keep_revisits), and how many of the crawler's revisits went with the responses left out."""

    records: int
    bytes: int
    revisits: int
    revisits_of_gone: int


class ArchiveChanged(ArchiveError):
    """An archive changed between the passes, or while the second pass read it."""

    def __init__(self, archive: str, seen: str = "") -> None:
        super().__init__(f"{archive} changed while it was read{f' ({seen})' if seen else ''}: is it being written to?")


def common_format(archives: Sequence[str]) -> tuple[str, bool]:
    """The kind ("warc" or "arc") and compression the archives share, as the copy is written;
    ArchiveError when one is not an archive, or they differ."""
    formats = []
    for archive in archives:
        found = archive_format(archive)
        if found is None:
            raise ArchiveError(f"{archive} is not a WARC or ARC archive")
        formats.append(found)
    if len(set(formats)) > 1:
        shown = ", ".join(f"{a}: {k}{' gzipped' if z else ''}" for a, (k, z) in zip(archives, formats))
        raise ArchiveError(
            f"the archives differ ({shown}): give archives of one kind, all gzipped record by record or none "
            "(warcio recompress IN OUT)"
        )
    return formats[0]


def first_break(archive: str) -> BrokenArchive | None:
    """Where the archive is cut short or cannot be read on, or None when it is whole."""
    try:
        for _ in scan(archive, pages=False):
            pass
    except BrokenArchive as exc:
        return exc
    return None


def state(archive: str) -> State:
    """What shows an archive changed: its inode, size, and times of change."""
    found = os.stat(archive)
    return found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns


def write_survivors(
    target: IO[bytes],
    archives: Sequence[str],
    records: Sequence[Sequence[Record]],
    gone: Mapping[tuple[int, int], Gone],
    *,
    keep_revisits: bool,
    seen: Sequence[State],
) -> Written:
    """Write the copy of `archives` to `target`: each archive's `records` (as the first pass read
    them) but the responses `gone` ({(archive's number, offset): Gone}), their crawler's revisits
    and their companions, or revisits in their place (`keep_revisits`). Each record is read as the
    first pass found it, and each archive is as it was `seen` before and after, else ArchiveChanged."""
    kind, gzipped = common_format(archives)
    for archive, was in zip(archives, seen):
        _check_unchanged(archive, was)
    revisited = revisits_of(records, gone)
    by_archive: dict[int, dict[int, Gone]] = {}
    for (number, offset), fate in (*gone.items(), *revisited.items()):
        by_archive.setdefault(number, {})[offset] = fate
    count, size, revisits = 0, 0, 0
    for number, (archive, found) in enumerate(zip(archives, records)):
        dropped = by_archive.get(number, {})
        left_out = set() if keep_revisits else companions(found, dropped)
        with open(archive, "rb") as source:
            for record in found:
                if record.offset in left_out or (record.offset in dropped and not keep_revisits):
                    continue
                pieces = _pieces(source, record, archive, kind, gzipped)
                if record.offset in dropped:
                    pieces = iter([revisit(b"".join(pieces), dropped[record.offset], gzipped)])
                    revisits += 1
                for piece in pieces:
                    target.write(piece)
                    size += len(piece)
                count += 1
    for archive, was in zip(archives, seen):
        _check_unchanged(archive, was)
    return Written(count, size, revisits, len(revisited))


def _check_unchanged(archive: str, was: State) -> None:
    if state(archive) != was:
        raise ArchiveChanged(archive)


def _pieces(source: IO[bytes], record: Record, archive: str, kind: str, gzipped: bool) -> Iterator[bytes]:
    """The record's bytes, a piece at a time: as many as the first pass found, starting as a
    record does (a gzip member, or a record's first line), else ArchiveChanged."""
    source.seek(record.offset)
    left = record.length
    while left:
        piece = source.read(min(left, COPY_PIECE))
        if not piece or (left == record.length and record.error is None and not opens_record(piece, kind, gzipped)):
            raise ArchiveChanged(archive, f"its record at byte {record.offset} is not what it was")
        left -= len(piece)
        yield piece


def revisits_of(
    records: Sequence[Sequence[Record]], gone: Mapping[tuple[int, int], Gone]
) -> dict[tuple[int, int], Gone]:
    """The revisit records, in any of the archives, of a response `gone`, each as that response
    is gone: a crawler's revisit names the response it repeats by record id (WARC-Refers-To),
    else by its target URI and date."""
    by_id: dict[str, Gone] = {}
    by_capture: dict[tuple[str | None, str | None], Gone] = {}
    for number, found in enumerate(records):
        for record in found:
            fate = gone.get((number, record.offset))
            if fate is not None and record.kind == "response":
                if record.record_id:
                    by_id[record.record_id] = fate
                by_capture[record.target, record.date] = fate
    revisited: dict[tuple[int, int], Gone] = {}
    for number, found in enumerate(records):
        for record in found:
            if record.kind != "revisit":
                continue
            named = [by_id[link] for link in record.links if link in by_id]
            fate = named[0] if named else by_capture.get(record.refers_to)
            if fate is not None:
                revisited[number, record.offset] = fate
    return revisited


def companions(records: Iterable[Record], dropped: Mapping[int, object]) -> set[int]:
    """The offsets of the request and metadata records of the dropped responses (and revisits):
    linked to one by record id (either way), or, when unlinked, with the target URI of a
    dropped response and of no kept one."""
    records = list(records)
    pages = [r for r in records if r.why_not_page is None]
    gone = [r for r in records if r.offset in dropped]
    gone_ids = {r.record_id for r in gone} | {link for r in gone for link in r.links}
    gone_targets = {r.target for r in gone} - {r.target for r in pages if r.offset not in dropped}
    found = set()
    for record in records:
        if record.kind not in COMPANION_KINDS:
            continue
        linked = record.record_id in gone_ids or any(link in gone_ids for link in record.links)
        if linked or (not record.links and record.target in gone_targets):
            found.add(record.offset)
    return found


def revisit(raw: bytes, gone: Gone, gzipped: bool) -> bytes:
    """A revisit record standing for the response (or revisit) `raw`, a copy of the page `gone`
    names: the record's HTTP headers, its capture's date and links, and the page that survived."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.warcwriter import WARCWriter

    response = next(iter(ArchiveIterator(io.BytesIO(raw))))
    old = response.rec_headers
    headers = {
        "WARC-Date": old.get_header("WARC-Date"),
        "WARC-Profile": REVISIT_PROFILE,
        "WARC-Refers-To-Target-URI": gone.duplicate_of,
        "WARC-Simhash-Distance": str(gone.distance),
        "WARC-Simhash-Rule": "exact" if gone.exact else "near",
    }
    kept = gone.survivor
    if kept is not None and kept.record_id:
        headers["WARC-Refers-To"] = kept.record_id
    if kept is not None and kept.date:
        headers["WARC-Refers-To-Date"] = kept.date
    for name in ("WARC-Concurrent-To", "WARC-Payload-Digest", "WARC-IP-Address", "WARC-Warcinfo-ID"):
        if old.get_header(name):
            headers[name] = old.get_header(name)
    version = old.protocol if old.protocol in ("WARC/1.0", "WARC/1.1") else "WARC/1.0"
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=gzipped, warc_version=version)
    record = writer.create_warc_record(
        old.get_header("WARC-Target-URI"), "revisit", http_headers=response.http_headers, warc_headers_dict=headers
    )
    writer.write_record(record)
    return buffer.getvalue()
