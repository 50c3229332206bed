"""The rows and columns of each report the command line prints (duplicates, matches, clusters,
stats, an import's dry run), written in any of the output formats."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TextIO

from ..runs import Copy, Dropped, Kept, Page, PageOutcome, Skipped
from .formats import bar, write_json, write_objects, write_rows, write_table

if TYPE_CHECKING:
    from ..index.base import Cluster, Description
    from ..index.records import Duplicate, Match
    from .reports import Stats


DUPLICATE_COLUMNS = ("url", "duplicate_of", "distance", "similarity", "added", "exact", "radius", "seen_at")


def score(similarity: float | None) -> float | None:
    """A similarity estimate as shown: three decimals (the sketch's precision is about 0.02)."""
    return None if similarity is None else round(similarity, 3)


def write_duplicates(duplicates: Iterable[Duplicate], fmt: str, out: TextIO) -> None:
    rows = (
        {
            "url": d.key,
            "duplicate_of": d.duplicate_of,
            "distance": d.distance,
            "similarity": score(d.similarity),
            "added": d.added,
            "exact": d.exact,
            "radius": d.radius,
            "seen_at": d.seen_at,
        }
        for d in duplicates
    )
    write_rows(rows, DUPLICATE_COLUMNS, fmt, out, numeric={"distance", "similarity", "added", "radius"})


def write_matches(matches: Iterable[Match], fmt: str, out: TextIO) -> None:
    """Stored pages near a query: url, simhash (16 hex digits), distance, bit_similarity (the share
    of bits alike), similarity (of the sketches: what decides a duplicate)."""
    rows = (
        {
            "url": m.key,
            "simhash": hex_or_none(m.fingerprint),
            "distance": m.distance,
            "bit_similarity": bits_alike(m.distance),
            "similarity": score(m.similarity),
        }
        for m in matches
    )
    write_rows(rows, MATCH_COLUMNS, fmt, out, numeric={"distance", "bit_similarity", "similarity"})


MATCH_COLUMNS = ("url", "simhash", "distance", "bit_similarity", "similarity")


def bits_alike(distance: int, bits: int = 64) -> float:
    """The share of a fingerprint's bits two pages agree on, as shown: 1 - distance / bits, three decimals."""
    return round(1 - distance / bits, 3)


DRY_RUN_COLUMNS = ("url", "outcome", "duplicate_of", "distance", "exact", "similarity", "supersedes")


def write_dry_run(pages: Iterable[PageOutcome], copies: Mapping[Page, Copy], fmt: str, out: TextIO) -> None:
    """What an import does, a row per page, as it stands at the run's end (`copies`: the pages that
    did not survive it): kept (and the stored copy it supersedes), superseded (kept, then superseded
    by a page read after it) or dropped (the page it is a copy of at the end, and the evidence),
    skipped, refused."""
    rows = (dry_run_row(page, copies) for page in pages)
    write_rows(rows, DRY_RUN_COLUMNS, fmt, out, numeric={"distance", "similarity"})


def dry_run_row(outcome: PageOutcome, copies: Mapping[Page, Copy]) -> dict[str, Any]:
    page = outcome.page
    copy = copies.get(page)
    if isinstance(outcome, Dropped):
        return evidence_row(page.url, "dropped", copy.duplicate_of if copy else outcome.match.key, outcome.match)
    if isinstance(outcome, Kept):
        row = {"url": page.url, "outcome": "kept", "supersedes": outcome.supersedes}
        if copy is not None:
            return {**evidence_row(page.url, "", copy.duplicate_of, copy.evidence), **row, "outcome": "superseded"}
        return row if outcome.match is None else {**evidence_row(page.url, "kept", None, outcome.match), **row}
    return {"url": page.url, "outcome": "skipped" if isinstance(outcome, Skipped) else "refused"}


def evidence_row(url: str, outcome: str, duplicate_of: str | None, match: Match) -> dict[str, Any]:
    """A page's row with the evidence of a decision between it and a near page."""
    similarity = None if match.similarity is None else round(match.similarity, 2)
    return {
        "url": url,
        "outcome": outcome,
        "duplicate_of": duplicate_of,
        "distance": match.distance,
        "exact": match.exact,
        "similarity": similarity,
    }


def hex_or_none(fingerprint: int | None) -> str | None:
    """A fingerprint as 16 hex digits, None as None."""
    return None if fingerprint is None else f"{fingerprint:016x}"


def write_clusters(clusters: Iterable[Cluster], fmt: str, out: TextIO) -> None:
    """json and jsonl: one object per cluster, its duplicates in a list; csv and table: one row per duplicate."""
    if fmt in ("json", "jsonl"):
        objects = (
            {
                "url": c.key,
                "count": len(c.duplicates),
                "duplicates": [
                    {
                        "url": d.key,
                        "distance": d.distance,
                        "similarity": score(d.similarity),
                        "exact": d.exact,
                        "seen_at": d.seen_at,
                    }
                    for d in c.duplicates
                ],
            }
            for c in clusters
        )
        write_objects(objects, fmt, out)
        return
    table = fmt == "table"  # a table names the stored page once per cluster; a CSV row stands alone
    rows = (
        {
            "url": c.key if i == 0 or not table else None,
            "count": len(c.duplicates) if i == 0 or not table else None,
            "duplicate": d.key,
            "distance": d.distance,
            "similarity": score(d.similarity),
            "exact": d.exact,
            "radius": d.radius,
            "seen_at": d.seen_at,
        }
        for c in clusters
        for i, d in enumerate(c.duplicates)
    )
    columns = ("url", "count", "duplicate", "distance", "similarity") + (() if table else ("exact", "seen_at"))
    write_rows(rows, columns, fmt, out, numeric={"count", "distance", "similarity"})


def write_stats(stats: Stats, fmt: str, out: TextIO) -> None:
    """An object (json), or a summary, a histogram of distances and the top hosts (table)."""
    hosts = [{"host": host, "duplicates": count} for host, count in stats.top_hosts]
    distances: list[dict[str, Any]] = [{"distance": d, "duplicates": count} for d, count in stats.distances.items()]
    if fmt == "json":
        summary = {
            "documents": stats.documents,
            "duplicates": stats.duplicates,
            "exact_duplicates": stats.exact_duplicates,
            "near_duplicates": stats.near_duplicates,
        }
        if stats.texts.texts:
            summary |= {
                "texts_kept": stats.texts.texts,
                "text_bytes": stats.texts.compressed_bytes,
                "text_bytes_per_page": round(stats.texts.bytes_per_page),
            }
        index: dict[str, str | None] = {
            "backend": stats.description.backend,
            "schema_version": stats.description.schema_version,
        }
        if stats.description.layout is not None:
            index |= {"layout": stats.description.layout, "block_assignment": stats.description.block_assignment}
        write_json(summary | {"distances": distances, "top_hosts": hosts, "scheme": stats.scheme, "index": index}, out)
        return
    if fmt != "table":
        raise ValueError(f"stats are written as table or json; got {fmt!r}")
    out.write(f"index: {index_line(stats.description)}\n\n")
    summary_rows = [
        ("pages stored", stats.documents),
        ("duplicates", stats.duplicates),
        ("exact", stats.exact_duplicates),
        ("near", stats.near_duplicates),
    ]
    if stats.texts.texts:
        summary_rows += [
            ("texts kept", stats.texts.texts),
            ("bytes per text", round(stats.texts.bytes_per_page)),
        ]
    write_table(summary_rows, ("name", "count"), out, numeric={"count"}, show_header=False)
    widest = max(stats.distances.values(), default=0)
    for row in distances:
        row["histogram"] = bar(row["duplicates"], widest)
    for rows, columns in ((distances, ("distance", "duplicates", "histogram")), (hosts, ("host", "duplicates"))):
        if rows:
            out.write("\n")
            write_rows(rows, columns, "table", out, numeric={"distance", "duplicates"})


def index_line(description: Description) -> str:
    """The backend, schema version and (SQL) lookup layout, e.g. "sqlite, schema 3, blocks (contiguous)"."""
    line = f"{description.backend}, schema {description.schema_version}"
    if description.layout is not None:
        line += f", {description.layout} layout"
        if description.layout == "blocks" and description.block_assignment:
            line += f" ({description.block_assignment} bits)"
    return line
