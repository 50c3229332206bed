"""The `simhash-index` command line: a thin click layer over the library.

Each command makes one library call. Library errors become one line on stderr
and a non-zero exit: 2 when the database cannot be opened or has no simhash
tables, 1 for everything else (click's own usage errors exit 2 too).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any

import click
from sqlalchemy.exc import SQLAlchemyError

from .. import __version__, defaults
from ..errors import (
    IndexNotFoundError,
    IndexUnavailableError,
    LayoutMismatchError,
    SchemaVersionError,
    SimhashIndexError,
)
from ..index.base import Index
from ..index.factory import open_index as open_backend
from ..index.probes import MAX_HALVES_RADIUS
from . import formats, listings, reports
from .inputs import IsoDateTime


class DatabaseError(click.ClickException):
    """The database cannot be opened, or holds no simhash index."""

    exit_code = 2


def one_line(error: object) -> str:
    """A message on one line: library messages may span several."""
    return " ".join(part.strip() for part in str(error).splitlines() if part.strip())


class _Group(click.Group):
    """Turns the library's errors into one-line click errors, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (IndexUnavailableError, IndexNotFoundError, SchemaVersionError, LayoutMismatchError) as exc:
            raise DatabaseError(one_line(exc)) from None
        except SimhashIndexError as exc:
            raise click.ClickException(one_line(exc)) from None
        except SQLAlchemyError as exc:
            raise DatabaseError(f"database error: {one_line(getattr(exc, 'orig', None) or exc)}") from None
        except BrokenPipeError:
            raise  # click exits quietly when the reader of stdout goes away
        except (OSError, ValueError) as exc:
            raise click.ClickException(one_line(exc)) from None


# -- shared options ---------------------------------------------------------------


def db_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--db",
        metavar="URL",
        envvar=defaults.DATABASE_URL_ENV,
        default=defaults.DATABASE_URL,
        show_default=True,
        show_envvar=True,
        help="Index URL: sqlite:///path, postgresql://user@host/db or redis://host:6379/0?prefix=P.",
    )(command)


def format_option(
    choices: tuple[str, ...] = formats.FORMATS, piped: str = "jsonl"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        help=f"Output format [default: table on a terminal, {piped} when piped].",
    )


def max_distance_option(help: str) -> Callable[..., Any]:
    return click.option(
        "--max-distance",
        type=click.IntRange(0, defaults.MAX_SUPPORTED_DISTANCE),
        help=f"{help} Default: {defaults.MAX_DISTANCE}, or {MAX_HALVES_RADIUS} on a halves index.",
    )


def word_weights_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--word-weights",
        metavar="FILE",
        type=click.Path(dir_okay=False),
        help="A weight table, one word and weight per line, as the index was built with (SIMHASH_WORD_WEIGHTS).",
    )(command)


def output_format(fmt: str | None, piped: str = "jsonl") -> str:
    return fmt or formats.default_format(piped)


# -- opening the database and reading pages ---------------------------------------


def open_index(
    db: str,
    *,
    create: bool = False,
    max_distance: int | None = None,
    layout: str | None = None,
    block_assignment: str | None = None,
    scheme: str | None = None,
) -> Index:
    """The index at `db`, closed when the command ends. Commands that only read open it
    read-only: they never create or change anything (not even a file's journal mode).
    `layout`, `block_assignment` and `scheme` (the fingerprint settings) describe a new index."""
    index = open_backend(
        db,
        create=create,
        read_only=not create,
        scheme=scheme,
        max_distance=max_distance,
        layout=layout,
        block_assignment=block_assignment,
    )
    return click.get_current_context().with_resource(index)


# -- commands ---------------------------------------------------------------------


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="simhash-index")
def cli() -> None:
    """Inspect and query a simhash-index near-duplicate database.

    The database is --db, else $SIMHASH_DATABASE_URL, else sqlite:///simhash.db.
    """


@cli.command()
@db_option
@format_option(("table", "json"), piped="json")
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=0), help="How many hosts to list.")
def stats(db: str, fmt: str | None, top: int) -> None:
    """Pages stored, duplicates, distances and top hosts.

    Counts the pages stored and the duplicates logged (exact and near), how
    many at each Hamming distance, and the hosts with the most dropped pages.
    """
    listings.write_stats(reports.stats(open_index(db), top=top), output_format(fmt, "json"), sys.stdout)


@cli.command()
@db_option
@format_option()
@click.option(
    "--host",
    callback=lambda ctx, param, value: _host_filter(value),
    help="Only pages on this host or its subdomains (example.com takes in www.example.com); host:port for one port.",
)
@click.option("--since", type=IsoDateTime(), help="Only pages dropped at or after this ISO date or datetime (UTC).")
@click.option("--max-distance", type=click.IntRange(0, 64), help="Only pages within this many bits of the page kept.")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many rows.")
@click.option("--url", help="Only the page dropped with this URL (an error when it was not dropped).")
@click.option("--near", is_flag=True, help="Only near duplicates (verified by similarity).")
@click.option("--exact", is_flag=True, help="Only exact duplicates (the same normalised text).")
def duplicates(
    db: str,
    fmt: str | None,
    host: reports.HostFilter | None,
    since: datetime | None,
    max_distance: int | None,
    limit: int | None,
    url: str | None,
    near: bool,
    exact: bool,
) -> None:
    """The pages dropped as duplicates.

    One row per dropped page, in the order they were first dropped: url,
    duplicate_of, distance, similarity (the sketches' estimate; empty for an
    exact-text match), exact, seen_at (UTC).
    """
    if near and exact:
        raise click.UsageError("give at most one of --near and --exact")
    rule = True if exact else (False if near else None)
    index = open_index(db)
    if url is not None:
        found = index.duplicate(url)
        if found is None:
            raise click.ClickException(f"{formats.visible(url)} is not logged as a duplicate in the database")
        rows: Any = reports.duplicates_among([found], host=host, since=since, max_distance=max_distance, exact=rule)
    else:
        rows = reports.duplicates(index, host=host, since=since, max_distance=max_distance, limit=limit, exact=rule)
    listings.write_duplicates(rows, output_format(fmt), sys.stdout)


@cli.command()
@db_option
@format_option()
@click.option("--limit", type=click.IntRange(min=1), help="At most this many clusters.")
def clusters(db: str, fmt: str | None, limit: int | None) -> None:
    """Stored pages with their duplicates, largest first.

    json and jsonl give one object per cluster, with its duplicates in a list;
    csv and table give one row per duplicate: its distance and similarity
    (the sketches' estimate; empty for an exact-text match).
    """
    listings.write_clusters(reports.clusters(open_index(db), limit=limit), output_format(fmt), sys.stdout)


def _host_filter(value: str | None) -> reports.HostFilter | None:
    try:
        return None if value is None else reports.HostFilter.parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--host") from None


FILE_OR_STDIN = click.Path(exists=True, dir_okay=False, allow_dash=True)


# Commands in modules of their own register themselves on `cli` when imported.
from . import comparing, explaining, filtering, html_report, importing, lifecycle  # noqa: E402, F401
