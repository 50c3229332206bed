"""Which values of a fingerprint's parts a lookup probes to find every fingerprint within a radius.

Multi-index hashing (Norouzi, Punjani and Fleet, CVPR 2012): cut the 64 bits into m parts.
With radius r = m*s + a (0 <= a < m), a fingerprint that differs from the query by more than
s bits in each of the first a+1 parts and by more than s-1 bits in each of the others is at
least (a+1)(s+1) + (m-a-1)s = r+1 bits away. So every fingerprint within r agrees with the
query within s bits on one of the first a+1 parts, or within s-1 bits on one of the others,
and probing each part at every value within its tolerance finds it. A tolerance of -1 means
the part is not probed at all (r < m - 1: fewer parts suffice).

Four 16-bit blocks: 1 probe at radius 0, r+1 up to radius 3 (each block exact), then 16 more
for each block allowed one bit off: 20 at radius 4, 36 at 5, 52 at 6, 68 at 7; at 8 the first
block is allowed two bits off (137 values) and the others one: 188.
Two 32-bit halves: 66 probes at radius 3, 562 at 4, 1,058 at 5.
"""

from __future__ import annotations

from functools import cache
from itertools import combinations
from math import comb

MAX_BLOCKS_RADIUS = 8  # beyond, two blocks would be probed two bits off
MAX_HALVES_RADIUS = 5  # two bits off in each 32-bit half (529 values a half)


@cache
def tolerances(radius: int, parts: int) -> tuple[int, ...]:
    """Per part, how many bits it may differ from the query's and still hold a fingerprint
    within `radius` that no other part's probes find (-1: the part needs no probe)."""
    if radius < 0 or parts < 1:
        raise ValueError(f"radius must be >= 0 and parts >= 1; got radius={radius!r}, parts={parts!r}")
    s, a = divmod(radius, parts)
    return tuple(s if i <= a else s - 1 for i in range(parts))


def variants(value: int, width: int, tolerance: int) -> list[int]:
    """`value` and every `width`-bit value within `tolerance` bits of it, nearest first."""
    return [value ^ mask for mask in masks(width, tolerance)]


@cache
def masks(width: int, tolerance: int) -> tuple[int, ...]:
    """Every `width`-bit mask of at most `tolerance` bits set, fewest first."""
    return tuple(sum(1 << bit for bit in bits) for k in range(tolerance + 1) for bits in combinations(range(width), k))


def probe_count(radius: int, parts: int, width: int) -> int:
    """How many values a lookup at `radius` probes over `parts` parts of `width` bits."""
    return sum(comb(width, k) for t in tolerances(radius, parts) for k in range(t + 1))


def part_probes(parts: tuple[int, ...], width: int, radius: int) -> list[list[int]]:
    """Per part of a fingerprint (each `width` bits), the values a lookup at `radius` probes."""
    return [variants(value, width, t) for value, t in zip(parts, tolerances(radius, len(parts)))]
