"""`simhash-index filter IN OUT`: an archive without its duplicate pages.

The pages are decided as `import` decides them (into --db, so several archives can be
deduplicated against each other); OUT is IN with the dropped responses left out, and with
them the request and metadata records that belong to them. Every other record is copied
byte for byte, gzip members included. With --keep-revisits a dropped response becomes a
`revisit` record naming the page kept, and its companions stay.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import click

from ..fingerprinting.pages import PageSetup
from .framing import WHOLE_GZIP, BrokenArchive
from .group import allow_truncated_option, db_option, max_distance_option, open_index, word_weights_option
from .importing import _import_pages, open_existing
from .inputs import fingerprinter_for
from .warc import CUT, GZIP_MAGIC, Record, archive_format, scan

REVISIT_PROFILE = "urn:simhash-index:revisit:near-duplicate"
COMPANION_KINDS = ("request", "metadata")


@click.command("filter")
@db_option
@click.argument("archive", type=click.Path(exists=True, dir_okay=False))
@click.argument("out", type=click.Path(dir_okay=False, writable=True))
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
    archive: str,
    out: str,
    keep_revisits: bool,
    max_distance: int | None,
    workers: int | None,
    word_weights: str | None,
    allow_truncated: bool,
) -> None:
    """Copy a WARC or ARC archive without its duplicate pages.

    The archive's HTML responses are checked as `import` checks them, against
    the database and the pages kept before them, and added to it. OUT holds every
    record of ARCHIVE, byte for byte, except the responses dropped as duplicates
    and their request and metadata records (linked by WARC-Concurrent-To or
    WARC-Refers-To, or, unlinked, with the same WARC-Target-URI). Prints the
    records and bytes read and written. A record whose Content-Length does not
    match it is reported, copied, and the filter exits 1 at the end. An archive
    cut short is an error before anything is decided or written (--allow-truncated:
    OUT holds the records before the cut, with a warning).
    """
    found = archive_format(archive)
    if found is None:
        raise click.BadParameter("not a WARC or ARC archive", param_hint="ARCHIVE")
    kind, gzipped = found
    if keep_revisits and kind != "warc":
        raise click.UsageError("--keep-revisits writes WARC records, which an ARC archive cannot hold")
    if os.path.exists(out) and os.path.samefile(archive, out):
        raise click.BadParameter("is the archive read: write to another file", param_hint="OUT")
    records = whole_records(archive, allow_truncated)
    bad: Counter[str] = Counter()
    dropped = _dropped_pages(db, archive, records, max_distance, workers, word_weights, bad, allow_truncated)
    left_out = set() if keep_revisits else companions(records, dropped)
    kept_pages = {r.target: r for r in records if r.why_not_page is None and r.offset not in dropped}
    written: Counter[str] = Counter()
    with open(archive, "rb") as source, replacing(out) as target:
        for record in records:
            if record.offset in left_out:
                continue
            raw = _raw(source, record, gzipped)
            if record.offset in dropped:
                if not keep_revisits:
                    continue
                row = dropped[record.offset]
                raw = revisit(raw, row, kept_pages.get(row["duplicate_of"]), gzipped)
                written["revisits"] += 1
            target.write(raw)
            written["records"] += 1
            written["bytes"] += len(raw)
    revisits = f" ({written['revisits']} revisits)" if keep_revisits else ""
    click.echo(
        f"read {len(records)} records ({os.path.getsize(archive)} bytes), {len(dropped)} duplicate pages; "
        f"wrote {written['records']} records{revisits} ({written['bytes']} bytes)"
    )
    if bad["bad"]:
        click.get_current_context().exit(1)


def whole_records(archive: str, allow_truncated: bool) -> list[Record]:
    """The archive's records; where it is cut short, an error (nothing decided, nothing
    written), or with `allow_truncated` the records before the cut."""
    records: list[Record] = []
    try:
        records.extend(record for record, _ in scan(archive, pages=False))
    except BrokenArchive as exc:
        if not (exc.cut and allow_truncated):
            hint = f": {CUT}; nothing written (--allow-truncated filters it to there)" if exc.cut else ""
            raise click.ClickException(f"{archive} record at byte {exc.offset}: {exc.reason}{hint}") from None
    return records


def _dropped_pages(
    db: str,
    archive: str,
    records: list[Record],
    max_distance: int | None,
    workers: int | None,
    word_weights: str | None,
    counts: Counter[str],
    allow_truncated: bool,
) -> dict[int, dict[str, Any]]:
    """The import's decision on each page the archive holds: {offset: row} of the pages dropped
    (`counts` as the import counts them)."""
    source = open_existing(db, max_distance)
    fingerprinter = fingerprinter_for(None if source is None else source.scheme, word_weights)
    if source is not None:
        source.close()
    index = open_index(db, write=True, create=True, max_distance=max_distance, scheme=fingerprinter.scheme)
    setup = PageSetup(fingerprinter)
    rows = list(_import_pages(index, setup, archive, workers, counts, False, False, allow_truncated=allow_truncated))
    pages = [r for r in records if r.why_not_page is None]
    if [row["url"] for row in rows] != [page.target for page in pages]:
        raise click.ClickException(f"{archive} read differently twice: is it being written to?")
    return {page.offset: row for page, row in zip(pages, rows) if row["outcome"] == "dropped"}


def companions(records: Iterable[Record], dropped: dict[int, Any]) -> set[int]:
    """The offsets of the request and metadata records of the dropped responses: linked to
    one by record id (either way), or, when unlinked, with the target URI of a dropped
    response and of no kept one."""
    records = list(records)
    pages = [r for r in records if r.why_not_page is None]
    gone = [r for r in pages if r.offset in dropped]
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


def _raw(source: IO[bytes], record: Record, gzipped: bool) -> bytes:
    source.seek(record.offset)
    raw = source.read(record.length)
    if gzipped and not raw.startswith(GZIP_MAGIC):
        raise click.ClickException(f"the archive is {WHOLE_GZIP}")
    return raw


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


@contextmanager
def replacing(path: str) -> Iterator[IO[bytes]]:
    """A file written beside `path` that becomes `path` only when the block ends without error."""
    descriptor, temporary = tempfile.mkstemp(dir=Path(path).parent, prefix=f".{Path(path).name}.")
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(temporary, 0o666 & ~umask)  # as open() would make it, not mkstemp's 0600
    try:
        with os.fdopen(descriptor, "wb") as file:
            yield file
    except BaseException:
        os.unlink(temporary)
        raise
    os.replace(temporary, path)
