"""Prune: forgetting half of a 1M-page SQLite index, the way `simhash-index prune` does, beside
the one-statement DELETE a user would write, while a crawl keeps writing.

    python -m benchmarks.prune [--n 1000000] [--logged 20000] [--workdir DIR]

The index is bulk-loaded (`insertion_session`) with N pages whose fingerprints crowd as real
text does: a tenth are 1-3 bits from an earlier page, and the rest share their top 16 bits in
groups of about 64 (real pages pile into few blocks); each page has a text hash and a 256-byte
sketch. `--logged` more pages are checked (`check_and_add`), copies of stored ones, so the
duplicates log has entries. The older half of the pages (and of the log) is then dated 40 days
back. Each variant runs on its own copy of that file, in a fresh process (its peak RSS is the
prune's alone), while another process calls check_and_add in a loop: its slowest call is how long
a crawl waited for the writer lock. Writes docs/operating.md's "Pruning, measured" section.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import shutil
import sqlite3
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from benchmarks._common import REPO, add_write, command, machine, stamp, table, write_section
from benchmarks._rss import peak_rss_mb
from benchmarks.workloads import flip, page_key
from simhash_index import SimhashIndex
from simhash_index.fingerprinting.fingerprinter import Signature

DAY = 86400
OPERATING = REPO / "docs" / "operating.md"


def fingerprints(n: int, rng: random.Random) -> list[int]:
    found: list[int] = []
    top = 0
    for i in range(n):
        if found and rng.random() < 0.1:
            found.append(flip(found[rng.randrange(len(found))], rng))
            continue
        if i % 64 == 0:
            top = rng.getrandbits(16)
        found.append((top << 48) | rng.getrandbits(48))
    return found


def build(path: Path, n: int, logged: int) -> None:
    rng = random.Random(18)
    prints = fingerprints(n, rng)
    url = f"sqlite:///{path}"
    with SimhashIndex(url) as index:
        with index.insertion_session() as session:
            for i, fingerprint in enumerate(prints):
                session.add(page_key(i), Signature(fingerprint, rng.getrandbits(64), rng.randbytes(256)))
        pages = [(f"https://copy.example.com/{j}", flip(prints[rng.randrange(n)], rng)) for j in range(logged)]
        for start in range(0, len(pages), 64):
            index.check_and_add_many(pages[start : start + 64])
    with sqlite3.connect(path) as conn:  # the older half, 40 days back
        conn.execute("UPDATE simhash_documents SET stored_at = stored_at - ? WHERE id <= ?", (40 * DAY, n // 2))
        conn.execute("UPDATE simhash_duplicates SET seen_at = seen_at - ? WHERE id % 2 = 0", (40 * DAY,))
    with sqlite3.connect(path) as conn:  # everything in the main file: the copies are of it alone
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def prune_ours(path: Path, cutoff: datetime, out: multiprocessing.Queue) -> None:
    began = time.perf_counter()
    with SimhashIndex(f"sqlite:///{path}", create=False) as index:
        forgotten = index.prune(before=cutoff)
    out.put((time.perf_counter() - began, peak_rss_mb(), forgotten.pages, forgotten.duplicates))


def prune_naive(path: Path, cutoff: datetime, out: multiprocessing.Queue) -> None:
    began = time.perf_counter()
    seconds = int(cutoff.timestamp())
    with sqlite3.connect(path, timeout=600) as conn:
        old = "SELECT id FROM simhash_documents WHERE stored_at < ?"
        dups = conn.execute(
            f"DELETE FROM simhash_duplicates WHERE seen_at < ? OR duplicate_of_id IN ({old})", (seconds, seconds)
        ).rowcount
        pages = conn.execute("DELETE FROM simhash_documents WHERE stored_at < ?", (seconds,)).rowcount
    out.put((time.perf_counter() - began, peak_rss_mb(), pages, dups))


def crawl(path: Path, stop: multiprocessing.Event, out: multiprocessing.Queue) -> None:
    """check_and_add in a loop until stopped: the slowest call's seconds, and how many calls."""
    rng = random.Random(7)
    slowest, calls = 0.0, 0
    with SimhashIndex(f"sqlite:///{path}", create=False, statement_timeout=600) as index:
        while not stop.is_set():
            began = time.perf_counter()
            index.check_and_add(f"https://crawl.example.com/{calls}", rng.getrandbits(64))
            slowest = max(slowest, time.perf_counter() - began)
            calls += 1
    out.put((slowest, calls))


def run(variant, path: Path, cutoff: datetime) -> tuple[float, float, int, int, float, int]:
    context = multiprocessing.get_context("spawn")
    results, crawled, stop = context.Queue(), context.Queue(), context.Event()
    crawler = context.Process(target=crawl, args=(path, stop, crawled))
    crawler.start()
    time.sleep(2)  # the crawl is writing before the prune starts
    pruner = context.Process(target=variant, args=(path, cutoff, results))
    pruner.start()
    seconds, rss, pages, dups = results.get()
    pruner.join()
    stop.set()
    slowest, calls = crawled.get()
    crawler.join()
    return seconds, rss, pages, dups, slowest, calls


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.prune", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--logged", type=int, default=20_000)
    p.add_argument("--workdir", type=Path)
    add_write(p, OPERATING)
    return p


def main() -> None:
    p = parser()
    args = p.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as folder:
        base = Path(folder) / "base.db"
        began = time.perf_counter()
        build(base, args.n, args.logged)
        print(f"built {args.n} pages in {time.perf_counter() - began:.0f} s, {base.stat().st_size / 1e6:.0f} MB")
        cutoff = datetime.now(timezone.utc) - timedelta(days=30)
        rows = []
        measured = {}
        for name, variant in (("prune (ours: 5,000 rows a transaction)", prune_ours), ("one DELETE", prune_naive)):
            copy = Path(folder) / "copy.db"
            shutil.copy(base, copy)
            seconds, rss, pages, dups, slowest, calls = run(variant, copy, cutoff)
            measured[name] = (seconds, slowest)
            print(
                f"{name}: {seconds:.1f} s, peak RSS {rss:.0f} MB, {pages} pages, {dups} duplicates; "
                f"crawl max {slowest:.2f} s"
            )
            rows.append([name, f"{seconds:.1f}", f"{rss:.0f}", str(pages), str(dups), f"{slowest:.2f}", str(calls)])
            copy.unlink()
    ours, naive = measured.values()
    body = "\n".join(
        [
            "## Pruning, measured",
            "",
            f"`{command()}`, {stamp()}; {machine()}.",
            f"A {args.n:,}-page SQLite index (blocks layout, sketches, {args.logged:,} duplicates logged), the older",
            "half dated 40 days back, pruned with `--older-than 30d` while another process called",
            "`check_and_add` in a loop (its slowest call: how long a crawl waited for the index).",
            "",
            table(
                ["variant", "seconds", "peak RSS MB", "pages", "duplicates", "crawl's slowest call s", "crawl calls"],
                rows,
            ),
            "",
            f"Ours takes {ours[0] / naive[0]:.2f}x the one DELETE's time; the crawl's longest wait is "
            f"{ours[1] / naive[1]:.3f}x its wait behind the one DELETE.",
        ]
    )
    if args.write:
        write_section("prune benchmark", body, OPERATING)
    print(body)


if __name__ == "__main__":
    main()
