"""A small MinHash sketch stored with each page, to verify simhash candidates.

Simhash at distance 3 also pairs different pages that share a heavy template.
Before a page is dropped, the Jaccard similarity of its shingles to the
candidate's is estimated from these sketches; a candidate that is not similar
enough is not a duplicate.

Each of the k slots keeps one byte of the minimum of one hash permutation
over the shingles (b-bit MinHash): two pages agree on a slot
with probability J + (1 - J) / 256 for Jaccard similarity J. 256 slots of one
byte estimate J within about 0.02 near 0.9; 64 or 128 slots were too noisy
on real pages (docs/accuracy.md, Accuracy).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

import numpy as np
import numpy.typing as npt
import xxhash

_CHUNK = 128  # shingles per block: a block's k permutations of each (256 KiB at k=256) stay in the CPU's cache


def _permutations(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Stable multipliers (odd) and offsets for k universal hash permutations, as _CHUNK rows of
    k: the operands of a block's multiply and add, element for element (NumPy's fast loops; a
    broadcast row is slower)."""
    a = [xxhash.xxh64_intdigest(f"a{i}".encode()) | 1 for i in range(k)]
    b = [xxhash.xxh64_intdigest(f"b{i}".encode()) for i in range(k)]
    return (
        np.tile(np.array(a, dtype=np.uint64), (_CHUNK, 1)),
        np.tile(np.array(b, dtype=np.uint64), (_CHUNK, 1)),
    )


_PERMUTATIONS: dict[int, tuple[np.ndarray, np.ndarray]] = {}


DEFAULT_SLOTS = 256


def shingle_hashes(shingles: Iterable[str]) -> npt.NDArray[np.uint64]:
    """The 64-bit hash of each shingle, in order, repeats included: what the sketch and the
    bitmap of a page (additions.py) are made from."""
    return np.fromiter(map(xxhash.xxh64_intdigest, map(str.encode, shingles)), dtype=np.uint64)


def minhash(shingles: Iterable[str], k: int = DEFAULT_SLOTS) -> bytes:
    """The k-slot one-byte MinHash of a set of shingles (k bytes); repeats count once."""
    return minhash_of(shingle_hashes(shingles), k)


def minhash_of(hashes: npt.NDArray[np.uint64], k: int = DEFAULT_SLOTS) -> bytes:
    """The k-slot one-byte MinHash of shingles given by their hashes (shingle_hashes)."""
    # repeats need no removing: they leave every minimum as it is
    if hashes.size == 0:
        return bytes(k)
    if k not in _PERMUTATIONS:
        _PERMUTATIONS[k] = _permutations(k)
    a, b = _PERMUTATIONS[k]
    best = np.full(k, np.iinfo(np.uint64).max, dtype=np.uint64)
    rows = np.empty((min(_CHUNK, hashes.size), k), dtype=np.uint64)
    for start in range(0, hashes.size, _CHUNK):
        block = hashes[start : start + _CHUNK]
        permuted = rows[: block.size]
        permuted[:] = block[:, None]  # row i: hash i, k times
        permuted *= a[: block.size]  # wraps mod 2**64, as intended
        permuted += b[: block.size]
        np.minimum(best, permuted.min(axis=0), out=best)
    # Bits 32-39 of the minimum: equal when the same shingle wins, equal by chance 1 time in 256.
    sketch: bytes = ((best >> np.uint64(32)) & np.uint64(0xFF)).astype(np.uint8).tobytes()
    return sketch


def estimate_jaccard(a: bytes, b: bytes) -> float:
    """Estimated Jaccard similarity of the shingle sets behind two sketches.

    Not simhash.bit_similarity, the share of equal bits of two fingerprints.
    """
    if len(a) != len(b) or not a:
        raise ValueError(f"sketches must be non-empty and of equal length; got {len(a)} and {len(b)} bytes")
    return jaccard_of(agreeing(a, b), len(a))


def jaccard_of(agreeing: float, slots: int) -> float:
    """The Jaccard similarity behind `agreeing` of `slots` one-byte slots that hold the same
    byte: a slot agrees with probability J + (1 - J) / 256."""
    chance = 1 / 256
    return max(0.0, (agreeing / slots - chance) / (1 - chance))


def agreeing(a: bytes, b: bytes) -> int:
    """How many slots of two sketches of one size hold the same byte."""
    return int(np.count_nonzero(np.frombuffer(a, dtype=np.uint8) == np.frombuffer(b, dtype=np.uint8)))


def slot_bits(sketch: bytes | None) -> bytes | None:
    """The lowest bit of each slot of a sketch, packed (32 bytes for 256 slots): slots that hold
    the same byte hold the same bit, so two sketches agree on no fewer bits than slots, and a
    candidate whose bits agree too little cannot be similar enough (how a writer turns
    candidates away in memory, index/sql/lookup.py). None for no sketch, or one of another size."""
    if sketch is None or len(sketch) != DEFAULT_SLOTS:
        return None
    return np.packbits(np.frombuffer(sketch, np.uint8) & 1, bitorder="little").tobytes()


@cache  # asked before each batch's lookup
def least_agreeing(min_similarity: float, slots: int = DEFAULT_SLOTS) -> int:
    """The fewest slots of `slots` that must agree for estimate_jaccard to reach `min_similarity`."""
    return next((count for count in range(slots + 1) if jaccard_of(count, slots) >= min_similarity), slots + 1)


similarity = estimate_jaccard  # the name the index modules use
