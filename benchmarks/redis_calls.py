"""How long one of our script calls holds a Redis server, and how many decisions/s it makes, by radius and batch size.

    python -m benchmarks.redis_calls [--n 1000000] [--workloads uniform] [--radii 6,8]
                                     [--batch-sizes 1,64,1024] [--budgets default,none] [--pages 1024] [--rounds 3]
                                     [--redis-url URL] [--write]

Redis runs one script at a time: while one of ours runs, every other client of the server (a
scrapy-redis scheduler sharing it) waits, and past `busy-reply-threshold` gets `BUSY`. Loads N
pages of each workload under a key prefix of its own, then decides --pages new pages (one in ten a
near copy of a stored page, as benchmarks/writers.py makes them) with check_and_add_many in
batches of each size at each radius, and each call budget (--budgets: `default`, the backend's
CHECK_PAGES and CHECK_US; `none`, a batch in one call, as before the budget; or microseconds), the
pages forgotten after each configuration; --rounds rounds, the configurations shuffled in each.
Per configuration: decisions/s (the client's clock; median and range of the rounds), and from the
server's SLOWLOG (its own time for each call, queueing aside) the script calls made, their median,
99th percentile and longest. The server must log every call: a server of its own, e.g.

    redis-server --port 6391 --save '' --slowlog-log-slower-than 0 --slowlog-max-len 1000000

(the benchmark refuses a server that does not, and resets its SLOWLOG). The server logs the
commands a script runs too: the log must hold them for a configuration's calls to be all there
(1M entries do for 1,024 pages at radius 8; a 1M-page load overflows it, so its `store` figure is
of the calls kept).
"""

from __future__ import annotations

import argparse
import os
import random
import time
from dataclasses import dataclass, field

import numpy as np

from benchmarks._common import Timer, command, machine, median, stamp, table, write_section
from benchmarks._stores import redis_prefix
from benchmarks.workloads import WORKLOADS, Workload
from benchmarks.writers import pages
from simhash_index import open_index
from simhash_index.index.redis import backend
from simhash_index.index.redis.backend import split_url

DEFAULT_URL = "redis://127.0.0.1:6391/0"
DEFAULTS = backend.CHECK_PAGES, backend.CHECK_US


@dataclass
class Measured:
    workload: str
    radius: int
    batch: int
    budget: str
    rates: list[float] = field(default_factory=list)  # decisions/s of each round
    calls: list[int] = field(default_factory=list)  # microseconds of each check call, the server's, every round

    def row(self) -> list[str]:
        calls = np.array(self.calls) / 1000
        return [
            self.workload,
            str(self.radius),
            str(self.batch),
            self.budget,
            f"{median(self.rates):,.0f} ({min(self.rates):,.0f}-{max(self.rates):,.0f})",
            f"{len(calls):,}",
            f"{np.median(calls):.1f}",
            f"{np.percentile(calls, 99):.1f}",
            f"**{calls.max():.1f}**",
        ]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.redis_calls", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1_000_000, help="pages stored")
    p.add_argument("--workloads", default="uniform", type=lambda v: v.split(","))
    p.add_argument("--radii", default="6,8", type=lambda v: [int(x) for x in v.split(",")])
    p.add_argument("--batch-sizes", default="1,64,1024", type=lambda v: [int(x) for x in v.split(",")])
    p.add_argument("--budgets", default="default,none", type=lambda v: v.split(","), help="call budgets")
    p.add_argument("--pages", type=int, default=1024, help="pages decided a configuration a round")
    p.add_argument("--rounds", type=int, default=3, help="rounds, the configurations shuffled in each")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--redis-url", default=os.environ.get("SIMHASH_BENCH_REDIS_CALLS_URL", DEFAULT_URL))
    p.add_argument(
        "--write", nargs="?", const="redis-calls", metavar="SECTION", help="write docs/performance.md's section"
    )
    return p


def server(url: str):  # type: ignore[no-untyped-def]
    """A client of the server, refused unless its SLOWLOG keeps every call."""
    import redis

    client = redis.Redis.from_url(split_url(url)[0])
    if int(client.config_get("slowlog-log-slower-than")["slowlog-log-slower-than"]) != 0:
        raise SystemExit(
            f"{url}: the server does not log every call in its SLOWLOG; run one of its own, e.g. "
            "redis-server --port 6391 --save '' --slowlog-log-slower-than 0 --slowlog-max-len 1000000"
        )
    return client


def script_calls(client, command: str, prefix: str) -> list[int]:  # type: ignore[no-untyped-def]
    """The server's microseconds for each script call of `command` under the prefix since the last reset."""
    needle = f"{command} {prefix}"
    return [int(e["duration"]) for e in client.slowlog_get(-1) if needle in e["command"].decode("utf-8", "replace")]


def longest(calls: list[int]) -> str:
    return f"{len(calls):,} calls, the longest {max(calls) / 1000:.1f} ms" if calls else "no calls"


def budgeted(budget: str) -> tuple[int, int]:
    """(CHECK_PAGES, CHECK_US) of a --budgets name."""
    if budget == "default":
        return backend.CHECK_PAGES, backend.CHECK_US
    if budget == "none":
        return 1 << 30, 1 << 50
    return backend.CHECK_PAGES, int(budget)


def measure(url: str, client, workload: Workload, found: Measured, round_: int, args, forgets) -> None:  # type: ignore[no-untyped-def]
    """One configuration once: its rate and its calls added to `found`; the pages forgotten after."""
    radius, batch = found.radius, found.batch
    made = pages(workload, args.pages, args.seed * 1000 + radius * 10_000 + batch + round_ * 100_000)
    keyed = [(f"https://new.example/{radius}/{batch}/{i}", s) for i, s in enumerate(made)]
    prefix = split_url(url)[1]
    backend.CHECK_PAGES, backend.CHECK_US = budgeted(found.budget)
    with open_index(url, max_distance=radius) as index:
        client.slowlog_reset()
        began = time.perf_counter()
        for start in range(0, len(keyed), batch):
            index.check_and_add_many(keyed[start : start + batch])
        found.rates.append(len(keyed) / (time.perf_counter() - began))
        found.calls += script_calls(client, "check", prefix)
        index.forget(key for key, _ in keyed)
    forgets.extend(script_calls(client, "forget", prefix))
    backend.CHECK_PAGES, backend.CHECK_US = DEFAULTS
    print(round_, " | ".join(found.row()), flush=True)


def main() -> None:
    args = parser().parse_args()
    client = server(args.redis_url)
    started, results, loads = stamp(), [], []
    for name in args.workloads:
        workload = WORKLOADS[name](args.n, 20_000, args.seed)
        with redis_prefix(args.redis_url) as url:
            client.slowlog_reset()
            with Timer() as timer, open_index(url) as index:
                index.add_many(workload.items())
            memory = int(client.info("memory")["used_memory"])
            stores = longest(script_calls(client, "store", split_url(url)[1]))
            forgets: list[int] = []
            loads.append(
                f"{name}: {args.n:,} pages loaded in {timer.seconds:.0f} s ({stores} of `store`), "
                f"server {memory / 2**20:,.0f} MiB"
            )
            print(loads[-1], flush=True)
            cases = [
                Measured(name, r, batch, budget)
                for r in args.radii
                for batch in args.batch_sizes
                for budget in args.budgets
            ]
            for round_ in range(args.rounds):
                for case in random.Random(round_).sample(cases, len(cases)):
                    measure(url, client, workload, case, round_, args, forgets)
            results += cases
            loads.append(f"{name}: `forget` of the pages decided: {longest(forgets)}")
    header = ["workload", "radius", "batch", "call budget", "decisions/s", "calls", "median ms", "p99 ms", "longest ms"]
    text = (
        f"`{command()}`, {started} to {stamp()}; {machine()}. {'; '.join(loads)}. Call times are the server's "
        f"(SLOWLOG), over {args.rounds} rounds; "
        f"the default budget: {DEFAULTS[0]} pages, {DEFAULTS[1] / 1000:g} ms.\n\n"
        + table(header, [m.row() for m in results])
    )
    print(text)
    if args.write:
        write_section(args.write, text)


if __name__ == "__main__":
    main()
