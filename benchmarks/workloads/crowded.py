"""The `crowded` workload: sites whose pages share a template, with sketches, crowding as real sites do.

    python -m benchmarks.workloads.crowded [--n 1000000] [--sample 2000] [--site NAME=GIT_DIR:FOLDER ...]

builds (or reads from CACHE) the first N stored pages and prints their calibration: generated sites
of the sizes of the real sites given (--site, as in crowding.py) beside those real sites, and, over
the whole load, the stored pages within 6 and 8 bits of --sample held-out pages.

A page's text is three parts: its site's template (what extraction leaves of navigation, headings and
boilerplate, on every page: votes and shingles shared), its section's vocabulary (the words a family
of pages of one layout shares, identifiers say: votes shared, shingles not) and its own text
(lognormal; a share of pages short, stubs and listings). A twin is another page of its section with
some of its own words changed. Its fingerprint is the default Fingerprinter's weighted vote: each
distinct word adds +-weight to each bit by its hash, so a part of w word occurrences adds a vote of
variance w on each bit (tf^0.5 weights: the squared weights sum to the count), independent between
parts and bits (the hashes of distinct words are); a page's vote is the sum of its parts' Gaussians,
its bits the signs. Its sketch is the b-bit MinHash of its shingles: for each of the 256
permutations, the minimum over the union of the parts is the least of the parts' minima; a part of w
shingles has a minimum distributed as the least of w uniforms (exponential, rate w), and the slot's
byte is the winning part's (the template's fixed, drawn once; a page's own random). So two pages
agree on a slot when a shared part wins it in both, or by chance (1 in 256), as real b-bit MinHash
sketches do. A page a crawl would have dropped (survives()) is not stored. The parameters (Model) are
fitted so that generated sites reproduce real sites' pages within 6 and 8 bits and their similarity
(benchmarks/workloads/README.md).

Every page is a pure function of (seed, site); sites come in order, so the first N pages of a larger
load are the N-page load. Site sizes are lognormal (Model): a 1M-page load holds sites of a few
pages to over 100,000. One page in HELD_OUT of each site is not stored: the fresh pages a benchmark
decides. Generated loads are cached in CACHE (/work/bench-cache unless $SIMHASH_BENCH_CACHE), a
folder per model digest: 10M pages take 2.7 GB there, and 19 minutes to generate on a shared 2-core machine.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import overload

import numpy as np
import xxhash

from benchmarks._common import Timer, table
from benchmarks.workloads import crowding
from simhash_index.defaults import MAX_DISTANCE, MIN_SIMILARITY
from simhash_index.fingerprinting.fingerprinter import Signature

CACHE = crowding.CACHE
SKETCH = crowding.SKETCH
HELD_OUT = 100  # page j of a site with j % HELD_OUT == HELD_OUT - 1 is held out (a fresh page)


@dataclass(frozen=True)
class Model:
    """How a site's pages are made; the defaults are the calibrated ones (README). Word counts are
    medians of lognormals (over sites for a site's, over pages for a page's)."""

    size_median: float = 2000.0  # pages of a site
    size_sigma: float = 1.5
    size_max: int = 400_000
    template: float = 120.0  # words of a site's template, on every page: votes and shingles shared
    template_sigma: float = 0.8
    section_pages: int = 50  # pages of a section
    vocabulary: float = 300.0  # weight of a section's shared vocabulary: votes shared, shingles not
    vocabulary_sigma: float = 1.0
    own: float = 400.0  # words of a page's own text
    own_sigma: float = 1.0
    short: float = 0.01  # median share of a site's short pages (stubs, listings: little text of their own)
    short_sigma: float = 0.7
    short_own: float = 8.0  # their own words
    twins: float = 0.35  # share of pages that are another page of their section edited (method and function)
    edits: float = 0.1  # at most this share of a twin's own words differ (uniform from none)

    @property
    def digest(self) -> str:
        return xxhash.xxh64_hexdigest(repr(sorted(asdict(self).items())).encode())[:10]


MODEL = Model()


def site_size(model: Model, seed: int, site: int) -> int:
    rng = np.random.default_rng([seed, site, 0])
    return int(min(model.size_max, max(2, round(rng.lognormal(np.log(model.size_median), model.size_sigma)))))


def _bytes(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    count = int(np.prod(shape))
    return rng.bit_generator.random_raw(-(-count // 8)).view(np.uint8)[:count].reshape(shape)


def _normal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape, dtype=np.float32)


def site(
    model: Model, seed: int, s: int, size: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Site s's pages in page order: fingerprints (uint64), sketches (pages x 256 uint8), words, and
    whether a crawl at the default radius would store the page (`survives`)."""
    size = site_size(model, seed, s) if size is None else size
    rng = np.random.default_rng([seed, s, 1])
    template = rng.lognormal(np.log(model.template), model.template_sigma)
    sections = -(-size // model.section_pages)
    vocabulary = rng.lognormal(np.log(model.vocabulary), model.vocabulary_sigma, sections)
    short = rng.random(size) < min(0.5, rng.lognormal(np.log(model.short), model.short_sigma))
    own = np.maximum(1.0, rng.lognormal(np.log(np.where(short, model.short_own, model.own)), model.own_sigma))
    of = np.arange(size) // model.section_pages  # each page's section
    # own text: a page's own vote (variance: its words) and, per slot, its shingles' least hash and byte
    own_vote = _normal(rng, (size, 64)) * np.sqrt(own).astype(np.float32)[:, None]
    own_least = rng.standard_exponential((size, SKETCH), dtype=np.float32) / own[:, None].astype(np.float32)
    own_bytes = _bytes(rng, (size, SKETCH))
    # twins: page j takes page k's own text (k an earlier page of its section) with a share e changed
    twin = np.flatnonzero((rng.random(size) < model.twins) & (np.arange(size) % model.section_pages > 0))
    first = of[twin] * model.section_pages
    source = first + (rng.random(len(twin)) * (twin - first)).astype(np.int64)
    e = rng.random(len(twin)) * model.edits
    own[twin] = own[source]
    # the vote of the words taken out, given k's whole vote (a Gaussian's conditional), and of those put in
    removed = (
        e[:, None] * own_vote[source] + _normal(rng, (len(twin), 64)) * np.sqrt(e * (1 - e) * own[source])[:, None]
    )
    own_vote[twin] = own_vote[source] - removed + _normal(rng, (len(twin), 64)) * np.sqrt(e * own[source])[:, None]
    kept = (
        rng.random((len(twin), SKETCH), dtype=np.float32) < ((1 - e) / (1 + e))[:, None]
    )  # the own parts' Jaccard similarity
    own_least[twin] = np.where(kept, own_least[source], own_least[twin])
    own_bytes[twin] = np.where(kept, own_bytes[source], own_bytes[twin])
    # fingerprints: the sign of each bit's vote, template + the section's vocabulary + own
    vote = rng.normal(0.0, np.sqrt(template), 64) + _normal(rng, (sections, 64)) * np.sqrt(vocabulary)[:, None]
    fingerprints = np.packbits(vote[of] + own_vote > 0, axis=1, bitorder="little").view(np.uint64).ravel()
    # sketches: per slot, the template's byte where its least hash is below the page's own
    template_least = rng.standard_exponential(SKETCH, dtype=np.float32) / np.float32(template)
    sketches = np.where(template_least[None, :] < own_least, _bytes(rng, (SKETCH,))[None, :], own_bytes)
    words = np.round(template + own).astype(np.int64)
    candidates = np.union1d(twin, np.flatnonzero(short))
    return fingerprints, sketches, words, survives(fingerprints, sketches, candidates, of, short)


def survives(
    fingerprints: np.ndarray, sketches: np.ndarray, candidates: np.ndarray, of: np.ndarray, short: np.ndarray
) -> np.ndarray:
    """Which pages a crawl would store: not a twin or short page that has an earlier page of its
    section, or an earlier short page, within the default radius and at least min_similarity
    similar (the pages that can be near-duplicates; an earlier page is counted whether or not it
    was stored itself)."""
    first = np.searchsorted(of, of[candidates])  # each candidate's section starts there
    span = int((candidates - first).max(initial=0))
    earlier = first[:, None] + np.arange(span)[None, :]
    at, k = np.nonzero(earlier < candidates[:, None])
    later, before = [candidates[at]], [earlier[at, k]]
    stubs = np.flatnonzero(short)
    if len(stubs) > 1:
        a, b = np.nonzero(np.bitwise_count(fingerprints[stubs, None] ^ fingerprints[None, stubs]) <= MAX_DISTANCE)
        later.append(stubs[b[a < b]])
        before.append(stubs[a[a < b]])
    j, i = np.concatenate(later), np.concatenate(before)
    close = np.bitwise_count(fingerprints[i] ^ fingerprints[j]) <= MAX_DISTANCE
    j, i = j[close], i[close]
    kept = np.ones(len(fingerprints), dtype=bool)
    kept[j[crowding.similarities(sketches[i], sketches[j]) >= MIN_SIMILARITY]] = False
    return kept


@dataclass
class Load:
    """The stored pages of an N-page load and the held-out (fresh) pages of its sites, as arrays."""

    fingerprints: np.ndarray
    sketches: np.ndarray
    words: np.ndarray
    sites: np.ndarray  # each stored page's site
    fresh_fingerprints: np.ndarray
    fresh_sketches: np.ndarray
    fresh_sites: np.ndarray


_PARTS = ("fingerprints", "sketches", "words", "sites", "fresh_fingerprints", "fresh_sketches", "fresh_sites")


def build(n: int, seed: int, model: Model, folder: Path) -> None:
    """Generate the first n stored pages (and their sites' fresh pages) into `folder`, as .npy files."""
    parts: dict[str, list[np.ndarray]] = {name: [] for name in _PARTS}
    stored, s = 0, 0
    while stored < n:
        fingerprints, sketches, words, kept = site(model, seed, s)
        held = np.arange(len(fingerprints)) % HELD_OUT == HELD_OUT - 1
        keep = np.flatnonzero(kept & ~held)[: n - stored]
        gone = np.flatnonzero(held)
        for name, array in (("fingerprints", fingerprints), ("sketches", sketches), ("words", words)):
            parts[name].append(array[keep])
            if name != "words":
                parts[f"fresh_{name}"].append(array[gone])
        parts["sites"].append(np.full(len(keep), s, dtype=np.int32))
        parts["fresh_sites"].append(np.full(len(gone), s, dtype=np.int32))
        stored += len(keep)
        s += 1
    folder.mkdir(parents=True, exist_ok=True)
    for name in _PARTS:
        np.save(folder / f"{name}.tmp.npy", np.concatenate(parts[name]))
        parts[name].clear()
    for name in _PARTS:  # the folder is complete only once every part has its final name
        os.replace(folder / f"{name}.tmp.npy", folder / f"{name}.npy")


def load(n: int, seed: int = 1, model: Model = MODEL) -> Load:
    """The first n stored pages, from the cache (a larger load's first n when one is cached)."""
    root = CACHE / "crowded" / f"{model.digest}-{seed}"
    cached = sorted(int(p.name) for p in root.glob("*") if p.name.isdigit() and (p / "fresh_sites.npy").exists())
    found = next((c for c in cached if c >= n), None)
    if found is None:
        with Timer() as timer:
            build(n, seed, model, root / str(n))
        print(f"crowded: generated {n:,} pages in {timer.seconds:.0f} s into {root / str(n)}", flush=True)
        found = n
    arrays = {name: np.load(root / str(found) / f"{name}.npy", mmap_mode="r") for name in _PARTS}
    sites = int(arrays["sites"][n - 1]) + 1
    fresh = int(np.searchsorted(arrays["fresh_sites"], sites))  # the fresh pages of the load's own sites
    return Load(
        arrays["fingerprints"][:n],
        arrays["sketches"][:n],
        arrays["words"][:n],
        arrays["sites"][:n],
        arrays["fresh_fingerprints"][:fresh],
        arrays["fresh_sketches"][:fresh],
        arrays["fresh_sites"][:fresh],
    )


class Signatures(Sequence[Signature]):
    """Pages of a load as Signatures, made when asked for (10M of them would not fit in memory)."""

    def __init__(self, fingerprints: np.ndarray, sketches: np.ndarray, words: np.ndarray | None, seed: int) -> None:
        self.fingerprints, self.sketches, self.words, self.seed = fingerprints, sketches, words, seed

    def __len__(self) -> int:
        return len(self.fingerprints)

    @overload
    def __getitem__(self, i: int) -> Signature: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Signature]: ...
    def __getitem__(self, i: int | slice) -> Signature | Sequence[Signature]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        words = None if self.words is None else int(self.words[i])
        text_hash = xxhash.xxh64_intdigest(i.to_bytes(8, "little"), seed=self.seed)  # distinct texts
        return Signature(int(self.fingerprints[i]), text_hash, bytes(self.sketches[i]), words=words)

    def __iter__(self) -> Iterator[Signature]:
        for start in range(0, len(self), 65_536):
            fingerprints = self.fingerprints[start : start + 65_536].tolist()
            sketches = np.ascontiguousarray(self.sketches[start : start + 65_536])
            words = [None] * len(fingerprints) if self.words is None else self.words[start : start + 65_536].tolist()
            for j, (fingerprint, count) in enumerate(zip(fingerprints, words)):
                text_hash = xxhash.xxh64_intdigest((start + j).to_bytes(8, "little"), seed=self.seed)
                yield Signature(fingerprint, text_hash, sketches[j].tobytes(), words=count)


def near_copies(pages: Load, count: int, rng: np.random.Generator) -> list[Signature]:
    """`count` near copies of stored pages: 1 to 3 bits of the fingerprint flipped, 3% of the sketch's
    slots redrawn (a similarity of about 0.97)."""
    made = []
    for i in rng.integers(len(pages.fingerprints), size=count).tolist():
        flips = rng.choice(64, int(rng.integers(1, 4)), replace=False)
        fingerprint = int(pages.fingerprints[i]) ^ sum(1 << int(b) for b in flips)
        sketch = np.array(pages.sketches[i])
        redrawn = rng.random(SKETCH) < 0.03
        sketch[redrawn] = _bytes(rng, (int(redrawn.sum()),))
        made.append(Signature(fingerprint, int(rng.integers(1 << 63)), sketch.tobytes()))
    return made


def calibration(args: argparse.Namespace) -> str:
    """Generated sites beside the real ones (their sizes), and the load's crowding at N."""
    rows = []
    for spec in args.site or []:
        name, _, where = spec.partition("=")
        git_dir, _, folder = where.rpartition(":")
        real = crowding.site_pages(name, git_dir, folder, args.workers)
        measured = crowding.crowding(real, crowding.sample(real, args.sample))
        rows += crowding.summary(f"{name} (real)", len(real), measured)
        fingerprints, sketches, words, _ = site(MODEL, args.seed, 10_000_000 + len(rows), len(real))
        made = crowding.Pages(f"{name} (generated)", fingerprints, sketches, words)
        rows += crowding.summary(made.name, len(made), crowding.crowding(made, crowding.sample(made, args.sample)))
    pages = load(args.n, args.seed)
    stored = crowding.Pages("load", pages.fingerprints, pages.sketches, pages.words)
    queries = np.random.default_rng(args.seed).choice(len(pages.fresh_sites), args.sample, replace=False)
    both = crowding.Pages(
        "load",
        np.concatenate([stored.fingerprints, pages.fresh_fingerprints[np.sort(queries)]]),
        np.concatenate([stored.sketches, pages.fresh_sketches[np.sort(queries)]]),
        np.zeros(0),
    )
    found = crowding.crowding(both, np.arange(len(stored), len(both.fingerprints)), among=len(stored))
    rows += crowding.summary(f"crowded {args.n:,}: held-out pages", args.n, found)
    return table(crowding.HEADER, rows)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.workloads.crowded", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1_000_000, help="stored pages of the load measured")
    p.add_argument("--sample", type=int, default=2000, help="pages whose crowding is counted")
    p.add_argument("--site", action="append", help="NAME=GIT_DIR:FOLDER: a real site to compare with (crowding.py)")
    p.add_argument("--workers", type=int, default=2, help="processes signing real pages")
    p.add_argument("--seed", type=int, default=1)
    return p


def main() -> None:
    print(calibration(parser().parse_args()))


if __name__ == "__main__":
    main()
