"""Scale: SimhashIndex (the halves layout, for indexes past a few million pages) on SQLite and PostgreSQL from 10k to 10M stored pages, and under skewed buckets.

    python benchmarks/scale.py [--n 10000,100000,1000000] [--with-10m] [--postgres-10m]
                               [--backends sqlite,postgres] [--postgres-url URL] [--eval-dir ../shared/eval]
                               [--no-skew] [--no-write]

Each (backend, N) is bulk-loaded in a process of its own (`insertion_session`, with a progress bar
when stderr is a terminal), so its peak RSS is that load's alone: N random 64-bit fingerprints from a
seeded generator, keys like https://example.com/page/<i>.html; SQLite in a temporary directory,
PostgreSQL in a schema of its own (VACUUM ANALYZE after the load, as autovacuum would do; dropped
afterwards). Then, in this process: the rows a query reads with the index's two half lookups
(sql.CANDIDATES, theory 66N/2**32) and what a 16-bit block table would read (counted in numpy from the
regenerated fingerprints, theory 4N/65536); then over all indexes in interleaved rounds (a shared
machine's load hits all alike) queries/s (random fingerprints, and planted ones a stored fingerprint
1-3 bits away; medians of the rounds) and check_and_add/s (a commit each, one in ten a near-duplicate).
Then the skew: the eval corpus's real fingerprints (skipped when it is absent), and synthetic crowds
sharing 16 or 32 bits, every answer checked against brute force. Writes docs/scale.md and docs/scale.png.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import REPO, machine, peak_rss_mb, stamp
from benchmarks._stores import DEFAULT_POSTGRES, LAYOUT, postgres_schema
from benchmarks.scale_doc import write_doc
from benchmarks.scale_plot import plot
from benchmarks.scale_runs import Case, load_case, measure
from benchmarks.scale_skew import eval_skew, skew_data, skew_test
from benchmarks.scale_tables import checks_line, eval_lines, results_table, skew_table, storage_table, verdicts
from simhash_index import SimhashIndex

TEN_MILLION = 10_000_000


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="10000,100000,1000000", help="comma-separated sizes N")
    parser.add_argument(
        "--with-10m", action="store_true", help="add N = 10,000,000 on SQLite (minutes, and GBs of disk)"
    )
    parser.add_argument("--postgres-10m", action="store_true", help="add N = 10,000,000 on PostgreSQL too")
    parser.add_argument("--backends", default="sqlite,postgres", help="comma-separated: sqlite, postgres")
    parser.add_argument("--postgres-url", default=os.environ.get("SIMHASH_BENCH_POSTGRES_URL", DEFAULT_POSTGRES))
    parser.add_argument(
        "--queries", type=int, default=1000, help="random queries per round (and a quarter as many planted)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="interleaved query rounds")
    parser.add_argument("--checks", type=int, default=1000, help="check_and_add calls per index")
    parser.add_argument("--check-rounds", type=int, default=4, help="interleaved rounds the checks are split into")
    parser.add_argument(
        "--candidate-queries", type=int, default=5000, help="random queries whose rows read are counted"
    )
    parser.add_argument(
        "--explain-queries", type=int, default=200, help="random queries whose table rows fetched are counted"
    )
    parser.add_argument("--batch-size", type=int, default=100_000, help="insertion_session batch_size")
    parser.add_argument(
        "--eval-dir", type=Path, default=REPO.parent / "shared" / "eval", help="the eval corpus (skipped if absent)"
    )
    parser.add_argument("--skew-n", type=int, default=1_000_000, help="uniform pages in the synthetic skew test")
    parser.add_argument("--skew-bucket", type=int, default=100_000, help="pages sharing one block0 value (bits 0-15)")
    parser.add_argument("--half-bucket", type=int, default=10_000, help="pages sharing one low half (bits 0-31)")
    parser.add_argument(
        "--straddle-bucket", type=int, default=100_000, help="pages sharing block1 + block2 (bits 16-47)"
    )
    parser.add_argument("--no-skew", action="store_true", help="skip the synthetic skew test")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--no-write", action="store_true", help="print only; leave docs/scale.md and docs/scale.png alone"
    )
    args = parser.parse_args()
    try:
        args.sizes = sorted({int(n.replace("_", "")) for n in args.n.split(",") if n.strip()})
    except ValueError:
        parser.error(f"--n takes comma-separated integers; got {args.n!r}")
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if not args.backends or set(args.backends) - {"sqlite", "postgres"}:
        parser.error(f"--backends takes sqlite and/or postgres; got {','.join(args.backends)!r}")
    counts = (args.queries, args.rounds, args.checks, args.check_rounds, args.candidate_queries, args.explain_queries)
    if not args.sizes or min(args.sizes) < 1 or min(counts) < 1:
        parser.error(
            "--n, --queries, --rounds, --checks, --check-rounds, --candidate-queries and --explain-queries must be positive"
        )
    if min(args.skew_n, args.skew_bucket, args.half_bucket, args.straddle_bucket) < 0:
        parser.error("--skew-n, --skew-bucket, --half-bucket and --straddle-bucket must not be negative")
    return args


def plan(args: argparse.Namespace) -> list[tuple[str, int]]:
    """(backend, N) pairs to load, 10M added where asked."""
    pairs = [(backend, n) for backend in args.backends for n in args.sizes]
    for backend, wanted in (("sqlite", args.with_10m or args.postgres_10m), ("postgres", args.postgres_10m)):
        if wanted and backend in args.backends and (backend, TEN_MILLION) not in pairs:
            pairs.append((backend, TEN_MILLION))
    return pairs


def load_cases(args: argparse.Namespace, stack: ExitStack, workdir: Path) -> list[Case]:
    """Each (backend, N) loaded in a fresh spawned process (its peak RSS is that load's alone), then opened here."""
    spawn = multiprocessing.get_context("spawn")
    cases = []
    for backend, n in plan(args):
        path = workdir / f"{backend}-{n}.db" if backend == "sqlite" else None
        url = f"sqlite:///{path}" if path else stack.enter_context(postgres_schema(args.postgres_url))
        seed = args.seed + n
        with ProcessPoolExecutor(1, mp_context=spawn) as pool:
            loaded = pool.submit(
                load_case, backend, url, str(path) if path else None, n, seed, args.batch_size
            ).result()
        case = Case(backend, n, seed, url, loaded, SimhashIndex(url, layout=LAYOUT))
        stack.callback(case.index.close)
        cases.append(case)
        print(
            f"{case.name}: {n / loaded['seconds']:,.0f} fingerprints/s ({loaded['seconds']:.1f} s), "
            f"{loaded['disk'] / n:.0f} bytes/page, peak RSS {loaded['rss']:.0f} MB",
            flush=True,
        )
    return cases


def skew_tests(args: argparse.Namespace, stack: ExitStack, workdir: Path) -> list[dict]:
    if args.no_skew:
        return []
    stored, groups = skew_data(args)
    results = []
    for backend in args.backends:
        url = (
            f"sqlite:///{workdir / 'skew.db'}"
            if backend == "sqlite"
            else stack.enter_context(postgres_schema(args.postgres_url))
        )
        results += skew_test(backend, url, stored, groups, args.batch_size)
    return results


def main() -> None:
    args = parse_args()
    began, load_before = stamp(), machine()
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="scale-")))
        cases = load_cases(args, stack, workdir)
        measure(cases, args, random.Random(args.seed))
        evaluated = eval_skew(args.eval_dir, args.batch_size)
        if evaluated is None:
            print(f"eval corpus: skipped, {args.eval_dir / 'extracted_text.jsonl.gz'} not found", flush=True)
        skew = skew_tests(args, stack, workdir)
    load_after, parent_rss = machine(), peak_rss_mb()
    print(
        "\n"
        + results_table(cases)
        + "\n\n"
        + checks_line(cases)
        + "\n\n"
        + "\n".join(verdicts(cases))
        + "\n\n"
        + storage_table(cases)
        + "\n\n"
        + eval_lines(evaluated, args.eval_dir)
    )
    if skew:
        print("\n" + skew_table(skew))
    incomplete = [r["label"] for r in skew if r["complete"] < r["queries"] or r["agree"] < r["queries"]]
    if incomplete or (evaluated and evaluated["agree"] < evaluated["stored"]):
        print(
            "\nWARNING: answers or row counts differ from brute force in: "
            + "; ".join(incomplete or ["the eval corpus"])
        )
    if args.no_write:
        return
    plot(cases, REPO / "docs" / "scale.png")
    write_doc(args, cases, evaluated, skew, (began, load_before, load_after), parent_rss)
    print("\nwrote docs/scale.md and docs/scale.png")


if __name__ == "__main__":
    main()
