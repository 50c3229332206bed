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
one's end; median and range of the rounds), beside radius 0's; and from the server's SLOWLOG
(its own time for each call, queueing aside) the `write` calls, their median, 99th percentile
and longest, and the longest of any script call during it. The server must log every call, in a
server of its own, e.g.

    redis-server --port 6391 --save '' --slowlog-log-slower-than 0 --slowlog-max-len 1000000

(the benchmark refuses a server that does not log every call; it resets its SLOWLOG, and logs
only calls over 1 ms while it loads, forgets, prunes and resets: Redis logs the commands a script
runs too, and those phases run millions).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks._common import Timer, command, machine, median, stamp, table, write_section
from benchmarks._stores import redis_prefix
from benchmarks.workloads import WORKLOADS, split
from benchmarks.writers import pages
from simhash_index import open_index
from simhash_index.index.redis.backend import split_url

DEFAULT_URL = "redis://127.0.0.1:6391/0"
SCRIPT_COMMANDS = ("write", "read", "follow", "start", "store", "forget", "prune", "sweep", "epoch", "get", "texts")
PHASE_THRESHOLD_US = 1000  # what the SLOWLOG keeps while loading, forgetting, pruning, resetting


@dataclass(frozen=True)
class Config:
    radius: int
    batch: int
    writers: int


@dataclass
class Measured:
    rates: dict[Config, list[float]] = field(default_factory=dict)  # decisions/s of each round
    writes: dict[Config, list[int]] = field(default_factory=dict)  # microseconds of each `write` call
    longest: dict[Config, dict[str, int]] = field(default_factory=dict)  # the longest call of each command
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
    """A client of the server, refused unless its SLOWLOG keeps every call."""
    import redis

    client = redis.Redis.from_url(split_url(url)[0])
    if int(client.config_get("slowlog-log-slower-than")["slowlog-log-slower-than"]) != 0:
        raise SystemExit(
            f"{url}: the server does not log every call in its SLOWLOG; run one of its own, e.g. "
            "redis-server --port 6391 --save '' --slowlog-log-slower-than 0 --slowlog-max-len 1000000"
        )
    return client


def script_calls(client: Any, prefix: str) -> dict[str, list[int]]:
    """The server's microseconds for each script call under the prefix since the last reset, by command."""
    found: dict[str, list[int]] = {name: [] for name in SCRIPT_COMMANDS}
    for entry in client.slowlog_get(-1):
        args = entry["command"].decode("utf-8", "replace").split(" ")
        if len(args) > 4 and args[0].upper() == "EVALSHA" and args[4] == prefix and args[3] in found:
            found[args[3]].append(int(entry["duration"]))
    return found


def longest_command(client: Any) -> tuple[int, str]:
    """The longest command of any kind in the SLOWLOG (a script call, or a plain one such as UNLINK; our
    own reading of the SLOWLOG aside): its microseconds and its name."""
    entries = [(int(e["duration"]), e["command"].decode("utf-8", "replace").split(" ")) for e in client.slowlog_get(-1)]
    us, words = max((entry for entry in entries if entry[1][0].upper() != "SLOWLOG"), default=(0, [""]))
    return us, " ".join(words[:1] if words[0].upper() != "EVALSHA" else [words[0], words[3]])


class Phase:
    """A bulk phase: the SLOWLOG keeps only calls over PHASE_THRESHOLD_US meanwhile."""

    def __init__(self, client: Any, prefix: str, name: str, measured: Measured) -> None:
        self.client, self.prefix, self.name, self.measured = client, prefix, name, measured

    def __enter__(self) -> Phase:
        self.client.config_set("slowlog-log-slower-than", PHASE_THRESHOLD_US)
        self.client.slowlog_reset()
        return self

    def __exit__(self, *exc_info: object) -> None:
        calls = {name: max(found) for name, found in script_calls(self.client, self.prefix).items() if found}
        us, name = longest_command(self.client)
        calls[f"any command ({name})"] = us
        self.measured.phases[self.name] = calls
        self.client.config_set("slowlog-log-slower-than", 0)
        self.client.slowlog_reset()


def writer(url: str, config: Config, keyed: list, start: Any, results: Any) -> None:
    """One writer process: open the index, decide a batch to follow the stream, then, with the others, the pages."""
    with open_index(url, max_distance=config.radius) as index:
        index.check_and_add_many(keyed[: config.batch])
        start.wait()  # all warmed up: the SLOWLOG is reset
        start.wait()
        began = time.perf_counter()
        for offset in range(config.batch, len(keyed), config.batch):
            index.check_and_add_many(keyed[offset : offset + config.batch])
        results.put((began, time.perf_counter(), len(keyed) - config.batch, index.resent, index.redecided))


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
    calls = script_calls(client, prefix)
    t0, t1 = min(r[0] for r in reports), max(r[1] for r in reports)
    measured.rates.setdefault(config, []).append(sum(r[2] for r in reports) / (t1 - t0))
    measured.writes.setdefault(config, []).extend(calls["write"])
    longest = measured.longest.setdefault(config, {})
    for name, found in calls.items():
        if found:
            longest[name] = max(longest.get(name, 0), max(found))
    with Phase(client, prefix, "forget", measured), open_index(url) as index:
        index.forget(key for keyed in keyed_all for key, _ in keyed)
    print(
        f"{config}: {measured.rates[config][-1]:,.0f}/s, writes sent again {sum(r[3] for r in reports)}, "
        f"decided again {sum(r[4] for r in reports)}, longest {longest}",
        flush=True,
    )


def rows(measured: Measured) -> list[list[str]]:
    found = []
    for config in sorted(measured.rates, key=lambda c: (c.writers, c.batch, c.radius)):
        rates, calls = measured.rates[config], np.array(measured.writes[config]) / 1000
        zero = measured.rates.get(Config(0, config.batch, config.writers))
        others = {name: us for name, us in measured.longest[config].items() if name != "write"}
        found.append(
            [
                str(config.writers),
                str(config.batch),
                str(config.radius),
                f"{median(rates):,.0f} ({min(rates):,.0f}-{max(rates):,.0f})",
                f"{median(rates) / median(zero):.2f}" if zero and config.radius else "",
                f"{len(calls):,}",
                f"{np.median(calls):.2f}",
                f"{np.percentile(calls, 99):.2f}",
                f"**{calls.max():.2f}**",
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
            stored = int(client.info("memory")["used_memory"]) - before  # the SLOWLOG reset by the Phase
            with Timer() as opening, open_index(url) as index:
                index.check_and_add_many([])
                index.follower.follow()
                held = index.follower.held
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
            f"{phase}: " + ", ".join(f"{call} {us / 1000:.1f} ms" for call, us in sorted(calls.items()))
            for phase, calls in measured.phases.items()
        )
        header = ["writers", "batch", "radius", "decisions/s", "x radius 0", "writes", "median ms", "p99 ms"]
        header += ["longest ms", "longest other calls, ms"]
        texts.append(
            f"{name}: {args.n:,} pages loaded in {loading.seconds:.0f} s, the server {stored / args.n:.0f} bytes a "
            f"page ({stored / 2**20:,.0f} MiB); a writer opened it and read every fingerprint in "
            f"{opening.seconds:.1f} s, holding {per_page:.0f} bytes a page. The longest calls of each phase "
            f"(those over {PHASE_THRESHOLD_US / 1000:g} ms): {phases}.\n\n" + table(header, rows(measured))
        )
        print(texts[-1], flush=True)
    text = (
        f"`{command()}`, {started} to {stamp()}; {machine()}. Call times are the server's (SLOWLOG), over "
        f"{args.rounds} rounds.\n\n" + "\n\n".join(texts)
    )
    print(text)
    if args.write:
        write_section(args.write, text)


if __name__ == "__main__":
    main()
