"""What one page adds to another: a bitmap of each page's shingles, and the words it shows new.

The MinHash sketch estimates how much two pages share, not what one would add to the other: at
a similarity of 0.88 a page of 3,000 words can hold hundreds that the other lacks, and 256 slots
cannot count them closer than a few dozen. So each page also keeps a bitmap of its distinct
shingles (a Bloom filter of two hashes): `m` bits, BITS a shingle (from MIN_BITS to MAX_BITS),
the bits `low mod m` and `high mod m` set for each shingle, `low` and `high` the two halves of
its 64-bit hash.

A page checked against a stored one brings its shingles in text order (`Shingled`): a word of
it is new to the stored page when none of the shingles that hold it is in the stored page's
bitmap. An inserted sentence or a rewritten section shows each of its words new; a renamed word
shows one (the shingles of its neighbours hold old words too); a removal shows none. Only runs of
more than REWORDING new words count: a word renamed here and there adds nothing. A shingle
the stored page lacks may still find both its bits set by other shingles (with probability
fill ** 2, `fill` the share of bits set: about 5% at BITS): a new word is seen new with
probability q = (1 - fill ** 2) ** n for shingles of n words (0.86 for 3), so
the words seen, X, give the estimate X / q; never more words than are new (a bitmap has no
false negatives). `Added.reaches(threshold)` is the conservative question a drop asks: could
the page add `threshold` words (the chance of seeing as few as X if it added them in one run,
where the words' chances are most correlated, is above DOUBT)?

A page stored without a bitmap (by an earlier version) is judged by the sketches alone: A adds
at most |A| (1 - J) shingles to B (they share J |A u B| >= J |A|), with J taken at its lower
bound (`SketchBound`): near copies of long pages are then kept, as the sketch cannot tell.

For Chinese, Japanese and Korean text, shingles are of 5 characters, and the characters a page
adds count as words at CHARACTERS_PER_WORD (the Chinese of the evaluation corpus: 500,188 Han
characters in 278,989 jieba words).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt

from .sketch import jaccard_of

BITS = 8  # a shingle: a renamed word then shows as one word, and 25 new words as 21 or so
MIN_BITS = 256
MAX_BITS = 131_072  # 16 KiB: a page of more than 16,384 distinct shingles has fewer than BITS each
REWORDING = 1  # new tokens in a run of at most this many (a renamed word here and there) add nothing
CHARACTERS_PER_WORD = 1.8
DOUBT = 0.01  # a page is taken to add less than a threshold only when the odds it does not are below this


@dataclass(frozen=True)
class Shingled:
    """A page's shingles in text order, as a checked page brings them: `size` tokens a shingle
    (3 words, or 5 characters of CJK text: `characters`), and each shingle's 64-bit hash."""

    size: int
    hashes: bytes
    characters: bool = False

    @classmethod
    def of(cls, size: int, hashes: npt.NDArray[np.uint64], *, characters: bool = False) -> Shingled:
        return cls(size, hashes.astype(np.uint64).tobytes(), characters)


def bitmap(distinct: npt.NDArray[np.uint64]) -> bytes:
    """The bitmap of a page's distinct shingle hashes: each hash's two bits (_bits) set."""
    flags = np.zeros(bits_for(len(distinct)), np.uint8)
    for bits in _bits(distinct, flags.size):
        flags[bits] = 1
    return np.packbits(flags, bitorder="little").tobytes()


def bits_for(count: int) -> int:
    """The bitmap size of a page of `count` distinct shingles: BITS each, in whole bytes, clamped."""
    return min(MAX_BITS, max(MIN_BITS, -(-BITS * count // 8) * 8))


def _bits(hashes: npt.NDArray[np.uint64], size: int) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """The two bits of a bitmap of `size` bits each hash sets: its low and high halves mod size."""
    low = (hashes & np.uint64(0xFFFF_FFFF)) % np.uint64(size)
    high = (hashes >> np.uint64(32)) % np.uint64(size)
    return low.astype(np.intp), high.astype(np.intp)


@dataclass(frozen=True)
class Added:
    """What a page adds to a stored one: `seen` words none of whose shingles are in the stored
    page's bitmap, where a shingle it lacks is seen absent with probability `free`."""

    seen: int  # tokens: words, or characters of CJK text
    free: float
    size: int  # tokens a shingle
    per_word: float = 1.0  # tokens a word

    @property
    def chance(self) -> float:
        """The share of new tokens seen new, in a long run of them (_filled taken into account)."""
        return _seen_share(self.size, round(self.free, 4))

    @property
    def estimate(self) -> int:
        """The words the page adds, estimated."""
        tokens = self.seen if self.chance <= 0 else self.seen / self.chance
        return round(tokens / self.per_word)

    def reaches(self, threshold: int) -> bool:
        """Whether the page may add `threshold` words or more: it shows that many, or seeing as
        few as it shows would not be unlikely (above DOUBT) if it added them in one run."""
        run = math.ceil(threshold * self.per_word)
        if self.seen >= run or run <= 0:
            return True
        return _run_cdf(self.seen, run, self.size, round(self.free, 4)) > DOUBT


def added(page: Shingled, stored: bytes) -> Added:
    """What the page whose shingles are `page` adds to the page of bitmap `stored`."""
    flags = np.unpackbits(np.frombuffer(stored, np.uint8), bitorder="little")
    if not flags.size:
        raise ValueError("the stored page's bitmap is empty")
    low, high = _bits(np.frombuffer(page.hashes, np.uint64), flags.size)
    absent = (flags[low] & flags[high]) == 0
    per_word = CHARACTERS_PER_WORD if page.characters else 1.0
    return Added(_new_tokens(absent, page.size), 1.0 - float(flags.mean()) ** 2, page.size, per_word)


def _new_tokens(absent: npt.NDArray[np.bool_], size: int) -> int:
    """How many tokens of a text none of whose shingles is present, in runs of more than
    REWORDING, from each shingle's absence (shingle j holds tokens j to j + size - 1; one
    shingle holds the whole of a shorter text). A shingle seen present between two absent ones
    is taken as absent (_filled)."""
    if not absent.size:
        return 0
    if absent.size == 1:
        return int(absent[0])  # one shingle, or a text of one: its tokens count once
    absent = _filled(absent)
    tokens = absent.size + size - 1
    present = np.concatenate([[0], np.cumsum(~absent)])
    first = np.maximum(np.arange(tokens) - size + 1, 0)  # the shingles that hold token i
    last = np.minimum(np.arange(tokens), absent.size - 1)
    new = present[last + 1] - present[first] == 0
    edges = np.flatnonzero(np.diff(np.concatenate([[False], new, [False]]).astype(np.int8)))
    runs = edges[1::2] - edges[::2]  # the lengths of the runs of new tokens
    return int(runs[runs > REWORDING].sum())


def _filled(absent: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """The shingles' absence with each lone present shingle between two absent ones taken as
    absent: in a run of new words, one shingle whose bits other shingles set by chance would
    hide `size` words; two changes so close that only one old shingle lies between them are rare."""
    filled: npt.NDArray[np.bool_] = absent.copy()
    filled[1:-1] |= absent[:-2] & absent[2:]
    return filled


@cache
def _seen_share(size: int, absent: float, run: int = 400) -> float:
    """The expected share of a run of `run` new tokens seen new (as _run_cdf's X)."""
    states: dict[tuple[bool, bool, int], float] = {(False, False, 0): 1.0}
    shingles, seen = run + size - 1, 0.0
    for j in range(shingles + 1):
        after: dict[tuple[bool, bool, int], float] = {}
        outcomes = ((True, absent), (False, 1.0 - absent)) if j < shingles else ((False, 1.0),)
        for (before, last, streak), p in states.items():
            for now, q in outcomes:
                streak_ = 0
                if j > 0 and (last or (before and now)):
                    streak_ = min(streak + 1, size)
                    if streak_ == size and j - 1 >= size - 1:
                        seen += p * q
                key = (last, now, streak_)
                after[key] = after.get(key, 0.0) + p * q
        states = after
    return seen / run


@cache
def _run_cdf(seen: int, run: int, size: int, absent: float) -> float:
    """P(X <= seen) for X the tokens seen new (as _new_tokens sees them) of a run of `run` new
    tokens amid old ones, when each of the run's run + size - 1 shingles is seen absent with
    probability `absent`, alone, and the old shingles on either side are seen present."""
    # state: (shingle j-2 seen absent, shingle j-1 seen absent, absent shingles in a row up to
    # j-2 after filling, capped at size, new tokens in a row, capped past REWORDING, tokens
    # counted) -> probability
    states: dict[tuple[bool, bool, int, int, int], float] = {(False, False, 0, 0, 0): 1.0}
    shingles = run + size - 1
    for j in range(shingles + 1):  # at j, shingle j - 1 is settled (shingle `shingles`: old, present)
        after: dict[tuple[bool, bool, int, int, int], float] = {}
        outcomes = ((True, absent), (False, 1.0 - absent)) if j < shingles else ((False, 1.0),)
        for (before, last, streak, row, count), p in states.items():
            for now, q in outcomes:
                if q <= 0.0:
                    continue
                key = (last, now, streak, row, count)
                if j > 0:
                    settled = last or (before and now)  # shingle j - 1 after filling
                    streak_ = min(streak + 1, size) if settled else 0
                    row_, count_ = row, count
                    if j - 1 >= size - 1 and streak_ < size:  # token j - size is settled, not new
                        row_ = 0
                    elif j - 1 >= size - 1:  # new: once its run is long enough, the run counts
                        row_ = min(row + 1, REWORDING + 1)
                        count_ += REWORDING + 1 if row == REWORDING else int(row > REWORDING)
                    if count_ > seen:
                        continue
                    key = (last, now, streak_, row_, count_)
                after[key] = after.get(key, 0.0) + p * q
        states = after
    return math.fsum(states.values())


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
