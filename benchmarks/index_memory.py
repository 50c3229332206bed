"""Memory of the index under a long run of batched decisions: does the writer's RSS level off?

    python benchmarks/index_memory.py [--pages 400000] [--batch 64] [--every 32000] [--url sqlite:///...]

Decides `--pages` distinct pages (random fingerprints, text hashes and 256-byte sketches) in batches with
`check_and_add_many`, as the pipeline's writer does, into a new index (SQLite in a temporary folder
unless --url names another), and prints the process's anonymous and file-backed RSS every `--every`
pages. SQLite's page cache (`PRAGMA cache_size`, 64 MiB a connection) fills first: RSS grows with it,
then stays flat.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from simhash_index import open_index
from simhash_index.fingerprinting.fingerprinter import Signature


def rss_kb() -> dict[str, int]:
    """RssAnon and RssFile of this process, in kB (Linux)."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("RssAnon", "RssFile"):
            fields[name] = int(value.split()[0])
    return fields


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=400_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--every", type=int, default=32_000)
    parser.add_argument("--url", help="an index URL (default: SQLite in a temporary folder)")
    args = parser.parse_args()
    rng = random.Random(1)
    with tempfile.TemporaryDirectory(prefix="index-memory-") as folder:
        index = open_index(args.url or f"sqlite:///{folder}/memory.db")
        print("| pages decided | RssAnon MB | RssFile MB |\n|---|---|---|")
        for start in range(0, args.pages, args.batch):
            items = [
                (f"https://example.com/{i}", Signature(rng.getrandbits(64), rng.getrandbits(64), rng.randbytes(256)))
                for i in range(start, start + args.batch)
            ]
            index.check_and_add_many(items)
            done = start + args.batch
            if done % args.every < args.batch:
                rss = rss_kb()
                print(f"| {done:,} | {rss['RssAnon'] / 1024:.0f} | {rss['RssFile'] / 1024:.0f} |", flush=True)
        index.close()


if __name__ == "__main__":
    main()
