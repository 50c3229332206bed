"""Layouts side by side: "blocks" (the default) and "halves" on SQLite and PostgreSQL, with the peer.

    python benchmarks/layouts.py [--n 100000,1000000] [--backends sqlite,postgres] [--layouts blocks,halves]
                                 [--crowd 100000] [--no-peer] [--rounds 3] [--postgres-url URL] [--no-write]

For each N, every (backend, layout) index is bulk-loaded with the same N random 64-bit fingerprints
(a seeded generator; keys like https://example.com/page/<i>.html), and, separately, a skewed
"template crowd" of --crowd pages (benchmarks/_pages.py: crowds around the eval corpus's real
signatures, with sketches). Measured side by side in interleaved rounds, medians: query() on random
and planted fingerprints (a stored one 1-3 bits off), check_and_add (a commit each) and
check_and_add_many in batches of 64 (one page in ten a near-duplicate), bytes on disk per page, and
the rows a query reads (counted in numpy from the fingerprints; checked against the SQLite lookup's
own rows for a sample). The peer, the PyPI `simhash.SimhashIndex` (k=3, in memory), is built from the
largest N's fingerprints and queried in the same rounds. Writes docs/scale.md's "Layouts" section.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (
    REPO,
    Timer,
    command,
    flip,
    load_of,
    machine,
    median,
    page_key,
    stamp,
    table,
    write_section,
)
from benchmarks._pages import pages, templates
from benchmarks._stores import DEFAULT_POSTGRES, disk_bytes, postgres_schema, vacuum
from simhash_index import open_index
from simhash_index.index.sql.layouts import Layout

SCALE_DOC = REPO / "docs" / "scale.md"
MASK = (1 << 64) - 1


def uniform(n: int, seed: int) -> np.ndarray:
    return np.random.PCG64(seed).random_raw(n).astype(np.uint64)


class Reads:
    """Rows a query reads, counted from the stored fingerprints: block buckets, and half probes."""

    def __init__(self, fps: np.ndarray) -> None:
        self.blocks = [
            np.bincount(((fps >> np.uint64(16 * i)) & np.uint64(0xFFFF)).astype(np.int64), minlength=65536)
            for i in range(4)
        ]
        self.halves = []
        for shift in (0, 32):
            values, counts = np.unique((fps >> np.uint64(shift)) & np.uint64(0xFFFFFFFF), return_counts=True)
            self.halves.append(dict(zip(values.tolist(), counts.tolist())))

    def of(self, layout: str, q: int) -> int:
        if layout == "blocks":
            return sum(int(self.blocks[i][(q >> (16 * i)) & 0xFFFF]) for i in range(4))
        total = 0
        for i, shift in enumerate((0, 32)):
            half = (q >> shift) & 0xFFFFFFFF
            total += sum(self.halves[i].get(half ^ flip_, 0) for flip_ in (0, *(1 << b for b in range(32))))
        return total


def sql_reads(path: Path, layout: str, queries: list[int]) -> float:
    """Mean rows the SQLite index's own candidate lookup returns for the queries."""
    statement = Layout(layout).candidates_sql("sqlite")  # type: ignore[arg-type]
    connection = sqlite3.connect(path)
    try:
        counts = []
        for q in queries:
            if layout == "blocks":
                b = Layout("blocks").blocks(q)
                params: tuple = b
            else:
                from simhash_index.index.sql.layouts import half_probes

                low, high = half_probes(q)
                params = (*low, *high)
            counts.append(len(connection.execute(statement, params).fetchall()))
        return sum(counts) / len(counts)
    finally:
        connection.close()


@dataclass
class Case:
    backend: str
    layout: str
    data: str  # "uniform" or "crowd"
    n: int
    url: str
    path: Path | None
    index: object
    stored: list  # a sample of stored fingerprints (or signatures), for planted queries
    figures: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=lambda: {"random": [], "planted": [], "check": [], "batch": []})

    @property
    def name(self) -> str:
        return f"{self.backend} {self.layout} {self.data} {self.n:,}"


def open_case(stack: ExitStack, args: argparse.Namespace, tmp: Path, backend: str, layout: str, tag: str):
    if backend == "sqlite":
        path = tmp / f"{tag}-{layout}.db"
        url = f"sqlite:///{path}"
    else:
        path, url = None, stack.enter_context(postgres_schema(args.postgres_url))
    index = open_index(url, layout=layout)
    stack.callback(index.close)
    return url, path, index


def load(index, backend: str, url: str, items) -> float:
    with Timer() as timer:
        index.add_many(items, batch_size=100_000)
    if backend == "postgres":
        vacuum(url)
    return timer.seconds


def time_round(cases: list[Case], rng: random.Random, args: argparse.Namespace, peer: tuple | None) -> None:
    order = list(cases) + ([None] if peer else [])
    rng.shuffle(order)
    for case in order:
        if case is None:
            peer_index, make, random_q, planted_q = peer
            for kind, queries in (("random", random_q), ("planted", planted_q)):
                objs = [make(q) for q in queries]
                with Timer() as t:
                    for o in objs:
                        peer_index.get_near_dups(o)
                PEER["seconds"][kind].append(t.seconds / len(objs))
            continue
        queries = case.figures["queries"]
        for kind in ("random", "planted"):
            with Timer() as t:
                for q in queries[kind]:
                    case.index.query(q)
            case.seconds[kind].append(t.seconds / len(queries[kind]))
        new = case.figures["new"]
        singles = [new.pop() for _ in range(args.checks)]
        with Timer() as t:
            for key, fp in singles:
                case.index.check_and_add(key, fp)
        case.seconds["check"].append(t.seconds / len(singles))
        batched = [new.pop() for _ in range(64 * args.batches)]
        with Timer() as t:
            for start in range(0, len(batched), 64):
                case.index.check_and_add_many(batched[start : start + 64])
        case.seconds["batch"].append(t.seconds / len(batched))


PEER: dict = {"seconds": {"random": [], "planted": []}}


BLOCK0 = 0x5A5A  # the block0 value the block0 crowd shares


def fresh_fingerprint(case: Case, rng: random.Random) -> int:
    """A new page: random, or in the block0 crowd a new member of it."""
    fp = rng.getrandbits(64)
    return (fp & ~0xFFFF) | BLOCK0 if case.data == "block0 crowd" else fp


def new_items(case: Case, rng: random.Random, count: int, as_fp: Callable) -> list:
    """Fresh pages to check: one in ten near a stored one."""
    out = []
    for i in range(count):
        fp = flip(as_fp(rng.choice(case.stored)), rng) if i % 10 == 0 else fresh_fingerprint(case, rng)
        out.append((f"https://example.com/new/{case.layout}/{i}.html", fp))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="100000,1000000")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--layouts", default="blocks,halves")
    parser.add_argument("--crowd", type=int, default=100_000, help="pages in the template crowd (0: none)")
    parser.add_argument(
        "--block-crowd", type=int, default=100_000, help="pages of which a fifth share block0 (bits 0-15); 0: none"
    )
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=1000, help="random queries a round (and as many planted)")
    parser.add_argument("--checks", type=int, default=200, help="check_and_add calls per index a round")
    parser.add_argument("--batches", type=int, default=10, help="batches of 64 per index a round")
    parser.add_argument("--postgres-url", default=os.environ.get("SIMHASH_BENCH_POSTGRES_URL", DEFAULT_POSTGRES))
    parser.add_argument(
        "--section", default="layouts", help="the docs/scale.md section to write (another name keeps the main one)"
    )
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    sizes = sorted(int(x) for x in args.n.split(","))
    backends, layouts = args.backends.split(","), args.layouts.split(",")
    began, load_before = stamp(), machine()
    rng = random.Random(3)
    cases: list[Case] = []
    peer = None
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="layouts-")))
        for n in sizes:
            fps = uniform(n, 11 + n)
            reads = Reads(fps)
            sample = [int(x) for x in fps[np.random.default_rng(n).choice(n, 2000, replace=False)]]
            read_queries = [rng.getrandbits(64) for _ in range(2000)]
            for backend in backends:
                for layout in layouts:
                    url, path, index = open_case(stack, args, tmp, backend, layout, f"u{n}")
                    seconds = load(index, backend, url, ((page_key(i), int(fp)) for i, fp in enumerate(fps.tolist())))
                    case = Case(backend, layout, "uniform", n, url, path, index, sample)
                    case.figures.update(
                        load=n / seconds,
                        bytes=disk_bytes(backend, index, path) / n,
                        reads=float(np.mean([reads.of(layout, q) for q in read_queries])),
                    )
                    if path is not None:
                        case.figures["sql_reads"] = sql_reads(path, layout, read_queries[:300])
                    cases.append(case)
                    print(
                        f"{case.name}: loaded at {case.figures['load']:,.0f}/s, "
                        f"{case.figures['bytes']:.0f} bytes/page, {case.figures['reads']:.2f} rows/query",
                        flush=True,
                    )
            if n == sizes[-1] and not args.no_peer:
                import simhash as simhash_package

                with Timer() as built:
                    peer_index = simhash_package.SimhashIndex(
                        [(str(i), simhash_package.Simhash(int(fp))) for i, fp in enumerate(fps.tolist())], k=3
                    )
                PEER.update(n=n, build=built.seconds)
                peer = (peer_index, simhash_package.Simhash)
                print(f"peer built in {built.seconds:.1f} s", flush=True)
            del fps, reads
        if args.crowd:
            base = templates()
            crowd = [(k, s) for k, s, _ in pages(base, args.crowd, 21, "crowd")]
            crowd_fps = np.array([s.simhash for _, s in crowd], dtype=np.uint64)
            reads = Reads(crowd_fps)
            probes = [s.simhash for _, s, _ in pages(base, 2000, 22, "probe")]
            for backend in backends:
                for layout in layouts:
                    url, path, index = open_case(stack, args, tmp, backend, layout, "crowd")
                    seconds = load(index, backend, url, crowd)
                    case = Case(backend, layout, "crowd", args.crowd, url, path, index, [s for _, s in crowd[::50]])
                    case.figures.update(
                        load=args.crowd / seconds,
                        bytes=disk_bytes(backend, index, path) / args.crowd,
                        reads=float(np.mean([reads.of(layout, q) for q in probes])),
                        crowd_probes=probes,
                    )
                    if path is not None:
                        case.figures["sql_reads"] = sql_reads(path, layout, probes[:300])
                    cases.append(case)
                    print(
                        f"{case.name}: {case.figures['bytes']:.0f} bytes/page, {case.figures['reads']:.1f} rows/query",
                        flush=True,
                    )
        if args.block_crowd:
            n, crowd_n = args.block_crowd, args.block_crowd // 5
            fps = uniform(n, 31)
            fps[:crowd_n] = (fps[:crowd_n] & np.uint64(MASK ^ 0xFFFF)) | np.uint64(BLOCK0)
            reads = Reads(fps)
            members = [int(x) for x in fps[:crowd_n:10]]
            for backend in backends:
                for layout in layouts:
                    url, path, index = open_case(stack, args, tmp, backend, layout, "block0")
                    seconds = load(index, backend, url, ((page_key(i), int(fp)) for i, fp in enumerate(fps.tolist())))
                    case = Case(backend, layout, "block0 crowd", n, url, path, index, members)
                    probes = [fresh_fingerprint(case, rng) for _ in range(2000)]
                    case.figures.update(
                        load=n / seconds,
                        bytes=disk_bytes(backend, index, path) / n,
                        reads=float(np.mean([reads.of(layout, q) for q in probes])),
                        crowd_probes=probes,
                    )
                    if path is not None:
                        case.figures["sql_reads"] = sql_reads(path, layout, probes[:100])
                    cases.append(case)
                    print(f"{case.name}: {case.figures['reads']:.1f} rows/query", flush=True)
        # the queries and new pages of every case
        for case in cases:
            crowd_case = case.data == "crowd"
            as_fp = (lambda s: s.simhash) if crowd_case else (lambda x: x)
            random_q = (
                case.figures.pop("crowd_probes")[: args.queries]
                if "crowd_probes" in case.figures
                else [rng.getrandbits(64) for _ in range(args.queries)]
            )
            planted_q = [flip(as_fp(rng.choice(case.stored)), rng) for _ in range(args.queries)]
            case.figures["queries"] = {"random": random_q, "planted": planted_q}
            if crowd_case:
                fresh = [
                    (f"https://example.com/new/{case.layout}/{k}", s)
                    for k, s, _ in pages(
                        base, (args.checks + 64 * args.batches) * args.rounds, 23, "fresh", earlier=case.stored
                    )
                ]
                case.figures["new"] = fresh
            else:
                case.figures["new"] = new_items(case, rng, (args.checks + 64 * args.batches) * args.rounds, as_fp)
        if peer is not None:
            biggest = next(c for c in cases if c.data == "uniform" and c.n == sizes[-1])
            peer = (peer[0], peer[1], biggest.figures["queries"]["random"], biggest.figures["queries"]["planted"])
        for round_ in range(args.rounds):
            time_round(cases, rng, args, peer)
            print(
                f"round {round_ + 1}/{args.rounds}: "
                + ", ".join(f"{c.name} {1 / c.seconds['random'][-1]:,.0f} q/s" for c in cases),
                flush=True,
            )
    write(cases, args, sizes, began, load_before, machine())


def _crossover(pts: list, metric: str) -> str:
    """Where blocks' seconds (growing with the rows it reads, linear in N) meet halves' (about flat)."""
    (n1, b1, _), (n2, b2, h2) = pts[0], pts[-1]
    tb1, tb2, th = 1 / b1.figures[metric], 1 / b2.figures[metric], 1 / h2.figures[metric]
    slope = (tb2 - tb1) / (n2 - n1)
    timed = f"blocks {tb1 * 1e6:.0f} µs at {n1:,} and {tb2 * 1e6:.0f} µs at {n2:,}, halves {th * 1e6:.0f} µs at {n2:,}"
    if th <= tb2:
        return f"halves already as fast or faster at {n2:,} ({timed})"
    if slope <= 0:
        return f"blocks did not slow from {n1:,} to {n2:,} in this run ({timed}); no crossover in sight"
    return (
        f"blocks faster at {n2:,} ({timed}); extrapolated linearly, crossover near {n2 + (th - tb2) / slope:,.0f} pages"
    )


def write(cases: list[Case], args, sizes, began, load_before, load_after) -> None:
    for c in cases:
        for kind in ("random", "planted", "check", "batch"):
            c.figures[kind] = 1 / median(c.seconds[kind])
    peer_random = 1 / median(PEER["seconds"]["random"]) if PEER["seconds"]["random"] else None
    peer_planted = 1 / median(PEER["seconds"]["planted"]) if PEER["seconds"]["planted"] else None
    rows = []
    for c in cases:
        f = c.figures
        sql = f" ({f['sql_reads']:.2f})" if "sql_reads" in f else ""
        vs_peer = (
            f"{f['random'] / peer_random:.1f}x" if peer_random and c.n == PEER.get("n") and c.data == "uniform" else "-"
        )
        rows.append(
            [
                c.backend,
                c.layout,
                c.data,
                f"{c.n:,}",
                f"{f['random']:,.0f}",
                f"{f['planted']:,.0f}",
                vs_peer,
                f"{f['check']:,.0f}",
                f"{f['batch']:,.0f}",
                f"{f['reads']:.2f}{sql}",
                f"{f['bytes']:.0f}",
                f"{f['load']:,.0f}",
            ]
        )
    if peer_random:
        rows.append(
            [
                "peer simhash.SimhashIndex",
                "16-bit blocks, in memory",
                "uniform",
                f"{PEER['n']:,}",
                f"{peer_random:,.0f}",
                f"{peer_planted:,.0f}",
                "1.0x",
                "-",
                "-",
                "-",
                "-",
                f"build {PEER['build']:.1f} s",
            ]
        )
    header = [
        "backend",
        "layout",
        "data",
        "N",
        "queries/s random",
        "queries/s planted (near)",
        "vs peer (random)",
        "check_and_add/s",
        "check_and_add_many/s (64)",
        "rows read/query (SQLite's own lookup)",
        "bytes/page",
        "bulk load/s",
    ]
    lines = []

    def get(backend, layout, data, n):
        return next((c for c in cases if (c.backend, c.layout, c.data, c.n) == (backend, layout, data, n)), None)

    for backend in args.backends.split(","):
        for data, ns in (
            ("uniform", sizes),
            ("crowd", [args.crowd] if args.crowd else []),
            ("block0 crowd", [args.block_crowd] if args.block_crowd else []),
        ):
            for n in ns:
                b, h = get(backend, "blocks", data, n), get(backend, "halves", data, n)
                if b and h:
                    r = {k: b.figures[k] / h.figures[k] for k in ("random", "planted", "check", "batch", "bytes")}
                    lines.append(
                        f"- {backend}, {data} {n:,}: blocks/halves queries {r['random']:.2f}x random, "
                        f"{r['planted']:.2f}x planted; check_and_add {r['check']:.2f}x, "
                        f"batches of 64 {r['batch']:.2f}x; bytes/page {r['bytes']:.2f}x"
                    )
    crossover = []
    for backend in args.backends.split(","):
        pts = [(n, get(backend, "blocks", "uniform", n), get(backend, "halves", "uniform", n)) for n in sizes]
        pts = [(n, b, h) for n, b, h in pts if b and h]
        for metric, what in (("random", "a query"), ("batch", "a decision in batches of 64")):
            if len(pts) >= 2:
                crossover.append(f"- {backend}, {what}: " + _crossover(pts, metric))
    target = []
    sq = get("sqlite", "blocks", "uniform", PEER.get("n", -1))
    if sq and peer_random:
        ratio = sq.figures["random"] / peer_random
        target.append(
            f"- SQLite blocks queries at {PEER['n']:,}: {sq.figures['random']:,.0f}/s, "
            f"{ratio:.1f}x the peer's {peer_random:,.0f}/s (target >= 3x): {'met' if ratio >= 3 else 'MISSED'}"
        )
    heading = "Layouts: blocks and halves side by side" + ("" if args.section == "layouts" else f" ({args.section})")
    body = f"""## {heading}

`{command()}` — {began}; {load_before} (at the start); load average at the end: {load_of(load_after)}.
2 shared cores (other agents' test runs): compare within this table and the ratios, not with other runs.

The same N random fingerprints (no text hash, no sketch) loaded with `add_many` into each (backend, layout)
index, created with `open_index(url, layout=...)` ("blocks": four 16-bit block columns, contiguous assignment;
"halves": two 32-bit half expression indexes, 66 probes); PostgreSQL VACUUM ANALYZEd after the load. The "crowd"
rows: {args.crowd:,} skewed pages from `benchmarks/_pages.py` (template crowds around the eval corpus's real
signatures, 8-24 bits flipped, Zipf-picked templates, sketches and text hashes); their "random" queries are new
pages of the same crowds (not stored), planted ones a stored page 1-3 bits off. The "block0 crowd" rows:
{args.block_crowd:,} random pages of which a fifth share one block0 value (bits 0-15), the worst case of the blocks
layout (the pathological crowds of the sections above, milder); its queries are new members of that crowd. Every
index is queried in each of {args.rounds} interleaved rounds ({args.queries:,} random + {args.queries:,} planted
`query()` calls, {args.checks} `check_and_add` calls each its own commit, {args.batches} `check_and_add_many`
batches of 64; one new page in ten a near-duplicate); medians. Rows read/query: index entries the lookup returns
for 2,000 random (crowds: new crowd member) queries, counted in numpy from the stored fingerprints (blocks: the
four block buckets; halves: the 66 half values), in brackets what the SQLite index's own candidate statement
returned for 300 (block0 crowd: 100) of them. Bytes/page: SQLite's file after a checkpoint, PostgreSQL's tables
with their indexes. The peer: PyPI `simhash.SimhashIndex(k=3)` in this process, queried with prebuilt `Simhash`
objects.

{table(header, rows)}

{chr(10).join(lines)}

Crossover (uniform fingerprints):

{chr(10).join(crossover)}

{chr(10).join(target)}
"""
    print("\n" + body)
    if not args.no_write:
        write_section(args.section, body, SCALE_DOC)
        print("wrote the layouts section of docs/scale.md")


if __name__ == "__main__":
    main()
