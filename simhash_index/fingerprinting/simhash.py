"""Charikar's simhash over weighted features, and the bit helpers around it.

Pure functions: no I/O, no global state beyond a per-process hash cache.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Union

import numpy as np
import xxhash

Features = Union[Mapping[str, float], Iterable[tuple[str, float]], Iterable[str]]
HashFunc = Callable[[str], int]

SUPPORTED_BITS = (32, 64, 128)
BLOCKS = 4
BLOCK_BITS = 16
_MASK64 = (1 << 64) - 1
_HEX = re.compile(r"[0-9a-f]{1,16}")


_CACHE_SIZE = 1 << 18  # features; about 35 MB when full
_TOKEN_LIST = 1 << 16  # longer token lists are counted first: a smaller bit matrix


class _Digests(dict):
    """feature -> its xxHash64 as 8 little-endian bytes, computed on first use.

    Emptied when full rather than evicted one by one: eviction bookkeeping
    would cost more per lookup than the rare refill.
    """

    __slots__ = ()

    def __missing__(self, feature: str) -> bytes:
        if len(self) >= _CACHE_SIZE:
            self.clear()
        digest = xxhash.xxh64_intdigest(feature.encode("utf-8")).to_bytes(8, "little")
        self[feature] = digest
        return digest


_DIGESTS = _Digests()


def xxh64(feature: str) -> int:
    """Stable unsigned 64-bit hash of a feature (xxHash64, seed 0, UTF-8)."""
    return int.from_bytes(_DIGESTS[feature], "little")


def _xxh32(feature: str) -> int:
    return xxhash.xxh32_intdigest(feature.encode("utf-8"))


def _xxh128(feature: str) -> int:
    return xxhash.xxh3_128_intdigest(feature.encode("utf-8"))


DEFAULT_HASHES: dict[int, HashFunc] = {32: _xxh32, 64: xxh64, 128: _xxh128}


def _weighted(features: Features) -> tuple[Collection[str], np.ndarray]:
    """Features as names and a parallel float64 array of weights, zero weights dropped."""
    if isinstance(features, Mapping):
        names: Collection[str] = features
        values: Iterable = features.values()
    else:
        items = features if isinstance(features, list) else list(features)
        if items and isinstance(items[0], str):
            names = Counter(items)  # counts are positive: nothing to drop
            return names, np.fromiter(names.values(), dtype=np.float64, count=len(names))
        names = [name for name, _ in items]
        values = [weight for _, weight in items]
    weights = np.fromiter(values, dtype=np.float64, count=len(names))
    if not weights.all():
        keep = weights != 0
        names = [name for name, kept in zip(names, keep.tolist()) if kept]
        weights = weights[keep]
    return names, weights


def _bit_matrix(hashes: list[int] | bytes, bits: int) -> np.ndarray:
    """Row i holds the low `bits` bits of hashes[i], least significant first.

    `hashes` may also be 64-bit hashes already packed, 8 little-endian bytes each.
    """
    if isinstance(hashes, bytes):
        raw, width = np.frombuffer(hashes, dtype=np.uint8), 8
    elif bits == 64:
        raw, width = np.array([h & _MASK64 for h in hashes], dtype="<u8").view(np.uint8), 8
    else:
        width = (bits + 7) // 8
        mask = (1 << bits) - 1
        raw = np.frombuffer(b"".join((h & mask).to_bytes(width, "little") for h in hashes), dtype=np.uint8)
    matrix = np.unpackbits(raw, bitorder="little").reshape(-1, width * 8)
    return matrix if width * 8 == bits else matrix[:, :bits]


def simhash(features: Features, *, bits: int = 64, hashfunc: HashFunc | None = None) -> int:
    """The simhash of weighted features.

    `features` is a mapping feature -> weight, an iterable of (feature, weight)
    pairs, or an iterable of strings (each occurrence weighs 1). Bit i is 1 when
    the weights of features whose hash has bit i set outweigh the others.

    >>> simhash({"a": 1}, bits=3, hashfunc=lambda f: 0b101)
    5
    """
    if hashfunc is None:
        if bits not in DEFAULT_HASHES:
            raise ValueError(f"bits must be one of {SUPPORTED_BITS} with the default hash; got {bits!r}")
        hashfunc = DEFAULT_HASHES[bits]
    elif bits < 1:
        raise ValueError(f"bits must be positive; got {bits!r}")
    default = hashfunc is xxh64 and bits == 64  # cached digests, no int round trip
    if default and isinstance(features, list) and 0 < len(features) <= _TOKEN_LIST and isinstance(features[0], str):
        # A page's token list: every occurrence votes 1. One float32 matrix-vector product
        # over all occurrences (exact: far below 2**24) is cheaper than a Counter first.
        matrix = _bit_matrix(b"".join(map(_DIGESTS.__getitem__, features)), 64)
        ones = np.ones(len(features), dtype=np.float32) @ matrix.astype(np.float32)
        positive = 2 * ones > len(features)
    else:
        names, w = _weighted(features)
        if not len(names):
            return 0
        if default:
            matrix = _bit_matrix(b"".join(map(_DIGESTS.__getitem__, names)), 64)
        else:
            matrix = _bit_matrix([hashfunc(name) for name in names], bits)
        ones = w @ matrix  # weight voting for 1, per bit
        positive = 2 * ones > w.sum()  # the ones outweigh the zeros
    return int.from_bytes(np.packbits(positive, bitorder="little").tobytes(), "little")


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two fingerprints."""
    return (a ^ b).bit_count()


def blocks(fingerprint: int) -> tuple[int, int, int, int]:
    """The four 16-bit blocks of a 64-bit fingerprint, lowest first.

    Two fingerprints within Hamming distance 3 agree on at least one block.
    """
    return (
        fingerprint & 0xFFFF,
        (fingerprint >> 16) & 0xFFFF,
        (fingerprint >> 32) & 0xFFFF,
        (fingerprint >> 48) & 0xFFFF,
    )


def to_signed(value: int) -> int:
    """An unsigned 64-bit value as the signed integer a BIGINT column holds."""
    if not 0 <= value <= _MASK64:
        raise ValueError(f"fingerprint must be an unsigned 64-bit integer; got {value!r}")
    return value - (1 << 64) if value >= 1 << 63 else value


def to_unsigned(value: int) -> int:
    """The inverse of `to_signed`."""
    if not -(1 << 63) <= value <= _MASK64:
        raise ValueError(f"value must fit in 64 bits (signed or unsigned); got {value!r}")
    return value & _MASK64


def to_hex(fingerprint: int) -> str:
    """A 64-bit fingerprint as 16 hex digits."""
    if not 0 <= fingerprint <= _MASK64:
        raise ValueError(f"fingerprint must be an unsigned 64-bit integer; got {fingerprint!r}")
    return f"{fingerprint:016x}"


def from_hex(text: str) -> int:
    """Parse 1 to 16 hex digits (an optional 0x prefix) as a 64-bit fingerprint."""
    digits = text.strip().lower().removeprefix("0x")
    if not _HEX.fullmatch(digits):
        raise ValueError(f"a simhash is 1 to 16 hex digits; got {text!r}")
    return int(digits, 16)
