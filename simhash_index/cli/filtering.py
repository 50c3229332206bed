"""`simhash-index filter IN... OUT`: archives, as one, without their duplicate pages.

The pages are decided as `import` decides them (a run, into --db, so several archives can be
deduplicated against each other), all of them before OUT is written (a second pass over IN,
archives/copying.py).
"""

from __future__ import annotations

import click

from ..archives.copying import common_format, first_break, state, write_survivors
from ..archives.records import CUT
from ..errors import ArchiveError
from ..index.prefer import Prefer
from ..runs import Dropped, Fates, Kept, deduplicate_inputs
from .group import db_option
from .inputs import progress
from .outputs import Output
from .running import open_run_index, run_options, told, unusable_dates


@click.command("filter")
@db_option
@click.argument("archives", metavar="ARCHIVE...", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.argument("out", type=click.Path(dir_okay=False, writable=True, allow_dash=True))
@click.option(
    "--keep-revisits",
    is_flag=True,
    help="Write a WARC revisit record naming the page kept in place of each dropped response.",
)
@run_options
def filter_(
    db: str,
    archives: tuple[str, ...],
    out: str,
    keep_revisits: bool,
    prefer: Prefer,
    max_distance: int | None,
    added_words: int,
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
    byte, except the responses that did not survive, the crawler's revisits of them,
    and their request and metadata records (linked by WARC-Concurrent-To or
    WARC-Refers-To, or, unlinked, with the same WARC-Target-URI). Prints the records
    and bytes read and written (on stderr when OUT is stdout). A record whose
    Content-Length does not match it is reported, copied, and the filter exits 1 at
    the end. An archive cut short is an error before anything is decided or written
    (--allow-truncated: OUT holds the records before the cut, with a warning).

    OUT is - for stdout. A FIFO, a device or /dev/stdout is written as it goes; a
    symlink's target is written; a regular file is replaced only once complete and
    on disk (written as OUT.partial-XXXXXXXX first), keeping its mode and owner.
    """
    try:
        kind, _ = common_format(archives)
    except ArchiveError as exc:
        raise click.BadParameter(str(exc), param_hint="ARCHIVE") from None
    if keep_revisits and kind != "warc":
        raise click.UsageError("--keep-revisits writes WARC records, which an ARC archive cannot hold")
    output = Output(out)
    if any(output.same_as(archive) for archive in archives):
        raise click.BadParameter("is an archive read: write to another file", param_hint="OUT")
    for archive in archives:
        broken = first_break(archive)
        if broken is not None and not (broken.cut and allow_truncated):
            hint = f": {CUT}; nothing written (--allow-truncated filters it to there)" if broken.cut else ""
            raise click.ClickException(f"{archive} record at byte {broken.offset}: {broken.reason}{hint}")
    with output.open() as target:  # before the run: a folder OUT cannot be written to fails now
        seen = [state(archive) for archive in archives]
        index, fingerprinter = open_run_index(
            db, max_distance=max_distance, added_words=added_words, word_weights=word_weights, prefer=prefer
        )
        run = deduplicate_inputs(
            index,
            archives,
            fingerprinter=fingerprinter,
            prefer=prefer,
            workers=workers,
            allow_truncated=allow_truncated,
            keep_records=True,
            progress=progress,
        )
        fates = Fates()
        for outcome in told(run):
            if isinstance(outcome, (Kept, Dropped)):
                fates.add(outcome)
        gone = fates.gone()
        written = write_survivors(target, archives, run.records, gone, keep_revisits=keep_revisits, seen=seen)
    revisits = f" ({written.revisits} revisits)" if keep_revisits else ""
    of_them = f" and {written.revisits_of_gone} revisit records of them" if written.revisits_of_gone else ""
    dates = f"; {unusable_dates(run.counts)}" if run.counts.unusable_dates else ""
    read = sum(map(len, run.records))
    size = sum(seen_state[1] for seen_state in seen)
    click.echo(
        f"read {read} records ({size} bytes), {len(gone)} duplicate pages{of_them}; "
        f"wrote {written.records} records{revisits} ({written.bytes} bytes){dates}",
        err=output.is_stdout(),
    )
    if run.counts.bad:
        click.get_current_context().exit(1)
