"""`simhash-index report --html FILE`: one self-contained HTML page over an index.

Totals, histograms of distance and similarity, and the clusters largest first, each drop
beside its kept page. Every string from a page is escaped; the page loads nothing and runs
nothing (no script, and a Content-Security-Policy that forbids both), so it opens offline.
"""

from __future__ import annotations

import html
import itertools
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import IO

import click

from ..index import texts
from ..index.base import Cluster, Index
from ..index.records import Duplicate
from . import formats
from .commands import cli, db_option, open_index

SIMILARITY_BINS = 20  # 0.05 wide
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'none'"
STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;max-width:70em}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 8px;text-align:left;vertical-align:top}
th{border-bottom:1px solid #999}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.bar{display:inline-block;height:.9em;background:#4a7bb7}.totals td{font-size:1.1em}
section.cluster{border-top:1px solid #ccc;padding:.5em 0}.kept{font-weight:600;word-break:break-all}
td.url{word-break:break-all}.muted{color:#777}
tr.diff td{font-size:.9em;color:#444;padding-left:2em}del{background:#fdd}ins{background:#dfd;text-decoration:none}
"""


def e(value: object) -> str:
    """Text for HTML, quotes included (page-controlled strings reach attributes too)."""
    return html.escape("" if value is None else str(value), quote=True)


def link(url: str) -> str:
    """A URL as a link when it is http(s), else as text (a javascript: URL must not be clickable)."""
    if url.lower().startswith(("http://", "https://")):
        return f'<a href="{e(url)}" rel="noreferrer">{e(url)}</a>'
    return e(url)


def bars(rows: list[tuple[str, int]], name: str) -> str:
    largest = max((count for _, count in rows), default=0) or 1
    cells = "".join(
        f'<tr class="bin"><td>{e(label)}</td><td class="n">{count}</td>'
        f'<td><span class="bar" style="width:{round(300 * count / largest)}px"></span></td></tr>'
        for label, count in rows
    )
    head = f'<tr><th>{name}</th><th class="n">duplicates</th><th></th></tr>'
    return f'<table class="histogram" id="{name}">{head}{cells}</table>'


def similarity_rows(duplicates: Iterable[Duplicate]) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(distance histogram, similarity histogram) rows; exact-text drops counted apart."""
    distances: Counter[int] = Counter()
    bins: Counter[int] = Counter()
    exact = unknown = 0
    for duplicate in duplicates:
        distances[duplicate.distance] += 1
        if duplicate.exact:
            exact += 1
        elif duplicate.similarity is None:
            unknown += 1
        else:
            bins[min(SIMILARITY_BINS - 1, int(duplicate.similarity * SIMILARITY_BINS))] += 1
    by_distance = [(str(d), distances[d]) for d in range(max(distances, default=-1) + 1)]
    low = min(bins, default=SIMILARITY_BINS - 1)
    width = 1 / SIMILARITY_BINS
    by_similarity = [(f"{b * width:.2f}–{(b + 1) * width:.2f}", bins[b]) for b in range(low, SIMILARITY_BINS)]
    by_similarity += [("exact text", exact)] + ([("no sketch", unknown)] if unknown else [])
    return by_distance, by_similarity


def score(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def diff_html(kept: str | None, dropped: str | None) -> str:
    """The words that differ, as <del> and <ins>; empty unless both texts are kept and differ."""
    if kept is None or dropped is None:
        return ""
    found = texts.word_diff(kept, dropped)
    if all(p.kind == "same" for p in found):
        return ""
    marks = {"same": "{}", "removed": "<del>{}</del>", "added": "<ins>{}</ins>"}
    pieces = " ".join(marks[p.kind].format(e(p.words)) for p in found)
    return f'<tr class="diff"><td colspan="5">{pieces}</td></tr>'


def cluster_html(cluster: Cluster, index: Index) -> str:
    kept = index.text(cluster.key)
    rows = "".join(
        f'<tr class="drop"><td class="url">{link(d.key)}</td><td class="n">{d.distance}</td>'
        f'<td class="n">{score(d.similarity)}</td><td>{"exact" if d.exact else "near"}</td>'
        f'<td class="muted">{e(d.seen_at.isoformat(sep=" ", timespec="seconds"))}</td></tr>'
        + (diff_html(kept, index.text(d.key)) if kept is not None else "")
        for d in cluster.duplicates
    )
    return (
        f'<section class="cluster" data-size="{len(cluster.duplicates)}">'
        f'<div class="kept">kept: {link(cluster.key)} '
        f'<span class="muted">({len(cluster.duplicates)} dropped)</span></div>'
        '<table><tr><th>dropped</th><th class="n">distance</th><th class="n">similarity</th><th>rule</th>'
        f"<th>seen at (UTC)</th></tr>{rows}</table></section>"
    )


def write_report(index: Index, out: IO[str], *, limit: int | None = None) -> str:
    """The report, streamed: the log is read twice (histograms, then clusters), never held.
    Returns what it shows: pages stored, duplicates, clusters."""
    duplicates = exact = 0
    for duplicate in index.logged():
        duplicates += 1
        exact += duplicate.exact
    by_distance, by_similarity = similarity_rows(index.logged())
    stored = len(index)
    totals = [("pages stored", "documents", stored), ("duplicates", "duplicates", duplicates)]
    totals += [("exact text", "exact", exact), ("near, verified", "near", duplicates - exact)]
    out.write(
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">'
        f"<title>simhash-index report: {e(index.url)}</title><style>{STYLE}</style></head><body>"
        f'<h1>simhash-index report</h1><p class="muted">{e(index.url)}, '
        f"{e(datetime.now(timezone.utc).isoformat(sep=' ', timespec='seconds'))}</p>"
        '<table class="totals">'
        + "".join(
            f'<tr><td>{label}</td><td class="n" id="{key}" data-count="{n}">{n}</td></tr>' for label, key, n in totals
        )
        + "</table><h2>Distance</h2>"
        + bars(by_distance, "distance")
        + "<h2>Similarity</h2>"
        + bars(by_similarity, "similarity")
        + "<h2>Clusters, largest first</h2>"
    )
    shown = 0
    for cluster in itertools.islice(index.clusters(), limit):
        out.write(cluster_html(cluster, index))
        shown += 1
    if limit is not None and shown == limit:
        out.write(f'<p class="muted">the {limit} largest clusters are shown (--limit)</p>')
    out.write("</body></html>\n")
    near = duplicates - exact
    return f"{stored} pages stored, {duplicates} duplicates ({exact} exact, {near} near), {shown} clusters"


@cli.command()
@db_option
@click.option(
    "--html",
    "html_file",
    required=True,
    type=click.Path(dir_okay=False, writable=True),
    help="Write the report to this HTML file (- for stdout).",
)
@click.option("--limit", type=click.IntRange(min=1), help="At most this many clusters [default: all].")
def report(db: str, html_file: str, limit: int | None) -> None:
    """A self-contained HTML page over the index.

    Totals, histograms of distance and similarity, and the clusters largest
    first: each kept page with the pages dropped as its duplicates, their
    distance, similarity and rule. Opens offline; page text is escaped.
    Prints the file written and its counts.
    """
    index = open_index(db)
    with click.open_file(html_file, "w", encoding="utf-8") as out:
        shown = write_report(index, out, limit=limit)
    if html_file != "-":  # on stdout, the report is the output
        click.echo(f"wrote {formats.visible(html_file)}: {shown}")
