"""What each search radius costs at scale: SQLite, blocks layout, generated sites, beside the `simhash` package.

    python -m benchmarks.radius --n 1000000 --radii 3,4,5,6,7 --peer-radii 3,6 [--workload realistic|crowded] --write

Loads n fingerprints of generated sites (benchmarks/workloads/realistic.py: sites with templates,
reused paragraphs and near copies; --workload realistic or crowded) into one SQLite index, then,
for each radius in interleaved rounds (medians): query() of held-out pages of the same sites (new
pages), the stored fingerprints a lookup returns, and batched decisions: check_and_add_many in
batches of 64 of held-out pages, the pages forgotten after each round so every round starts from
the same index. The `simhash` package's SimhashIndex(k=r) (pure Python, in memory) answers the
same lookups at the radii of --peer-radii.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import command, machine, median, stamp, table, write_section
from benchmarks.workloads.realistic import realistic
from simhash_index import SimhashIndex
from simhash_index.index.base import Index
from simhash_index.index.probes import probe_count
from simhash_index.index.sql.layouts import Layout

BATCH = 64


def load(url: str, fps: np.ndarray, keys: list[str]) -> float:
    """Bulk-load the index; its rate in pages/s."""
    began = time.perf_counter()
    with SimhashIndex(url) as index, index.insertion_session(batch_size=100_000) as session:
        for key, fp in zip(keys, fps.tolist()):
            session.add(key, fp)
        session.flush()
    return len(keys) / (time.perf_counter() - began)


def lookups(index: Index, queries: list[int]) -> tuple[float, float]:
    """query() of each fingerprint: lookups/s and the mean stored fingerprints returned."""
    began, returned = time.perf_counter(), 0
    for q in queries:
        returned += len(index.query(q))
    return len(queries) / (time.perf_counter() - began), returned / len(queries)


def decisions(index: Index, pages: list[tuple[str, int]]) -> tuple[float, float]:
    """check_and_add_many in batches: decisions/s and the share dropped; the pages are forgotten after."""
    began, dropped = time.perf_counter(), 0
    for start in range(0, len(pages), BATCH):
        dropped += sum(m is not None for m in index.check_and_add_many(pages[start : start + BATCH]))
    seconds = time.perf_counter() - began
    index.forget([key for key, _ in pages])
    return len(pages) / seconds, dropped / len(pages)


def scan_floor(path: Path, checks: list[int], radius: int) -> tuple[float, float]:
    """What the batches' probes cost SQLite alone: index entries read per decision, and the
    decisions/s if a batch cost no more than counting those entries (no row handed to Python)."""
    layout = Layout("blocks")
    began, entries = time.perf_counter(), 0
    with sqlite3.connect(path) as conn:
        for start in range(0, len(checks), BATCH):
            statement, parameters = layout.batch_candidates(checks[start : start + BATCH], radius)
            entries += conn.execute(f"SELECT count(*) FROM ({statement})", parameters).fetchone()[0]
    return entries / len(checks), len(checks) / (time.perf_counter() - began)


def peer_lookups(fps: np.ndarray, keys: list[str], queries: list[int], radius: int) -> tuple[float, float, float]:
    """The `simhash` package's SimhashIndex(k=radius) over the same pages: build seconds, lookups/s, mean found."""
    from simhash import Simhash
    from simhash import SimhashIndex as PeerIndex

    began = time.perf_counter()
    peer = PeerIndex([(key, Simhash(int(fp))) for key, fp in zip(keys, fps.tolist())], k=radius)
    built = time.perf_counter() - began
    began, found = time.perf_counter(), 0
    for q in queries:
        found += len(peer.get_near_dups(Simhash(q)))
    return built, len(queries) / (time.perf_counter() - began), found / len(queries)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.radius", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=100_000, help="pages loaded")
    p.add_argument("--radii", default="3,4,5,6,7")
    p.add_argument("--peer-radii", default="3,6", help="radii the simhash package is measured at ('' for none)")
    p.add_argument("--queries", type=int, default=500, help="lookups a round")
    p.add_argument("--checks", type=int, default=BATCH * 40, help="decisions a round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workers", type=int, default=2, help="processes generating pages")
    p.add_argument("--workload", choices=("realistic", "crowded"), default="realistic", help="the sites' model")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--write", action="store_true", help="replace this run's section of docs/performance.md")
    return p


def main() -> None:
    p = parser()
    args = p.parse_args()
    radii = [int(r) for r in args.radii.split(",")]
    began, load_before = stamp(), machine()
    fps, keys, held = realistic(args.n, args.seed, args.workers, args.workload)
    rng = random.Random(args.seed)
    fresh = [int(fp) for fp in rng.sample(held.tolist(), args.queries + args.checks)]
    queries, checks = fresh[: args.queries], fresh[args.queries :]
    rows = []
    with tempfile.TemporaryDirectory(prefix="radius-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'index.db'}"
        rate = load(url, fps, keys)
        print(f"loaded {len(keys):,} pages at {rate:,.0f}/s", flush=True)
        indexes = {r: SimhashIndex(url, max_distance=r) for r in radii}
        timings: dict[int, dict[str, list[float]]] = {r: {"lookups": [], "decisions": [], "floor": []} for r in radii}
        entries: dict[int, float] = {}
        found: dict[int, float] = {}
        dropped: dict[int, float] = {}
        try:
            for round_ in range(args.rounds):
                for r in rng.sample(radii, len(radii)):
                    per_s, found[r] = lookups(indexes[r], queries)
                    timings[r]["lookups"].append(per_s)
                    pages = [(f"https://new.example.com/{round_}/{i}.html", fp) for i, fp in enumerate(checks)]
                    per_s, dropped[r] = decisions(indexes[r], pages)
                    timings[r]["decisions"].append(per_s)
                    entries[r], per_s = scan_floor(Path(tmp) / "index.db", checks, r)
                    timings[r]["floor"].append(per_s)
                print(f"round {round_ + 1}/{args.rounds} done", flush=True)
        finally:
            for index in indexes.values():
                index.close()
    base = radii[0]
    for r in radii:
        look, decide = median(timings[r]["lookups"]), median(timings[r]["decisions"])
        rows.append(
            [
                str(r),
                str(probe_count(r, 4, 16)),
                f"{found[r]:.2f}",
                f"{look:,.0f}",
                f"{median(timings[base]['lookups']) / look:.2f}x",
                f"{decide:,.0f}",
                f"{median(timings[base]['decisions']) / decide:.2f}x",
                f"{dropped[r]:.1%}",
                f"{entries[r]:,.0f}",
                f"{median(timings[r]['floor']):,.0f}",
            ]
        )
    header = ["radius", "probes", "found/lookup", "lookups/s", f"cost vs {base}", "decisions/s (batches of 64)"]
    floor = ["entries/decision", "scan floor/s"]
    result = table([*header, f"cost vs {base}", "dropped", *floor], rows)
    peer_rows = []
    for r in [int(r) for r in args.peer_radii.split(",") if r]:
        built, per_s, peer_found = peer_lookups(fps, keys, queries, r)
        ours = median(timings[r]["lookups"]) if r in timings else float("nan")
        peer_rows.append([str(r), f"{built:.0f} s", f"{peer_found:.2f}", f"{per_s:,.0f}", f"{ours / per_s:.1f}x"])
        print(f"simhash package at k={r}: {per_s:,.0f} lookups/s", flush=True)
    peer = table(["radius", "build", "found/lookup", "lookups/s", "ours vs it"], peer_rows) if peer_rows else ""
    body = f"""## Search radius at scale

`{command()}` — {began}; {load_before} (at the start).

{len(keys):,} {args.workload} pages (benchmarks/workloads/realistic.py) in one SQLite index, blocks layout; lookups of
{len(queries)} and decisions on {len(checks):,} held-out pages of the same sites (new pages; some near copies),
{args.rounds} interleaved rounds, medians; each round's decided pages forgotten after it. "entries/decision":
the block index entries a decision's probes read; "scan floor/s": decisions/s if a batch cost no more
than SQLite counting those entries (`SELECT count(*)` over the batch's probe statement, no row handed
to Python), the most this layout's probes allow on this machine.

{result}

The `simhash` package's `SimhashIndex(k=r)` over the same pages and lookups (pure Python, in memory):

{peer}
"""
    print(body, flush=True)
    if args.write:
        write_section("radius" if args.workload == "realistic" else f"radius {args.workload}", body)


if __name__ == "__main__":
    main()
