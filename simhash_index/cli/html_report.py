"""`simhash-index report --html FILE`: one self-contained HTML page over an index, for review.

The near-duplicates first, least similar first (the ones worth a look), each with its word
diff when texts are kept (when none are, the page says so and how to keep them); the dropped
pages by host; histograms; then the clusters, collapsed. A URL shows its path emphasised, its
origin (scheme and host) muted, or not at all when every page of the report shares it (said
once at the top). Every string from a page goes through `e`; the page loads nothing and runs
only its own script, which its Content-Security-Policy allows by hash (report_assets.py).
"""

from __future__ import annotations

import html
import itertools
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import IO
from urllib.parse import quote, urlsplit

import click

from ..index import texts
from ..index.base import Cluster, Index
from ..index.records import Duplicate
from .formats import visible
from .group import db_option, open_index
from .report_assets import CSP, SCRIPT, STYLE
from .reports import host_of

SIMILARITY_BINS = 20  # 0.05 wide


def e(value: object) -> str:
    """Text for HTML, quotes included (page-controlled strings reach attributes too)."""
    return html.escape("" if value is None else str(value), quote=True)


def origin_of(url: str) -> str | None:
    """The scheme and host (and port) of an http(s) URL, as written in it; None for any other.

    >>> origin_of("https://Example.com:8080/a/b?c"), origin_of("javascript:alert(1)")
    ('https://Example.com:8080', None)
    """
    if not url.lower().startswith(("http://", "https://")):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unbalanced IPv6 bracket
        return None
    return url[: len(parts.scheme) + 3 + len(parts.netloc)]


def link(url: str, shared: str | None = None) -> str:
    """A URL as a link when it is http(s), else as text (a javascript: URL must not be clickable).

    The text shows its origin muted and its path, which may break after each `/`; without the
    origin when it is `shared` (every page of the report has it). Control and bidi characters
    show as escapes, as the listings do (U+202E would show `evil.example/\u202egnp.exe` as
    `evil.example/exe.png`); the link goes to the URL as it is.
    """
    origin = origin_of(url)
    if origin is None:
        return e(visible(url))
    path = e(visible(url[len(origin) :]) or "/").replace("/", "/<wbr>")
    shown = path if origin == shared else f'<span class="origin">{e(visible(origin))}</span>{path}'
    return f'<a href="{e(url)}" rel="noreferrer">{shown}</a>'


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


def moment(seen_at: datetime) -> str:
    """A UTC time to the second, without its offset (the column says UTC)."""
    return e(seen_at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"))


def score(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def diff_html(kept: str | None, dropped: str | None, columns: int) -> str:
    """The words that differ, as <del> and <ins>; empty unless both texts are kept and differ."""
    if kept is None or dropped is None:
        return ""
    found = texts.word_diff(kept, dropped)
    if all(p.kind == "same" for p in found):
        return ""
    marks = {"same": "{}", "removed": "<del>{}</del>", "added": "<ins>{}</ins>"}
    pieces = " ".join(marks[p.kind].format(e(p.words)) for p in found)
    return f'<tr class="diff"><td colspan="{columns}">{pieces}</td></tr>'


def near_html(duplicate: Duplicate, index: Index, shared: str | None) -> str:
    """A near-duplicate as a table body: its row (the dropped page above the page kept), and
    its diff row when texts are kept."""
    kept = index.text(duplicate.duplicate_of)
    diff = diff_html(kept, index.text(duplicate.key), columns=4) if kept is not None else ""
    return (
        f'<tbody {drop_data(duplicate, "near")} data-kept="{e(duplicate.duplicate_of)}">'
        f'<tr><td class="url"><div class="dropped">{link(duplicate.key, shared)}</div>'
        f'<div class="kept"><span class="label">kept</span> {link(duplicate.duplicate_of, shared)}</div></td>'
        f'<td class="n">{score(duplicate.similarity)}</td><td class="n">{duplicate.distance}</td>'
        f'<td class="muted when">{moment(duplicate.seen_at)}</td></tr>{diff}</tbody>'
    )


def drop_data(duplicate: Duplicate, kind: str) -> str:
    """The class and the data attributes the script filters and sorts a dropped page by
    (an exact-text copy counts as similarity 1)."""
    similarity = 1.0 if duplicate.exact else duplicate.similarity
    return (
        f'class="{kind}" data-url="{e(duplicate.key)}" data-host="{e(host_of(duplicate.key) or "")}" '
        f'data-rule="{duplicate.rule}" data-similarity="{score(similarity)}" data-distance="{duplicate.distance}" '
        f'data-seen="{e(duplicate.seen_at.isoformat())}"'
    )


def near_table(near: list[Duplicate], index: Index, shared: str | None) -> str:
    heads = [("url", "dropped, and the page kept", ""), ("similarity", "similarity", "n")]
    heads += [("distance", "distance", "n"), ("seen", "seen at (UTC)", "")]
    cells = "".join(
        f'<th class="{css}" data-sort="{key}" aria-sort="{"ascending" if key == "similarity" else "none"}">'
        f'<button type="button">{label}</button></th>'
        for key, label, css in heads
    )
    rows = "".join(near_html(d, index, shared) for d in near)
    return f'<table id="near-duplicates"><thead><tr>{cells}</tr></thead>{rows}</table>'


def cluster_html(cluster: Cluster, shared: str | None) -> str:
    """A cluster, collapsed: the kept page and its counts, and inside, each dropped page
    (the near ones' diffs are in the near-duplicates table)."""
    exact = sum(d.exact for d in cluster.duplicates)
    rows = "".join(
        f'<tr {drop_data(d, "drop")}><td class="url">{link(d.key, shared)}</td><td class="n">{d.distance}</td>'
        f'<td class="n">{score(d.similarity)}</td><td><span class="rule {d.rule}">{d.rule}</span></td>'
        f'<td class="muted when">{moment(d.seen_at)}</td></tr>'
        for d in cluster.duplicates
    )
    return (
        f'<details class="cluster" data-size="{len(cluster.duplicates)}" data-host="{e(host_of(cluster.key) or "")}">'
        f'<summary><span class="kept">{link(cluster.key, shared)}</span> <span class="muted">{len(cluster.duplicates)} '
        f"dropped: {exact} exact, {len(cluster.duplicates) - exact} near</span></summary>"
        '<table><tr><th>dropped</th><th class="n">distance</th><th class="n">similarity</th><th>rule</th>'
        f"<th>seen at (UTC)</th></tr>{rows}</table></details>"
    )


def host_table(hosts: dict[str, Counter[str]]) -> str:
    """Dropped pages by host, most first; each host a link to the report filtered on it."""
    rows = "".join(
        f'<tr class="host"><td>{host_link(host)}</td>'
        f'<td class="n">{n["near"]}</td><td class="n">{n["exact"]}</td><td class="n">{n.total()}</td></tr>'
        for host, n in sorted(hosts.items(), key=lambda item: (-item[1].total(), item[0]))
    )
    head = '<tr><th>host</th><th class="n">near</th><th class="n">exact</th><th class="n">dropped</th></tr>'
    return f'<table id="hosts">{head}{rows}</table>'


def host_link(host: str) -> str:
    """A link to the report filtered on a host; text for the pages without one."""
    return f'<a href="#host={e(quote(host, safe=""))}">{e(host)}</a>' if host else '<span class="muted">no host</span>'


def filters(hosts: Iterable[str]) -> str:
    """The controls; the script reads and writes them through the URL fragment."""
    options = "".join(f'<option value="{e(host)}">{e(host)}</option>' for host in sorted(hosts) if host)
    return (
        '<form id="filters"><label>host <select name="host"><option value="">all</option>'
        f"{options}</select></label>"
        '<label>rule <select name="rule"><option value="">all</option><option value="near">near</option>'
        '<option value="exact">exact</option></select></label>'
        '<label>similarity from <input name="min" type="number" min="0" max="1" step="0.01"></label>'
        '<label>to <input name="max" type="number" min="0" max="1" step="0.01"></label>'
        '<span id="shown"></span></form>'
    )


def texts_note(index: Index) -> str:
    """When the index keeps no texts, what the report cannot show, and the setting that changes it."""
    if index.text_sizes().texts:
        return ""
    return (
        '<p class="note" id="no-texts">This index keeps no texts, so the words that differ between a dropped '
        "page and the page kept cannot be shown. To keep them for the pages checked from now on, crawl with "
        "<code>SIMHASH_KEEP_TEXTS = True</code>, import with <code>--keep-texts</code>, or add "
        "<code>?texts=1</code> to the index URL.</p>"
    )


def origin_line(shared: str | None) -> str:
    """The origin every page of the report shares, said once (the tables show paths only)."""
    if shared is None:
        return ""
    return f'<p id="origin">Every page is on <b>{e(visible(shared))}</b>: the tables show their paths.</p>'


def least_similar_first(duplicate: Duplicate) -> tuple[bool, float]:
    return duplicate.similarity is None, duplicate.similarity or 0.0


def write_report(index: Index, out: IO[str], *, limit: int | None = None) -> str:
    """The report: the near-duplicates (held, to sort them), then the clusters, streamed.
    Returns what it shows: pages stored, duplicates, clusters."""
    duplicates = exact = 0
    hosts: dict[str, Counter[str]] = {}
    origins: set[str | None] = set()
    near: list[Duplicate] = []
    for duplicate in index.logged():
        duplicates += 1
        exact += duplicate.exact
        hosts.setdefault(host_of(duplicate.key) or "", Counter())[duplicate.rule] += 1
        origins.update((origin_of(duplicate.key), origin_of(duplicate.duplicate_of)))
        if not duplicate.exact:
            near.append(duplicate)
    shared = next(iter(origins)) if len(origins) == 1 else None  # every page shown is on this origin
    near = sorted(near, key=least_similar_first)[:limit]
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
        + origin_line(shared)
        + '<table class="totals">'
        + "".join(
            f'<tr><td>{label}</td><td class="n" id="{key}" data-count="{n}">{n}</td></tr>' for label, key, n in totals
        )
        + "</table>"
        + filters(hosts)
        + "<h2>Near-duplicates, least similar first</h2>"
        + '<p class="muted">The pages most worth a look: dropped as near, not exact, copies. '
        + "Click a column to sort; filter above, or by a host below.</p>"
        + texts_note(index)
        + near_table(near, index, shared)
        + (f'<p class="muted">the {limit} least similar are shown (--limit)</p>' if len(near) == limit else "")
        + "<h2>By host</h2>"
        + host_table(hosts)
        + "<h2>Distance</h2>"
        + bars(by_distance, "distance")
        + "<h2>Similarity</h2>"
        + bars(by_similarity, "similarity")
        + "<h2>Clusters, largest first</h2>"
        + '<p class="muted">Each kept page with every copy dropped, exact and near; open one to see them.</p>'
    )
    shown = 0
    for cluster in itertools.islice(index.clusters(), limit):
        out.write(cluster_html(cluster, shared))
        shown += 1
    if limit is not None and shown == limit:
        out.write(f'<p class="muted">the {limit} largest clusters are shown (--limit)</p>')
    out.write(f"<script>{SCRIPT}</script></body></html>\n")
    kinds = f"{exact} exact, {duplicates - exact} near"
    return f"{stored} pages stored, {duplicates} duplicates ({kinds}), {shown} clusters"


@click.command()
@db_option
@click.option(
    "--html",
    "html_file",
    required=True,
    type=click.Path(dir_okay=False, writable=True),
    help="Write the report to this HTML file (- for stdout).",
)
@click.option(
    "--limit", type=click.IntRange(min=1), help="At most this many near-duplicates and clusters [default: all]."
)
def report(db: str, html_file: str, limit: int | None) -> None:
    """A self-contained HTML page over the index, for review.

    Totals; the near-duplicates, least similar first, each beside its kept page
    with the words that differ when texts are kept; the dropped pages by host;
    histograms of distance and similarity; and the clusters, largest first,
    collapsed. A small script allowed by its hash filters by host, rule and
    similarity and sorts; the page loads nothing and escapes every page's text.
    Prints the file written and its counts.
    """
    index = open_index(db)
    with click.open_file(html_file, "w", encoding="utf-8") as out:
        shown = write_report(index, out, limit=limit)
    if html_file != "-":  # on stdout, the report is the output
        click.echo(f"wrote {visible(html_file)}: {shown}")
