"""`stats`, `duplicates` and `clusters`: what the index holds, listed."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any

import click

from . import formats, listings, reports
from .group import db_option, format_option, open_index, output_format
from .inputs import IsoDateTime


@click.command()
@db_option
@format_option(("table", "json"), piped="json")
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=0), help="How many hosts to list.")
def stats(db: str, fmt: str | None, top: int) -> None:
    """Pages stored, duplicates, distances and top hosts.

    Counts the pages stored and the duplicates logged (exact and near), how
    many at each Hamming distance, and the hosts with the most dropped pages.
    """
    listings.write_stats(reports.stats(open_index(db), top=top), output_format(fmt, "json"), sys.stdout)


@click.command()
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
    exact-text match), added (about how many words the page adds to the one it
    duplicates; empty when not known), exact, radius, seen_at (UTC).
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


@click.command()
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
