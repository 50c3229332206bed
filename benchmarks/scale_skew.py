"""Skewed fingerprints: the eval corpus's real ones, and synthetic crowds sharing 16 or 32 bits.

Every query's answer is checked against brute force over all stored fingerprints (numpy), and
the rows the SQL lookups return against numpy's count of what they must return.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks._common import Timer, median
from benchmarks._stores import LAYOUT, vacuum
from benchmarks.scale_lookups import Fingerprints, distance, examined, lookup_rows
from benchmarks.scale_runs import bulk_load
from simhash_index import Fingerprinter, SimhashIndex
from simhash_index.index.records import MASK64


@dataclass(frozen=True)
class Crowd:
    """Pages sharing bits [shift, shift + width) with the value `value`, random elsewhere."""

    label: str
    shift: int
    width: int
    value: int
    pages: int
    queries: int

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.shift

    def member(self, random_bits: int) -> int:
        """A fingerprint of the crowd: the shared bits, and the given random bits elsewhere."""
        return (random_bits & ~self.mask & MASK64) | (self.value << self.shift)

    def members(self, generator: np.random.BitGenerator) -> np.ndarray:
        """All the crowd's pages, random elsewhere."""
        return (generator.random_raw(self.pages) & np.uint64(MASK64 ^ self.mask)) | np.uint64(self.value << self.shift)


@dataclass
class SkewQueries:
    """A crowd's queries, with their brute-force answers and what a 16-bit block table would read for them."""

    crowd: Crowd
    queries: list[int]
    truths: list[set[int]]  # positions in the stored array within 3 bits
    block_reads: list[tuple[int, int]]  # (rows, of them more than 3 bits away)


def crowds(args: argparse.Namespace) -> list[Crowd]:
    """Crowds sharing a 16-bit block (bounded), a whole 32-bit half (read whole: the design's limit), bits 16-47 (bounded)."""
    return [
        Crowd("sharing block0 (bits 0-15)", 0, 16, 0x5EED, args.skew_bucket, 20),
        Crowd("sharing the low half (bits 0-31)", 0, 32, 0x0FABBEEF, args.half_bucket, 5),
        Crowd("sharing block1 + block2 (bits 16-47)", 16, 32, 0xC0FFEE11, args.straddle_bucket, 20),
    ]


def flip_bits(value: int, positions: list[int]) -> int:
    """The fingerprint with the bits at these positions flipped."""
    for position in positions:
        value ^= 1 << position
    return value


def skew_data(args: argparse.Namespace) -> tuple[Fingerprints, list[SkewQueries]]:
    """Uniform fingerprints plus the crowds, and queries in each crowd with 9 planted neighbours 1-3 bits away:
    flips outside the shared bits (the neighbour stays in the crowd), anywhere, and one inside them."""
    rng, generator = random.Random(args.seed + 7), np.random.PCG64(args.seed + 7)
    groups, planted, chosen = [generator.random_raw(args.skew_n)], [], []
    for crowd in crowds(args):
        groups.append(crowd.members(generator))
        inside = [b for b in range(64) if crowd.mask >> b & 1]
        outside = [b for b in range(64) if not crowd.mask >> b & 1]
        mine = [crowd.member(rng.getrandbits(64)) for _ in range(crowd.queries)]
        chosen.append((crowd, mine))
        for q in mine:
            for d in (1, 2, 3):
                planted.append(flip_bits(q, rng.sample(outside, d)))
                planted.append(flip_bits(q, rng.sample(range(64), d)))
                planted.append(flip_bits(q, [rng.choice(inside), *rng.sample(outside, d - 1)]))
    stored = Fingerprints(np.concatenate([*groups, np.array(planted, dtype=np.uint64)]))
    return stored, [
        SkewQueries(crowd, mine, [set(stored.within(q).tolist()) for q in mine], [stored.block_reads(q) for q in mine])
        for crowd, mine in chosen
    ]


def skew_test(backend: str, url: str, stored: Fingerprints, groups: list[SkewQueries], batch_size: int) -> list[dict]:
    """Rows read, table rows fetched, time and completeness (against brute force) of queries in each crowd."""
    key = "https://example.com/skew/{}.html".format
    results = []
    with SimhashIndex(url, layout=LAYOUT) as index:
        items = ((key(i), fp) for i, fp in enumerate(stored.all.tolist()))
        seconds, _ = bulk_load(index, f"skew, {backend}", items, len(stored.all), batch_size)
        if backend == "postgres":
            vacuum(url)
        print(f"skew, {backend}: {len(stored.all):,} pages loaded in {seconds:.1f} s", flush=True)
        for group in groups:
            rows = lookup_rows(index, group.queries)
            complete, times = 0, []
            for q, truth in zip(group.queries, group.truths):
                with Timer() as timer:
                    found = {m.key for m in index.query(q)}
                times.append(timer.seconds)
                complete += found == {key(i) for i in truth} and len(truth) >= 9
            results.append(
                {
                    "label": f"{backend}: {group.crowd.queries} queries in {group.crowd.pages:,} pages {group.crowd.label}",
                    "queries": len(group.queries),
                    "complete": complete,
                    "ms": 1000 * median(times),
                    "read": [(len(r), sum(distance(fp, q) > 3 for fp in r)) for r, q in zip(rows, group.queries)],
                    "agree": sum(len(r) == stored.half_reads(q) for r, q in zip(rows, group.queries)),
                    "examined": [examined(index, q) for q in group.queries],
                    "block_reads": group.block_reads,
                    "matches": [len(truth) for truth in group.truths],
                }
            )
    return results


def eval_skew(eval_dir: Path, batch_size: int) -> dict | None:
    """Buckets and rows read per query for the eval corpus's real fingerprints (None: no corpus)."""
    source = eval_dir / "extracted_text.jsonl.gz"
    if not source.is_file():
        return None
    fingerprinter = Fingerprinter()
    pages, everything = {}, []
    with gzip.open(source, "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            signature = fingerprinter.signature(record.get("text") or "")
            if signature is not None and signature.near_matchable:
                everything.append(signature.simhash)
                pages.setdefault(signature.text_hash, (record["path"], signature))  # exact copies are never stored
    stored = list(pages.values())
    fps = [signature.simhash for _, signature in stored]
    with tempfile.TemporaryDirectory(prefix="scale-eval-") as tmp, SimhashIndex(f"sqlite:///{tmp}/eval.db", layout=LAYOUT) as index:
        bulk_load(index, "eval corpus", stored, len(stored), batch_size)
        rows = lookup_rows(index, fps)
    mine, all_pages = Fingerprints(np.array(fps, dtype=np.uint64)), Fingerprints(np.array(everything, dtype=np.uint64))
    return {  # each page itself left out: both half lookups return it, and all four of its blocks hold it
        "pages": len(everything),
        "stored": len(stored),
        "bucket": mine.block_counts.largest(),
        "bucket_all": all_pages.block_counts.largest(),
        "half": mine.largest_half(),
        "half_all": all_pages.largest_half(),
        "read": [(len(r) - 2, sum(distance(fp, q) > 3 for fp in r)) for r, q in zip(rows, fps)],
        "agree": sum(len(r) == mine.half_reads(q) for r, q in zip(rows, fps)),
        "block_reads": [(r - 4, wasted) for r, wasted in map(mine.block_reads, fps)],
        "matches": [len(mine.within(fp)) - 1 for fp in fps],
    }
