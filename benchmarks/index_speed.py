"""Index speed: SimhashIndex on SQLite, PostgreSQL and Redis against the `simhash` package's SimhashIndex.

    python benchmarks/index_speed.py [--n 1000000] [--backends sqlite,postgres,redis] [--postgres-url URL] [--redis-url URL]
                                     [--queries 2000] [--checks 2000] [--rounds 5] [--no-peer] [--no-write]

N random 64-bit fingerprints are bulk-loaded with SimhashIndex.add_many (SQLite in a temporary
directory; PostgreSQL in a schema of its own, dropped afterwards; Redis under a key prefix of its own,
deleted afterwards), and the same fingerprints go into
`simhash.SimhashIndex(k=3)` (PyPI `simhash`, in memory, built from `simhash.Simhash` objects).
Then, measured side by side in interleaved rounds (a shared machine's load hits all alike):
queries/s of `query` on random fingerprints (almost never a match) and on planted ones (a stored
fingerprint with 1 to 3 bits flipped: at least one match). After that, `check_and_add` per second
(a transaction and commit each; one in ten a near-duplicate), the candidate rows a query reads
(SQL backends: the two half lookups, theory 66N/2**32; Redis and the peer: 16-bit block buckets,
theory 4N/65536), bytes on disk per stored page (Redis: server memory, as it keeps no file here),
and the process's peak RSS after each phase.
Writes its section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import inspect
import os
import random
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis
import simhash as simhash_package

from benchmarks._common import Timer, command, flip, machine, median, page_key, peak_rss_mb, stamp, table, write_section
from benchmarks._stores import DEFAULT_POSTGRES, candidate_statement, disk_bytes, postgres_schema, vacuum
from simhash_index import Index, SimhashIndex
from simhash_index.fingerprinting.bits import blocks
from simhash_index.index.redis.backend import split_url
from simhash_index.index.sql.statements import fetch

PEER = "simhash.SimhashIndex"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"
TARGET_LOAD_SQLITE = 50_000  # fingerprints/s
TARGET_QUERY_RATIO = 3.0  # SQLite queries/s over the peer's
TARGET_CHECKS_SQLITE = 2_000  # check_and_add/s
DEFAULT_BATCH_SIZE = inspect.signature(Index.add_many).parameters["batch_size"].default


@contextmanager
def redis_prefix(base_url: str) -> Iterator[str]:
    """A Redis URL with a key prefix of its own, whose keys are deleted afterwards."""
    prefix = f"bench-{uuid.uuid4().hex[:12]}:"
    try:
        yield f"{base_url}{'&' if '?' in base_url else '?'}prefix={prefix}"
    finally:
        with redis_client(base_url) as client:
            doomed = list(client.scan_iter(match=f"{prefix}*", count=10_000))
            for start in range(0, len(doomed), 10_000):
                client.unlink(*doomed[start : start + 10_000])


def redis_client(url: str) -> redis.Redis:
    return redis.Redis.from_url(split_url(url)[0])


def redis_memory(url: str) -> int:
    with redis_client(url) as client:
        return client.info("memory")["used_memory"]


class Subject:
    """One index under test, with what was measured of it."""

    def __init__(self, name: str, query: Callable[[int], list]) -> None:
        self.name = name
        self.query = query
        self.figures: dict[str, str] = {}
        self.seconds: dict[str, list[float]] = {"random": [], "planted": []}


def load(backend: str, url: str, fingerprints: list[int], batch_size: int) -> tuple[SimhashIndex, float]:
    index = SimhashIndex(url)
    with Timer() as timer:
        index.add_many(((page_key(i), fp) for i, fp in enumerate(fingerprints)), batch_size=batch_size)
    if backend == "postgres":
        vacuum(url)
    return index, timer.seconds


def build_peer(fingerprints: list[int]) -> tuple[simhash_package.SimhashIndex, float, float]:
    with Timer() as objects:
        pairs = [(str(i), simhash_package.Simhash(fp)) for i, fp in enumerate(fingerprints)]
    with Timer() as index:
        peer = simhash_package.SimhashIndex(pairs, k=3)
    return peer, objects.seconds, index.seconds


def candidates_read(index: Index, queries: list[int]) -> float:
    if index.describe().backend == "redis":  # block set members within the popcount range
        with redis_client(index.url) as client:
            pipe = client.pipeline(transaction=False)
            for q in queries:
                weight = q.bit_count()
                for i, value in enumerate(blocks(q)):
                    pipe.zcount(f"{index.prefix}block:{i}:{value:04x}", weight - 3, weight + 3)
            counts = pipe.execute()
        return sum(counts) / len(queries)
    with index.transaction(write=False) as conn:
        name = conn.dialect.name
        statement = candidate_statement(index, name)
        counts = [len(fetch(conn, statement, index.layout.candidates_parameters(q))) for q in queries]
    return sum(counts) / len(counts)


def peer_candidates(peer: simhash_package.SimhashIndex, queries: list[int]) -> float:
    counts = [sum(len(peer.bucket.get(key, ())) for key in peer.get_keys(simhash_package.Simhash(q))) for q in queries]
    return sum(counts) / len(counts)


def check_rate(index: SimhashIndex, fingerprints: list[int], count: int, rng: random.Random) -> float:
    items = [
        (
            f"https://example.com/new/{i}.html",
            flip(rng.choice(fingerprints), rng) if i % 10 == 0 else rng.getrandbits(64),
        )
        for i in range(count)
    ]
    with Timer() as timer:
        for key, fp in items:
            index.check_and_add(key, fp)
    return count / timer.seconds


def agreement(subjects: list[Subject], peer: Subject | None, planted: list[int], sample: int = 200) -> str:
    """Whether every index returns the same pages for the planted queries (keys mapped to numbers)."""
    if peer is None or len(subjects) < 2:
        return "Answers not compared (no peer)"
    disagree = 0
    for q in planted[:sample]:
        answers = {
            frozenset(int(m.key.rsplit("/", 1)[1].split(".")[0]) for m in s.query(q)) for s in subjects if s is not peer
        }
        answers.add(frozenset(int(obj_id) for obj_id in peer.query(q)))
        disagree += len(answers) != 1
    return f"{sample - disagree}/{sample} planted queries: every index returned the same pages"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="stored fingerprints")
    parser.add_argument("--backends", default="sqlite,postgres,redis", help="comma-separated: sqlite, postgres, redis")
    parser.add_argument("--postgres-url", default=os.environ.get("SIMHASH_BENCH_POSTGRES_URL", DEFAULT_POSTGRES))
    parser.add_argument("--redis-url", default=os.environ.get("SIMHASH_BENCH_REDIS_URL", DEFAULT_REDIS))
    parser.add_argument(
        "--queries", type=int, default=2000, help="random queries per round (and a quarter as many planted)"
    )
    parser.add_argument("--checks", type=int, default=2000, help="check_and_add calls per backend")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved query rounds")
    parser.add_argument(
        "--batch-size",
        type=int,
        default=DEFAULT_BATCH_SIZE,
        help="add_many's batch_size; another value writes a section of its own",
    )
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--no-peer", action="store_true", help=f"skip {PEER} (building it at 1M takes a while)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = set(backends) - {"sqlite", "postgres", "redis"}
    if unknown or not backends:
        parser.error(f"--backends takes sqlite, postgres and/or redis; got {args.backends!r}")
    if args.n < 1 or args.queries < 1 or args.rounds < 1 or args.checks < 0:
        parser.error("--n, --queries and --rounds must be positive, --checks not negative")

    rng = random.Random(args.seed)
    fingerprints = [rng.getrandbits(64) for _ in range(args.n)]
    random_queries = [rng.getrandbits(64) for _ in range(args.queries)]
    planted = [flip(rng.choice(fingerprints), rng) for _ in range(max(1, args.queries // 4))]
    rss = {"data": peak_rss_mb()}
    print(f"{args.n:,} fingerprints; peak RSS {rss['data']:.0f} MB", flush=True)

    with ExitStack() as stack:
        subjects: list[Subject] = []
        indexes: dict[str, tuple[SimhashIndex, Path | None]] = {}
        memory_before: dict[str, int] = {}  # Redis server memory before the load
        for backend in backends:
            if backend == "sqlite":
                path = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="index-speed-"))) / "simhash.db"
                url = f"sqlite:///{path}"
            elif backend == "redis":
                path, url = None, stack.enter_context(redis_prefix(args.redis_url))
                memory_before[url] = redis_memory(url)
            else:
                path, url = None, stack.enter_context(postgres_schema(args.postgres_url))
            index, seconds = load(backend, url, fingerprints, args.batch_size)
            stack.callback(index.close)
            indexes[backend] = (index, path)
            subject = Subject(backend, index.query)
            subject.figures["load"] = f"{args.n / seconds:,.0f}/s ({seconds:.1f} s)"
            rss[backend] = peak_rss_mb()
            subjects.append(subject)
            print(
                f"{backend}: add_many {args.n / seconds:,.0f} fingerprints/s; peak RSS {rss[backend]:.0f} MB",
                flush=True,
            )

        peer_subject = None
        if not args.no_peer:
            peer, objects_s, index_s = build_peer(fingerprints)
            query_objects: dict[int, simhash_package.Simhash] = {
                q: simhash_package.Simhash(q) for q in random_queries + planted
            }
            peer_subject = Subject(PEER, lambda q: peer.get_near_dups(query_objects[q]))
            peer_subject.figures["load"] = (
                f"build {objects_s + index_s:.1f} s ({objects_s:.1f} s objects + {index_s:.1f} s index)"
            )
            rss["peer"] = peak_rss_mb()
            subjects.append(peer_subject)
            print(
                f"{PEER}: built in {objects_s:.1f} s (Simhash objects) + {index_s:.1f} s (index); peak RSS {rss['peer']:.0f} MB",
                flush=True,
            )

        agreed = agreement(subjects, peer_subject, planted)
        print(agreed, flush=True)
        order = list(subjects)
        for round_ in range(args.rounds):
            random.Random(round_).shuffle(order)
            for subject in order:
                for kind, queries in (("random", random_queries), ("planted", planted)):
                    with Timer() as timer:
                        for q in queries:
                            subject.query(q)
                    subject.seconds[kind].append(timer.seconds / len(queries))
            print(
                f"round {round_ + 1}/{args.rounds}: "
                + ", ".join(f"{s.name} {1 / s.seconds['random'][-1]:,.0f} q/s" for s in subjects),
                flush=True,
            )

        sample = random_queries[:500]
        for subject in subjects:
            subject.figures["random"] = 1 / median(subject.seconds["random"])
            subject.figures["planted"] = 1 / median(subject.seconds["planted"])
            if subject is peer_subject:
                subject.figures["candidates"] = f"{peer_candidates(peer, sample):.1f}"
                subject.figures["rss"] = f"{rss['peer']:.0f}"
                continue
            index, path = indexes[subject.name]
            subject.figures["candidates"] = f"{candidates_read(index, sample):.1f}"
            subject.figures["checks"] = (
                f"{check_rate(index, fingerprints, args.checks, rng):,.0f}" if args.checks else "-"
            )
            if subject.name == "redis":
                subject.figures["disk"] = (
                    f"{(redis_memory(index.url) - memory_before[index.url]) / len(index):.0f} (RAM)"
                )
            else:
                subject.figures["disk"] = f"{disk_bytes(subject.name, index, path) / len(index):.0f}"
            subject.figures["rss"] = f"{rss[subject.name]:.0f}"

    rows = []
    for s in subjects:
        f = s.figures
        ratio = "-"
        if peer_subject:
            ratio = f"{f['random'] / peer_subject.figures['random']:.1f}x / {f['planted'] / peer_subject.figures['planted']:.1f}x"
        rows.append(
            [
                s.name,
                f["load"],
                f"{f['random']:,.0f}",
                f"{f['planted']:,.0f}",
                ratio,
                f.get("checks", "-"),
                f["candidates"],
                f.get("disk", "-"),
                f["rss"],
            ]
        )
    result = table(
        [
            "index",
            "bulk load (add_many)",
            "queries/s random",
            "queries/s planted",
            "vs peer (random / planted)",
            "check_and_add/s",
            "candidates/query",
            "bytes on disk/page",
            "peak RSS MB",
        ],
        rows,
    )
    verdicts = verdict_lines(subjects, peer_subject)
    theory = 4 * args.n / 65536
    halves = 66 * args.n / 2**32
    print(
        "\n" + result + "\n\n" + f"candidates/query in theory: half lookups 66N/2^32 = {halves:.3f} "
        f"(16-bit block buckets: 4N/65536 = {theory:.1f})\n" + "\n".join(verdicts)
    )
    if not args.no_write:
        default_batch = args.batch_size == DEFAULT_BATCH_SIZE
        write_section(
            "index_speed" if default_batch else f"index_speed_batch_{args.batch_size}",
            f"""
## Index speed{"" if default_batch else f" (add_many batch_size={args.batch_size:,})"}

`{command()}` — {stamp()}; {machine()}.

{args.n:,} random 64-bit fingerprints, keys like `{page_key(0)}`. Bulk load: `add_many` with
an insertion session with batch_size={args.batch_size:,} (a transaction per batch; the half and text-hash indexes built once at the end); SQLite in a temporary directory, PostgreSQL
in a schema of its own (VACUUM ANALYZE after the load, as autovacuum would do), Redis under a key prefix
of its own (its bytes/page: the server's used_memory growth, Redis keeping no file here). {PEER} is the PyPI
`simhash` package's in-memory index (k=3), built from `simhash.Simhash` objects; its queries get
prebuilt `Simhash` objects. Queries: {args.queries:,} random fingerprints and {len(planted):,} planted
ones (a stored fingerprint with 1 to 3 bits flipped) per round, {args.rounds} interleaved rounds,
medians. {agreed}. `check_and_add`: {args.checks:,} calls, each its own transaction and commit, one
in ten a near-duplicate. Candidates/query: rows a random query reads: the SQL backends' two half
lookups (each 32-bit half of the fingerprint equal to the query's or one bit off, 33 values a half;
theory 66N/2^32 = {halves:.3f}), Redis's 16-bit block sets within the popcount range and the peer's
16-bit block buckets (4N/65536 = {theory:.1f}). Peak RSS: of the whole benchmark process after each phase, in
this order: {", ".join(backends)}{", peer" if peer_subject else ""} (it only grows: {rss["data"]:.0f} MB
before the first, the fingerprints alone).

{result}

{chr(10).join("- " + v for v in verdicts)}
""",
        )
        print("\nwrote docs/benchmarks.md")


def verdict_lines(subjects: list[Subject], peer: Subject | None) -> list[str]:
    by_name = {s.name: s for s in subjects}
    lines = []
    sqlite = by_name.get("sqlite")
    if sqlite is not None:
        rate = float(sqlite.figures["load"].split("/")[0].replace(",", ""))
        lines.append(
            f"SQLite bulk load {rate:,.0f}/s (target >= {TARGET_LOAD_SQLITE:,}/s): {'met' if rate >= TARGET_LOAD_SQLITE else 'MISSED'}"
        )
        if peer is not None:
            ratio = sqlite.figures["random"] / peer.figures["random"]
            lines.append(
                f"SQLite queries/s {ratio:.1f}x {PEER}'s (target >= {TARGET_QUERY_RATIO:.0f}x): {'met' if ratio >= TARGET_QUERY_RATIO else 'MISSED'}"
            )
        if sqlite.figures.get("checks", "-") != "-":
            checks = float(sqlite.figures["checks"].replace(",", ""))
            lines.append(
                f"SQLite check_and_add {checks:,.0f}/s (target >= {TARGET_CHECKS_SQLITE:,}/s): {'met' if checks >= TARGET_CHECKS_SQLITE else 'MISSED'}"
            )
    return lines


if __name__ == "__main__":
    main()
