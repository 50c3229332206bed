"""Throughput: decisions/s of check_and_add_many on SQLite, PostgreSQL and Redis, 1 and 4 writer processes.

    python -m benchmarks.throughput [--backends sqlite,postgres,redis] [--rounds 3] [--seconds 4]
                                    [--prefill 100000] [--postgres-url URL] [--redis-url URL] [--no-write]

Pages: template crowds around the eval corpus's real signatures, one in ten a near-duplicate
(benchmarks/workloads/templates.py). Each backend's index is first filled with --prefill such pages
(add_many), then every configuration (backend x batch of 1 or 64 x 1 or 4 writers) runs for
--seconds in each of --rounds interleaved rounds, in a shuffled order, each writer a process of
its own with its own connection and fresh pages (generated before the start line); the aggregate
rate is all writers' decisions over the time from the common start to the last writer's end.
Medians of the rounds. Then one writer's batches of 64 are profiled on each backend.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import multiprocessing
import os
import pstats
import random
import sqlite3
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

from benchmarks._common import command, load_of, machine, median, stamp, table, write_section
from benchmarks._stores import DEFAULT_POSTGRES, DEFAULT_REDIS, postgres_schema, vacuum
from benchmarks.workloads.templates import Templates, pages, templates
from simhash_index import open_index
from simhash_index.index.base import Index

BATCHES = (1, 64)
WRITERS = (1, 4)
# The targets: (backend, batch, writers) -> decisions/s
TARGETS = {
    ("postgres", 64, 4): 3000,
    ("postgres", 64, 1): 1500,
    ("sqlite", 64, 1): 10000,
    ("sqlite", 64, 4): 5000,
    ("redis", 64, 4): 10000,
}
# Pages a writer generates before the start: enough for --seconds at a generous rate.
CAPACITY = {"sqlite": 160000, "postgres": 100000, "redis": 160000}
SINGLE_CAPACITY = 30000  # the same for batches of 1
BASE: Templates | None = None  # set before forking: the writers inherit it
PREFILLED: dict[str, int] = {}  # backend -> pages its index holds before every run
RADIUS: int | None = None  # --max-distance: the search radius (None: the library's default)


def open_for(backend: str, url: str, prefix: str) -> Index:
    if backend == "redis":
        return open_index(url, prefix=prefix, max_distance=RADIUS)
    return open_index(url, max_distance=RADIUS)


def writer(
    backend: str, url: str, prefix: str, seed: int, count: int, batch: int, seconds: float, barrier, results
) -> None:
    """One writer process: open the index, generate pages, wait for the others, decide for `seconds`."""
    assert BASE is not None
    index = open_for(backend, url, prefix)
    items = [(key, sig) for key, sig, _ in pages(BASE, count, seed, f"w{seed}")]
    index.check_and_add_many(items[:1])  # connect before the start line
    done, dropped = 1, 0
    barrier.wait()
    began = time.perf_counter()
    deadline = began + seconds
    while done < len(items) and time.perf_counter() < deadline:
        answers = index.check_and_add_many(items[done : done + batch])
        done += len(answers)
        dropped += sum(a is not None for a in answers)
    ended = time.perf_counter()
    index.close()
    results.put((began, ended, done - 1, dropped, done >= len(items), [key for key, _ in items[:done]]))


def run(backend: str, url: str, prefix: str, batch: int, writers: int, seconds: float, seed: int) -> dict:
    fork = multiprocessing.get_context("fork")
    barrier, results = fork.Barrier(writers), fork.Queue()
    count = (CAPACITY[backend] if batch > 1 else SINGLE_CAPACITY) // writers
    procs = [
        fork.Process(
            target=writer,
            args=(backend, url, prefix, seed * 100 + w, count, batch, seconds, barrier, results),
        )
        for w in range(writers)
    ]
    for p in procs:
        p.start()
    got = [results.get() for _ in procs]
    for p in procs:
        p.join()
        if p.exitcode:
            raise RuntimeError(f"a {backend} writer failed (exit code {p.exitcode})")
    start, end = min(g[0] for g in got), max(g[1] for g in got)
    decisions = sum(g[2] for g in got)
    restore(backend, url, prefix, [key for g in got for key in g[5]])
    return {
        "rate": decisions / (end - start),
        "dropped": sum(g[3] for g in got) / max(1, decisions),
        "exhausted": any(g[4] for g in got),
    }


def fill(index: Index, count: int) -> None:
    """Store `count` pages, the same every time (`add_many`, no checks): the prefilled index."""
    assert BASE is not None
    index.add_many([(k, s) for k, s, _ in pages(BASE, count, 7, "prefill")], batch_size=10_000)


def restore(backend: str, url: str, prefix: str, keys: list[str]) -> None:
    """Forget the pages a run decided, so that every run starts from the prefilled index
    (a run adds tens of thousands of pages, and a bigger index decides more slowly)."""
    index = open_for(backend, url, prefix)
    index.forget(keys)
    left = len(index)
    index.close()
    if left != PREFILLED[backend]:
        raise RuntimeError(f"{backend}: {left:,} pages left after a run's were forgotten, not {PREFILLED[backend]:,}")
    if backend == "postgres":
        vacuum(url)


def growth(url: str, prefill: int, step: int, steps: int) -> list[tuple[int, float]]:
    """One writer's rate in batches of 64 on a new SQLite index of `prefill` pages as it grows
    by `step` pages `steps` times: (pages stored at the end of the step, decisions/s over it)."""
    assert BASE is not None
    index = open_index(url)
    fill(index, prefill)
    items = [(key, sig) for key, sig, _ in pages(BASE, step * steps, 4242, "growth")]
    rates = []
    for n in range(steps):
        began = time.perf_counter()
        for start in range(n * step, (n + 1) * step, 64):
            index.check_and_add_many(items[start : start + 64])
        rates.append((len(index), step / (time.perf_counter() - began)))
    index.close()
    return rates


def profile(backend: str, url: str, prefix: str, batches: int = 30) -> str:
    """Where one writer's batches of 64 spend their time: the top functions by own time."""
    assert BASE is not None
    index = open_for(backend, url, prefix)
    items = [(key, sig) for key, sig, _ in pages(BASE, 64 * (batches + 1), 999, f"profile-{backend}")]
    index.check_and_add_many(items[:64])
    profiler = cProfile.Profile()
    profiler.enable()
    for start in range(64, len(items), 64):
        index.check_and_add_many(items[start : start + 64])
    profiler.disable()
    index.close()
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream)
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:8]  # type: ignore[attr-defined]
    lines = [f"{backend}: {batches} batches of 64, {1000 * total / batches:.1f} ms a batch (under the profiler):"]
    for (path, line, name), (_, _, own, cumulative, _) in rows:
        lines.append(
            f"  {100 * own / total:4.1f}% own, {100 * cumulative / total:5.1f}% cumulative  "
            f"{Path(path).name}:{line} {name}"
        )
    return "\n".join(lines)


def sqlite_wal_pages(url: str, batches: int = 10) -> tuple[float, int]:
    """Pages an SQLite batch of 64 writes to the WAL (the WAL emptied, `batches` run, its frames
    counted), and the file's page size."""
    assert BASE is not None
    path = url.removeprefix("sqlite:///")
    index = open_index(url)
    items = [(key, sig) for key, sig, _ in pages(BASE, 64 * batches, 998, "wal")]
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for start in range(0, len(items), 64):
        index.check_and_add_many(items[start : start + 64])
    index.close()
    with sqlite3.connect(path) as conn:
        frames = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    return frames / batches, page_size


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.throughput", description=__doc__.splitlines()[0])
    p.add_argument("--backends", default="sqlite,postgres,redis")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=4.0, help="how long each configuration runs a round")
    p.add_argument("--prefill", type=int, default=100_000, help="pages stored before the timed runs")
    p.add_argument("--postgres-url", default=os.environ.get("SIMHASH_BENCH_POSTGRES_URL", DEFAULT_POSTGRES))
    p.add_argument("--redis-url", default=DEFAULT_REDIS)
    p.add_argument("--grow-step", type=int, default=50_000, help="SQLite: pages a growth step adds")
    p.add_argument("--grow-steps", type=int, default=6, help="SQLite: growth steps (0: none)")
    p.add_argument("--max-distance", type=int, help="the search radius (default: the library's)")
    p.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md alone")
    return p


def main() -> None:
    global BASE, RADIUS
    p = parser()
    args = p.parse_args()
    RADIUS = args.max_distance
    backends = [b for b in args.backends.split(",") if b]
    began, load_before = stamp(), machine()
    BASE = templates()
    print(BASE.source, flush=True)
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="throughput-")))
        urls, prefix = {}, f"bench-{uuid.uuid4().hex[:8]}:"
        for backend in backends:
            url = {
                "sqlite": f"sqlite:///{tmp / 'index.db'}",
                "postgres": stack.enter_context(postgres_schema(args.postgres_url)) if backend == "postgres" else "",
                "redis": args.redis_url,
            }[backend]
            urls[backend] = url
            index = open_for(backend, url, prefix)
            t0 = time.perf_counter()
            fill(index, args.prefill)
            PREFILLED[backend] = len(index)
            index.close()
            if backend == "postgres":
                vacuum(url)
            print(f"{backend}: prefilled {args.prefill:,} pages in {time.perf_counter() - t0:.1f} s", flush=True)
            if backend == "redis":
                stack.callback(_drop_redis, args.redis_url, prefix)
        configs = [(b, batch, w) for b in backends for batch in BATCHES for w in WRITERS]
        rates: dict[tuple, list[float]] = {c: [] for c in configs}
        drops: dict[tuple, list[float]] = {c: [] for c in configs}
        exhausted: set[tuple] = set()
        rng = random.Random(5)
        for round_ in range(args.rounds):
            rng.shuffle(configs)
            for n, config in enumerate(configs):
                backend, batch, writers = config
                got = run(backend, urls[backend], prefix, batch, writers, args.seconds, seed=1000 * round_ + n + 1)
                rates[config].append(got["rate"])
                drops[config].append(got["dropped"])
                if got["exhausted"]:
                    exhausted.add(config)
                print(
                    f"round {round_ + 1}: {backend} batch {batch} x {writers} writers: {got['rate']:,.0f}/s", flush=True
                )
        profiles = [profile(b, urls[b], prefix) for b in backends]
        if "sqlite" in backends:
            wal, page_size = sqlite_wal_pages(urls["sqlite"])
            profiles.append(
                f"sqlite: a batch of 64 writes {wal:.0f} pages of {page_size:,} bytes to the WAL "
                f"({wal / 64:.1f} a decision)"
            )
        grown = {}
        if "sqlite" in backends and args.grow_steps:
            for layout in ("blocks", "halves"):
                url = f"sqlite:///{tmp / f'growth-{layout}.db'}?layout={layout}"
                grown[layout] = growth(url, args.prefill, args.grow_step, args.grow_steps)
    load_after = machine()
    rows, verdicts = [], []
    for backend in backends:
        for batch in BATCHES:
            r1, r4 = median(rates[backend, batch, 1]), median(rates[backend, batch, 4])
            rows.append(
                [
                    backend,
                    str(batch),
                    f"{r1:,.0f}",
                    f"{r4:,.0f}",
                    f"{r4 / r1:.2f}x",
                    f"{median(drops[backend, batch, 1]):.1%} / {median(drops[backend, batch, 4]):.1%}",
                ]
            )
    for (backend, batch, writers), target in TARGETS.items():
        if backend in backends:
            got = median(rates[backend, batch, writers])
            verdict = "met" if got >= target else "MISSED"
            verdicts.append(
                f"- {backend}, batches of {batch}, {writers} writer{'s' if writers > 1 else ''}: "
                f"{got:,.0f}/s (target >= {target:,}/s): {verdict}"
            )
    for backend in backends:
        b1, b64 = median(rates[backend, 1, 1]), median(rates[backend, 64, 1])
        verdicts.append(f"- {backend}: batches of 64 decide {b64 / b1:.1f}x as fast as batches of 1 (1 writer)")
    note = ""
    if exhausted:
        note = "\n\nRan out of pre-generated pages before the time was up (rate still exact): " + ", ".join(
            f"{b} batch {s} x {w}" for b, s, w in sorted(exhausted)
        )
    body = f"""## Throughput

`{command()}` — {began}; {load_before} (at the start); load average at the end: {load_of(load_after)}.
The machine has 2 cores and is shared (other agents' test runs): the load average above is the noise; compare
figures within this table, and the ratios, rather than with another run's.

Decisions/s of `index.check_and_add_many(batch)`: each writer a process of its own with its own connection,
deciding fresh pages for {args.seconds:g} s; the aggregate rate is all writers' decisions over the time from their
common start line to the last one's end. {args.rounds} interleaved rounds (every configuration once a round, in a
shuffled order), medians. Each index first holds {args.prefill:,} pages (`add_many`), and every run starts from
them: the pages a run decided are forgotten (`index.forget`) before the next. Pages: template crowds around
{BASE.source} (`workloads/templates.py`): a page is a template's fingerprint with 8-24 bits flipped and a sketch sharing
half its slots with the template's, templates picked Zipf-like so a few are big crowds (two random generated
pages are a median 31 bits apart, 5th percentile 23; in the eval corpus, non-duplicate pages of one repository 27,
5th percentile 20, of different ones 31); one page in ten a
near-duplicate of an earlier page (1-3 bits flipped, 97% of the sketch kept). Every page carries its text hash and
256-byte sketch, as the pipeline's do. SQLite: a file in a temporary directory (WAL); PostgreSQL 15 on this machine,
a schema of its own; Redis on this machine, a key prefix of its own.

{table(["backend", "batch", "1 writer /s", "4 writers /s (aggregate)", "4 vs 1", "dropped (1 / 4 writers)"], rows)}

{chr(10).join(verdicts)}{note}
{growth_text(grown, args.prefill, args.grow_step)}
Where a batch of 64 spends its time (one writer, cProfile, top functions by own time):

```
{chr(10).join(profiles)}
```
"""
    print("\n" + body)
    if not args.no_write:
        write_section("throughput", body)
        print("wrote the throughput section of docs/performance.md")


def growth_text(grown: dict[str, list[tuple[int, float]]], prefill: int, step: int) -> str:
    if not grown:
        return ""
    blocks, halves = grown["blocks"], grown["halves"]
    rows = [[f"{b[0]:,}", f"{b[1]:,.0f}", f"{h[1]:,.0f}"] for b, h in zip(blocks, halves)]
    return f"""
As the index grows: one writer in batches of 64 on a new SQLite index of {prefill:,} pages in each layout, each
step deciding {step:,} more fresh pages (its rate taken over them; about a tenth are dropped). Crowds of similar
pages share block values, so a blocks lookup reads more candidates as they grow; the halves layout's probes do
not share a value that often.

{table(["pages stored after the step (blocks)", "blocks /s", "halves /s"], rows)}
"""


def _drop_redis(url: str, prefix: str) -> None:
    import redis

    from simhash_index.index.redis.backend import split_url

    with redis.Redis.from_url(split_url(url)[0]) as client:
        doomed = list(client.scan_iter(match=f"{prefix}*", count=10_000))
        for start in range(0, len(doomed), 10_000):
            client.unlink(*doomed[start : start + 10_000])


if __name__ == "__main__":
    main()
