"""`simhash-index explain URL`: why a page was kept or dropped, as text or JSON."""

from __future__ import annotations

import sys
from typing import Any, TextIO

import click

from .. import defaults
from ..index import explain as evidence
from ..index import texts
from ..index.base import Index
from ..index.records import Duplicate
from . import formats, listings
from .group import added_words_option, db_option, format_option, max_distance_option, open_index, output_format


def text_diff(index: Index, a: str, b: str) -> str | None:
    """The word-level diff from page `b`'s kept text to page `a`'s, when both are kept and differ."""
    first, second = index.text(b), index.text(a)
    if first is None or second is None:
        return None
    found = texts.word_diff(first, second)
    return None if all(p.kind == "same" for p in found) else texts.diff_text(found)


def explanation_object(explanation: evidence.Explanation, index: Index) -> dict[str, Any]:
    """An explanation as JSON: the decision, the thresholds, the evidence and the reasons;
    `diff`s when the index keeps both pages' texts."""
    found, duplicate = explanation.found, explanation.found.duplicate
    obj: dict[str, Any] = {
        "url": found.key,
        "decision": found.status,
        "simhash": listings.hex_or_none(found.fingerprint),
        "max_distance": explanation.max_distance,
        "min_similarity": explanation.min_similarity,
    }
    if duplicate is not None:
        obj |= {
            "rule": "exact" if duplicate.exact else "near",
            "duplicate_of": duplicate.duplicate_of,
            "superseded": duplicate.superseded,
            "distance": duplicate.distance,
            "radius": duplicate.radius,
            "similarity": listings.score(duplicate.similarity),
            "seen_at": duplicate.seen_at,
            "diff": text_diff(index, found.key, duplicate.duplicate_of),
        }
    if found.page is not None:
        obj |= {
            "stored_at": explanation.stored_at,
            "short_text": explanation.short_text,
            "candidates": [
                {
                    "url": c.key,
                    "simhash": listings.hex_or_none(c.fingerprint),
                    "distance": c.distance,
                    "similarity": listings.score(c.similarity),
                    "duplicate": c.accepted,
                    "reason": c.reason,
                    "diff": text_diff(index, found.key, c.key),
                }
                for c in explanation.candidates
            ],
            "duplicates": [logged_object(d) for d in explanation.dropped],
            "superseded": [logged_object(d) | {"reason": d.superseded} for d in explanation.superseded],
        }
    return obj | {"reasons": explanation.reasons()}


def logged_object(duplicate: Duplicate) -> dict[str, Any]:
    """A page logged against the page explained: the evidence the log holds."""
    return {
        "url": duplicate.key,
        "rule": duplicate.rule,
        "distance": duplicate.distance,
        "similarity": listings.score(duplicate.similarity),
        "added": duplicate.added,
        "seen_at": duplicate.seen_at,
    }


# A kept page's lists, as the text format shows them: a title and the columns of a table each.
LISTS = {
    "candidates": ("older stored pages within the radius", ("url", "simhash", "distance", "similarity", "reason")),
    "duplicates": ("dropped as its duplicates", ("url", "rule", "distance", "similarity", "added", "seen_at")),
    "superseded": ("superseded by it", ("url", "reason", "rule", "distance", "similarity", "added", "seen_at")),
}


def write_text(obj: dict[str, Any], out: TextIO) -> None:
    """The explanation as `name  value` lines, then its first reason, then a kept page's lists (LISTS)."""
    fields = [(name, value) for name, value in obj.items() if name not in (*LISTS, "reasons", "diff")]
    formats.write_records([[formats.table_cell(value) for _, value in fields]], [name for name, _ in fields], out)
    out.write("\n")
    out.writelines(formats.visible(line) + "\n" for line in obj["reasons"][:1])
    if obj.get("diff"):
        out.write("\nwords changed from the page it duplicated ([-removed-] {+added+}):\n")
        out.write(formats.visible(obj["diff"]) + "\n")
    for name, (title, columns) in LISTS.items():
        rows = obj.get(name) or []
        if rows:
            out.write(f"\n{title}:\n")
            formats.write_rows(rows, columns, "table", out, numeric={"distance", "similarity", "added"})
        for row in rows:
            if row.get("diff"):
                out.write(f"\nwords changed from {formats.visible(row['url'])}:\n")
                out.write(formats.visible(row["diff"]) + "\n")


@click.command()
@db_option
@format_option(("text", "json"), piped="json")
@click.argument("url")
@max_distance_option("The search radius the crawl decided with (SIMHASH_MAX_DISTANCE).")
@click.option(
    "--min-similarity",
    default=defaults.MIN_SIMILARITY,
    show_default=True,
    type=click.FloatRange(0.0, 1.0),
    help="The similarity the crawl decided with (SIMHASH_MIN_SIMILARITY).",
)
@click.option("--window", help="The window the crawl decided with (SIMHASH_WINDOW), e.g. 30d.")
@added_words_option
def explain(
    db: str,
    fmt: str | None,
    url: str,
    max_distance: int | None,
    min_similarity: float,
    window: str | None,
    added_words: int,
) -> None:
    """Why a page was kept or dropped.

    A dropped page: the page it duplicated, the rule (exact text, or near and
    verified by similarity), its distance and similarity. A kept page: each
    older stored page within --max-distance and why it was not a duplicate
    (similarity below --min-similarity, or stored longer than --window before
    it), or that its text is too short for a near match; then the pages
    dropped as its duplicates and the pages it superseded. Read from the
    index as it is now.
    """
    index = open_index(
        db, max_distance=max_distance, min_similarity=min_similarity, window=window, added_words=added_words or None
    )
    explanation = evidence.explain(index, url)
    if explanation.found.status == "unknown":
        raise click.ClickException(
            f"{formats.visible(url)} is neither stored nor logged as a duplicate in the database"
        )
    obj = explanation_object(explanation, index)
    if output_format(fmt, "json") == "json":
        formats.write_json(obj, sys.stdout)
    else:
        write_text(obj, sys.stdout)
