"""Crawl the evaluation corpus with `scrapy crawl site`, score it, and time the pipeline's cost.

    python -m benchmarks.crawl_eval [--eval ../shared/eval] [--orders dfs,bfs] [--no-timing]

Serves the corpus's site/ on 127.0.0.1, crawls it with dedup on (SQLite) in each crawl order and
scores the kept pages with the corpus's score.py. Then times the same crawl three ways in one run:
plain (no pipeline), extraction only, full dedup; the dedup overhead is reported against the
extraction-only crawl.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks._common import EVAL, REPO, add_write, command, load_of, machine, stamp, write_section
from benchmarks._rss import Sampler

ORDERS = {
    "dfs": [],  # Scrapy's default: LIFO queues, depth-first
    "bfs": [
        "DEPTH_PRIORITY=1",
        "SCHEDULER_DISK_QUEUE=scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE=scrapy.squeues.FifoMemoryQueue",
    ],
}
MODES = {
    "plain": ["SIMHASH_ENABLED=False"],
    "extract-only": ['ITEM_PIPELINES={"benchmarks.extract_only.ExtractOnlyPipeline": 300}'],
    "dedup": [],
    "dedup, fast": ["SIMHASH_EXTRACT_FAST=true"],
}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(directory: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/index.html"


def crawl(start: str, workdir: Path, name: str, settings: list[str]) -> tuple[Path, float, float, tuple[float, float]]:
    """One `scrapy crawl site` run; returns the feed, its wall time, its CPU time and its peak RSS in MB
    (the crawl process's own, and with its extraction workers)."""
    feed, log = workdir / f"{name}.jsonl", workdir / f"{name}.log"
    command = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        "site",
        "-a",
        f"start_url={start}",
        "-O",
        str(feed),
        "-s",
        f"LOG_FILE={log}",
        "-s",
        "LOG_LEVEL=INFO",
        "-s",
        f"SIMHASH_DATABASE_URL=sqlite:///{workdir / name}.db",
        "-s",
        'FEED_EXPORT_FIELDS=["url"]',
    ]
    for setting in settings:
        command += ["-s", setting]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cpu_before = _children_cpu()
    began = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, env=env)
    sampler = Sampler(process)
    if process.wait():
        raise subprocess.CalledProcessError(process.returncode, command)
    sampler.join()
    return feed, time.perf_counter() - began, _children_cpu() - cpu_before, sampler.peak


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def score(eval_dir: Path, feed: Path, scorer: Path | None = None) -> dict:
    """score.py's figures of a crawl: the corpus's own score.py unless `scorer` is given."""
    files = [f"--{name}={eval_dir / name}.jsonl" for name in ("pages", "truth", "truth_gray")]
    files[-1] = files[-1].replace("--truth_gray=", "--gray=")
    done = subprocess.run(
        [sys.executable, str(scorer or eval_dir / "score.py"), str(feed), "--json", *files],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def score_table(results: dict[str, dict]) -> str:
    lines = [
        "| run | language | pages | dropped | strict precision | precision | recall | harmful drops |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, result in results.items():
        for lang in [*sorted(set(result) - {"all", "truth", "input"}), "all"]:
            r = result[lang]
            lines.append(
                f"| {label} | {lang} | {r['pages']} | {r['dropped']} | {r['precision_strict']:.4f} | "
                f"{r['precision']:.4f} | {r['recall']:.4f} | {r['harmful_drops']} |"
            )
    return "\n".join(lines)


FAVORS = {
    "default": [],
    "favor_precision": ["SIMHASH_EXTRACT_FAVOR=precision"],
    "favor_recall": ["SIMHASH_EXTRACT_FAVOR=recall"],
    "fast": ["SIMHASH_EXTRACT_FAST=true"],
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.crawl_eval", description=__doc__.splitlines()[0])
    p.add_argument("--eval", type=Path, default=EVAL, help="the corpus directory")
    p.add_argument("--orders", default="dfs,bfs", help="crawl orders to score: dfs, bfs")
    p.add_argument(
        "--favors",
        default="default,favor_precision,favor_recall,fast",
        help="extraction options scored: " + ", ".join(FAVORS),
    )
    p.add_argument(
        "--radii", default="", help="search radii scored (SIMHASH_MAX_DISTANCE), e.g. 3,6; default: the library's"
    )
    p.add_argument("--no-timing", action="store_true", help="score only; skip the three-way timing")
    p.add_argument("--rounds", type=int, default=3, help="timing rounds (the modes interleaved); medians reported")
    p.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="a Scrapy setting for every scored crawl"
    )
    p.add_argument("--scorer", type=Path, help="score.py to score with (default: the corpus's own)")
    add_write(p)
    return p


def main() -> None:
    p = parser()
    args = p.parse_args()
    if not (args.eval / "site" / "index.html").exists():
        sys.exit(f"--eval {args.eval}: no site/index.html there; point it at the evaluation corpus")
    began, load_before = stamp(), machine()
    server, start = serve(args.eval / "site")
    sections = []
    try:
        with tempfile.TemporaryDirectory(prefix="crawl-eval-") as tmp:
            workdir = Path(tmp)
            results, score_times = {}, {}
            radii = [int(r) for r in args.radii.split(",")] if args.radii else [None]
            for radius in radii:
                at = [] if radius is None else [f"SIMHASH_MAX_DISTANCE={radius}"]
                for favor in args.favors.split(","):
                    for order in args.orders.split(","):
                        label = f"{order}, {favor}" + ("" if radius is None else f", radius {radius}")
                        settings = [*ORDERS[order], *FAVORS[favor], *args.set, *at]
                        feed, seconds, _, _ = crawl(start, workdir, f"score-{order}-{favor}-{radius}", settings)
                        results[label] = score(args.eval, feed, args.scorer)
                        score_times[label] = seconds
                        print(f"{label}: crawled and scored in {seconds:.1f} s", flush=True)
            sections.append(
                "Accuracy (`score.py`), SQLite index, default settings but for the extraction option (and radius) "
                "named:\n\n"
                + score_table(results)
                + "\n\nCrawl wall time of these runs (one each, not interleaved): "
                + ", ".join(f"{label} {t:.0f} s" for label, t in score_times.items())
            )
            print("\n" + sections[-1] + "\n", flush=True)
            if not args.no_timing:
                sections.append(timing(start, workdir, args.rounds))
                print("\n" + sections[-1], flush=True)
    finally:
        server.shutdown()
    if not args.write:
        return
    from simhash_index.workers import default_size

    body = f"""## Crawl of the eval corpus

`{command()}` — {began}; {load_before} (at the start); load average at the end: {load_of(machine())}.
2 shared cores (other agents' test runs): compare within a table; the ratios are the figures that carry over.

`scrapy crawl site` of the corpus's 1,522 pages served on 127.0.0.1 (`crawler/`), dedup on with an SQLite
index, SIMHASH_WORKERS at its default ({default_size()} here: one extraction process per CPU), SIMHASH_BATCH_SIZE
at its default. Orders: dfs (Scrapy's default LIFO) and bfs (DEPTH_PRIORITY=1, FIFO queues). Extraction options:
SIMHASH_EXTRACT_FAVOR (trafilatura's favor_precision / favor_recall) and SIMHASH_EXTRACT_FAST (trafilatura's
fast mode: no fallback extractors), reported only, no default changed.

{chr(10).join(s + chr(10) for s in sections)}"""
    write_section("crawl_eval", body)
    print("wrote the crawl_eval section of docs/performance.md")


def timing(start: str, workdir: Path, rounds: int) -> str:
    """Plain, extraction-only and dedup crawls in interleaved rounds: medians of wall, CPU and peak RSS."""
    wall: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    rss: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
    for round_number in range(rounds):
        for mode, settings in MODES.items():
            _, seconds, cpu_seconds, peak = crawl(start, workdir, f"time-{mode}-{round_number}", settings)
            wall[mode].append(seconds)
            cpu[mode].append(cpu_seconds)
            rss[mode].append(peak)
            print(
                f"round {round_number + 1}: {mode} {seconds:.1f} s wall, {cpu_seconds:.1f} s CPU, "
                f"peak RSS {peak[0]:.0f} MB ({peak[1]:.0f} MB with workers)",
                flush=True,
            )
    med = statistics.median
    lines = [
        f"Cost, {rounds} interleaved rounds (every crawl below once a round), medians. CPU: the crawl "
        "process's and its children's user + system time (`getrusage(RUSAGE_CHILDREN)`); peak RSS: sampled from "
        "/proc every 0.25 s, the crawl process alone and with its extraction worker processes.",
        "",
        "| crawl | wall time (s) | CPU time (s) | peak RSS MB (crawl process) | peak RSS MB (with workers) |",
        "|---|---|---|---|---|",
    ]
    for mode in MODES:
        lines.append(
            f"| {mode} | {med(wall[mode]):.1f} | {med(cpu[mode]):.1f} | {med(r[0] for r in rss[mode]):.0f} | "
            f"{med(r[1] for r in rss[mode]):.0f} |"
        )
    ratio = med(wall["dedup"]) / med(wall["plain"])
    lines += [
        "",
        f"- dedup/plain wall time: {ratio:.2f}x (target <= 2x): {'met' if ratio <= 2 else 'MISSED'}",
        f"- dedup/extract-only wall time: {med(wall['dedup']) / med(wall['extract-only']):.2f}x; "
        f"CPU: {med(cpu['dedup']) / med(cpu['extract-only']):.2f}x",
        f"- dedup with SIMHASH_EXTRACT_FAST against dedup: wall time "
        f"{med(wall['dedup, fast']) / med(wall['dedup']):.2f}x, CPU {med(cpu['dedup, fast']) / med(cpu['dedup']):.2f}x",
        f"- peak RSS of the dedup crawl: {med(r[0] for r in rss['dedup']):.0f} MB "
        f"({med(r[1] for r in rss['dedup']):.0f} MB with its extraction workers)",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
