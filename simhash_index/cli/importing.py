"""`simhash-index import`: deduplicate JSON lines corpora and web archives into an index, as the
pipeline does (a run, simhash_index.runs); `--dry-run` lists what the run does to each page."""

from __future__ import annotations

import sys
from collections.abc import Iterable

import click

from .. import defaults
from ..archives.records import is_archive
from ..index.prefer import Prefer
from ..index.sql.layouts import ASSIGNMENTS, LAYOUTS
from ..runs import BadInput, Dropped, Fates, Kept, Outcome, PageOutcome, Truncated, deduplicate_inputs
from . import listings
from .group import FILE_OR_STDIN, db_option, format_option, output_format
from .inputs import progress
from .running import open_run_index, run_options, summary, told


@click.command("import")
@db_option
@click.argument("files", metavar="FILE...", nargs=-1, required=True, type=FILE_OR_STDIN)
@click.option("--dry-run", is_flag=True, help="List what would be kept and dropped; write nothing.")
@click.option(
    "--keep-texts", is_flag=True, help="Keep each page's text, compressed, for explain and report diffs (?texts=1)."
)
@format_option()
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
@click.option("--strict", is_flag=True, help="Stop at the first bad line (by default it is reported and skipped).")
@run_options
def import_(
    db: str,
    files: tuple[str, ...],
    dry_run: bool,
    keep_texts: bool,
    fmt: str | None,
    layout: str | None,
    block_assignment: str | None,
    strict: bool,
    prefer: Prefer,
    max_distance: int | None,
    added_words: int,
    workers: int | None,
    word_weights: str | None,
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
    lists each page (--format) with what the import does to it by its end (a page kept,
    then superseded by one read after it, is listed as superseded); the counts go to stderr.
    A bad line (an archive's record whose Content-Length does not match it) is
    reported with its number (offset) and skipped, and the import exits 1 at the
    end (--strict stops at the first). An archive cut short is an error after
    the pages before the cut are imported (--allow-truncated: a warning).
    """
    if fmt is not None and not dry_run:
        raise click.UsageError("--format chooses the listing of --dry-run; an import prints only its counts")
    create = {"layout": layout, "block_assignment": block_assignment, "keep_texts": keep_texts}
    index, fingerprinter = open_run_index(
        db,
        max_distance=max_distance,
        added_words=added_words,
        word_weights=word_weights,
        prefer=prefer,
        dry_run=dry_run,
        **create,
    )
    run = deduplicate_inputs(
        index,
        files,
        fingerprinter=fingerprinter,
        prefer=prefer,
        workers=workers,
        strict=strict,
        allow_truncated=allow_truncated,
        progress=progress,
    )
    before = "pages" if any(map(is_archive, files)) else "lines"
    outcomes = told(run, after="" if dry_run else f"; the {before} before it were imported")
    if dry_run:
        _list(outcomes, output_format(fmt))
        click.echo(f"dry run, nothing written: {summary(run.counts, files, prefer)}", err=True)
    else:
        for _ in outcomes:
            pass
        click.echo(summary(run.counts, files, prefer))
    if run.counts.bad:
        click.get_current_context().exit(1)


def _list(outcomes: Iterable[Outcome], fmt: str) -> None:
    """The dry run's listing: each page's outcome at the end of the run (Fates), in input order;
    the rows wait for the end, as a page kept may be superseded by a page read after it."""
    pages: list[PageOutcome] = []
    fates = Fates()
    try:
        for outcome in outcomes:
            if isinstance(outcome, (Kept, Dropped)):
                fates.add(outcome)
            if not isinstance(outcome, (BadInput, Truncated)):
                pages.append(outcome)
    except click.ClickException:  # a run ended by a bad line: the pages decided before it
        listings.write_dry_run(pages, fates.copies(), fmt, sys.stdout)
        raise
    listings.write_dry_run(pages, fates.copies(), fmt, sys.stdout)
