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
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def serve(directory: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/index.html"


def crawl(start: str, workdir: Path, name: str, settings: list[str]) -> tuple[Path, float, str]:
    """One `scrapy crawl site` run; returns the feed, the wall time and the log."""
    feed, log = workdir / f"{name}.jsonl", workdir / f"{name}.log"
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start_url={start}", "-O", str(feed),
               "-s", f"LOG_FILE={log}", "-s", "LOG_LEVEL=INFO",
               "-s", f"SIMHASH_DATABASE_URL=sqlite:///{workdir / name}.db",
               "-s", 'FEED_EXPORT_FIELDS=["url"]']
    for setting in settings:
        command += ["-s", setting]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    began = time.perf_counter()
    subprocess.run(command, cwd=REPO, env=env, check=True)
    return feed, time.perf_counter() - began, log.read_text()


def score(eval_dir: Path, feed: Path) -> dict:
    done = subprocess.run([sys.executable, str(eval_dir / "score.py"), str(feed), "--json"],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def score_table(results: dict[str, dict]) -> str:
    lines = ["| order | language | pages | dropped | strict precision | precision | recall | harmful drops |",
             "|---|---|---|---|---|---|---|---|"]
    for order, result in results.items():
        for lang in ("en", "zh", "all"):
            r = result[lang]
            lines.append(f"| {order} | {lang} | {r['pages']} | {r['dropped']} | {r['precision_strict']:.4f} | "
                         f"{r['precision']:.4f} | {r['recall']:.4f} | {r['harmful_drops']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, default=REPO.parent / "shared" / "eval", help="the corpus directory")
    parser.add_argument("--orders", default="dfs,bfs", help="crawl orders to score: dfs, bfs")
    parser.add_argument("--no-timing", action="store_true", help="score only; skip the three-way timing")
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
                times = {mode: crawl(start, workdir, f"time-{mode}", settings)[1] for mode, settings in MODES.items()}
                overhead = times["dedup"] / times["extract-only"] - 1
                print("| crawl | wall time (s) |\n|---|---|")
                for mode, seconds in times.items():
                    print(f"| {mode} | {seconds:.1f} |")
                print(f"\ndedup over extraction-only: {overhead:+.1%} (target < +10%)")
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()
