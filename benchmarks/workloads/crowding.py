"""How real sites crowd: per page, the other pages of its site within 6 and 8 bits, and how similar
their sketches are (what the `crowded` workload is calibrated to, benchmarks/workloads/README.md).

    python -m benchmarks.workloads.crowding --site NAME=GIT_DIR:FOLDER [--site ...] [--workers 2]

A site is the HTML files under FOLDER of a git repository's HEAD (a built documentation site or
blog, as the search tool's `fetch` brings it: a bare git directory); each page's text is
extracted (`extract_text`) and signed (`Fingerprinter().signature`) as a crawl would, cached in
CACHE. Pages matched only by their text (`exact_only`) and repeats of a text are left out: what
is counted is what a near lookup meets. Per page: the other pages of the site within each radius
(their count's mean, p50, p90, p99, max), the sketch similarity of those pairs, and how many of
them the rule turns away (similarity below `min_similarity`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import xxhash

from benchmarks._common import table
from simhash_index import Fingerprinter
from simhash_index.defaults import MIN_SIMILARITY
from simhash_index.text.extract import ExtractionError, extract_text

CACHE = Path(os.environ.get("SIMHASH_BENCH_CACHE", "/work/bench-cache"))
RADII = (6, 8)
SKETCH = 256


@dataclass
class Pages:
    """The signed pages of a site: fingerprints, sketches (n x 256 bytes) and word counts."""

    name: str
    fingerprints: np.ndarray  # uint64
    sketches: np.ndarray  # uint8, n x SKETCH
    words: np.ndarray  # int64
    files: int = 0  # HTML files read, before exact_only pages and repeated texts were left out

    def __len__(self) -> int:
        return len(self.fingerprints)


def _html_blobs(git_dir: str, folder: str, every: int = 1) -> Iterator[bytes]:
    """The HTML files under `folder` of the repository's HEAD (every `every`-th in path order), as bytes."""
    listing = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "-r", "HEAD", "--", folder or "."],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    ids = [line.split()[2] for line in listing.splitlines() if line.endswith(".html") and line.split()[1] == "blob"]
    ids = ids[::every]
    batch = subprocess.Popen(
        ["git", "--git-dir", git_dir, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert batch.stdin is not None and batch.stdout is not None
    for blob in ids:
        batch.stdin.write(f"{blob}\n".encode())
        batch.stdin.flush()
        header = batch.stdout.readline().split()
        if header[-1] == b"missing":  # a snapshot may list a large file it does not hold
            continue
        yield batch.stdout.read(int(header[2]) + 1)[:-1]
    batch.stdin.close()
    batch.wait()


def _sign(html: bytes) -> tuple[int, int, bytes, int] | None:
    try:
        text = extract_text(html)
    except ExtractionError:
        return None
    signature = Fingerprinter().signature(text or "")
    if signature is None or not signature.near_matchable or signature.sketch is None:
        return None
    return signature.simhash, signature.text_hash, signature.sketch, signature.words or 0  # type: ignore[return-value]


def site_pages(name: str, git_dir: str, folder: str, workers: int, every: int = 1) -> Pages:
    """A site's signed pages (every `every`-th), from CACHE when they were signed before."""
    digest = xxhash.xxh64_hexdigest(f"{git_dir}:{folder}:{every}".encode())[:8]
    path = CACHE / "real" / f"{name}-{digest}.npz"
    if not path.exists():
        blobs = list(_html_blobs(git_dir, folder, every))
        with Pool(workers) as pool:
            signed = [s for s in pool.imap(_sign, blobs, chunksize=16) if s is not None]
        unique = list({text: (fp, sketch, words) for fp, text, sketch, words in signed}.values())
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(
            path,
            fingerprints=np.array([u[0] for u in unique], dtype=np.uint64),
            sketches=np.frombuffer(b"".join(u[1] for u in unique), dtype=np.uint8).reshape(-1, SKETCH),
            words=np.array([u[2] for u in unique], dtype=np.int64),
            files=len(blobs),
        )
    stored = np.load(path)
    return Pages(name, stored["fingerprints"], stored["sketches"], stored["words"], int(stored["files"]))


@dataclass
class Crowding:
    """Per page, the other pages of its site within each radius; and those pairs' similarities."""

    within: dict[int, np.ndarray]  # radius -> per page count
    similarity: dict[int, np.ndarray]  # radius -> similarity of every (ordered) pair within it
    turned_away: dict[int, np.ndarray]  # radius -> per page count of those below MIN_SIMILARITY


def crowding(pages: Pages, rows: np.ndarray | None = None, among: int | None = None) -> Crowding:
    """The crowding of the pages `rows` (all by default) among the first `among` pages (all by
    default), a page never counted as its own neighbour."""
    n = len(pages) if among is None else among
    rows = np.arange(len(pages)) if rows is None else rows
    within = {r: np.zeros(len(rows), dtype=np.int64) for r in RADII}
    turned = {r: np.zeros(len(rows), dtype=np.int64) for r in RADII}
    similar: dict[int, list[np.ndarray]] = {r: [] for r in RADII}
    step = max(1, 2**24 // n)  # rows a pass: a pass holds step x n distances
    for start in range(0, len(rows), step):
        chunk = rows[start : start + step]
        distance = np.bitwise_count(pages.fingerprints[chunk, None] ^ pages.fingerprints[None, :n])
        distance[chunk[:, None] == np.arange(n)[None, :]] = 64
        at, other = np.nonzero(distance <= max(RADII))
        score = similarities(pages.sketches[chunk[at]], pages.sketches[other])
        for r in RADII:
            keep = distance[at, other] <= r
            within[r][start : start + len(chunk)] = np.bincount(at[keep], minlength=len(chunk))
            turned[r][start : start + len(chunk)] = np.bincount(
                at[keep & (score < MIN_SIMILARITY)], minlength=len(chunk)
            )
            similar[r].append(score[keep])
    return Crowding(within, {r: np.concatenate(s) for r, s in similar.items()}, turned)


def similarities(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The rule's sketch similarity (sketch.estimate_jaccard) of sketches a and b, row by row."""
    agree = (a == b).mean(axis=-1)
    return np.maximum(0.0, (agree - 1 / SKETCH) / (1 - 1 / SKETCH))


def sample(pages: Pages, count: int | None, seed: int = 0) -> np.ndarray | None:
    """`count` of the pages, at random (None: all)."""
    if count is None or count >= len(pages):
        return None
    return np.sort(np.random.default_rng(seed).choice(len(pages), count, replace=False))


def summary(name: str, pages: int, found: Crowding) -> list[list[str]]:
    """Table rows: per radius, the count's mean / p50 / p90 / p99 / max, the turned-away mean,
    and the pairs' similarity quantiles."""
    out = []
    for r in RADII:
        count, score = found.within[r], found.similarity[r]
        quantiles = np.percentile(count, [50, 90, 99]) if len(count) else [0, 0, 0]
        sims = np.percentile(score, [10, 50, 90]) if len(score) else [0, 0, 0]
        accepted = float((score >= MIN_SIMILARITY).mean()) if len(score) else 0.0
        out.append(
            [
                name,
                f"{pages:,}",
                str(r),
                f"{count.mean():.1f}",
                " / ".join(f"{q:.0f}" for q in quantiles) + f" / {count.max() if len(count) else 0}",
                f"{(count > 0).mean():.0%}",
                f"{found.turned_away[r].mean():.1f}",
                " / ".join(f"{s:.2f}" for s in sims),
                f"{accepted:.1%}",
            ]
        )
    return out


HEADER = [
    "site",
    "pages",
    "radius",
    "within: mean",
    "p50 / p90 / p99 / max",
    "pages with one",
    "turned away: mean",
    "similarity p10 / p50 / p90",
    "pairs >= min_similarity",
]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.workloads.crowding", description=__doc__.splitlines()[0])
    p.add_argument(
        "--site", action="append", required=True, help="NAME=GIT_DIR:FOLDER (repeatable): the HTML under FOLDER"
    )
    p.add_argument("--workers", type=int, default=2, help="processes extracting and signing pages")
    p.add_argument("--every", type=int, default=1, help="sign every Nth page of each site (a big site's sample)")
    return p


def main() -> None:
    args = parser().parse_args()
    rows = []
    for spec in args.site:
        name, _, where = spec.partition("=")
        git_dir, _, folder = where.rpartition(":")
        if not name or not git_dir:
            raise SystemExit(f"--site takes NAME=GIT_DIR:FOLDER; got {spec!r}")
        pages = site_pages(name, git_dir, folder, args.workers, args.every)
        print(f"{name}: {len(pages):,} distinct near-matchable texts of {pages.files:,} HTML files", flush=True)
        rows += summary(name, len(pages), crowding(pages))
    print(table(HEADER, rows))


if __name__ == "__main__":
    main()
