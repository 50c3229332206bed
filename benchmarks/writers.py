"""What a decision costs a writer: batched check_and_add_many beside the plain write of the same rows.

    python -m benchmarks.writers [--n 1000000] [--workloads uniform,realistic,crowded] [--backends sqlite,postgres]
                                 [--radii 0,3,6,8] [--lookups memory,sql] [--writers 1,4] [--rounds 3]
                                 [--batches 40] [--seconds 20] [--write]

For each workload and N, one index per backend is loaded by add_many and settled (benchmarks/_stores.py:
a fortieth as many random pages written and forgotten, so that the configuration measured first
does not pay for splitting the full pages of the indexes the load built; PostgreSQL VACUUM
ANALYZEd after). Then every configuration runs in each of --rounds interleaved rounds, in a
shuffled order:
- `write`: add_many of the round's pages in batches of 64, one transaction each: the write floor;
- `r<R> <lookup>`: check_and_add_many of the same pages in batches of 64 at radius R, the lookup
  in memory (the default) or in the table's block columns (`lookup="sql"`);
each writer a process of its own (--writers: 1, or 4 side by side, each with its own pages, the
rate their sum over the time from their common start to the last one's end). A configuration
decides at most --batches batches, or what it decides in --seconds. The pages: fresh pages of
the workload (realistic, crowded: held-out pages of the stored sites), one in ten a near copy of a stored
page (1 to 3 bits off); they are forgotten after each configuration, so that every one starts
from the same index. Medians over the rounds (the range beside them). Beside the rates: the
in-memory index's bytes per stored page, and the time its writer took to open the index and
decide its first batch (building the in-memory index from the table).

Then, untimed, what a decision meets at each radius (--count-batches batches of the same kind of
pages, one writer, the memory lookup): per page, the stored pages within the radius (counted in
numpy against the stored fingerprints), the rows its writer read from the table, the candidates
turned away in memory by their sketch bits, the candidates whose sketches were compared (the rule's
`judge`) and how many of those were turned away. With
--profile, those batches at the largest radius run under cProfile too: where a batch's time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import multiprocessing
import os
import pstats
import random
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks._common import Timer, add_write, command, machine, median, stamp, table, write_section
from benchmarks._stores import DEFAULT_POSTGRES, postgres_schema, settle, vacuum
from benchmarks.workloads import WORKLOADS, Workload, fingerprint_of, split
from simhash_index import Signature, open_index
from simhash_index.index import rule
from simhash_index.index.base import Index
from simhash_index.index.sql import lookup

BATCH = 64
BACKENDS = ("sqlite", "postgres")
LOOKUPS = ("memory", "sql")


@dataclass(frozen=True)
class Config:
    """One way of writing the round's pages."""

    radius: int | None  # None: the plain write
    lookup: str
    writers: int

    @property
    def name(self) -> str:
        what = "write" if self.radius is None else f"r{self.radius} {self.lookup}"
        return f"{what} x{self.writers}"


@dataclass
class Case:
    """An index loaded with a workload, and what each configuration measured on it."""

    backend: str
    url: str
    workload: Workload
    rates: dict[Config, list[float]] = field(default_factory=dict)
    opened: dict[Config, list[float]] = field(default_factory=dict)
    bytes_per_page: float | None = None
    met: dict[int, Counter[str]] = field(default_factory=dict)  # radius -> what its decisions met, summed

    @property
    def name(self) -> str:
        return f"{self.backend} {self.workload.name} {len(self.workload.stored):,}"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.writers", description=__doc__.splitlines()[0])
    p.add_argument("--n", default="1000000", type=lambda v: [int(x) for x in v.split(",")])
    p.add_argument(
        "--workloads",
        default="uniform,realistic",
        type=lambda v: split(v, tuple(WORKLOADS), "--workloads"),
        help=f"of {', '.join(WORKLOADS)} (benchmarks/workloads)",
    )
    p.add_argument("--backends", default="sqlite,postgres", type=lambda v: v.split(","))
    p.add_argument("--radii", default="0,3,6,8", type=lambda v: [int(x) for x in v.split(",")])
    p.add_argument("--lookups", default="memory,sql", type=lambda v: v.split(","))
    p.add_argument("--writers", default="1,4", type=lambda v: [int(x) for x in v.split(",")])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batches", type=int, default=40, help=f"batches of {BATCH} a writer decides, at most")
    p.add_argument("--seconds", type=float, default=20.0, help="a configuration stops deciding after this")
    p.add_argument("--count-batches", type=int, default=10, help="batches whose candidates are counted (0: none)")
    p.add_argument("--profile", action="store_true", help="profile the counted batches at the largest radius")
    p.add_argument("--sqlite-writers", action="store_true", help="run several SQLite writers too")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--postgres-url", default=os.environ.get("SIMHASH_BENCH_POSTGRES_URL", DEFAULT_POSTGRES))
    add_write(p)
    return p


def configs(args: argparse.Namespace, backend: str) -> list[Config]:
    counts = [w for w in args.writers if w == 1 or backend == "postgres" or args.sqlite_writers]
    found = [Config(None, "-", w) for w in counts]
    found += [Config(r, lookup, w) for w in counts for r in args.radii for lookup in args.lookups]
    return found


def pages(workload: Workload, count: int, seed: int) -> list[Signature]:
    """`count` new pages: fresh ones of the workload, one in ten a near copy of a stored page. A
    workload's page with a sketch keeps it, so that its candidates are verified as a crawl's are."""
    rng = random.Random(seed)
    made = []
    for i in range(count):
        source = workload.copies if i % 10 == 0 else workload.fresh
        page = source[rng.randrange(len(source))]
        sketch = page.sketch if isinstance(page, Signature) else None
        made.append(Signature(fingerprint_of(page), rng.getrandbits(64), sketch))
    return made


def writer(url: str, config: Config, keyed: list[tuple[str, Signature]], seconds: float, start, results) -> None:
    """One writer process: open the index, decide one warm-up batch, then, after the others, the pages."""
    began = time.perf_counter()
    options = {} if config.radius is None else {"max_distance": config.radius, "lookup": config.lookup}
    with open_index(url, **options) as index:
        warm, work = keyed[:BATCH], keyed[BATCH:]
        if config.radius is None:
            index.add_many(warm, batch_size=BATCH)
        else:
            index.check_and_add_many(warm)
        opened = time.perf_counter() - began
        held = getattr(getattr(index, "lookup", None), "index", None)
        size = None if held is None else held.nbytes
        start.wait()
        t0 = time.perf_counter()
        done = 0
        for offset in range(0, len(work), BATCH):
            chunk = work[offset : offset + BATCH]
            if config.radius is None:
                index.add_many(chunk, batch_size=BATCH)
            else:
                index.check_and_add_many(chunk)
            done += len(chunk)
            if time.perf_counter() - t0 > seconds:
                break
        results.put((t0, time.perf_counter(), done, opened, size))


def run(case: Case, config: Config, args: argparse.Namespace, round_: int) -> None:
    """One configuration once: its writers side by side; the rate and open time recorded; pages forgotten."""
    context = multiprocessing.get_context("fork")
    start, results = context.Barrier(config.writers), context.Queue()
    per_writer = (args.batches + 1) * BATCH
    keyed_all = []
    for w in range(config.writers):
        made = pages(case.workload, per_writer, args.seed * 1000 + round_ * 10 + w)
        keyed_all.append([(f"https://new.example/{round_}/{w}/{i}", s) for i, s in enumerate(made)])
    workers = [
        context.Process(target=writer, args=(case.url, config, keyed, args.seconds, start, results))
        for keyed in keyed_all
    ]
    for process in workers:
        process.start()
    reports = [results.get(timeout=3600) for _ in workers]
    for process in workers:
        process.join()
    t0, t1 = min(r[0] for r in reports), max(r[1] for r in reports)
    case.rates.setdefault(config, []).append(sum(r[2] for r in reports) / (t1 - t0))
    case.opened.setdefault(config, []).append(median([r[3] for r in reports]))
    sizes = [r[4] for r in reports if r[4] is not None]
    if sizes:
        case.bytes_per_page = sizes[0] / len(case.workload.stored)
    with open_index(case.url, lookup="sql") as index:
        index.forget(key for keyed in keyed_all for key, _ in keyed)
    print(f"{case.name} {config.name}: {case.rates[config][-1]:,.0f}/s", flush=True)


@contextmanager
def counting(met: Counter[str]) -> Iterator[None]:
    """Count, into `met`, the rows the lookup reads and the rule's judgements (sketch comparisons),
    by wrapping the two functions every decision goes through (in this process only)."""
    read, by_id, judge = lookup.pages_by_fingerprint, lookup.pages_by_id, rule.judge

    def counted_read(*args, **kwargs):  # type: ignore[no-untyped-def]
        found = read(*args, **kwargs)
        met["rows read"] += sum(map(len, found.values()))
        return found

    def counted_by_id(*args, **kwargs):  # type: ignore[no-untyped-def]
        found = by_id(*args, **kwargs)
        met["rows read"] += len(found)
        return found

    def counted_judge(*args, **kwargs):  # type: ignore[no-untyped-def]
        verdict = judge(*args, **kwargs)
        if verdict.similarity is not None:
            met["sketch checks"] += 1
            met["rejected"] += not verdict.accepted
        return verdict

    lookup.pages_by_fingerprint, lookup.pages_by_id, rule.judge = counted_read, counted_by_id, counted_judge  # type: ignore[assignment]
    try:
        yield
    finally:
        lookup.pages_by_fingerprint, lookup.pages_by_id, rule.judge = read, by_id, judge  # type: ignore[assignment]


@contextmanager
def turned_away(index: Index, met: Counter[str]) -> Iterator[None]:
    """Count, into `met`, the candidates the writer's in-memory lookup turned away by their sketch bits."""
    before = getattr(getattr(index, "lookup", None), "turned_away", 0)
    try:
        yield
    finally:
        met["turned away in memory"] += getattr(getattr(index, "lookup", None), "turned_away", 0) - before


def count(case: Case, radius: int, args: argparse.Namespace, profiler: cProfile.Profile | None = None) -> None:
    """What --count-batches batches of new pages meet at this radius, per page (untimed; under the
    profiler, when one is given)."""
    made = pages(case.workload, args.count_batches * BATCH, args.seed * 7919 + radius)
    keyed = [(f"https://counted.example/{radius}/{i}", s) for i, s in enumerate(made)]
    met = case.met.setdefault(radius, Counter())
    stored = np.asarray(case.workload.stored)
    for signature in made:
        met["within"] += int(np.count_nonzero(np.bitwise_count(stored ^ np.uint64(signature.simhash)) <= radius))
    with open_index(case.url, max_distance=radius) as index, counting(met), turned_away(index, met):
        # the first batch builds the in-memory index: not what a batch costs, so not profiled
        met["dropped"] += sum(m is not None for m in index.check_and_add_many(keyed[:BATCH]))
        if profiler is not None:
            profiler.enable()
        for offset in range(BATCH, len(keyed), BATCH):
            met["dropped"] += sum(m is not None for m in index.check_and_add_many(keyed[offset : offset + BATCH]))
        if profiler is not None:
            profiler.disable()
        met["pages"] += len(keyed)
        index.forget(key for key, _ in keyed)


def profiled(case: Case, radius: int, profiler: cProfile.Profile, batches: int) -> str:
    """The top functions of a profile by own time, with their cumulative share."""
    stats = pstats.Stats(profiler, stream=io.StringIO())
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:12]  # type: ignore[attr-defined]
    lines = [f"{case.name}, radius {radius}: {1000 * total / batches:.1f} ms a batch of {BATCH} under the profiler"]
    for (path, line, name), (_, _, own, cumulative, _) in rows:
        lines.append(
            f"  {100 * own / total:4.1f}% own {100 * cumulative / total:5.1f}% cumulative"
            f"  {Path(path).name}:{line} {name}"
        )
    return "\n".join(lines)


@contextmanager
def loaded(backend: str, workload: Workload, folder: Path, args: argparse.Namespace) -> Iterator[Case]:
    with ExitStack() as stack:
        if backend == "sqlite":
            url = f"sqlite:///{folder / f'{workload.name}-{len(workload.stored)}.db'}"
        else:
            url = stack.enter_context(postgres_schema(args.postgres_url))
        with Timer() as timer:
            with open_index(url, lookup="sql") as index:
                index.add_many(workload.items())
            settle(url, len(workload.stored))
        if backend == "postgres":
            vacuum(url)
        print(
            f"{backend} {workload.name} {len(workload.stored):,}: loaded and settled in {timer.seconds:.0f} s",
            flush=True,
        )
        yield Case(backend, url, workload)


def report(cases: list[Case], args: argparse.Namespace, started: str, where: str) -> str:
    rows = []
    for case in cases:
        ordered = sorted(case.rates, key=lambda c: (c.writers, c.radius is not None, c.radius or 0, c.lookup))
        for config in ordered:
            rates = case.rates[config]
            floor = case.rates.get(Config(None, "-", config.writers))
            zero = case.rates.get(Config(0, config.lookup, config.writers))
            rows.append(
                [
                    case.name,
                    config.name,
                    f"{median(rates):,.0f} ({min(rates):,.0f}-{max(rates):,.0f})",
                    f"{median(rates) / median(floor):.2f}" if floor else "",
                    f"{median(rates) / median(zero):.2f}" if zero and config.radius else "",
                    f"{median(case.opened[config]):.1f}",
                ]
            )
        if case.bytes_per_page is not None:
            rows.append([case.name, "in-memory index", f"{case.bytes_per_page:.1f} bytes a page", "", "", ""])
    header = ["index", "writers", "decisions/s (range)", "x write", "x radius 0", "open s"]
    met = [
        [case.name, str(r), *(f"{m[what] / m['pages']:.1f}" for what in MET)]
        for case in cases
        for r, m in sorted(case.met.items())
    ]
    counted = (
        f"\n\nPer page, {args.count_batches} batches of {BATCH} at each radius (one writer, untimed):\n\n"
        + table(["index", "radius", *(f"{what} a page" for what in MET)], met)
        if met
        else ""
    )
    return (
        f"`{command()}`, {started} to {stamp()}; {where}. Batches of {BATCH}; medians of {args.rounds} rounds.\n\n"
        + table(header, rows)
        + counted
    )


MET = ("within", "turned away in memory", "rows read", "sketch checks", "rejected", "dropped")


def main() -> None:
    args = parser().parse_args()
    started, cases = stamp(), []
    with tempfile.TemporaryDirectory(prefix="writers-") as folder, ExitStack() as stack:
        for name in args.workloads:
            for n in args.n:
                workload = WORKLOADS[name](n, 20_000, args.seed)
                cases += [stack.enter_context(loaded(b, workload, Path(folder), args)) for b in args.backends]
        runs = [(case, config) for case in cases for config in configs(args, case.backend)]
        for round_ in range(args.rounds):
            for case, config in random.Random(round_).sample(runs, len(runs)):
                run(case, config, args, round_)
        profiles = []
        for case in cases if args.count_batches else []:
            radii = sorted({r for r in args.radii if r > 0})
            for radius in radii:
                profiler = cProfile.Profile() if args.profile and radius == radii[-1] else None
                count(case, radius, args, profiler)
                if profiler is not None:
                    profiles.append(profiled(case, radius, profiler, args.count_batches - 1))
        text = report(cases, args, started, machine())
    print(text)
    if profiles:
        print("\n```\n" + "\n".join(profiles) + "\n```")
    if args.write:
        write_section("writers", text)


if __name__ == "__main__":
    main()
