"""`simhash-index import`: deduplicate a JSON lines corpus into an index, as the pipeline does."""

from __future__ import annotations

import contextlib
import sys
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from itertools import chain
from typing import Any

import click

from .. import defaults
from ..dedup import Deduplicator
from ..errors import IndexNotFoundError
from ..fingerprinting.pages import PageJob, PageSetup
from ..index.base import Index
from ..index.dry_run import DryRunIndex
from ..index.prefer import NAMED, Prefer
from ..index.records import Match, check_key
from ..index.sql.layouts import ASSIGNMENTS, LAYOUTS
from ..workers import default_size
from . import listings
from .group import (
    FILE_OR_STDIN,
    allow_truncated_option,
    db_option,
    format_option,
    max_distance_option,
    open_index,
    output_format,
    word_weights_option,
)
from .inputs import CorpusLine, fingerprinter_for, read_corpus
from .survivors import PREFER_HELP, RunDeduplicator, page_setup, with_evidence
from .warc import Record, is_archive, not_pages, read_archive

# Pages come back from the workers a chunk at a time: waiting this long for a full batch
# makes fewer transactions, which a database server would otherwise spend the cores on.
FILL_BATCHES_S = 0.2


prefer_option = click.option("--prefer", type=click.Choice(NAMED), default="first", show_default=True, help=PREFER_HELP)


@click.command("import")
@db_option
@click.argument("files", metavar="FILE...", nargs=-1, required=True, type=FILE_OR_STDIN)
@click.option("--dry-run", is_flag=True, help="List what would be kept and dropped; write nothing.")
@prefer_option
@click.option(
    "--keep-texts", is_flag=True, help="Keep each page's text, compressed, for explain and report diffs (?texts=1)."
)
@format_option()
@max_distance_option("The search radius: the largest Hamming distance that makes a page a near-duplicate.")
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    help="Worker processes extracting and fingerprinting pages [default: one per CPU; 0: none, no crash isolation].",
)
@click.option(
    "--layout",
    type=click.Choice(LAYOUTS),
    help=f"A new SQL index's lookups: four indexed 16-bit blocks, or two half indexes [default: {defaults.LAYOUT}].",
)
@click.option(
    "--block-assignment",
    type=click.Choice(ASSIGNMENTS),
    help=f"Which bits make each block of a new 'blocks' index [default: {defaults.BLOCK_ASSIGNMENT}].",
)
@word_weights_option
@click.option("--strict", is_flag=True, help="Stop at the first bad line (by default it is reported and skipped).")
@allow_truncated_option
def import_(
    db: str,
    files: tuple[str, ...],
    dry_run: bool,
    prefer: Prefer,
    keep_texts: bool,
    fmt: str | None,
    max_distance: int | None,
    workers: int | None,
    layout: str | None,
    block_assignment: str | None,
    word_weights: str | None,
    strict: bool,
    allow_truncated: bool,
) -> None:
    """Deduplicate JSON lines corpora, or WARC or ARC archives, into the database.

    Each line is an object with "url" and "text" or "html" (whose main text is
    extracted). An archive's pages are its HTML responses with a 2xx status, keyed
    by WARC-Target-URI; its other records are counted and skipped (needs the
    [warc] extra). Pages are checked in file order (the files one after another)
    against the database and the pages kept before them; a URL met again in the run is
    another copy of the same page. --prefer chooses which copy survives; a preferred
    page supersedes the stored copy. --dry-run reads the database but writes nothing, and
    lists each page (--format) with what the import would do; the counts go to stderr.
    A bad line (an archive's record whose Content-Length does not match it) is
    reported with its number (offset) and skipped, and the import exits 1 at the
    end (--strict stops at the first). An archive cut short is an error after
    the pages before the cut are imported (--allow-truncated: a warning).
    """
    if fmt is not None and not dry_run:
        raise click.UsageError("--format chooses the listing of --dry-run; an import prints only its counts")
    source = open_existing(db, max_distance)
    fingerprinter = fingerprinter_for(None if source is None else source.scheme, word_weights)
    if dry_run:
        target: Index = click.get_current_context().with_resource(
            DryRunIndex(source, scheme=fingerprinter.scheme, max_distance=max_distance, prefer=prefer)
        )
    else:
        if source is not None:
            source.close()
        target = open_index(
            db,
            write=True,
            create=True,
            max_distance=max_distance,
            layout=layout,
            block_assignment=block_assignment,
            scheme=fingerprinter.scheme,
            keep_texts=keep_texts,
            prefer=prefer,
        )
    counts: Counter[str] = Counter()
    setup = page_setup(PageSetup(fingerprinter), prefer)
    decided = _import_pages(
        target, setup, files, workers, counts, dry_run, strict, prefer, allow_truncated=allow_truncated
    )
    if dry_run:
        listings.write_dry_run(decided, output_format(fmt), sys.stdout)
    else:
        for _ in decided:
            pass
    refused = f", refused {counts['refused']} (unusable url)" if counts["refused"] else ""
    lines = "records" if all(is_archive(file) for file in files) else "lines"
    bad = f", {counts['bad']} bad {lines} skipped" if counts["bad"] else ""
    summary = f"kept {counts['kept']}, dropped {counts['dropped']}, skipped {counts['skipped']} (no text){refused}{bad}"
    if counts["superseded"]:
        summary += f"; {counts['superseded']} kept pages superseded a stored copy (--prefer {prefer})"
    if counts["unusable_date"]:
        summary += f"; {unusable_dates(counts)}"
    if not_pages(counts):
        summary += f"; records not pages: {not_pages(counts)}"
    click.echo(f"dry run, nothing written: {summary}" if dry_run else summary, err=dry_run)
    if counts["bad"]:
        click.get_current_context().exit(1)


def _import_pages(
    target: Index,
    setup: PageSetup,
    files: Sequence[str],
    workers: int | None,
    counts: Counter[str],
    dry_run: bool,
    strict: bool,
    prefer: Prefer = "first",
    records: list[list[Record]] | None = None,
    *,
    allow_truncated: bool = False,
) -> Iterator[dict[str, Any]]:
    """Each page of the files checked against the target, in file order: a row saying what
    became of it (kept, with "supersedes" when it took a stored copy's place; dropped;
    skipped: no text; refused: unusable URL), counted. A bad line is reported and counted
    (no row), or with `strict` stops the import.

    Pages are analysed in worker processes and decided in batches (the dedup core), in file
    order: a page can be a duplicate of any page before it; a URL met again in the run is a
    copy of the same page (survivors.SameUrl). A dry run's target writes nothing. With
    `records`, each archive's records are added to it, a list an archive."""
    core = RunDeduplicator(
        lambda: target,
        setup,
        workers=default_size() if workers is None else workers,
        batch_size=defaults.BATCH_SIZE,
        linger=FILL_BATCHES_S,
        prefer=prefer,
    )
    core.open().result()
    try:
        yield from _decided(core, dry_run, files, counts, strict, records, allow_truncated)
    except BaseException:  # an error, Ctrl-C, or the reader gone: stop the workers, decide no more
        with contextlib.suppress(Exception):  # closing a full disk's index can fail too: the first error is told
            core.close(now=True).result()
        raise
    core.close().result()


Pending = tuple[str, "Future[Match | None] | str"]  # (url, its decision, or the outcome it had without one)


def _decided(
    core: Deduplicator,
    dry_run: bool,
    files: Sequence[str],
    counts: Counter[str],
    strict: bool,
    records: list[list[Record]] | None,
    allow_truncated: bool,
) -> Iterator[dict[str, Any]]:
    def read(file: str) -> Iterator[CorpusLine]:
        if not is_archive(file):
            return read_corpus(file)
        if records is not None:
            records.append([])
        return read_archive(
            file,
            counts,
            None if records is None else records[-1],
            max_bytes=core.setup.extract.max_bytes,
            allow_truncated=allow_truncated,
        )

    source = chain.from_iterable(read(file) for file in files)
    lines = ((line, line.job or PageJob("", is_html=False)) for line in source)
    before = "pages" if any(is_archive(file) for file in files) else "lines"
    after = "" if dry_run else f"; the {before} before it were imported"
    pending: deque[Pending] = deque()
    for line, page in core.analyse_many(lines):
        if line.error is not None:
            if strict or line.fatal:
                yield from _settled(pending, counts, 0)
                raise click.ClickException(f"{line.where}: {line.error}{after}")
            click.echo(f"Error: {line.where}: {line.error}; skipped", err=True)
            counts["bad"] += 1
            continue
        try:
            check_key(line.url)
        except ValueError as exc:
            click.echo(f"Warning: {line.where}: {exc}; skipped", err=True)
            pending.append((line.url, "refused"))
            continue
        if line.unusable_date is not None:
            if not counts["unusable_date"]:
                click.echo(f"Warning: {line.where}: {line.unusable_date}: taken as no date (others counted)", err=True)
            counts["unusable_date"] += 1
        failure = line.warning or page.failure
        if failure is not None:
            click.echo(f"Warning: {line.where}: {failure}; skipped", err=True)
        if page.signature is None or line.warning is not None:
            pending.append((line.url, "skipped"))
        else:
            pending.append((line.url, core.decide(line.url, with_evidence(page.signature, line), page.text)))
        yield from _settled(pending, counts, 4 * core.batch_size)
    yield from _settled(pending, counts, 0)


def _settled(pending: deque[Pending], counts: Counter[str], keep: int) -> Iterator[dict[str, Any]]:
    """The rows of the pages at the head of `pending` that are decided, in order; waits for
    decisions until at most `keep` pages are pending (the writer's next batches)."""
    while pending and (len(pending) > keep or isinstance(pending[0][1], str) or pending[0][1].done()):
        url, decision = pending.popleft()
        if isinstance(decision, str):
            counts[decision] += 1
            yield {"url": url, "outcome": decision}
            continue
        match = decision.result()
        if match is not None and match.superseded is not None:
            counts["kept"] += 1
            counts["superseded"] += 1
            yield listings.superseding_row(url, match)
            continue
        counts["dropped" if match is not None else "kept"] += 1
        yield {"url": url, "outcome": "kept"} if match is None else listings.dropped_row(url, match)


def unusable_dates(counts: Counter[str]) -> str:
    """The count of the pages whose date was unusable, as the summary says it."""
    return f"unusable dates (taken as none): {counts['unusable_date']}"


def open_existing(db: str, max_distance: int | None) -> Index | None:
    """The index at `db`, or None when there is none yet (an import would create it)."""
    try:
        return open_index(db, max_distance=max_distance)
    except IndexNotFoundError:
        return None
