"""`simhash-index filter IN... OUT`: archives, as one, without their duplicate pages.

The pages are decided as `import` decides them (into --db, so several archives can be
deduplicated against each other), all of them before OUT is written (a second pass over
IN); OUT is IN without the responses that did not survive, and without the request and
metadata records that belong to them. Every other record is copied
byte for byte, gzip members included. With --keep-revisits a dropped response becomes a
`revisit` record naming the page kept, and its companions stay.
"""

from __future__ import annotations

import io
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any

import click

from ..fingerprinting.pages import PageSetup
from ..index.prefer import Prefer
from .framing import BrokenArchive, opens_record
from .group import allow_truncated_option, db_option, max_distance_option, open_index, word_weights_option
from .importing import _import_pages, open_existing, prefer_option, unusable_dates
from .inputs import fingerprinter_for
from .outputs import Output
from .survivors import Fates, page_setup
from .warc import CUT, Record, archive_format, scan

REVISIT_PROFILE = "urn:simhash-index:revisit:near-duplicate"
COMPANION_KINDS = ("request", "metadata")
COPY_PIECE = 1 << 20  # bytes of a record copied at a time


@click.command("filter")
@db_option
@click.argument("archives", metavar="ARCHIVE...", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.argument("out", type=click.Path(dir_okay=False, writable=True, allow_dash=True))
@prefer_option
@click.option(
    "--keep-revisits",
    is_flag=True,
    help="Write a WARC revisit record naming the page kept in place of each dropped response.",
)
@max_distance_option("Largest Hamming distance that makes a page a near-duplicate.")
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    help="Worker processes extracting and fingerprinting pages [default: one per CPU; 0: none].",
)
@word_weights_option
@allow_truncated_option
def filter_(
    db: str,
    archives: tuple[str, ...],
    out: str,
    prefer: Prefer,
    keep_revisits: bool,
    max_distance: int | None,
    workers: int | None,
    word_weights: str | None,
    allow_truncated: bool,
) -> None:
    """Copy WARC or ARC archives, as one, without their duplicate pages.

    The archives' HTML responses are checked as `import` checks them, against
    the database and the pages kept before them, and added to it; a URL met again
    is another copy of the same page, and --prefer chooses which copy survives (a
    page read later can supersede one kept before). Every page is decided before
    OUT is written, so OUT holds every record of the ARCHIVEs, in order, byte for
    byte, except the responses that did not survive and their request and metadata
    records (linked by WARC-Concurrent-To or WARC-Refers-To, or, unlinked, with the
    same WARC-Target-URI). Prints the records and bytes read and written (on
    stderr when OUT is stdout). A record whose Content-Length does not match it is
    reported, copied, and the filter exits 1 at the end. An archive cut short is an
    error before anything is decided or written (--allow-truncated: OUT holds the
    records before the cut, with a warning).

    OUT is - for stdout. A FIFO, a device or /dev/stdout is written as it goes; a
    symlink's target is written; a regular file is replaced only once complete and
    on disk (written as OUT.partial-XXXXXXXX first), keeping its mode and owner.
    """
    kind, gzipped = same_format(archives)
    if keep_revisits and kind != "warc":
        raise click.UsageError("--keep-revisits writes WARC records, which an ARC archive cannot hold")
    output = Output(out)
    if any(output.same_as(archive) for archive in archives):
        raise click.BadParameter("is an archive read: write to another file", param_hint="OUT")
    for archive in archives:
        check_whole(archive, allow_truncated)
    with output.open() as target:  # before the import: a folder OUT cannot be written to fails now
        before = [_stat(archive) for archive in archives]
        scanned: list[list[Record]] = []
        counts: Counter[str] = Counter()
        copies = _copies(db, archives, scanned, max_distance, workers, word_weights, prefer, counts, allow_truncated)
        duplicates = sum(map(len, copies.values()))
        for number, found in revisits_of_copies(scanned, copies).items():
            copies.setdefault(number, {}).update(found)
        _check_unchanged(archives, before)
        written = _write_survivors(target, archives, scanned, copies, keep_revisits, kind, gzipped)
        _check_unchanged(archives, before)
    revisits = f" ({written['revisits']} revisits)" if keep_revisits else ""
    dates = f"; {unusable_dates(counts)}" if counts["unusable_date"] else ""
    read = sum(len(records) for records in scanned)
    size = sum(os.path.getsize(archive) for archive in archives)
    stale = sum(map(len, copies.values())) - duplicates
    of_them = f" and {stale} revisit records of them" if stale else ""
    click.echo(
        f"read {read} records ({size} bytes), {duplicates} duplicate pages{of_them}; "
        f"wrote {written['records']} records{revisits} ({written['bytes']} bytes){dates}",
        err=output.is_stdout(),
    )
    if counts["bad"]:
        click.get_current_context().exit(1)


def _write_survivors(
    target: IO[bytes],
    archives: Sequence[str],
    scanned: list[list[Record]],
    copies: dict[int, dict[int, tuple[dict[str, Any], Record | None]]],
    keep_revisits: bool,
    kind: str,
    gzipped: bool,
) -> Counter[str]:
    """The second pass: each archive's records copied to `target` but the copies (a revisit in
    their place with `keep_revisits`, else left out with their companions); what was written.
    Each record is read as the first pass found it, or the archive changed since (an error)."""
    written: Counter[str] = Counter()
    for number, (archive, records) in enumerate(zip(archives, scanned)):
        dropped = copies.get(number, {})
        left_out = set() if keep_revisits else companions(records, dropped)
        with open(archive, "rb") as source:
            for record in records:
                if record.offset in left_out or (record.offset in dropped and not keep_revisits):
                    continue
                pieces = _pieces(source, record, archive, kind, gzipped)
                if record.offset in dropped:
                    row, kept = dropped[record.offset]
                    pieces = iter([revisit(b"".join(pieces), row, kept, gzipped)])
                    written["revisits"] += 1
                for piece in pieces:
                    target.write(piece)
                    written["bytes"] += len(piece)
                written["records"] += 1
    return written


def check_whole(archive: str, allow_truncated: bool) -> None:
    """Before anything is decided: an archive cut short is an error (nothing decided, nothing
    written), unless `allow_truncated` (then it is filtered up to the cut)."""
    try:
        for _ in scan(archive, pages=False):
            pass
    except BrokenArchive as exc:
        if not (exc.cut and allow_truncated):
            hint = f": {CUT}; nothing written (--allow-truncated filters it to there)" if exc.cut else ""
            raise click.ClickException(f"{archive} record at byte {exc.offset}: {exc.reason}{hint}") from None


def _copies(
    db: str,
    archives: Sequence[str],
    scanned: list[list[Record]],
    max_distance: int | None,
    workers: int | None,
    word_weights: str | None,
    prefer: Prefer,
    counts: Counter[str],
    allow_truncated: bool,
) -> dict[int, dict[int, tuple[dict[str, Any], Record | None]]]:
    """The first pass: the import's decision on every page of the archives, followed to the
    end (survivors.Fates), counted in `counts` as the import counts them; each archive's
    records are added to `scanned`. Returns {archive's number: {offset: (evidence, the
    surviving page's record)}} of the pages that did not survive; the survivor's record is
    None when it is not in OUT."""
    source = open_existing(db, max_distance)
    fingerprinter = fingerprinter_for(None if source is None else source.scheme, word_weights)
    if source is not None:
        source.close()
    index = open_index(
        db, write=True, create=True, max_distance=max_distance, scheme=fingerprinter.scheme, prefer=prefer
    )
    setup = page_setup(PageSetup(fingerprinter), prefer)
    fates = Fates()
    rows = _import_pages(
        index, setup, archives, workers, counts, False, False, prefer, scanned, allow_truncated=allow_truncated
    )
    for position, row in enumerate(rows):
        fates.add(position, row)
    pages = [(n, r) for n, records in enumerate(scanned) for r in records if r.why_not_page is None and not r.error]
    if [row.target for _, row in pages] != fates.urls:
        raise click.ClickException("the pages decided are not the archives' pages: report this as a bug")
    found: dict[int, dict[int, tuple[dict[str, Any], Record | None]]] = {}
    for at, copy in fates.copies().items():
        number, record = pages[at]
        row = {"duplicate_of": copy.duplicate_of, "distance": copy.distance, "exact": copy.exact}
        found.setdefault(number, {})[record.offset] = (row, None if copy.survivor is None else pages[copy.survivor][1])
    return found


def _stat(path: str) -> tuple[int, int, int, int]:
    found = os.stat(path)
    return found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns


def same_format(archives: Sequence[str]) -> tuple[str, bool]:
    """The kind ("warc" or "arc") and compression the archives share: OUT is written as they are."""
    formats = []
    for archive in archives:
        found = archive_format(archive)
        if found is None:
            raise click.BadParameter(f"{archive} is not a WARC or ARC archive", param_hint="ARCHIVE")
        formats.append(found)
    if len(set(formats)) > 1:
        shown = ", ".join(f"{a}: {k}{' gzipped' if z else ''}" for a, (k, z) in zip(archives, formats))
        raise click.BadParameter(
            f"the archives differ ({shown}): give archives of one kind, all gzipped record by record or none "
            "(warcio recompress IN OUT)",
            param_hint="ARCHIVE",
        )
    return formats[0]


def revisits_of_copies(
    scanned: Sequence[Sequence[Record]], copies: dict[int, dict[int, tuple[dict[str, Any], Record | None]]]
) -> dict[int, dict[int, tuple[dict[str, Any], Record | None]]]:
    """The revisit records, in any of the archives, of a response that did not survive, each as
    that response is in `copies` (a copy of the page that survived): a crawler's revisit names
    the response it repeats by record id (WARC-Refers-To), else by its target URI and date."""
    by_id: dict[str, tuple[dict[str, Any], Record | None]] = {}
    by_capture: dict[tuple[str | None, str | None], tuple[dict[str, Any], Record | None]] = {}
    for number, records in enumerate(scanned):
        dropped = copies.get(number, {})
        for record in records:
            if record.offset in dropped and record.kind == "response":
                if record.record_id:
                    by_id[record.record_id] = dropped[record.offset]
                by_capture[record.target, record.date] = dropped[record.offset]
    found: dict[int, dict[int, tuple[dict[str, Any], Record | None]]] = {}
    for number, records in enumerate(scanned):
        for record in records:
            if record.kind != "revisit":
                continue
            named = [by_id[link] for link in record.links if link in by_id]
            fate = named[0] if named else by_capture.get(record.refers_to)
            if fate is not None:
                found.setdefault(number, {})[record.offset] = fate
    return found


def companions(records: Iterable[Record], dropped: dict[int, Any]) -> set[int]:
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


class ArchiveChanged(click.ClickException):
    """An archive changed between the passes, or while the second pass read it."""

    def __init__(self, archive: str, seen: str = "") -> None:
        super().__init__(f"{archive} changed while it was read{f' ({seen})' if seen else ''}: is it being written to?")


def _check_unchanged(archives: Sequence[str], before: list[tuple[int, int, int, int]]) -> None:
    for archive, was in zip(archives, before):
        if _stat(archive) != was:
            raise ArchiveChanged(archive)


def revisit(raw: bytes, row: dict[str, Any], kept: Record | None, gzipped: bool) -> bytes:
    """A revisit record standing for the response `raw`, a duplicate of the page in `row`:
    the response's HTTP headers, its capture's date and links, and the page kept."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.warcwriter import WARCWriter

    response = next(iter(ArchiveIterator(io.BytesIO(raw))))
    old = response.rec_headers
    headers = {
        "WARC-Date": old.get_header("WARC-Date"),
        "WARC-Profile": REVISIT_PROFILE,
        "WARC-Refers-To-Target-URI": row["duplicate_of"],
        "WARC-Simhash-Distance": str(row["distance"]),
        "WARC-Simhash-Rule": "exact" if row["exact"] else "near",
    }
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
