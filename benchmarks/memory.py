"""Memory: does RSS level off? Of a dedup crawl (`crawl`), and of the index alone under batched decisions (`index`).

    python -m benchmarks.memory crawl [--pages 100000] [--max-minutes 20] [--interval 1] [--plain] [--write]
    python -m benchmarks.memory index [--pages 400000] [--batch 64] [--every 32000] [--url URL]

crawl: a local HTTP server (a thread of this process) generates a site on the fly: page i links to
pages i+1..i+5 and back to i/2 and a random earlier page (so a crawl reaches them all while the
scheduler's queue of pending requests stays short: memory that grows is the crawl's, not a
frontier of unfetched URLs), carries a shared template (navigation, footer) and about 300 words of
text drawn Zipf-like from a vocabulary (the eval corpus's English words when it is present); one
page in ten is a near-duplicate of an earlier page (the same text with a few words changed).
`scrapy crawl site` crawls it with dedup on (SQLite index, SIMHASH_WORKERS and SIMHASH_BATCH_SIZE at
their defaults; --plain: dedup off, the baseline), stopped after --pages pages or --max-minutes. The
crawl's RSS (the process alone, and with its extraction workers) is sampled from /proc every
--interval seconds, beside the pages served so far. With --write: docs/crawl_memory.png (--plain:
crawl_memory_plain.png) and its section of docs/performance.md.

index: decides --pages distinct pages (random fingerprints, text hashes and 256-byte sketches) in
batches with `check_and_add_many`, as the pipeline's writer does, into a new index (SQLite in a
temporary folder unless --url names another), and prints the process's anonymous and file-backed
RSS every --every pages. SQLite's page cache (`PRAGMA cache_size`, 64 MiB a connection) fills
first: RSS grows with it, then stays flat.
"""

from __future__ import annotations

import argparse
import gzip
import http.server
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks._common import EVAL, REPO, add_write, command, load_of, machine, stamp, table, write_section
from benchmarks._rss import status_kb, tree_rss_mb
from simhash_index import open_index
from simhash_index.fingerprinting.fingerprinter import Signature

PLOT = REPO / "docs" / "crawl_memory.png"


def vocabulary(limit: int = 20_000) -> list[str]:
    """Words by frequency: the eval corpus's English texts, else synthetic words."""
    path = EVAL / "extracted_text.jsonl.gz"
    counts: dict[str, int] = {}
    if path.exists():
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for line in lines:
                for word in re.findall(r"[A-Za-z]{2,}", json.loads(line).get("text") or ""):
                    counts[word.lower()] = counts.get(word.lower(), 0) + 1
    if len(counts) < 1000:
        rng = random.Random(0)
        return [
            "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10))) for _ in range(limit)
        ]
    return sorted(counts, key=counts.__getitem__, reverse=True)[:limit]


class Site:
    """The generated site: page i's HTML, made the same way each time it is asked for."""

    def __init__(self, pages: int) -> None:
        self.pages = pages
        self.words = vocabulary()
        self.weights = [1 / (rank + 1) for rank in range(len(self.words))]
        self.served = 0
        self.lock = threading.Lock()

    def text(self, i: int) -> str:
        if i % 10 == 9 and i > 10:  # a near-duplicate of an earlier page: its text, a few words changed
            source = random.Random(i).randrange(max(1, i - 1000), i - 1)
            words = self.text(source - (source % 10 == 9)).split(" ")
            rng = random.Random(-i)
            for _ in range(3):
                words[rng.randrange(len(words))] = rng.choice(self.words)
            return " ".join(words)
        rng = random.Random(i)
        return " ".join(rng.choices(self.words, self.weights, k=rng.randint(200, 400)))

    def html(self, i: int) -> bytes:
        words = self.text(i).split(" ")
        paragraphs = "".join(f"<p>{' '.join(words[s : s + 60])}.</p>" for s in range(0, len(words), 60))
        targets = [*range(i + 1, min(i + 6, self.pages)), i // 2, random.Random(~i).randrange(max(1, i))]
        links = "".join(f'<li><a href="/page/{c}.html">page {c}</a></li>' for c in targets)
        return (
            f"<!doctype html><html><head><title>Page {i}</title></head><body>"
            '<nav><a href="/">Home</a> <a href="/about.html">About</a> <a href="/contact.html">Contact</a></nav>'
            f"<article><h1>Article {i}</h1>{paragraphs}</article><ul>{links}</ul>"
            "<footer>Copyright Example Corp. All rights reserved. Privacy policy. Terms of use.</footer>"
            "</body></html>"
        ).encode()


def serve(site: Site) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            match = re.fullmatch(r"/page/(\d+)\.html", self.path)
            if self.path in ("/", "/index.html"):
                body = b'<html><body><a href="/page/0.html">start</a></body></html>'
            elif match and int(match.group(1)) < site.pages:
                body = site.html(int(match.group(1)))
                with site.lock:
                    site.served += 1
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/index.html"


def crawl(start: str, workdir: Path, args: argparse.Namespace, site: Site) -> tuple[list[tuple], float, int]:
    """Run the crawl, sampling (seconds, pages served, own MB, tree MB); returns the samples, wall time, exit code."""
    cmd = [
        sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start_url={start}",
        "-O", str(workdir / "items.jsonl"),
        "-s", f"LOG_FILE={workdir / 'crawl.log'}", "-s", "LOG_LEVEL=INFO",
        "-s", f"SIMHASH_DATABASE_URL=sqlite:///{workdir / 'index.db'}",
        "-s", 'FEED_EXPORT_FIELDS=["url"]',
        "-s", f"CLOSESPIDER_PAGECOUNT={args.pages}",
        "-s", f"CLOSESPIDER_TIMEOUT={int(args.max_minutes * 60)}",
        "-s", "DEPTH_PRIORITY=1",
        "-s", "SCHEDULER_DISK_QUEUE=scrapy.squeues.PickleFifoDiskQueue",
        "-s", "SCHEDULER_MEMORY_QUEUE=scrapy.squeues.FifoMemoryQueue",
    ]  # fmt: skip
    if args.plain:
        cmd += ["-s", "SIMHASH_ENABLED=False"]
    env = dict(os.environ, PYTHONPATH=str(REPO))  # the crawl imports crawler/, a project of this clone
    began = time.perf_counter()
    process = subprocess.Popen(cmd, cwd=REPO, env=env)
    samples = []
    while process.poll() is None:
        own, tree = tree_rss_mb(process.pid)
        if own:
            samples.append((time.perf_counter() - began, site.served, own, tree))
        time.sleep(args.interval)
    return samples, time.perf_counter() - began, process.returncode


def plot(samples: list[tuple], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4.5))
    axis.plot([s[1] for s in samples], [s[2] for s in samples], label="crawl process")
    axis.plot([s[1] for s in samples], [s[3] for s in samples], label="with extraction workers")
    axis.set_xlabel("pages fetched")
    axis.set_ylabel("RSS (MB)")
    axis.set_ylim(bottom=0)
    axis.set_title("RSS of a dedup crawl of a generated site")
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def _window(marks: list[tuple], served: int, low: float, high: float) -> tuple[float, float]:
    """(mean pages fetched, mean RSS of the crawl process) over the samples between two fractions of the crawl."""
    inside = [m for m in marks if low * served <= m[1] <= high * served] or marks[-1:]
    return sum(m[1] for m in inside) / len(inside), sum(m[2] for m in inside) / len(inside)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.memory", description=__doc__.splitlines()[0])
    which = p.add_subparsers(dest="what", required=True)
    crawl = which.add_parser("crawl", help="RSS over a dedup crawl of a generated local site")
    crawl.add_argument("--pages", type=int, default=100_000)
    crawl.add_argument("--max-minutes", type=float, default=20.0, help="stop the crawl after this long")
    crawl.add_argument("--interval", type=float, default=1.0, help="seconds between RSS samples")
    crawl.add_argument(
        "--plain", action="store_true", help="dedup off (SIMHASH_ENABLED=False): Scrapy's own curve, its own section"
    )
    add_write(crawl)
    index = which.add_parser("index", help="RSS of the index alone under batched decisions")
    index.add_argument("--pages", type=int, default=400_000)
    index.add_argument("--batch", type=int, default=64)
    index.add_argument("--every", type=int, default=32_000, help="print RSS every this many pages")
    index.add_argument("--url", help="an index URL (default: SQLite in a temporary folder)")
    return p


def index_memory(args: argparse.Namespace) -> None:
    rng = random.Random(1)
    with (
        tempfile.TemporaryDirectory(prefix="index-memory-") as folder,
        open_index(args.url or f"sqlite:///{folder}/memory.db") as index,
    ):
        print("| pages decided | RssAnon MB | RssFile MB |\n|---|---|---|")
        for start in range(0, args.pages, args.batch):
            signatures = (
                Signature(rng.getrandbits(64), rng.getrandbits(64), rng.randbytes(256)) for _ in range(args.batch)
            )
            index.check_and_add_many([(f"https://example.com/{start + i}", s) for i, s in enumerate(signatures)])
            done = start + args.batch
            if done % args.every < args.batch:
                rss = status_kb("self", ("RssAnon", "RssFile"))
                print(f"| {done:,} | {rss['RssAnon'] / 1024:.0f} | {rss['RssFile'] / 1024:.0f} |", flush=True)


def main() -> None:
    args = parser().parse_args()
    if args.what == "index":
        index_memory(args)
    else:
        crawl_memory(args)


def crawl_memory(args: argparse.Namespace) -> None:
    began, load_before = stamp(), machine()
    site = Site(args.pages)
    server, start = serve(site)
    try:
        with tempfile.TemporaryDirectory(prefix="crawl-memory-") as tmp:
            samples, wall, code = crawl(start, Path(tmp), args, site)
            log = (Path(tmp) / "crawl.log").read_text(errors="replace")
            feed = Path(tmp) / "items.jsonl"
            items = len(feed.read_text().splitlines()) if feed.exists() else 0
    finally:
        server.shutdown()
    dropped = re.findall(r"'simhash/dropped': (\d+)", log)
    exact = re.findall(r"'simhash/dropped_exact': (\d+)", log)
    reason = re.findall(r"'finish_reason': '([^']+)'", log)
    if code or not samples:
        sys.exit(f"the crawl failed (exit code {code}); its log ends:\n{log[-2000:]}")
    served = site.served
    marks = [s for s in samples if s[1] > 0]
    rows, shown = [], set()
    for fraction in (0.05, 0.1, 0.25, 0.5, 0.75, 1.0):
        sample = min(marks, key=lambda s: abs(s[1] - fraction * served))
        if sample[1] not in shown:
            shown.add(sample[1])
            rows.append([f"{sample[1]:,}", f"{sample[0]:.0f}", f"{sample[2]:.0f}", f"{sample[3]:.0f}"])
    early, late = _window(marks, served, 0.2, 0.3), _window(marks, served, 0.85, 0.95)
    growth = (late[1] - early[1]) / max(1, late[0] - early[0]) * 10_000
    peak = max(s[2] for s in samples), max(s[3] for s in samples)
    name, picture = (
        ("crawl_memory_plain", PLOT.with_name("crawl_memory_plain.png")) if args.plain else ("crawl_memory", PLOT)
    )
    if args.write:
        plot(samples, picture)
    shortfall = (
        ""
        if served >= args.pages
        else f" The crawl fetched {served:,} of the {args.pages:,} pages before --max-minutes "
        f"{args.max_minutes:g} was up."
    )
    title = "Crawl memory, dedup off (the baseline)" if args.plain else "Crawl memory"
    mode = "dedup OFF (`SIMHASH_ENABLED=False`: Scrapy alone, the baseline)" if args.plain else "dedup on"
    body = f"""## {title}

`{command()}` — {began}; {load_before} (at the start); load average at the end: {load_of(machine())}.
2 shared cores (other agents' test runs): the crawl rate is this machine's under that load.

A generated site of {args.pages:,} pages served on 127.0.0.1 by a thread of the benchmark (page i links to
pages i+1..i+5, back to i/2 and to a random earlier page, so the queue of pending requests stays short; a shared
template and 200-400 words drawn Zipf-like from the eval corpus's English vocabulary;
one page in ten a near-duplicate of an earlier one, 3 words changed), crawled breadth-first by `scrapy crawl site`
with {mode} (SQLite index, SIMHASH_WORKERS and SIMHASH_BATCH_SIZE at their defaults, `-O items.jsonl` with the URL
only). RSS sampled from /proc every {args.interval:g} s: the crawl process alone, and with its extraction worker
processes.{shortfall}

Pages fetched: {served:,} in {wall:.0f} s ({served / wall:,.0f}/s); items written: {items:,}; dropped as duplicates:
{", ".join(dropped) or "(no simhash/dropped stat in the log)"} ({", ".join(exact) or 0} of them exact);
finish reason: {", ".join(reason) or "?"}.

{table(["pages fetched", "seconds", "RSS MB (crawl process)", "RSS MB (with workers)"], rows)}

Peak RSS: {peak[0]:.0f} MB (crawl process), {peak[1]:.0f} MB with workers. The crawl process's mean RSS went
from {early[1]:.0f} MB (20-30% of the pages fetched) to {late[1]:.0f} MB (85-95%): {growth:+.1f} MB per 10,000 pages.

![RSS against pages fetched]({picture.name})
"""
    print(body)
    if args.write:
        write_section(name, body)
        print("wrote docs/crawl_memory.png and the crawl_memory section of docs/performance.md")


if __name__ == "__main__":
    main()
