"""The (backend, N) cases of the scale benchmark: each bulk-loaded in a process of its own, then measured together."""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks._common import Timer, flip, median, page_key, peak_rss_mb
from benchmarks._stores import LAYOUT, disk_bytes, storage_parts, vacuum
from benchmarks.scale_lookups import BlockCounts, examined, lookup_rows
from simhash_index import SimhashIndex
from simhash_index.index.records import Fingerprint
from simhash_index.index.sql.statements import fetch

SAMPLE = 5_000  # stored fingerprints a load hands back, for planted queries and near-duplicate checks


@contextmanager
def progress(description: str, total: int) -> Iterator[Callable[..., None]]:
    """update(done, description=None) for a rich progress bar on stderr when it is a terminal; else it does nothing."""
    if not sys.stderr.isatty():
        yield lambda done, description=None: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task(description, total=total)

        def update(done: int, description: str | None = None) -> None:
            bar.update(task, completed=done, **({"description": description} if description else {}))

        yield update


def bulk_load(
    index: SimhashIndex, label: str, items: Iterable[tuple[str, Fingerprint]], total: int, batch_size: int
) -> tuple[float, float]:
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
    """Run in a fresh process: bulk-load uniform(n, seed), then measure disk and this process's peak RSS."""
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

    index = SimhashIndex(url, layout=LAYOUT)
    try:
        seconds, building = bulk_load(index, f"{backend} {n:,}", items(), n, batch_size)
        with Timer() as vacuumed:
            if backend == "postgres":
                vacuum(url)
        size = disk_bytes(backend, index, Path(path) if path else None)
        parts = storage_parts(backend, index, Path(path) if path else None)
    finally:
        index.close()
    return {
        "seconds": seconds,
        "building": building,
        "vacuum": vacuumed.seconds,
        "disk": size,
        "parts": parts,
        "sample": sample,
        "rss": peak_rss_mb(),
        "start_rss": start_rss,
    }


@dataclass
class Case:
    """One loaded index: uniform(n, seed) on a backend, and what was measured of it."""

    backend: str
    n: int
    seed: int
    url: str
    loaded: dict
    index: SimhashIndex
    seconds: dict[str, list[float]] = field(
        default_factory=lambda: {"random": [], "planted": [], "checks": [], "round_trip": []}
    )
    figures: dict[str, float] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.backend} {self.n:,}"


def measure(cases: list[Case], args: argparse.Namespace, rng: random.Random) -> None:
    """Rows read per query (before check_and_add adds pages), then queries/s and check_and_add/s in interleaved rounds."""
    sample = [rng.getrandbits(64) for _ in range(args.candidate_queries)]
    for case in cases:
        count_reads(case, sample, args.explain_queries)
    time_queries(cases, args, rng)
    time_checks(cases, args, rng)


def count_reads(case: Case, queries: list[int], explained: int) -> None:
    """Rows the half lookups return, table rows the database fetched for them, and what a block table would read."""
    returned = [len(rows) for rows in lookup_rows(case.index, queries)]
    fetched = [examined(case.index, q) for q in queries[:explained]]
    block_table = BlockCounts(uniform(case.n, case.seed)).reads(queries)  # the load is regenerated from its seed
    case.figures.update(
        halves=sum(returned) / len(returned),
        block_table=float(np.mean(block_table)),
        fetched=-1.0 if None in fetched else sum(fetched) / len(fetched),
    )


def time_queries(cases: list[Case], args: argparse.Namespace, rng: random.Random) -> None:
    """query() on random and planted fingerprints, every index in each round: medians of seconds per query."""
    random_queries = [rng.getrandbits(64) for _ in range(args.queries)]
    planted = {
        c.name: [flip(rng.choice(c.loaded["sample"]), rng) for _ in range(max(1, args.queries // 4))] for c in cases
    }
    order = list(cases)
    for round_ in range(args.rounds):
        rng.shuffle(order)
        for case in order:
            for kind, queries in (("random", random_queries), ("planted", planted[case.name])):
                with Timer() as timer:
                    for q in queries:
                        case.index.query(q)
                case.seconds[kind].append(timer.seconds / len(queries))
            if case.backend == "postgres":
                case.seconds["round_trip"].append(round_trip(case.index, len(random_queries)))
        print(
            f"queries, round {round_ + 1}/{args.rounds}: "
            + ", ".join(f"{c.name} {1 / c.seconds['random'][-1]:,.0f}/s" for c in cases),
            flush=True,
        )
    for case in cases:
        case.figures.update(random=1 / median(case.seconds["random"]), planted=1 / median(case.seconds["planted"]))
        if case.seconds["round_trip"]:
            case.figures["round_trip"] = 1 / median(case.seconds["round_trip"])


def round_trip(index: SimhashIndex, count: int) -> float:
    """Seconds per `SELECT 1` on the pooled connection query() reads on: the floor under a PostgreSQL query."""
    with Timer() as timer:
        for _ in range(count):
            with index._single_read() as conn:
                fetch(conn, "SELECT 1", ())
    return timer.seconds / count


def time_checks(cases: list[Case], args: argparse.Namespace, rng: random.Random) -> None:
    """check_and_add, a commit each, one in ten a near-duplicate of a stored page: median rate of the rounds."""
    per_round = max(1, args.checks // args.check_rounds)
    caught: Counter = Counter()
    order = list(cases)
    for round_ in range(args.check_rounds):
        rng.shuffle(order)
        for case in order:
            items = [(f"https://example.com/new/{round_}/{i}.html", i % 10 == 0) for i in range(per_round)]
            items = [
                (key, flip(rng.choice(case.loaded["sample"]), rng) if near else rng.getrandbits(64), near)
                for key, near in items
            ]
            with Timer() as timer:
                for key, fp, near in items:
                    caught[case.name, near] += case.index.check_and_add(key, fp) is not None
            case.seconds["checks"].append(timer.seconds / per_round)
    planted_near = args.check_rounds * sum(1 for i in range(per_round) if i % 10 == 0)
    for case in cases:
        case.figures.update(
            checks=1 / median(case.seconds["checks"]),
            caught=caught[case.name, True] / planted_near,
            false_drops=caught[case.name, False],
        )
