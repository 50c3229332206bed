"""The scale benchmark's markdown tables and target verdicts (they read fine in a terminal too)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks._common import table
from benchmarks.scale_lookups import block_theory, half_theory
from benchmarks.scale_runs import Case

TARGET_LOAD = 50_000  # fingerprints/s into SQLite
TARGET_QUERY_KEEP = 0.5  # SQLite queries/s at 10M over the rate at 100k
TARGET_BYTES = 120  # bytes on disk per page, SQLite at 10M
TARGET_POSTGRES = 3.0  # PostgreSQL's time per query over SQLite's


def ordered(cases: list[Case]) -> list[Case]:
    return sorted(cases, key=lambda c: (c.backend, c.n))


def verdicts(cases: list[Case]) -> list[str]:
    by = {(c.backend, c.n): c for c in cases}
    lines = []
    loads = {c.n: c.n / c.loaded["seconds"] for c in ordered(cases) if c.backend == "sqlite"}
    if loads:
        lines.append(
            f"SQLite bulk load >= {TARGET_LOAD:,}/s: {'met' if min(loads.values()) >= TARGET_LOAD else 'MISSED'} ("
            + ", ".join(f"{rate:,.0f}/s at {n:,}" for n, rate in loads.items())
            + ")"
        )
    big, small = by.get(("sqlite", 10_000_000)), by.get(("sqlite", 100_000))
    if big and small:
        keep = {k: big.figures[k] / small.figures[k] for k in ("random", "planted")}
        lines.append(
            f"SQLite queries/s at 10M >= {TARGET_QUERY_KEEP:.0%} of the rate at 100k: "
            f"{'met' if min(keep.values()) >= TARGET_QUERY_KEEP else 'MISSED'} ("
            f"random {big.figures['random']:,.0f} vs {small.figures['random']:,.0f}/s = {keep['random']:.0%}; "
            f"planted {big.figures['planted']:,.0f} vs {small.figures['planted']:,.0f}/s = {keep['planted']:.0%})"
        )
    else:
        lines.append("SQLite queries/s at 10M vs 100k: not measured (run with --with-10m)")
    if big:
        per_page = big.loaded["disk"] / big.n
        lines.append(
            f"SQLite bytes on disk per page at 10M < {TARGET_BYTES}: {'met' if per_page < TARGET_BYTES else 'MISSED'} ({per_page:.0f})"
        )
    else:
        lines.append("SQLite bytes on disk per page at 10M: not measured (run with --with-10m)")
    ratios = []
    for (backend, n), pg in sorted(by.items()):
        lite = by.get(("sqlite", n))
        if backend == "postgres" and lite:
            floor = lite.figures["random"] / pg.figures["round_trip"]
            ratios.append(
                (
                    n,
                    lite.figures["random"] / pg.figures["random"],
                    lite.figures["planted"] / pg.figures["planted"],
                    floor,
                )
            )
    if ratios:
        worst = max(max(r, p) for _, r, p, _ in ratios)
        lines.append(
            f"PostgreSQL within {TARGET_POSTGRES:.0f}x of SQLite per query: {'met' if worst <= TARGET_POSTGRES else 'MISSED'} ("
            + ", ".join(f"{r:.1f}x random / {p:.1f}x planted at {n:,}" for n, r, p, _ in ratios)
            + "; a bare `SELECT 1` round trip alone takes "
            + ", ".join(f"{f:.1f}x" for *_, f in ratios)
            + " of SQLite's random query)"
        )
    return lines


def checks_line(cases: list[Case]) -> str:
    """How many planted near-duplicates check_and_add caught, and how many new random pages it dropped."""
    caught = {f"{c.figures['caught']:.0%}" for c in cases}
    caught_text = (
        f"all {caught.pop()}"
        if len(caught) == 1
        else ", ".join(f"{c.name} {c.figures['caught']:.0%}" for c in ordered(cases))
    )
    return (
        f"Near-duplicate `check_and_add` calls answered with their stored page: {caught_text}; new random pages\n"
        f"wrongly dropped: {sum(int(c.figures['false_drops']) for c in cases)}."
    )


def results_table(cases: list[Case]) -> str:
    rows = []
    for c in ordered(cases):
        f, loaded = c.figures, c.loaded
        vacuumed = f"; + {loaded['vacuum']:.1f} s vacuum" if c.backend == "postgres" else ""
        rows.append(
            [
                c.backend,
                f"{c.n:,}",
                f"{c.n / loaded['seconds']:,.0f} ({loaded['seconds']:.1f} s, {loaded['building']:.1f} s of it indexing{vacuumed})",
                f"{f['random']:,.0f}",
                f"{f['planted']:,.0f}",
                f"{f['round_trip']:,.0f}" if "round_trip" in f else "-",
                f"{f['checks']:,.0f}",
                f"{f['halves']:.4g} ({half_theory(c.n):.3g})",
                "-" if f["fetched"] < 0 else figure(f["fetched"]),
                f"{f['block_table']:.1f} ({block_theory(c.n):.1f})",
                f"{loaded['disk'] / c.n:.0f}",
                f"{loaded['rss']:.0f}",
            ]
        )
    return table(
        [
            "backend",
            "N",
            "bulk load/s",
            "queries/s random",
            "queries/s planted",
            "`SELECT 1`/s",
            "check_and_add/s",
            "rows read/query, half lookups (theory 66N/2^32)",
            "table rows the database fetched for them",
            "a 16-bit block table would read (4N/65536)",
            "bytes on disk/page",
            "peak RSS MB (load)",
        ],
        rows,
    )


def storage_table(cases: list[Case]) -> str:
    """Where the bytes go, at the largest N of each backend: the documents table and its indexes, and anything else of size."""
    largest: dict[str, Case] = {}
    for c in cases:
        if c.n >= largest.get(c.backend, c).n:
            largest[c.backend] = c
    names = sorted({name for c in largest.values() for name in c.loaded["parts"]})
    rows = []
    for name in names:
        values = [c.loaded["parts"].get(name, 0) / c.n for c in largest.values()]
        if "simhash_documents" in name or max(values) >= 0.5:
            rows.append([f"`{name}`", *(f"{v:.1f}" for v in values)])
    rows.append(["total", *(f"{c.loaded['disk'] / c.n:.1f}" for c in largest.values())])
    return table(["table or index", *(f"{c.backend} {c.n:,}: bytes/page" for c in largest.values())], rows)


def figure(value: float) -> str:
    """Three significant digits, without an exponent from 1,000 up."""
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def spread(values: list[int]) -> str:
    """Mean / max."""
    return f"{np.mean(values):,.2f} / {max(values):,}"


def _read_rows(result: dict) -> list[list[str]]:
    """Rows read and rows wasted (more than 3 bits away) by the half lookups and by a block table, then the matches."""
    rows = []
    for design, name in (("read", "the half lookups (the index's)"), ("block_reads", "a 16-bit block table")):
        rows.append([f"rows read, {name}", spread([r for r, _ in result[design]])])
        rows.append(["... of them more than 3 bits away", spread([w for _, w in result[design]])])
    return rows + [["true matches: pages within 3 bits", spread(result["matches"])]]


def eval_lines(result: dict | None, eval_dir: Path) -> str:
    if result is None:
        return f"Skipped: {eval_dir / 'extracted_text.jsonl.gz'} not found."
    n, pages = result["stored"], result["pages"]
    (count, position, value), (half_count, half, half_value) = result["bucket"], result["half"]
    return (
        f"{pages:,} near-matchable pages fingerprinted (`Fingerprinter().signature(text).simhash`), "
        f"{n:,} distinct texts stored (exact copies are never stored: they match by text hash). "
        f"Largest 16-bit block bucket: {count} pages share block{position} = 0x{value:04x} "
        f"(among all {pages:,} pages: {result['bucket_all'][0]}); uniform fingerprints would put at most 1 or 2 in one. "
        f"Largest 32-bit half bucket: {half_count} pages share the {half} half = 0x{half_value:08x} "
        f"(among all {pages:,} pages: {result['half_all'][0]}); uniform fingerprints would put 1 in each. "
        f"Each stored page queried against the {n - 1:,} others (itself left out; a row counts once per half "
        f"lookup that returns it; uniform theory: {half_theory(n - 1):.2g} rows for the half lookups, "
        f"{block_theory(n - 1):.2f} for a block table, computed in numpy from the fingerprints). The rows SQL "
        f"returned equal numpy's count of the pages with a half equal or one bit off for {result['agree']:,} "
        f"of {n:,} queries.\n\n" + table(["per query", "mean / max"], _read_rows(result))
    )


def skew_table(results: list[dict]) -> str:
    """One row per (backend, crowd); cells are mean / max per query."""
    rows = []
    for r in results:
        read, wasted = [c[0] for c in r["read"]], [c[1] for c in r["read"]]
        block, block_wasted = [c[0] for c in r["block_reads"]], [c[1] for c in r["block_reads"]]
        rows.append(
            [
                r["label"],
                spread(read),
                spread(wasted),
                "-" if None in r["examined"] else spread(r["examined"]),
                spread(block),
                spread(block_wasted),
                spread(r["matches"]),
                f"{r['ms']:.2f}",
                f"{r['complete']}/{r['queries']}",
                f"{r['agree']}/{r['queries']}",
            ]
        )
    return table(
        [
            "queries",
            "rows read, half lookups",
            "of them > 3 bits away",
            "table rows the database fetched",
            "rows a 16-bit block table would read",
            "of them > 3 bits away",
            "true matches",
            "ms/query, query()",
            "all true matches found",
            "SQL rows = numpy count",
        ],
        rows,
    )
