"""Lookups and storage per backend, layout and workload, side by side (decisions: benchmarks/writers.py).

    python -m benchmarks.index [--workloads uniform,crowded] [--n 100000] [--backends sqlite]
                               [--layouts blocks] [--radius R] [--rounds 3] [--peer] [--write]

For each workload (benchmarks/workloads: uniform, realistic, crowded, skew) and N, every
(backend, layout) index is loaded with the same pages by `add_many` (SQLite in a temporary folder,
PostgreSQL in a schema of its own, VACUUM ANALYZEd after the load; Redis under a key prefix of its
own; the layout applies to SQL). Then all indexes are measured in interleaved rounds (a shared
machine's load hits all alike; medians): query() of fresh pages (new pages of the workload, not
stored) and of near copies (a stored page 1 to 3 bits off). Beside the rates: bytes per page
(SQLite's file after a checkpoint, PostgreSQL's tables and indexes, Redis's used_memory growth), the
index entries a fresh lookup reads (counted in numpy from the layout's probes; Redis: the entries of
the in-memory index its writers and query() look up in, index/memory/near.py), the stored pages
within the radius, and 100 near copies' answers checked against brute force. --peer adds the
`simhash` package's SimhashIndex (pure Python, in memory, at the largest radius of the workload's
indexes) built from each workload's largest N, queried in the same rounds.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks._common import Timer, add_write, command, load_of, machine, median, stamp, table, write_section
from benchmarks._rss import peak_rss_mb
from benchmarks._stores import (
    DEFAULT_POSTGRES,
    DEFAULT_REDIS,
    postgres_bytes,
    postgres_schema,
    redis_memory,
    redis_prefix,
    sqlite_bytes,
    vacuum,
)
from benchmarks.workloads import WORKLOADS, Workload, fingerprint_of, page_key, split
from simhash_index import open_index
from simhash_index.index.base import Index
from simhash_index.index.memory.near import NearIndex
from simhash_index.index.sql.layouts import LAYOUTS, Layout

BACKENDS = ("sqlite", "postgres", "redis")
KINDS = ("fresh", "near")


@dataclass
class Case:
    """One loaded index: a workload of N pages on a backend in a layout, and what was measured of it."""

    backend: str
    layout: str  # "-" for Redis
    workload: Workload
    index: Index
    figures: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})

    @property
    def n(self) -> int:
        return len(self.workload.stored)

    @property
    def name(self) -> str:
        return f"{self.backend} {self.layout} {self.workload.name} {self.n:,}"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.index", description=__doc__.splitlines()[0])
    p.add_argument("--workloads", default="uniform,crowded", type=lambda v: split(v, tuple(WORKLOADS), "--workloads"))
    p.add_argument(
        "--n", default="100000", type=lambda v: sorted(int(x) for x in v.split(",")), help="sizes, e.g. 100000,1000000"
    )
    p.add_argument("--backends", default="sqlite", type=lambda v: split(v, BACKENDS, "--backends"))
    p.add_argument("--layouts", default="blocks", type=lambda v: split(v, LAYOUTS, "--layouts"), help="SQL layouts")
    p.add_argument("--radius", type=int, help="the search radius (default: the index's)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    p.add_argument("--queries", type=int, default=500, help="fresh queries a round, and as many near copies")
    p.add_argument("--batch-size", type=int, default=100_000, help="add_many's batch_size")
    p.add_argument("--peer", action="store_true", help="add the simhash package's index (slow to build past 100k)")
    p.add_argument("--seed", type=int, default=1, help="1: the realistic sites cached so far")
    p.add_argument("--postgres-url", default=os.environ.get("SIMHASH_BENCH_POSTGRES_URL", DEFAULT_POSTGRES))
    p.add_argument("--redis-url", default=os.environ.get("SIMHASH_BENCH_REDIS_URL", DEFAULT_REDIS))
    add_write(p)
    return p


def open_case(
    stack: ExitStack, args: argparse.Namespace, folder: Path, backend: str, layout: str, tag: str
) -> tuple[Index, Callable[[], int]]:
    """A new empty index, and a function giving the bytes it takes."""
    if backend == "sqlite":
        path = folder / f"{tag}-{layout}.db"
        index = stack.enter_context(open_index(f"sqlite:///{path}", layout=layout, max_distance=args.radius))
        return index, lambda: sqlite_bytes(path)
    if backend == "postgres":
        url = stack.enter_context(postgres_schema(args.postgres_url))
        index = stack.enter_context(open_index(url, layout=layout, max_distance=args.radius))
        return index, lambda: postgres_bytes(index)  # type: ignore[arg-type]
    url = stack.enter_context(redis_prefix(args.redis_url))
    before = redis_memory(url)
    index = stack.enter_context(open_index(url, max_distance=args.radius))
    return index, lambda: redis_memory(url) - before


def load(case: Case, args: argparse.Namespace, size: Callable[[], int]) -> None:
    with Timer() as timer:
        case.index.add_many(case.workload.items(), batch_size=args.batch_size)
    if case.backend == "postgres":
        vacuum(case.index.url)
    case.figures.update(load=case.n / timer.seconds, bytes=size() / case.n)
    print(f"{case.name}: loaded at {case.figures['load']:,.0f}/s, {case.figures['bytes']:.0f} bytes/page", flush=True)


def entries_read(stored: np.ndarray, layout: str, queries: list[int], radius: int) -> float:
    """Mean index entries a lookup reads: per lookup column, the stored rows whose value is one it probes."""
    if layout == "halves":
        columns = [
            (stored & np.uint64(0xFFFFFFFF)).astype(np.int64) - (1 << 31),
            (stored >> np.uint64(32)).astype(np.uint32).view(np.int32).astype(np.int64),
        ]
    else:
        columns = [((stored >> np.uint64(16 * i)) & np.uint64(0xFFFF)).astype(np.int64) for i in range(4)]
    columns = [np.sort(c) for c in columns]
    probing = Layout("halves" if layout == "halves" else "blocks")
    total = 0
    for q in queries:
        for column, values in zip(columns, probing.probes(q, radius)):
            probes = np.array(values, dtype=np.int64)
            total += int((np.searchsorted(column, probes, "right") - np.searchsorted(column, probes, "left")).sum())
    return total / len(queries)


def brute_force(case: Case, queries: list[int]) -> int:
    """How many of these queries' answers are exactly the stored pages within the radius."""
    keys = case.workload.keys
    agree = 0
    for q in queries:
        near = np.flatnonzero(np.bitwise_count(case.workload.stored ^ np.uint64(q)) <= case.index.max_distance)
        expected = {keys[i] if keys else page_key(i) for i in near.tolist()}
        agree += {m.key for m in case.index.query(q)} == expected
    return agree


def time_round(cases: list[Case], args: argparse.Namespace, round_: int, peers: dict[str, Peer]) -> None:
    """Every index once, in a shuffled order: its queries."""
    rng = random.Random(args.seed + round_)
    for case in rng.sample(cases, len(cases)):
        w = case.workload
        queries = {
            "fresh": [fingerprint_of(p) for p in w.fresh[: args.queries]],
            "near": [fingerprint_of(p) for p in w.copies[: args.queries]],
        }
        for kind, batch in queries.items():
            with Timer() as timer:
                for q in batch:
                    case.index.query(q)
            case.seconds[kind].append(timer.seconds / len(batch))
    for peer in peers.values():
        peer.time_round()


class Peer:
    """The `simhash` package's SimhashIndex over a workload's stored pages (pure Python, in memory)."""

    def __init__(self, workload: Workload, radius: int, queries: int) -> None:
        import simhash as simhash_package  # the [bench] extra

        with Timer() as timer:
            objects = [(str(i), simhash_package.Simhash(int(fp))) for i, fp in enumerate(workload.stored.tolist())]
            self.index = simhash_package.SimhashIndex(objects, k=radius)
        self.build, self.radius = timer.seconds, radius
        self.queries = {
            "fresh": [simhash_package.Simhash(fingerprint_of(p)) for p in workload.fresh[:queries]],
            "near": [simhash_package.Simhash(fingerprint_of(p)) for p in workload.copies[:queries]],
        }
        self.seconds: dict[str, list[float]] = {"fresh": [], "near": []}
        print(f"peer over {workload.name} {len(workload.stored):,}: built in {timer.seconds:.1f} s", flush=True)

    def time_round(self) -> None:
        for kind, batch in self.queries.items():
            with Timer() as timer:
                for q in batch:
                    self.index.get_near_dups(q)
            self.seconds[kind].append(timer.seconds / len(batch))


def rows(cases: list[Case], peers: dict[str, Peer]) -> list[list[str]]:
    out = []
    for c in sorted(cases, key=lambda c: (c.workload.name, c.n, c.backend, c.layout)):
        f = c.figures
        peer = peers.get(f"{c.workload.name} {c.n}")
        same = peer is not None and peer.radius == c.index.max_distance
        vs = f"{f['fresh'] * median(peer.seconds['fresh']):.1f}x" if peer and same else "-"
        rates = [f"{f[k]:,.0f}" if k in f else "-" for k in ("load", "bytes", "fresh", "near")]
        counts = [f"{f['read']:,.1f}", f"{f['within']:.2f}", f"{f['agree']:.0f}/{f['verified']:.0f}"]
        out.append([c.backend, c.layout, str(c.index.max_distance), c.workload.name, f"{c.n:,}", *rates, vs])
        out[-1] += counts
    for key, peer in peers.items():
        name, n = key.split()
        fresh, near = (f"{1 / median(peer.seconds[k]):,.0f}" for k in ("fresh", "near"))
        built = f"build {peer.build:.0f} s"
        out.append(["simhash package", "in memory", str(peer.radius), name, f"{int(n):,}", built, "-", fresh, near])
        out[-1] += ["1.0x", "-", "-", "-"]
    return out


HEADER = [
    "backend", "layout", "radius", "workload", "N", "bulk load/s", "bytes/page", "queries/s fresh",
    "queries/s near copy", "vs peer (fresh)",
    "index entries read/lookup", "stored within radius/lookup", "near copies' answers = brute force",
]  # fmt: skip


def main() -> None:
    args = parser().parse_args()
    began, load_before = stamp(), machine()
    cases: list[Case] = []
    peers: dict[str, Peer] = {}
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-index-")))
        for name in args.workloads:
            for n in args.n:
                workload = WORKLOADS[name](n, args.queries, args.seed)
                for backend in args.backends:
                    for layout in args.layouts if backend != "redis" else ["-"]:
                        index, size = open_case(
                            stack, args, folder, backend, layout if layout != "-" else "blocks", f"{name}-{n}"
                        )
                        case = Case(backend, layout, workload, index)
                        load(case, args, size)
                        radius = index.max_distance
                        sample = [fingerprint_of(p) for p in workload.fresh[:300]]
                        if backend == "redis":
                            read = NearIndex(workload.stored).search(np.array(sample, np.uint64), radius).read
                            read /= len(sample)
                        else:
                            read = entries_read(workload.stored, layout, sample, radius)
                        case.figures.update(
                            read=read,
                            within=float(
                                np.mean(
                                    [
                                        np.count_nonzero(np.bitwise_count(workload.stored ^ np.uint64(q)) <= radius)
                                        for q in sample
                                    ]
                                )
                            ),
                            agree=brute_force(case, [fingerprint_of(p) for p in workload.copies[:100]]),
                            verified=min(100, len(workload.copies)),
                        )
                        cases.append(case)
                if args.peer and n == args.n[-1]:
                    radius = max(c.index.max_distance for c in cases if c.workload is workload)
                    peers[f"{name} {n}"] = Peer(workload, radius, args.queries)
        for round_ in range(args.rounds):
            time_round(cases, args, round_, peers)
            print(
                f"round {round_ + 1}/{args.rounds}: "
                + ", ".join(f"{c.name} {1 / c.seconds['fresh'][-1]:,.0f} q/s" for c in cases),
                flush=True,
            )
        for case in cases:
            case.figures.update({k: 1 / median(v) for k, v in case.seconds.items() if v})
    body = f"""## Index: {", ".join(args.workloads)}

`{command()}` — {began}; {load_before} (at the start); load average at the end: {load_of(machine())}.
{args.rounds} interleaved rounds of {args.queries} fresh and {args.queries} near-copy queries
per index; medians. Peak RSS of the process:
{peak_rss_mb():.0f} MB.

{table(HEADER, rows(cases, peers))}
"""
    print("\n" + body)
    if args.write:
        write_section("index", body)


if __name__ == "__main__":
    main()
