"""What `import` and `filter` share: their options, the index a run decides against, and how a
run is told (a warning or an error on stderr for each page skipped and each bad line, as they
come; one summary line of its counts)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import click

from ..archives.records import is_archive
from ..errors import IndexNotFoundError
from ..fingerprinting.fingerprinter import Fingerprinter
from ..index.base import Index
from ..index.dry_run import DryRunIndex
from ..index.prefer import NAMED, Prefer
from ..runs import BadInput, Counts, Outcome, Refused, Skipped, Truncated
from . import formats
from .group import added_words_option, allow_truncated_option, max_distance_option, open_index, word_weights_option
from .inputs import fingerprinter_for

PREFER_HELP = (
    "Which copy of a page survives: the first met, the longest (most words of main text), or the newest "
    "(its own date, else the capture's WARC-Date or Last-Modified, else the later in the input)."
)


def run_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--prefer, --max-distance, --added-words, --workers, --word-weights and --allow-truncated."""
    for option in reversed(
        (
            click.option("--prefer", type=click.Choice(NAMED), default="first", show_default=True, help=PREFER_HELP),
            max_distance_option("The search radius: the largest Hamming distance that makes a page a near-duplicate."),
            added_words_option,
            click.option(
                "--workers",
                type=click.IntRange(min=0),
                help="Worker processes extracting and fingerprinting pages "
                "[default: one per CPU; 0: none, no crash isolation].",
            ),
            word_weights_option,
            allow_truncated_option,
        )
    ):
        command = option(command)
    return command


def open_run_index(
    db: str,
    *,
    max_distance: int | None,
    added_words: int,
    word_weights: str | None,
    prefer: Prefer,
    dry_run: bool = False,
    **create: Any,
) -> tuple[Index, Fingerprinter]:
    """The index a run decides against, created if need be (`create`: a new SQL index's layout
    options, keep_texts), and the Fingerprinter of its fingerprints; for a dry run, a DryRunIndex
    over it, which writes nothing (and creates nothing). Closed when the command ends."""
    words = added_words or None  # 0: the plain similarity rule
    source = open_existing(db, max_distance)
    fingerprinter = fingerprinter_for(None if source is None else source.scheme, word_weights)
    if dry_run:
        dry = DryRunIndex(
            source, scheme=fingerprinter.scheme, max_distance=max_distance, prefer=prefer, added_words=words
        )
        return click.get_current_context().with_resource(dry), fingerprinter
    if source is not None:
        source.close()
    index = open_index(
        db,
        write=True,
        create=True,
        max_distance=max_distance,
        added_words=words,
        scheme=fingerprinter.scheme,
        prefer=prefer,
        **create,
    )
    return index, fingerprinter


def open_existing(db: str, max_distance: int | None) -> Index | None:
    """The index at `db`, or None when there is none yet (a run would create it)."""
    try:
        return open_index(db, max_distance=max_distance)
    except IndexNotFoundError:
        return None


def told(outcomes: Iterable[Outcome], *, after: str = "") -> Iterator[Outcome]:
    """The outcomes, each told on stderr as it comes: a page skipped unread or refused (a warning
    and why), a bad line or record (an error), an archive read up to its cut, the first date that
    could not be used. A bad line that ends the run ends the command (`after`: what became of the
    pages before it)."""
    dated = False
    for outcome in outcomes:
        if isinstance(outcome, BadInput):
            if outcome.fatal:
                raise click.ClickException(f"{outcome.where}: {outcome.error}{after}")
            click.echo(f"Error: {outcome.where}: {outcome.error}; skipped", err=True)
        elif isinstance(outcome, Truncated):
            click.echo(f"Warning: {outcome.where}: {outcome.reason}", err=True)
        else:
            page = outcome.page
            if page.unusable_date is not None and not dated:
                dated = True
                shown = formats.visible(page.unusable_date)
                click.echo(f"Warning: {page.where}: {shown}: taken as no date (others counted)", err=True)
            if isinstance(outcome, (Refused, Skipped)) and outcome.reason is not None:
                click.echo(f"Warning: {page.where}: {outcome.reason}; skipped", err=True)
        yield outcome


def summary(counts: Counts, files: Iterable[str], prefer: Prefer) -> str:
    """The run's counts on one line: each page in one of kept, dropped, superseded (kept, then
    superseded by a page read after it), skipped and refused; then the bad lines (records, when
    every file is an archive), the pages that superseded a stored copy, the dates not usable, and
    an archive's records that are not pages, by why."""
    line = f"kept {counts.kept}, dropped {counts.dropped}"
    if counts.superseded:
        line += f", superseded {counts.superseded}"
    line += f", skipped {counts.skipped} (no text)"
    if counts.refused:
        line += f", refused {counts.refused} (unusable url)"
    if counts.bad:
        line += f", {counts.bad} bad {'records' if all(map(is_archive, files)) else 'lines'} skipped"
    if counts.supersedings:
        line += f"; {counts.supersedings} pages superseded a stored copy (--prefer {prefer})"
    if counts.unusable_dates:
        line += f"; {unusable_dates(counts)}"
    if counts.not_pages:
        reasons = sorted(((n, reason) for reason, n in counts.not_pages.items()), reverse=True)
        line += "; records not pages: " + ", ".join(f"{n} {reason}" for n, reason in reasons)
    return line


def unusable_dates(counts: Counts) -> str:
    """The count of the pages whose date could not be used, as a summary says it."""
    return f"unusable dates (taken as none): {counts.unusable_dates}"
