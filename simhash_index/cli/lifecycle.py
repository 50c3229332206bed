"""Commands that make an index forget: `forget`, `prune` and `reset` (docs/operating.md, "Forget")."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import click

from ..index.base import Forgotten
from ..index.records import parse_duration
from . import formats
from .group import db_option, open_index
from .inputs import IsoDateTime


class Duration(click.ParamType):  # type: ignore[type-arg]  # generic in click >= 8.2 only
    name = "DURATION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> timedelta:
        if isinstance(value, timedelta):
            return value
        try:
            return parse_duration(str(value))
        except ValueError as exc:
            self.fail(str(exc))


def said(forgotten: Forgotten) -> str:
    return f"forgot {forgotten.pages} pages stored and {forgotten.duplicates} duplicates logged"


@click.command()
@db_option
@click.argument("urls", nargs=-1, required=True)
def forget(db: str, urls: tuple[str, ...]) -> None:
    """Forget pages: stored ones, and the duplicates logged against them.

    A URL logged as a duplicate leaves the log. A page dropped as a copy of a
    forgotten one is checked anew when it comes back (docs/operating.md).
    Exits 1 when the index holds none of the URLs.
    """
    forgotten = open_index(db, write=True).forget(urls)
    click.echo(said(forgotten))
    if not (forgotten.pages or forgotten.duplicates):
        held = f"does not hold {formats.visible(urls[0])}" if len(urls) == 1 else f"holds none of the {len(urls)} URLs"
        raise click.ClickException(f"the index {held}: neither stored nor logged as a duplicate")


@click.command()
@db_option
@click.option(
    "--older-than", "older_than", type=Duration(), help="Forget pages stored longer ago than this (30d, 12h)."
)
@click.option("--before", type=IsoDateTime(), help="Forget pages stored before this ISO date or datetime (UTC).")
@click.option("--dry-run", is_flag=True, help="Say how many pages would be forgotten; forget nothing.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def prune(db: str, older_than: timedelta | None, before: datetime | None, dry_run: bool, yes: bool) -> None:
    """Forget the pages stored before a moment, and the duplicates logged
    against them or before it.

    Give --older-than or --before. Asks for confirmation first, naming how
    many pages it would forget (--yes does not ask; --dry-run only says).
    Deletes in short transactions, so a crawl writing to the index can go on
    meanwhile.
    """
    if (older_than is None) == (before is None):
        raise click.UsageError("give one of --older-than and --before")
    cutoff = before if before is not None else datetime.now(timezone.utc) - older_than  # type: ignore[operator]
    index = open_index(db, write=True)
    doomed = f"{index.stored_before(cutoff)} of the {len(index)} pages {index.url} stores"
    moment = cutoff.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    if dry_run:
        click.echo(f"dry run, nothing forgotten: prune would forget {doomed}, those stored before {moment}")
        return
    if not yes:
        click.confirm(f"Forget {doomed}, those stored before {moment}?", abort=True, err=True)
    click.echo(said(index.prune(before=cutoff)))


@click.command()
@db_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def reset(db: str, yes: bool) -> None:
    """Empty an index: every page stored and every duplicate logged.

    Asks for confirmation first, naming the index and what it holds (--yes
    does not ask). The index's settings stay.
    """
    index = open_index(db, write=True)
    if not yes:
        click.confirm(f"Empty {index.url}, which stores {len(index)} pages?", abort=True, err=True)
    click.echo(said(index.reset()))
