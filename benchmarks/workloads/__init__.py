"""The index benchmarks' workloads: the pages an index stores, and new pages that query and join it.

- uniform: random 64-bit fingerprints; no two pages share more bits than chance (this flatters an
  index). Fresh pages: random.
- realistic: sites with templates, reused paragraphs and near copies, calibrated per site to real
  sites (realistic.py): 1 to 15 stored pages within 6 bits of a page. Fresh pages: held-out pages of
  the same sites.
- crowded: sites whose pages share a template, with sketches, calibrated to real sites' crowding
  (crowded.py): template siblings within the radius that their sketches turn away, a heavy tail
  from big sites. Fresh pages: held-out pages of the same sites, with their sketches.
- skew: random, a fifth of them sharing one 16-bit block (bits 0-15), the blocks layout's worst case.
  Fresh pages: new members of that crowd.

Every workload also gives near copies of stored pages (1 to 3 bits flipped): the pages a crawl drops.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from simhash_index.fingerprinting.bits import MASK64
from simhash_index.fingerprinting.fingerprinter import Signature

Page = int | Signature
BLOCK0 = 0x5A5A  # the block0 value the skew workload's crowd shares


def split(value: str, allowed: tuple[str, ...], option: str) -> list[str]:
    """A comma-separated option's names, each one of `allowed`."""
    names = [v.strip() for v in value.split(",") if v.strip()]
    if not names or set(names) - set(allowed):
        raise argparse.ArgumentTypeError(
            f"{option} takes a comma-separated list of {', '.join(allowed)}; got {value!r}"
        )
    return names


def uniform_fingerprints(n: int, seed: int) -> np.ndarray:
    """N random 64-bit fingerprints; the same seed gives the same ones."""
    return np.random.PCG64(seed).random_raw(n).astype(np.uint64)


def page_key(i: int) -> str:
    """The URL key of synthetic page i (31 characters for page 0, 38 for page 9,999,999)."""
    return f"https://example.com/page/{i}.html"


def flip(value: int, rng: random.Random, bits: int | None = None) -> int:
    """The fingerprint with `bits` (default: 1 to 3) random bits flipped: a near copy."""
    for position in rng.sample(range(64), bits or rng.randint(1, 3)):
        value ^= 1 << position
    return value


def fingerprint_of(page: Page) -> int:
    return page.simhash if isinstance(page, Signature) else page  # type: ignore[return-value]


@dataclass
class Workload:
    """What one index is loaded with, and the new pages measured against it."""

    name: str
    stored: np.ndarray  # the stored fingerprints, in load order
    fresh: list[Page]  # new pages, none of them stored
    copies: list[Page]  # near copies of stored pages
    signatures: Sequence[Signature] | None = None  # the stored pages with sketches, when the workload has them
    keys: list[str] | None = None  # their keys; None: page_key(i)

    def items(self) -> Iterator[tuple[str, Page]]:
        """(key, page) of every stored page, for add_many."""
        pages = self.signatures if self.signatures is not None else self.stored.tolist()
        keys = self.keys if self.keys is not None else map(page_key, range(len(self.stored)))
        return zip(keys, pages)


def _copies(stored: np.ndarray, count: int, rng: random.Random) -> list[Page]:
    return [flip(int(stored[rng.randrange(len(stored))]), rng) for _ in range(count)]


def _uniform(n: int, fresh: int, seed: int) -> Workload:
    fps = uniform_fingerprints(n + fresh, seed)
    return Workload("uniform", fps[:n], fps[n:].tolist(), _copies(fps[:n], fresh, random.Random(seed)))


def _skew(n: int, fresh: int, seed: int) -> Workload:
    fps = uniform_fingerprints(n + fresh, seed)
    crowd = np.zeros(n + fresh, dtype=bool)
    crowd[: n // 5] = crowd[n:] = True
    fps[crowd] = (fps[crowd] & np.uint64(MASK64 ^ 0xFFFF)) | np.uint64(BLOCK0)
    near = _copies(fps[: max(1, n // 5)], fresh, random.Random(seed))
    return Workload("skew", fps[:n], fps[n:].tolist(), near)


def _sites(name: str) -> Callable[[int, int, int], Workload]:
    def made(n: int, fresh: int, seed: int) -> Workload:
        from benchmarks.workloads.realistic import realistic as sites

        fps, keys, held = sites(n, seed, 2, name)
        picked = np.random.default_rng(seed).choice(len(held), size=min(len(held), fresh), replace=False)
        return Workload(name, fps, held[picked].tolist(), _copies(fps, fresh, random.Random(seed)), keys=keys)

    return made


def _crowded(n: int, fresh: int, seed: int) -> Workload:
    from benchmarks.workloads import crowded

    pages = crowded.load(n, seed)
    rng = np.random.default_rng(seed)
    picked = np.sort(rng.choice(len(pages.fresh_fingerprints), min(fresh, len(pages.fresh_fingerprints)), False))
    new = crowded.Signatures(pages.fresh_fingerprints[picked], pages.fresh_sketches[picked], None, seed + 1)
    copies = crowded.near_copies(pages, fresh, rng)
    stored = crowded.Signatures(pages.fingerprints, pages.sketches, pages.words, seed)
    return Workload("crowded", pages.fingerprints, list(new), copies, signatures=stored)


# WORKLOADS[name](n, fresh, seed): n stored pages, `fresh` new ones and as many near copies.
WORKLOADS: dict[str, Callable[[int, int, int], Workload]] = {
    "uniform": _uniform,
    "realistic": _sites("realistic"),
    "crowded": _crowded,
    "skew": _skew,
}
