"""How many decisions/s Redis writers make by radius, and how long each of our script calls holds the server.

    python -m benchmarks.redis_calls [--n 1000000] [--workloads uniform] [--radii 0,6,8] [--batch-sizes 64,1024]
                                     [--writers 1,4] [--pages 4096] [--rounds 3] [--redis-url URL] [--write]

Redis runs one script at a time: while one of ours runs, every other client of the server (a
scrapy-redis scheduler sharing it) waits. Loads N pages of each workload under a key prefix of
its own (add_many: `store` calls), then opens a writer (which reads every stored fingerprint
into its memory) and, in each of --rounds rounds, in a shuffled order, for each radius, batch
size and number of writers (processes side by side, each with its own pages), decides --pages
new pages a writer with check_and_add_many (one in ten a near copy of a stored page, as
benchmarks/writers.py makes them); the pages are forgotten after each configuration (`forget`
calls). Last, a prune that forgets nothing (every stored key read, `prune` calls) and a reset.

Per configuration: decisions/s (the sum over the writers, from their common start to the last
one's end; median and range of the rounds), beside radius 0's; the `write` calls, their median
as the writers saw them (the round trip included), how many held the server over 1 ms, the 99th
percentile of those and the longest, and the longest of the other calls, from the server's
SLOWLOG (its own time for each call, queueing aside; a process this machine stalls holds it too:
`redis-cli --intrinsic-latency 20` says how long a stall gets). The server logs every call over
1 ms in its SLOWLOG: a server of its own,

    redis-server --port 6391 --save '' --slowlog-log-slower-than 1000 --slowlog-max-len 100000

(the benchmark refuses a server that logs less; it resets the SLOWLOG between configurations).
Logging every call (0) would have Redis log each command a script runs too, millions a
configuration, and freeing them (SLOWLOG RESET) leaves the allocator purging pages in the
commands that follow: tens of milliseconds the calls measured would not have spent otherwise.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks._common import Timer, command, machine, median, stamp, table, write_section
from benchmarks._stores import redis_prefix
from benchmarks.workloads import WORKLOADS, split
from benchmarks.writers import pages
from simhash_index import open_index
from simhash_index.index.redis.backend import split_url
from simhash_index.index.redis.server import Server

DEFAULT_URL = "redis://127.0.0.1:6391/0"
SLOW_US = 1000  # the SLOWLOG threshold the benchmark needs at most


@dataclass(frozen=True)
class Config:
    radius: int
    batch: int
    writers: int


@dataclass
class Measured:
    rates: dict[Config, list[float]] = field(default_factory=dict)  # decisions/s of each round
    writes: dict[Config, list[float]] = field(default_factory=dict)  # seconds of each `write`, the writers' clock
    slow: dict[Config, dict[str, list[int]]] = field(default_factory=dict)  # SLOWLOG microseconds by command
    phases: dict[str, dict[str, int]] = field(default_factory=dict)  # load, forget, prune, reset: the longest


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.redis_calls", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1_000_000, help="pages stored")
    p.add_argument("--workloads", default="uniform", type=lambda v: split(v, tuple(WORKLOADS), "--workloads"))
    p.add_argument("--radii", default="0,6,8", type=lambda v: [int(x) for x in v.split(",")])
    p.add_argument("--batch-sizes", default="64,1024", type=lambda v: [int(x) for x in v.split(",")])
    p.add_argument("--writers", default="1,4", type=lambda v: [int(x) for x in v.split(",")])
    p.add_argument("--pages", type=int, default=4096, help="pages a writer decides in a configuration")
    p.add_argument("--rounds", type=int, default=3, help="rounds, the configurations shuffled in each")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--redis-url", default=os.environ.get("SIMHASH_BENCH_REDIS_CALLS_URL", DEFAULT_URL))
    p.add_argument(
        "--write", nargs="?", const="redis-calls", metavar="SECTION", help="write docs/performance.md's section"
    )
    return p


def server(url: str) -> Any:
    """A client of the server, refused unless its SLOWLOG keeps every call over SLOW_US."""
    import redis

    client = redis.Redis.from_url(split_url(url)[0])
    threshold = int(client.config_get("slowlog-log-slower-than")["slowlog-log-slower-than"])
    if not 0 < threshold <= SLOW_US:
        raise SystemExit(
            f"{url}: the server must log the calls over {SLOW_US} microseconds in its SLOWLOG, and only those "
            "(it logs every command a script runs too); run one of its own, e.g. redis-server --port 6391 "
            f"--save '' --slowlog-log-slower-than {SLOW_US} --slowlog-max-len 100000"
        )
    return client


def slow_calls(client: Any, prefix: str) -> dict[str, list[int]]:
    """The server's microseconds of each logged command since the last reset: our script calls under the
    prefix by their command, and the others a client sent (a plain UNLINK, say) by their name; the
    commands a script ran (inside a call already counted) and our reading of the log aside."""
    found: dict[str, list[int]] = defaultdict(list)
    for entry in client.slowlog_get(-1):
        if entry["client_address"] in (b"?:0", b""):
            continue
        args = entry["command"].decode("utf-8", "replace").split(" ")
        if args[0].upper() == "EVALSHA" and len(args) > 4 and args[4] == prefix:
            found[args[3]].append(int(entry["duration"]))
        elif args[0].upper() != "SLOWLOG":
            found[args[0].upper()].append(int(entry["duration"]))
    return found


class Phase:
    """A bulk phase (load, forget, prune, reset): the longest call of each command in it."""

    def __init__(self, client: Any, prefix: str, name: str, measured: Measured) -> None:
        self.client, self.prefix, self.name, self.measured = client, prefix, name, measured

    def __enter__(self) -> Phase:
        self.client.slowlog_reset()
        return self

    def __exit__(self, *exc_info: object) -> None:
        found = slow_calls(self.client, self.prefix).items()
        self.measured.phases[self.name] = {name: max(us) for name, us in found}


def timed_writes(seconds: list[float]) -> None:
    """Time each `write` call this process makes (on its clock: the round trip included)."""
    run = Server.run

    def timed(self: Server, command: str, *args: Any) -> Any:
        began = time.perf_counter()
        try:
            return run(self, command, *args)
        finally:
            if command == "write":
                seconds.append(time.perf_counter() - began)

    Server.run = timed  # type: ignore[method-assign]


def writer(url: str, config: Config, keyed: list, start: Any, results: Any) -> None:
    """One writer process: open the index, decide a batch to follow the stream, then, with the others, the pages."""
    writes: list[float] = []
    with open_index(url, max_distance=config.radius) as index:
        index.check_and_add_many(keyed[: config.batch])
        start.wait()  # all warmed up: the SLOWLOG is reset
        start.wait()
        timed_writes(writes)
        began = time.perf_counter()
        for offset in range(config.batch, len(keyed), config.batch):
            index.check_and_add_many(keyed[offset : offset + config.batch])
        done = (began, time.perf_counter(), len(keyed) - config.batch, index.resent, index.redecided)
    results.put((*done, writes))


def run(url: str, client: Any, workload: Any, config: Config, measured: Measured, round_: int, args: Any) -> None:
    """One configuration once: its writers side by side; the rate and the calls recorded; the pages forgotten."""
    context = multiprocessing.get_context("fork")
    start, results = context.Barrier(config.writers + 1), context.Queue()
    count = args.pages + config.batch
    keyed_all = []
    for w in range(config.writers):
        seed = args.seed * 1000 + config.radius * 10_000 + config.batch + round_ * 100_000 + w * 7
        made = pages(workload, count, seed)
        keyed_all.append([(f"https://new.example/{round_}/{w}/{config}/{i}", s) for i, s in enumerate(made)])
    workers = [context.Process(target=writer, args=(url, config, keyed, start, results)) for keyed in keyed_all]
    for process in workers:
        process.start()
    start.wait()
    client.slowlog_reset()
    start.wait()
    reports = [results.get(timeout=3600) for _ in workers]
    for process in workers:
        process.join()
    prefix = split_url(url)[1]
    t0, t1 = min(r[0] for r in reports), max(r[1] for r in reports)
    measured.rates.setdefault(config, []).append(sum(r[2] for r in reports) / (t1 - t0))
    measured.writes.setdefault(config, []).extend(s for r in reports for s in r[5])
    slow = measured.slow.setdefault(config, defaultdict(list))
    for name, us in slow_calls(client, prefix).items():
        slow[name] += us
    with Phase(client, prefix, "forget", measured), open_index(url) as index:
        index.forget(key for keyed in keyed_all for key, _ in keyed)
    print(
        f"{config}: {measured.rates[config][-1]:,.0f}/s, writes sent again {sum(r[3] for r in reports)}, "
        f"decided again {sum(r[4] for r in reports)}, slow calls { ({k: max(v) for k, v in slow.items()}) }",
        flush=True,
    )


def rows(measured: Measured) -> list[list[str]]:
    found = []
    for config in sorted(measured.rates, key=lambda c: (c.writers, c.batch, c.radius)):
        rates, slow = measured.rates[config], measured.slow[config]
        zero = measured.rates.get(Config(0, config.batch, config.writers))
        others = {name: max(us) for name, us in slow.items() if name != "write"}
        found.append(
            [
                str(config.writers),
                str(config.batch),
                str(config.radius),
                f"{median(rates):,.0f} ({min(rates):,.0f}-{max(rates):,.0f})",
                f"{median(rates) / median(zero):.2f}" if zero and config.radius else "",
                f"{len(measured.writes[config]):,}",
                f"{median(measured.writes[config]) * 1000:.2f}",
                f"{len(slow['write']):,}",
                f"{np.percentile(slow['write'], 99) / 1000:.2f}" if slow["write"] else "",
                f"**{max(slow['write'], default=0) / 1000:.2f}**",
                ", ".join(f"{name} {us / 1000:.2f}" for name, us in sorted(others.items())),
            ]
        )
    return found


def main() -> None:
    args = parser().parse_args()
    client = server(args.redis_url)
    started, texts = stamp(), []
    for name in args.workloads:
        workload = WORKLOADS[name](args.n, 20_000, args.seed)
        measured = Measured()
        with redis_prefix(args.redis_url) as url:
            prefix = split_url(url)[1]
            client.slowlog_reset()
            before = int(client.info("memory")["used_memory"])
            with Phase(client, prefix, "load", measured), Timer() as loading, open_index(url) as index:
                index.add_many(workload.items())
            stored = int(client.info("memory")["used_memory"]) - before
            with Timer() as opening, open_index(url) as index:
                index.lookup.follow()
                held = index.lookup.held
                per_page = 0.0 if held is None else held.nbytes / max(1, len(held))
            configs = [Config(r, b, w) for w in args.writers for b in args.batch_sizes for r in args.radii]
            for round_ in range(args.rounds):
                for config in random.Random(round_).sample(configs, len(configs)):
                    run(url, client, workload, config, measured, round_, args)
            with Phase(client, prefix, "prune", measured), open_index(url) as index:
                index.prune(before=index.page(next(iter(workload.items()))[0]).stored_at)  # type: ignore[union-attr]
            with Phase(client, prefix, "reset", measured), open_index(url) as index:
                index.reset()
        phases = "; ".join(
            f"{phase}: " + (", ".join(f"{call} {us / 1000:.1f} ms" for call, us in sorted(calls.items())) or "none")
            for phase, calls in measured.phases.items()
        )
        header = ["writers", "batch", "radius", "decisions/s", "x radius 0", "writes", "median ms (writer)"]
        header += ["over 1 ms", "p99 ms (of those)", "longest ms", "longest other calls, ms"]
        texts.append(
            f"{name}: {args.n:,} pages loaded in {loading.seconds:.0f} s, the server {stored / args.n:.0f} bytes a "
            f"page ({stored / 2**20:,.0f} MiB); a writer opened it and read every fingerprint in "
            f"{opening.seconds:.1f} s, holding {per_page:.0f} bytes a page. The longest call of each kind over "
            f"1 ms in each phase: {phases}.\n\n" + table(header, rows(measured))
        )
        print(texts[-1], flush=True)
    text = (
        f"`{command()}`, {started} to {stamp()}; {machine()}. The server's times are its SLOWLOG's, over "
        f"{args.rounds} rounds.\n\n" + "\n\n".join(texts)
    )
    print(text)
    if args.write:
        write_section(args.write, text)


if __name__ == "__main__":
    main()
