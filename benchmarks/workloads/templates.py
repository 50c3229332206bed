"""The templates workload: template crowds around real pages' signatures.

Uniform random fingerprints flatter an index: real pages of one site share a template, so
their fingerprints crowd around each other and share 16-bit blocks far more often than
chance. Here the templates are the eval corpus's real pages (their `Fingerprinter().signature`
of the extracted text, computed once); a synthetic page is a template's fingerprint with 8 to
24 random bits flipped (different content on the same template: rarely within 3 bits of its
siblings, yet sharing a block with many of them) and a MinHash sketch sharing half its slots
with the template's. Templates are picked Zipf-like, so a few are big crowds. One page in ten
is a near-duplicate of an earlier page (1 to 3 bits flipped, 97% of sketch slots kept):
the pages a crawl drops.

Checked once (2026-11-23) against the corpus: two random generated pages are 20/23/28/31 bits
apart at the 1st/5th/25th/50th percentile; in the eval corpus, two non-duplicate pages of the same
repository are 16/20/24/27 bits apart and of different repositories 22/25/29/31.
"""

from __future__ import annotations

import gzip
import itertools
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks._common import EVAL
from simhash_index import Fingerprinter
from simhash_index.fingerprinting.fingerprinter import Signature

from . import flip

SKETCH = 256


@dataclass(frozen=True)
class Templates:
    """Real pages' signatures (or random ones when the corpus is absent) and where they came from."""

    signatures: list[Signature]
    source: str


def templates(eval_dir: Path = EVAL, limit: int | None = None) -> Templates:
    """The eval corpus's near-matchable signatures; 1,000 random ones when it is absent."""
    path = eval_dir / "extracted_text.jsonl.gz"
    if not path.exists():
        rng = random.Random(1)
        sigs = [Signature(rng.getrandbits(64), rng.getrandbits(64), rng.randbytes(SKETCH)) for _ in range(1000)]
        return Templates(sigs, "1,000 random signatures (eval corpus absent)")
    fingerprinter = Fingerprinter()
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        texts = [json.loads(line).get("text") or "" for line in lines]
    sigs = []
    for text in texts[:limit]:
        sig = fingerprinter.signature(text)
        if sig is not None and sig.near_matchable and sig.sketch:
            sigs.append(sig)
    unique = list({s.simhash: s for s in sigs}.values())
    return Templates(unique, f"{len(unique):,} distinct signatures of the eval corpus's {len(texts):,} pages")


def _mix(sketch: bytes, keep: float, rng: random.Random) -> bytes:
    """The sketch with each slot kept with probability `keep`, else random."""
    draw = np.random.default_rng(rng.getrandbits(64))
    slots = np.frombuffer(sketch, dtype=np.uint8).copy()
    replaced = draw.random(slots.size) >= keep
    slots[replaced] = draw.integers(0, 256, int(replaced.sum()), dtype=np.uint8)
    return slots.tobytes()


def pages(
    base: Templates, count: int, seed: int, prefix: str, earlier: list[Signature] | None = None
) -> Iterator[tuple[str, Signature, bool]]:
    """(key, signature, is a near-duplicate) for `count` pages: every tenth a near-duplicate of
    an earlier page of this stream or of `earlier` (pages stored before)."""
    rng = random.Random(seed)
    cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(base.signatures))))
    seen: list[Signature] = list(earlier or [])[-5000:]
    for i in range(count):
        key = f"https://{prefix}.example/page/{i}.html"
        if i % 10 == 9 and seen:
            source = rng.choice(seen)
            assert source.simhash is not None and source.sketch is not None
            sig = Signature(flip(source.simhash, rng), rng.getrandbits(64), _mix(source.sketch, 0.97, rng))
            yield key, sig, True
            continue
        template = rng.choices(base.signatures, cum_weights=cumulative)[0]
        assert template.simhash is not None and template.sketch is not None
        sig = Signature(
            flip(template.simhash, rng, rng.randint(8, 24)), rng.getrandbits(64), _mix(template.sketch, 0.5, rng)
        )
        if len(seen) < 5000:
            seen.append(sig)
        else:
            seen[rng.randrange(5000)] = sig
        yield key, sig, False
