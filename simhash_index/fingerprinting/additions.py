"""What one page adds to another: a bitmap of each page's shingles, and what two bitmaps tell.

The MinHash sketch estimates how much two pages share, not what one would add to the other: at
a similarity of 0.88 a page of 3,000 words can hold hundreds that the other lacks, and 256 slots
cannot count them closer than a few dozen. So each page also keeps a bitmap of its distinct
shingles (a one-hash Bloom filter): `m` bits, a power of two of about two bits a shingle (from
MIN_BITS to MAX_BITS), bit `hash mod m` set for each shingle.

A shingle of page A that page B lacks sets a bit of A's bitmap that B's lacks, unless one of B's
shingles set that bit too (a share `fill` of B's bits). Folded to the smaller size (the bitmap of
m bits is the OR of the two halves of the bitmap of 2m bits), the bits A has and B lacks, X,
follow about Binomial(d, 1 - fill) for the d shingles A adds: no noise at all when A adds
nothing, and a few shingles either way when it adds dozens. `Addition.estimate` is d's estimate;
`Addition.reaches(threshold)` is the conservative question a drop asks: could A add `threshold`
shingles or more (the chance of seeing as few as X new bits if it did is above DOUBT)? A's
shingle count beyond B's is a floor that needs no estimate.

A page stored without a bitmap (by an earlier version) is judged by the sketches alone: A adds
at most |A| (1 - J) shingles to B (they share J |A u B| >= J |A|), with J taken at its lower
bound (`SketchBound`): near copies of long pages are then kept, as the sketch cannot tell.

A new shingle stands for about one new word (a run of w new words makes w + 2 word 3-shingles; a
renamed word makes 3); for Chinese, Japanese and Korean text, about one new character.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt

from .sketch import jaccard_of

MIN_BITS = 256
MAX_BITS = 16_384  # 2 KiB: a page of 8,000 distinct shingles or more fills it past 40%
DOUBT = 0.001  # a page is taken to add less than a threshold only when the odds it does not are below this


def bitmap(hashes: npt.NDArray[np.uint64]) -> bytes:
    """The bitmap of distinct shingle hashes: about two bits a shingle, bit `hash mod m` set."""
    m = bits_for(len(hashes))
    positions = (hashes & np.uint64(m - 1)).astype(np.intp)
    flags = np.zeros(m, np.uint8)
    flags[positions] = 1
    return np.packbits(flags, bitorder="little").tobytes()


def bits_for(count: int) -> int:
    """The bitmap size of a page of `count` distinct shingles: the power of two >= 2 * count, clamped."""
    return min(MAX_BITS, max(MIN_BITS, 1 << max(0, 2 * count - 1).bit_length()))


@dataclass(frozen=True)
class Addition:
    """What page A adds to page B: `floor` shingles at least (A's count beyond B's), `new_bits`
    of A's bitmap that B's lacks, out of `free` bits B's bitmap leaves unset, of `size`."""

    floor: int
    new_bits: int
    free: int
    size: int

    @property
    def estimate(self) -> int:
        """The shingles A adds to B, estimated (never below the floor)."""
        if self.new_bits == 0:
            return self.floor
        if self.new_bits >= self.free:
            return max(self.floor, self.new_bits)  # saturated: as many as it shows, at least
        seen = math.log1p(-self.new_bits / self.free) / math.log1p(-1 / self.size)
        return max(self.floor, round(seen))

    def reaches(self, threshold: int) -> bool:
        """Whether A may add `threshold` shingles or more to B: the floor says so, or seeing as few
        as `new_bits` new bits would not be unlikely (above DOUBT) if A added exactly `threshold`."""
        if self.floor >= threshold or self.new_bits >= threshold:
            return True
        if threshold <= 0:
            return True
        return _binomial_cdf(self.new_bits, threshold, self.free / self.size) > DOUBT


@dataclass(frozen=True)
class SketchBound:
    """What page A adds to page B, bounded from their sketches alone: A's `count` distinct
    shingles, and the `agreeing` of the sketches' `slots` (one-byte slots, b-bit MinHash)."""

    count: int
    agreeing: int
    slots: int

    @property
    def estimate(self) -> int:
        """At most this many shingles, estimated: |A| (1 - J)."""
        return round(self.count * (1.0 - jaccard_of(self.agreeing, self.slots)))

    def reaches(self, threshold: int) -> bool:
        """Whether A may add `threshold` shingles or more: |A| (1 - J) with J at its lower bound."""
        low = jaccard_of(_agreeing_floor(self.agreeing, self.slots), self.slots)
        return self.count * (1.0 - low) >= threshold


def addition(a: bytes, a_count: int, b: bytes, b_count: int) -> Addition:
    """What the page of bitmap `a` and `a_count` distinct shingles adds to the page of bitmap `b`."""
    size = min(len(a), len(b)) * 8
    if size == 0:
        raise ValueError("bitmaps must not be empty")
    x, y = _folded(a, size), _folded(b, size)
    new_bits = int(np.bitwise_count(x & ~y).sum())
    free = size - int(np.bitwise_count(y).sum())
    return Addition(max(0, a_count - b_count), new_bits, free, size)


def _folded(bitmap: bytes, bits: int) -> npt.NDArray[np.uint8]:
    """A bitmap folded down to `bits` bits (a power of two no larger than its own size)."""
    array = np.frombuffer(bitmap, np.uint8)
    while array.size * 8 > bits:
        half = array.size // 2
        array = array[:half] | array[half:]
    return array


def _binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p)."""
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 1.0 if k >= n else 0.0
    q = 1.0 - p
    return math.fsum(math.comb(n, i) * p**i * q ** (n - i) for i in range(min(k, n) + 1))


@cache
def _agreeing_floor(agreeing: int, slots: int) -> float:
    """The slots agreeing at the one-sided lower confidence bound (odds DOUBT) of the rate behind
    `agreeing` of `slots`: slots times the rate p at which `agreeing` or more are seen with odds DOUBT."""
    if agreeing == 0:
        return 0.0
    low, high = 0.0, agreeing / slots
    for _ in range(40):
        p = (low + high) / 2
        if 1.0 - _binomial_cdf(agreeing - 1, slots, p) < DOUBT:
            low = p
        else:
            high = p
    return low * slots
