"""Crawl the evaluation corpus with `scrapy crawl site`, score it, and time the pipeline's cost.

    python benchmarks/crawl_eval.py [--eval ../shared/eval] [--orders dfs,bfs] [--no-timing]

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

REPO = Path(__file__).resolve().parent.parent
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
}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(directory: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/index.html"


def crawl(start: str, workdir: Path, name: str, settings: list[str]) -> tuple[Path, float, float]:
    """One `scrapy crawl site` run; returns the feed, its wall time and its CPU time."""
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
    subprocess.run(command, cwd=REPO, env=env, check=True)
    return feed, time.perf_counter() - began, _children_cpu() - cpu_before


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def score(eval_dir: Path, feed: Path) -> dict:
    done = subprocess.run(
        [sys.executable, str(eval_dir / "score.py"), str(feed), "--json"], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def score_table(results: dict[str, dict]) -> str:
    lines = [
        "| order | language | pages | dropped | strict precision | precision | recall | harmful drops |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for order, result in results.items():
        for lang in ("en", "zh", "all"):
            r = result[lang]
            lines.append(
                f"| {order} | {lang} | {r['pages']} | {r['dropped']} | {r['precision_strict']:.4f} | "
                f"{r['precision']:.4f} | {r['recall']:.4f} | {r['harmful_drops']} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, default=REPO.parent / "shared" / "eval", help="the corpus directory")
    parser.add_argument("--orders", default="dfs,bfs", help="crawl orders to score: dfs, bfs")
    parser.add_argument("--no-timing", action="store_true", help="score only; skip the three-way timing")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds (the modes interleaved); medians reported")
    args = parser.parse_args()
    if not (args.eval / "site" / "index.html").exists():
        sys.exit(f"--eval {args.eval}: no site/index.html there; point it at the evaluation corpus")
    server, start = serve(args.eval / "site")
    try:
        with tempfile.TemporaryDirectory(prefix="crawl-eval-") as tmp:
            workdir = Path(tmp)
            results = {}
            for order in args.orders.split(","):
                feed, seconds, _ = crawl(start, workdir, f"score-{order}", ORDERS[order])
                results[order] = score(args.eval, feed)
                print(f"{order}: crawled and scored in {seconds:.1f} s", flush=True)
            print("\n" + score_table(results) + "\n")
            if not args.no_timing:
                wall: dict[str, list[float]] = {mode: [] for mode in MODES}
                cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
                for round_number in range(args.rounds):
                    for mode, settings in MODES.items():
                        _, seconds, cpu_seconds = crawl(start, workdir, f"time-{mode}-{round_number}", settings)
                        wall[mode].append(seconds)
                        cpu[mode].append(cpu_seconds)
                        print(
                            f"round {round_number + 1}: {mode} {seconds:.1f} s wall, {cpu_seconds:.1f} s CPU",
                            flush=True,
                        )
                print(f"\n| crawl | wall time (s), median of {args.rounds} | CPU time (s), median |\n|---|---|---|")
                for mode in MODES:
                    print(f"| {mode} | {statistics.median(wall[mode]):.1f} | {statistics.median(cpu[mode]):.1f} |")
                for label, figures in (("wall", wall), ("CPU", cpu)):
                    overhead = statistics.median(figures["dedup"]) / statistics.median(figures["extract-only"]) - 1
                    print(f"\ndedup over extraction-only, {label} time: {overhead:+.1%} (target < +10% wall)")
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()
