"""Scale: SimhashIndex on SQLite and PostgreSQL from 10k to 10M stored pages, and under skewed buckets.

    python benchmarks/scale.py [--n 10000,100000,1000000] [--with-10m] [--postgres-10m]
                               [--backends sqlite,postgres] [--postgres-url URL] [--eval-dir ../shared/eval]
                               [--no-skew] [--no-write]

Each (backend, N) is bulk-loaded in a process of its own (`insertion_session`, with a progress bar
when stderr is a terminal), so its peak RSS is that load's alone: N random 64-bit fingerprints,
keys like https://example.com/page/<i>.html; SQLite in a temporary directory, PostgreSQL in a schema
of its own (VACUUM ANALYZE after the load, as autovacuum would do; dropped afterwards). Then, in this
process, over all indexes in interleaved rounds (a shared machine's load hits all alike): queries/s
(random fingerprints, and planted ones a stored fingerprint 1-3 bits away; medians of the rounds),
check_and_add/s (a commit each, one in ten a near-duplicate), and the rows a query reads: with the
index's paired lookup (sql.CANDIDATES, theory 68N/2**32) and with a plain single-block lookup (rows
sharing any one block with the query, theory 4N/65536). Then the skew: the eval corpus's real
fingerprints (skipped when it is absent), and a synthetic worst case checked against brute force.
Writes docs/scale.md and docs/scale.png.
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import random
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import REPO, Timer, command, machine, median, peak_rss_mb, stamp, table, vacuum  # noqa: E402
from benchmarks.index_speed import DEFAULT_POSTGRES, disk_bytes, flip, postgres_schema  # noqa: E402
from simhash_index import Fingerprinter, SimhashIndex  # noqa: E402
from simhash_index.index import Fingerprint  # noqa: E402
from simhash_index.simhash import blocks  # noqa: E402
from simhash_index.sql import CANDIDATES, MARKS, fetch, probe_values  # noqa: E402

TARGET_LOAD = 50_000  # fingerprints/s into SQLite
TARGET_QUERY_KEEP = 0.5  # SQLite queries/s at 10M over the rate at 100k
TARGET_BYTES = 120  # bytes on disk per page, SQLite at 10M
TARGET_POSTGRES = 3.0  # PostgreSQL's time per query over SQLite's
SAMPLE = 5_000  # stored fingerprints a load hands back, for planted queries and near-duplicate checks
PLAIN_COUNT = "SELECT " + " + ".join(
    f"(SELECT COUNT(*) FROM simhash_documents WHERE block{i} = {{mark}})" for i in range(4)
)
PLAIN_ROWS = " UNION ALL ".join(f"SELECT id, fingerprint FROM simhash_documents WHERE block{i} = {{mark}}" for i in range(4))
MASK64 = (1 << 64) - 1


def page_key(i: int) -> str:
    return f"https://example.com/page/{i}.html"


def paired_theory(n: int) -> float:
    return 68 * n / 2**32


def plain_theory(n: int) -> float:
    return 4 * n / 65536


@contextmanager
def progress(description: str, total: int) -> Iterator[Callable[..., None]]:
    """update(done, description=None) for a rich progress bar on stderr when it is a terminal; else it does nothing."""
    if not sys.stderr.isatty():
        yield lambda done, description=None: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task(description, total=total)

        def update(done: int, description: str | None = None) -> None:
            bar.update(task, completed=done, **({"description": description} if description else {}))

        yield update


def bulk_load(index: SimhashIndex, label: str, items: Iterable[tuple[str, Fingerprint]], total: int,
              batch_size: int) -> tuple[float, float]:
    """Seconds to store the items with an insertion session, and of them the seconds building its indexes."""
    with progress(label, total) as update, Timer() as timer:
        with index.insertion_session(batch_size=batch_size, on_batch=update) as session:
            for key, fingerprint in items:
                session.add(key, fingerprint)
            session.flush()
            update(total, f"{label}: building indexes")
            with_rows = time.perf_counter() - timer.began
    return timer.seconds, timer.seconds - with_rows


def uniform(n: int, seed: int, chunk: int = 100_000) -> Iterator[np.ndarray]:
    """N random 64-bit fingerprints in chunks; the same seed gives the same stream."""
    generator = np.random.PCG64(seed)
    for start in range(0, n, chunk):
        yield generator.random_raw(min(chunk, n - start))


def load_case(backend: str, url: str, path: str | None, n: int, seed: int, batch_size: int) -> dict:
    """Run in a fresh process: bulk-load N fingerprints, then measure disk and this process's peak RSS."""
    start_rss = peak_rss_mb()
    picks = np.sort(np.random.default_rng(seed).choice(n, size=min(n, SAMPLE), replace=False))
    sample: list[int] = []

    def items() -> Iterator[tuple[str, int]]:
        offset = 0
        for chunk in uniform(n, seed):
            wanted = picks[(picks >= offset) & (picks < offset + len(chunk))] - offset
            sample.extend(chunk[wanted].tolist())
            yield from ((page_key(offset + i), fp) for i, fp in enumerate(chunk.tolist()))
            offset += len(chunk)

    index = SimhashIndex(url)
    try:
        seconds, building = bulk_load(index, f"{backend} {n:,}", items(), n, batch_size)
        with Timer() as vacuumed:
            if backend == "postgres":
                vacuum(url)
        size = disk_bytes(backend, index, Path(path) if path else None)
        parts = storage_parts(backend, index, path)
    finally:
        index.close()
    return {"seconds": seconds, "building": building, "vacuum": vacuumed.seconds, "disk": size, "parts": parts, "sample": sample,
            "rss": peak_rss_mb(), "start_rss": start_rss}


def storage_parts(backend: str, index: SimhashIndex, path: str | None) -> dict[str, int]:
    """Bytes per table and index: where a page's bytes go."""
    if backend == "sqlite":
        connection = sqlite3.connect(path)
        try:
            return dict(connection.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall())
        finally:
            connection.close()
    with index.transaction(write=False) as conn:
        rows = conn.exec_driver_sql(
            "SELECT c.relname, CASE WHEN c.relkind = 'r' THEN pg_table_size(c.oid) ELSE pg_relation_size(c.oid) END "
            "FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'i')"
        ).all()
    return {name: size for name, size in rows}


@dataclass
class Case:
    backend: str
    n: int
    url: str
    loaded: dict
    index: SimhashIndex
    seconds: dict[str, list[float]] = field(default_factory=lambda: {"random": [], "planted": [], "checks": []})
    figures: dict[str, float] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.backend} {self.n:,}"


def rows_read(index: SimhashIndex, queries: list[int]) -> tuple[list[int], list[int]]:
    """Rows each query reads: with the paired lookup (sql.CANDIDATES), and with a plain single-block lookup."""
    with index.transaction(write=False) as conn:
        style = conn.dialect.paramstyle
        paired = [len(fetch(conn, CANDIDATES[style], probe_values(q))) for q in queries]
        plain_sql = PLAIN_COUNT.format(mark=MARKS[style])
        plain = [fetch(conn, plain_sql, blocks(q))[0][0] for q in queries]
    return paired, plain


def measure(cases: list[Case], args: argparse.Namespace, rng: random.Random) -> None:
    """Queries/s and check_and_add/s in interleaved rounds, then rows read per query."""
    random_queries = [rng.getrandbits(64) for _ in range(args.queries)]
    planted = {c.name: [flip(rng.choice(c.loaded["sample"]), rng) for _ in range(max(1, args.queries // 4))] for c in cases}
    for round_ in range(args.rounds):
        rng.shuffle(cases)
        for case in cases:
            for kind, queries in (("random", random_queries), ("planted", planted[case.name])):
                with Timer() as timer:
                    for q in queries:
                        case.index.query(q)
                case.seconds[kind].append(timer.seconds / len(queries))
        print(f"queries, round {round_ + 1}/{args.rounds}: " + ", ".join(
            f"{c.name} {1 / c.seconds['random'][-1]:,.0f}/s" for c in sorted(cases, key=lambda c: (c.backend, c.n))), flush=True)
    per_round = max(1, args.checks // args.check_rounds)
    caught = Counter()
    for round_ in range(args.check_rounds):
        rng.shuffle(cases)
        for case in cases:
            items = [(f"https://example.com/new/{round_}/{i}.html", i % 10 == 0) for i in range(per_round)]
            items = [(key, flip(rng.choice(case.loaded["sample"]), rng) if near else rng.getrandbits(64), near)
                     for key, near in items]
            with Timer() as timer:
                for key, fp, near in items:
                    caught[case.name, near] += case.index.check_and_add(key, fp) is not None
            case.seconds["checks"].append(timer.seconds / per_round)
    sample = [rng.getrandbits(64) for _ in range(args.candidate_queries)]
    for case in cases:
        paired, plain = rows_read(case.index, sample)
        fetched = [examined(case.index, q) for q in sample[: args.explain_queries]]
        planted_near = sum(1 for _ in range(args.check_rounds) for i in range(per_round) if i % 10 == 0)
        case.figures.update(
            random=1 / median(case.seconds["random"]), planted=1 / median(case.seconds["planted"]),
            checks=1 / median(case.seconds["checks"]), paired=sum(paired) / len(paired), plain=sum(plain) / len(plain),
            caught=caught[case.name, True] / planted_near, false_drops=caught[case.name, False],
            fetched=-1.0 if None in fetched else sum(fetched) / len(fetched),
        )


def lookups(index: SimhashIndex, queries: list[int]) -> dict[str, list[tuple[int, int]]]:
    """Per query and lookup design: (rows read, of them rows more than 3 bits away), from the rows themselves."""
    found: dict[str, list[tuple[int, int]]] = {"paired": [], "plain": []}
    with index.transaction(write=False) as conn:
        mark = MARKS[conn.dialect.paramstyle]
        for q in queries:
            for design, statement, params in (("paired", CANDIDATES[conn.dialect.paramstyle], probe_values(q)),
                                              ("plain", PLAIN_ROWS.format(mark=mark), blocks(q))):
                rows = fetch(conn, statement, params)
                found[design].append((len(rows), sum(((fp ^ q) & MASK64).bit_count() > 3 for _, fp in rows)))
    return found


def within(fingerprints: np.ndarray, q: int) -> np.ndarray:
    """Positions of the fingerprints within 3 bits of q (brute force)."""
    return np.flatnonzero(np.bitwise_count(fingerprints ^ np.uint64(q)) <= 3)


def eval_skew(eval_dir: Path, batch_size: int) -> dict | None:
    """Block buckets and rows read per query for the eval corpus's real fingerprints (None: no corpus)."""
    source = eval_dir / "extracted_text.jsonl.gz"
    if not source.is_file():
        return None
    fingerprinter = Fingerprinter()
    pages, everything = {}, []
    with gzip.open(source, "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            signature = fingerprinter.signature(record.get("text") or "")
            if signature is not None and signature.near_matchable:
                everything.append(signature.simhash)
                pages.setdefault(signature.text_hash, (record["path"], signature))  # exact copies are never stored
    stored = list(pages.values())
    fps = [signature.simhash for _, signature in stored]
    with tempfile.TemporaryDirectory(prefix="scale-eval-") as tmp, SimhashIndex(f"sqlite:///{tmp}/eval.db") as index:
        bulk_load(index, "eval corpus", stored, len(stored), batch_size)
        # leave the page itself out: it is a row of all four lookups, in both designs
        read = {design: [(rows - 4, wasted) for rows, wasted in counts] for design, counts in lookups(index, fps).items()}
    array = np.array(fps, dtype=np.uint64)

    def largest(values: list[int]) -> tuple[int, int, int]:
        """(pages, block position, value) of the largest single-block bucket."""
        return max((count, i, value) for i in range(4) for value, count in Counter(blocks(v)[i] for v in values).items())

    pairs = Counter((i, blocks(v)[i], blocks(v)[(i + 1) % 4]) for v in fps for i in range(4))
    return {"pages": len(everything), "stored": len(stored), "bucket": largest(fps), "bucket_all": largest(everything),
            "pair_bucket": max(pairs.values()), "read": read, "matches": [len(within(array, fp)) - 1 for fp in fps]}


def skew_data(args: argparse.Namespace) -> tuple[np.ndarray, list[tuple[str, list[int]]]]:
    """Uniform fingerprints plus a crowded block0 bucket and a crowded (block0, block1) bucket, and queries in each
    with 9 planted neighbours 1-3 bits away: (every stored fingerprint, [(label, queries)])."""
    rng = random.Random(args.seed + 7)
    generator = np.random.PCG64(args.seed + 7)
    bucket, pair = 0x5EED, 0xBEEF | 0x0FAB << 16  # a block0 value; a (block0, block1) pair
    groups = [
        generator.random_raw(args.skew_n),
        (generator.random_raw(args.skew_bucket) & np.uint64(MASK64 ^ 0xFFFF)) | np.uint64(bucket),
        (generator.random_raw(args.pair_bucket) & np.uint64(MASK64 ^ 0xFFFFFFFF)) | np.uint64(pair),
    ]
    kinds = [(f"in a {args.skew_bucket:,}-page block0 bucket", bucket, 0xFFFF, 20),
             (f"in a {args.pair_bucket:,}-page (block0, block1) bucket", pair, 0xFFFFFFFF, 5)]
    queries, planted = [], []
    for label, value, mask, count in kinds:
        mine = [(rng.getrandbits(64) & ~mask) | value for _ in range(count)]
        queries.append((label, mine))
        for q in mine:
            for distance in (1, 2, 3):  # flips outside block0 (stays in the bucket), anywhere, and one inside it
                planted.append(flip_bits(q, rng.sample(range(16, 64), distance)))
                planted.append(flip_bits(q, rng.sample(range(64), distance)))
                planted.append(flip_bits(q, [rng.randrange(16), *rng.sample(range(16, 64), distance - 1)]))
    return np.concatenate([*groups, np.array(planted, dtype=np.uint64)]), queries


def skew_test(backend: str, url: str, everything: np.ndarray, queries: list[tuple[str, list[int]]], batch_size: int) -> list[dict]:
    """Rows read, time and completeness (against brute force) of queries in the crowded buckets."""
    key = "https://example.com/skew/{}.html".format
    results = []
    with SimhashIndex(url) as index:
        items = ((key(i), fp) for i, fp in enumerate(everything.tolist()))
        seconds, _ = bulk_load(index, f"skew, {backend}", items, len(everything), batch_size)
        if backend == "postgres":
            vacuum(url)
        print(f"skew, {backend}: {len(everything):,} pages loaded in {seconds:.1f} s", flush=True)
        for label, mine in queries:
            read = lookups(index, mine)
            complete, truths, times = 0, [], {"paired": [], "plain": []}
            for q in mine:
                truth = {key(i) for i in within(everything, q)}
                with Timer() as paired:
                    found = {m.key for m in index.query(q)}
                with Timer() as plain:
                    plain_found = plain_lookup(index, q)
                times["paired"].append(paired.seconds)
                times["plain"].append(plain.seconds)
                truths.append(len(truth))
                complete += found == truth and len(truth) >= 9 and plain_found == len(truth)
            results.append({"label": f"{backend}: {len(mine)} queries {label}", "queries": len(mine), "read": read,
                            "matches": truths, "complete": complete, "examined": [examined(index, q) for q in mine],
                            "ms_paired": 1000 * median(times["paired"]), "ms_plain": 1000 * median(times["plain"])})
    return results


def examined(index: SimhashIndex, q: int) -> int | None:
    """Table rows the database fetched for the paired lookup, filtered-out ones included (None: not known).

    SQLite's plan takes both columns of each pair index as index conditions, so it fetches just the rows it
    returns; PostgreSQL's planner may take only block i and filter block i+1 on the table rows.
    """
    with index.transaction(write=False) as conn:
        if conn.dialect.name == "sqlite":
            plan = [row[-1] for row in fetch(conn, "EXPLAIN QUERY PLAN " + CANDIDATES["qmark"], probe_values(q))]
            searches = [line for line in plan if line.startswith("SEARCH")]
            exact = len(searches) == 4 and all(" AND " in line for line in searches)
            return len(fetch(conn, CANDIDATES["qmark"], probe_values(q))) if exact else None
        plan = fetch(conn, "EXPLAIN (ANALYZE, FORMAT JSON) " + CANDIDATES[conn.dialect.paramstyle], probe_values(q))[0][0]
    nodes, total = [plan[0]["Plan"]], 0
    while nodes:
        node = nodes.pop()
        nodes.extend(node.get("Plans", []))
        if node["Node Type"] in ("Seq Scan", "Index Scan", "Bitmap Heap Scan"):
            total += node["Actual Rows"] * node["Actual Loops"] + node.get("Rows Removed by Filter", 0)
            total += node.get("Rows Removed by Index Recheck", 0)
    return total


def flip_bits(value: int, positions: list[int]) -> int:
    for position in positions:
        value ^= 1 << position
    return value


def plain_lookup(index: SimhashIndex, q: int) -> int:
    """Matches within 3 bits found by a plain single-block lookup (the design the paired one replaced)."""
    with index.transaction(write=False, single_statement=True) as conn:
        rows = fetch(conn, PLAIN_ROWS.format(mark=MARKS[conn.dialect.paramstyle]), blocks(q))
    return len({row_id for row_id, stored in rows if ((stored ^ q) & MASK64).bit_count() <= 3})


def verdicts(cases: list[Case]) -> list[str]:
    by = {(c.backend, c.n): c for c in cases}
    lines = []
    loads = {n: c.n / c.loaded["seconds"] for (backend, n), c in sorted(by.items()) if backend == "sqlite"}
    if loads:
        worst = min(loads.values())
        lines.append(f"SQLite bulk load >= {TARGET_LOAD:,}/s: {'met' if worst >= TARGET_LOAD else 'MISSED'} ("
                     + ", ".join(f"{rate:,.0f}/s at {n:,}" for n, rate in loads.items()) + ")")
    big, small = by.get(("sqlite", 10_000_000)), by.get(("sqlite", 100_000))
    if big and small:
        keep = {k: big.figures[k] / small.figures[k] for k in ("random", "planted")}
        lines.append(f"SQLite queries/s at 10M >= {TARGET_QUERY_KEEP:.0%} of the rate at 100k: "
                     f"{'met' if min(keep.values()) >= TARGET_QUERY_KEEP else 'MISSED'} ("
                     f"random {big.figures['random']:,.0f} vs {small.figures['random']:,.0f}/s = {keep['random']:.0%}; "
                     f"planted {big.figures['planted']:,.0f} vs {small.figures['planted']:,.0f}/s = {keep['planted']:.0%})")
    else:
        lines.append("SQLite queries/s at 10M vs 100k: not measured (run with --with-10m)")
    if big:
        per_page = big.loaded["disk"] / big.n
        lines.append(f"SQLite bytes on disk per page at 10M < {TARGET_BYTES}: {'met' if per_page < TARGET_BYTES else 'MISSED'} ({per_page:.0f})")
    else:
        lines.append("SQLite bytes on disk per page at 10M: not measured (run with --with-10m)")
    ratios = []
    for (backend, n), pg in sorted(by.items()):
        lite = by.get(("sqlite", n))
        if backend == "postgres" and lite:
            ratios.append((n, lite.figures["random"] / pg.figures["random"], lite.figures["planted"] / pg.figures["planted"]))
    if ratios:
        worst = max(max(r, p) for _, r, p in ratios)
        lines.append(f"PostgreSQL within {TARGET_POSTGRES:.0f}x of SQLite per query: {'met' if worst <= TARGET_POSTGRES else 'MISSED'} ("
                     + ", ".join(f"{r:.1f}x random / {p:.1f}x planted at {n:,}" for n, r, p in ratios) + ")")
    return lines


def results_table(cases: list[Case]) -> str:
    rows = []
    for c in sorted(cases, key=lambda c: (c.backend, c.n)):
        f, loaded = c.figures, c.loaded
        vacuum = f"; + {loaded['vacuum']:.1f} s vacuum" if c.backend == "postgres" else ""
        rows.append([c.backend, f"{c.n:,}",
                     f"{c.n / loaded['seconds']:,.0f} ({loaded['seconds']:.1f} s, {loaded['building']:.1f} s of it indexing{vacuum})",
                     f"{f['random']:,.0f}", f"{f['planted']:,.0f}", f"{f['checks']:,.0f}",
                     f"{f['paired']:.4g} ({paired_theory(c.n):.3g})", "-" if f["fetched"] < 0 else f"{f['fetched']:.3g}",
                     f"{f['plain']:.1f} ({plain_theory(c.n):.1f})",
                     f"{loaded['disk'] / c.n:.0f}", f"{loaded['rss']:.0f}"])
    return table(["backend", "N", "bulk load/s", "queries/s random", "queries/s planted", "check_and_add/s",
                  "rows read/query, paired (theory 68N/2^32)", "table rows the database fetched for them",
                  "single-block lookup would read (4N/65536)",
                  "bytes on disk/page", "peak RSS MB (load)"], rows)


def storage_table(cases: list[Case]) -> str:
    """Where the bytes go, at the largest N of each backend."""
    largest = {}
    for c in cases:
        if c.n >= largest.get(c.backend, c).n:
            largest[c.backend] = c
    names = sorted({name for c in largest.values() for name in c.loaded["parts"]})
    rows = []
    for name in names:
        values = [c.loaded["parts"].get(name, 0) / c.n for c in largest.values()]
        if max(values) >= 0.5:
            rows.append([f"`{name}`", *(f"{v:.1f}" for v in values)])
    rows.append(["total", *(f"{c.loaded['disk'] / c.n:.1f}" for c in largest.values())])
    return table(["table or index", *(f"{c.backend} {c.n:,}: bytes/page" for c in largest.values())], rows)


def spread(values: list[int]) -> str:
    return f"{np.mean(values):,.2f} / {max(values):,}"


def read_rows(read: dict[str, list[tuple[int, int]]], matches: list[int]) -> list[list[str]]:
    """Table rows: rows read and rows wasted (more than 3 bits away) per design, then the true matches."""
    rows = []
    for design, name in (("paired", "paired lookup (the index's)"), ("plain", "single-block lookup")):
        rows.append([f"rows read, {name}", spread([r for r, _ in read[design]])])
        rows.append(["... of them more than 3 bits away", spread([w for _, w in read[design]])])
    return rows + [["true matches: pages within 3 bits", spread(matches)]]


def eval_lines(result: dict | None, eval_dir: Path) -> str:
    if result is None:
        return f"Skipped: {eval_dir / 'extracted_text.jsonl.gz'} not found."
    count, position, value = result["bucket"]
    n = result["stored"]
    return (
        f"{result['pages']:,} near-matchable pages fingerprinted (`Fingerprinter().signature(text).simhash`), "
        f"{n:,} distinct texts stored (exact copies are never stored: they match by text hash). "
        f"Largest block bucket: {count} pages share block{position} = 0x{value:04x} "
        f"(among all {result['pages']:,} pages: {result['bucket_all'][0]}); uniform fingerprints would put at most "
        f"1 or 2 in one. Largest (block i, block i+1) bucket: {result['pair_bucket']} pages. Each stored page "
        f"queried against the {n - 1:,} others (a row counts once per lookup that returns it; uniform theory: "
        f"{paired_theory(n - 1):.2g} rows paired, {plain_theory(n - 1):.2f} single-block):\n\n"
        + table(["per query", "mean / max"], read_rows(result["read"], result["matches"]))
    )


def skew_table(results: list[dict]) -> str:
    """One row per (backend, bucket); cells are mean / max per query."""
    rows = []
    for r in results:
        (paired, paired_far), (plain, plain_far) = ([[c[k] for c in r["read"][d]] for k in (0, 1)] for d in ("paired", "plain"))
        rows.append([r["label"], spread(paired), spread(paired_far), "-" if None in r["examined"] else spread(r["examined"]),
                     spread(plain), spread(plain_far), spread(r["matches"]), f"{r['ms_paired']:.2f} / {r['ms_plain']:.2f}",
                     f"{r['complete']}/{r['queries']}"])
    return table(["queries", "rows read, paired", "of them > 3 bits away", "table rows the database fetched (paired)",
                  "rows read, single-block", "of them > 3 bits away", "true matches", "ms/query: query() / single-block",
                  "all true matches found"], rows)


def plot(cases: list[Case], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("queries/s (solid: random, dashed: planted)", [("random", "-o"), ("planted", "--s")]),
              ("check_and_add/s (a commit each)", [("checks", "-o")]),
              ("rows per random query: returned (solid),\nsingle-block (dashed), fetched by the DB (dotted)",
               [("paired", "-o"), ("plain", "--s"), ("fetched", ":^")]),
              ("bytes on disk per page", [("bytes", "-o")]),
              ("bulk load, fingerprints/s", [("load", "-o")]),
              ("peak RSS of the loading process, MB", [("rss", "-o")])]
    derived = {"bytes": lambda c: c.loaded["disk"] / c.n, "load": lambda c: c.n / c.loaded["seconds"], "rss": lambda c: c.loaded["rss"]}
    colors = {"sqlite": "tab:blue", "postgres": "tab:orange"}
    figure, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    for axis, (title, lines) in zip(axes.flat, panels):
        for backend, color in colors.items():
            mine = sorted((c for c in cases if c.backend == backend), key=lambda c: c.n)
            label = backend
            for figure_name, style in lines:
                get = derived.get(figure_name) or (lambda c, name=figure_name: c.figures[name])
                points = [(c.n, get(c)) for c in mine if get(c) > 0]  # log scale: nothing read has no point
                if points:
                    axis.plot(*zip(*points), style, color=color, label=label)
                    label = None
        if title.startswith("rows per"):
            sizes = np.array(sorted({c.n for c in cases}), dtype=float)
            axis.plot(sizes, paired_theory(sizes), "-", color="black", linewidth=0.8, label="theory, paired: 68N/2^32")
            axis.plot(sizes, plain_theory(sizes), "-.", color="gray", label="theory, single-block: 4N/65536")
        if title.startswith("bytes"):
            axis.axhline(TARGET_BYTES, color="red", linestyle=":", label=f"target {TARGET_BYTES} (SQLite, 10M)")
        if title.startswith("bulk"):
            axis.axhline(TARGET_LOAD, color="red", linestyle=":", label=f"target {TARGET_LOAD:,}/s (SQLite)")
        axis.set(xscale="log", yscale="log", title=title, xlabel="stored pages N")
        for ax in (axis.xaxis, axis.yaxis):
            ax.set_major_formatter(compact_formatter())
            ax.set_minor_formatter(compact_formatter(only_decades=False))
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8, loc="upper left" if title.startswith("rows per") else "best")
    figure.suptitle("simhash_index at scale: SQLite and PostgreSQL, random 64-bit fingerprints")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _compact(value: float) -> str:
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def compact_formatter(only_decades: bool = True) -> object:
    """Log-axis tick labels where matplotlib would put them, as 20k rather than 2x10^4 (a matplotlib Formatter)."""
    from matplotlib.ticker import LogFormatterSciNotation

    class Compact(LogFormatterSciNotation):
        def __call__(self, x: float, pos: int | None = None) -> str:
            return _compact(x) if super().__call__(x, pos) else ""

    return Compact(labelOnlyBase=only_decades)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="10000,100000,1000000", help="comma-separated sizes N")
    parser.add_argument("--with-10m", action="store_true", help="add N = 10,000,000 on SQLite (about 3 minutes, 2.5 GB of disk)")
    parser.add_argument("--postgres-10m", action="store_true", help="add N = 10,000,000 on PostgreSQL too")
    parser.add_argument("--backends", default="sqlite,postgres", help="comma-separated: sqlite, postgres")
    parser.add_argument("--postgres-url", default=os.environ.get("SIMHASH_BENCH_POSTGRES_URL", DEFAULT_POSTGRES))
    parser.add_argument("--queries", type=int, default=1000, help="random queries per round (and a quarter as many planted)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved query rounds")
    parser.add_argument("--checks", type=int, default=1000, help="check_and_add calls per index")
    parser.add_argument("--check-rounds", type=int, default=4, help="interleaved rounds the checks are split into")
    parser.add_argument("--candidate-queries", type=int, default=5000, help="random queries whose rows read are counted")
    parser.add_argument("--explain-queries", type=int, default=200, help="random queries whose table rows fetched are counted")
    parser.add_argument("--batch-size", type=int, default=100_000, help="insertion_session batch_size")
    parser.add_argument("--eval-dir", type=Path, default=REPO.parent / "shared" / "eval", help="the eval corpus (skipped if absent)")
    parser.add_argument("--skew-n", type=int, default=1_000_000, help="uniform pages in the synthetic skew test")
    parser.add_argument("--skew-bucket", type=int, default=100_000, help="pages sharing one block0 value")
    parser.add_argument("--pair-bucket", type=int, default=10_000, help="pages sharing one (block0, block1) pair")
    parser.add_argument("--no-skew", action="store_true", help="skip the synthetic skew test")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/scale.md and docs/scale.png alone")
    args = parser.parse_args()
    try:
        args.sizes = sorted({int(n.replace("_", "")) for n in args.n.split(",") if n.strip()})
    except ValueError:
        parser.error(f"--n takes comma-separated integers; got {args.n!r}")
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if not args.backends or set(args.backends) - {"sqlite", "postgres"}:
        parser.error(f"--backends takes sqlite and/or postgres; got {','.join(args.backends)!r}")
    if not args.sizes or min(args.sizes) < 1 or min(args.queries, args.rounds, args.checks, args.check_rounds, args.candidate_queries, args.explain_queries) < 1:
        parser.error("--n, --queries, --rounds, --checks, --check-rounds and --candidate-queries must be positive")
    return args


def main() -> None:
    args = parse_args()
    plan = [(backend, n) for backend in args.backends for n in args.sizes]
    for backend, wanted in (("sqlite", args.with_10m or args.postgres_10m), ("postgres", args.postgres_10m)):
        if wanted and backend in args.backends and (backend, 10_000_000) not in plan:
            plan.append((backend, 10_000_000))
    began, load_before = stamp(), machine()
    spawn = multiprocessing.get_context("spawn")  # a fresh process per load: its peak RSS is that load's alone
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="scale-")))
        cases = []
        for backend, n in plan:
            path = workdir / f"{backend}-{n}.db" if backend == "sqlite" else None
            url = f"sqlite:///{path}" if path else stack.enter_context(postgres_schema(args.postgres_url))
            with ProcessPoolExecutor(1, mp_context=spawn) as pool:
                loaded = pool.submit(load_case, backend, url, str(path) if path else None, n, args.seed + n, args.batch_size).result()
            case = Case(backend, n, url, loaded, SimhashIndex(url))
            stack.callback(case.index.close)
            cases.append(case)
            print(f"{case.name}: {n / loaded['seconds']:,.0f} fingerprints/s ({loaded['seconds']:.1f} s), "
                  f"{loaded['disk'] / n:.0f} bytes/page, peak RSS {loaded['rss']:.0f} MB", flush=True)
        measure(cases, args, random.Random(args.seed))
        evaluated = eval_skew(args.eval_dir, args.batch_size)
        if evaluated is None:
            print(f"eval corpus: skipped, {args.eval_dir / 'extracted_text.jsonl.gz'} not found", flush=True)
        skew = []
        if not args.no_skew:
            everything, queries = skew_data(args)
            for backend in args.backends:
                url = f"sqlite:///{workdir / 'skew.db'}" if backend == "sqlite" else stack.enter_context(postgres_schema(args.postgres_url))
                skew += skew_test(backend, url, everything, queries, args.batch_size)
    load_after, parent_rss = machine(), peak_rss_mb()
    result, lines = results_table(cases), verdicts(cases)
    print("\n" + result + "\n\n" + "\n".join(lines) + "\n\n" + storage_table(cases) + "\n\n" + eval_lines(evaluated, args.eval_dir))
    if skew:
        print("\n" + skew_table(skew))
    if args.no_write:
        return
    plot(cases, REPO / "docs" / "scale.png")
    write_doc(args, cases, result, lines, evaluated, skew, (began, load_before, load_after), parent_rss)
    print("\nwrote docs/scale.md and docs/scale.png")


def write_doc(args: argparse.Namespace, cases: list[Case], result: str, lines: list[str], evaluated: dict | None,
              skew: list[dict], when: tuple[str, str, str], parent_rss: float) -> None:
    began, load_before, load_after = when
    ordered = sorted(cases, key=lambda c: (c.backend, c.n))
    caught = {f"{c.figures['caught']:.0%}" for c in cases}
    caught_text = f"all {caught.pop()}" if len(caught) == 1 else ", ".join(f"{c.name} {c.figures['caught']:.0%}" for c in ordered)
    prefix_only = [f"{c.n:,}" for c in ordered if c.backend == "postgres" and c.figures["fetched"] > 2 * c.figures["paired"] + 1]
    planner = "" if not prefix_only else (
        f" At N = {', '.join(prefix_only)}, PostgreSQL's planner took only block i as the index condition and "
        "filtered block i+1 on the table rows it fetched, so it fetched what a single-block lookup reads.")
    skew_part = "Skipped (--no-skew)." if not skew else (
        f"{args.skew_n:,} uniform pages, plus {args.skew_bucket:,} pages sharing one block0 value (random elsewhere), plus "
        f"{args.pair_bucket:,} sharing one (block0, block1) pair, loaded into each backend (PostgreSQL: then VACUUM ANALYZE). "
        "Each query lies in its bucket and has 9 planted neighbours 1 to 3 bits away (flips outside block0, anywhere, and "
        "one inside block0, which leaves the bucket); `query()`'s answer is compared with a brute-force scan of every stored "
        "fingerprint, and so is the single-block lookup's. Cells are mean / max per query; a row counts once per lookup "
        "that returns it. Table rows fetched: SQLite's plan (EXPLAIN QUERY PLAN) takes both columns of each pair index as "
        "index conditions, so it fetches what it returns; PostgreSQL's from EXPLAIN ANALYZE, rows its filters "
        "dropped included.\n\n" + skew_table(skew))
    text = f"""# Scale

Written by `benchmarks/scale.py`: `{command()}`, {began}.
Machine: {load_before} (at the start); load average at the end: {load_after.split("load average ")[1].split(";")[0]}.
The machine is shared: figures from one run are comparable with each other, less so with another run's.

N random 64-bit fingerprints (keys like `{page_key(0)}`, no text hash, no sketch) are bulk-loaded
with `index.insertion_session(batch_size={args.batch_size:,})`, each (backend, N) in a fresh process whose
peak RSS (`getrusage` maxrss) is that load's alone; PostgreSQL's own memory is not in it. SQLite lives in a
temporary directory, PostgreSQL in a schema of its own (`VACUUM ANALYZE` after the load, as autovacuum
would do). Then, over all indexes in interleaved rounds: `query()` on {args.queries:,} random fingerprints
and {max(1, args.queries // 4):,} planted ones (a stored fingerprint with 1 to 3 bits flipped) per round,
{args.rounds} rounds, medians; `check_and_add()` {args.checks:,} times per index in {args.check_rounds} rounds
(each call its own transaction and commit; one in ten a near-duplicate of a stored page), median of the
rounds. Rows read: for {args.candidate_queries:,} random queries, the rows `sql.CANDIDATES` returns (the
four paired lookups: block i exactly and block i+1 within one bit), against the rows a plain
single-block lookup would read (pages sharing any one block value with the query). Bytes on disk:
SQLite's file after a WAL checkpoint, PostgreSQL's `pg_total_relation_size` of the tables, over N.
Table rows the database fetched: for {args.explain_queries:,} of the random queries, the rows it read from the table
to answer the paired lookup (SQLite: its plan takes both columns of each pair index as index conditions,
so it fetches what it returns; PostgreSQL: EXPLAIN ANALYZE, rows its filters dropped included).{planner}
A fresh process starts at {min(c.loaded["start_rss"] for c in cases):.0f} MB RSS; this process, which then
queried every index, peaked at {parent_rss:.0f} MB.

{result}

Near-duplicate `check_and_add` calls answered with their stored page: {caught_text}; new random pages
wrongly dropped: {sum(int(c.figures['false_drops']) for c in cases)}.

![queries/s, check_and_add/s, rows read per query, bytes per page, bulk load rate and peak RSS against N](scale.png)

## Targets

{chr(10).join("- " + line for line in lines)}

## Where the bytes go

{storage_table(cases)}

Per page, SQLite stores the row (rowid, the key as text, key hash, fingerprint, four blocks, a
NULL text hash and sketch, `stored_at` as ISO text) and one entry in each of six indexes: the
unique key hash, four (block i, block i+1) pairs and the text hash. PostgreSQL adds a 24-byte tuple
header and a 4-byte line pointer per row, a BIGINT id with its own primary-key index, and its unique
key-hash index is filled by random inserts during the load (the session drops and rebuilds only the
block and text-hash indexes), which leaves its pages partly empty. Pages from a crawl also carry
their 256-byte MinHash sketch and text hash, so they take about 270 bytes more than these.

## Skewed buckets

Real fingerprints are not uniform: near-duplicates and pages of one template share bits, so a
single-block lookup on real data reads whole clusters. The paired lookup takes block i exactly and
block i+1 within one bit, so a crowd sharing one block value costs it 17/65,536 of its size per
lookup, while staying complete up to distance 3.

### The eval corpus

{eval_lines(evaluated, args.eval_dir)}

### A synthetic worst case

{skew_part}

The paired lookup reads about 17/65,536 of a crowd sharing one block value per lookup, and still finds
every match; a crowd sharing two adjacent blocks (32 bits) is read whole by one lookup: the bound is on
the (block i, block i+1) pair, not on a single block.
"""
    (REPO / "docs" / "scale.md").write_text(text)


if __name__ == "__main__":
    main()
