"""Charikar's simhash over weighted features, and fingerprints as hex (bit helpers: bits.py).

A feature is a string (hashed as UTF-8), bytes, or an integer dimension of a sparse vector
(hashed as its 8 little-endian bytes, two's complement): each feature's hash stands for a
random hyperplane, which is the cheap alternative to drawing f random hyperplanes.

Pure functions: no I/O, no global state beyond a per-process hash cache.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

from .bits import MASK64, hamming

Feature = str | bytes | int
Features = Mapping[Any, float] | Iterable[tuple[Any, float]] | Iterable[str]
HashFunc = Callable[[Any], int]
Weighted = tuple[Collection[Any], npt.NDArray[np.float64]]  # features and their weights, in one order

SUPPORTED_BITS = (32, 64, 128)
_HEX = re.compile(r"[0-9a-f]{1,16}")


_CACHE_SIZE = 1 << 18  # features; about 35 MB when full
_TOKEN_LIST = 1 << 16  # longer token lists are counted first: a smaller bit matrix


class _Digests(dict[str, bytes]):
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


def feature_bytes(feature: Feature) -> bytes:
    """What the default hashes read of a feature: UTF-8 of a string, bytes as they are, an
    integer as 8 little-endian bytes (-2**63 <= feature < 2**64; negative ones in two's complement)."""
    if isinstance(feature, str):
        return feature.encode("utf-8")
    if isinstance(feature, (bytes, bytearray, memoryview)):
        return bytes(feature)
    if isinstance(feature, (int, np.integer)) and not isinstance(feature, bool):
        value = int(feature)
        if not -(1 << 63) <= value <= MASK64:
            raise ValueError(f"an integer feature (a vector dimension) must fit in 64 bits; got {value!r}")
        return (value & MASK64).to_bytes(8, "little")
    raise TypeError(
        f"a feature is a str, bytes or an int (a vector dimension); got {type(feature).__name__}: {feature!r}"
    )


def xxh64(feature: Feature) -> int:
    """Stable unsigned 64-bit hash of a feature (xxHash64, seed 0, of feature_bytes)."""
    if isinstance(feature, str):
        return int.from_bytes(_DIGESTS[feature], "little")
    return xxhash.xxh64_intdigest(feature_bytes(feature))


def _xxh32(feature: Feature) -> int:
    return xxhash.xxh32_intdigest(feature_bytes(feature))


def _xxh128(feature: Feature) -> int:
    return xxhash.xxh3_128_intdigest(feature_bytes(feature))


_P1, _P2, _P3 = np.uint64(0x9E3779B185EBCA87), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9)
_P4, _P5 = np.uint64(0x85EBCA77C2B2AE63), np.uint64(0x27D4EB2F165667C5)


def _rotl(x: npt.NDArray[np.uint64], r: int) -> npt.NDArray[np.uint64]:
    rotated: npt.NDArray[np.uint64] = (x << np.uint64(r)) | (x >> np.uint64(64 - r))
    return rotated


def xxh64_dimensions(dimensions: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """xxHash64 (seed 0) of each value's 8 little-endian bytes, for a whole array at once:
    equal to xxh64(int(d)) for every d. XXH64 of one 8-byte lane, written out."""
    with np.errstate(over="ignore"):
        lane = _rotl(dimensions * _P2, 31) * _P1
        h: npt.NDArray[np.uint64] = np.full(dimensions.shape, _P5 + np.uint64(8), dtype=np.uint64) ^ lane
        h = _rotl(h, 27) * _P1 + _P4
        h ^= h >> np.uint64(33)
        h *= _P2
        h ^= h >> np.uint64(29)
        h *= _P3
        h ^= h >> np.uint64(32)
    return h


def _digests(names: Collection[Any]) -> bytes:
    """The 64-bit hashes of the features, packed 8 little-endian bytes each."""
    try:
        return b"".join(map(_DIGESTS.__getitem__, names))  # strings: the cached path
    except AttributeError:  # a feature with no .encode: bytes or an integer dimension
        pass
    return b"".join(_DIGESTS[f] if isinstance(f, str) else xxh64(f).to_bytes(8, "little") for f in names)


DEFAULT_HASHES: dict[int, HashFunc] = {32: _xxh32, 64: xxh64, 128: _xxh128}


def _weighted(features: Features) -> Weighted:
    """Features as names and a parallel float64 array of weights, zero weights dropped."""
    if isinstance(features, Mapping):
        names: Collection[Any] = features
        values: Iterable[float] = features.values()
    else:
        items = features if isinstance(features, list) else list(features)
        if items and isinstance(items[0], (str, bytes, int, np.integer)):
            names = Counter(items)  # counts are positive: nothing to drop
            return names, np.fromiter(names.values(), dtype=np.float64, count=len(names))
        if items and not (isinstance(items[0], tuple) and len(items[0]) == 2):
            raise TypeError(
                "features are a mapping, (feature, weight) pairs or strings; "
                f"got an iterable of {type(items[0]).__name__}"
            )
        names = [name for name, _ in items]
        values = [weight for _, weight in items]
    return _nonzero(names, np.fromiter(values, dtype=np.float64, count=len(names)))


def _nonzero(names: Collection[Any], weights: npt.NDArray[np.float64]) -> Weighted:
    """The features whose weight is not zero; ValueError for a weight that is not finite."""
    if not np.isfinite(weights).all():
        raise ValueError("feature weights must be finite numbers; got NaN or infinity")
    if not weights.all():
        keep = weights != 0
        names = [name for name, kept in zip(names, keep.tolist()) if kept]
        weights = weights[keep]
    return names, weights


def _bit_matrix(hashes: list[int] | bytes, bits: int) -> npt.NDArray[np.uint8]:
    """Row i holds the low `bits` bits of hashes[i], least significant first.

    `hashes` may also be 64-bit hashes already packed, 8 little-endian bytes each.
    """
    if isinstance(hashes, bytes):
        raw, width = np.frombuffer(hashes, dtype=np.uint8), 8
    elif bits == 64:
        raw, width = np.array([h & MASK64 for h in hashes], dtype="<u8").view(np.uint8), 8
    else:
        width = (bits + 7) // 8
        mask = (1 << bits) - 1
        raw = np.frombuffer(b"".join((h & mask).to_bytes(width, "little") for h in hashes), dtype=np.uint8)
    matrix = np.unpackbits(raw, bitorder="little").reshape(-1, width * 8)
    return matrix if width * 8 == bits else matrix[:, :bits]


def _hash_function(hashfunc: HashFunc | None, bits: int) -> HashFunc:
    """The hash given, or the default one for `bits`; a message naming the argument otherwise."""
    if hashfunc is None:
        if bits not in DEFAULT_HASHES:
            raise ValueError(f"bits must be one of {SUPPORTED_BITS} with the default hash; got {bits!r}")
        return DEFAULT_HASHES[bits]
    if bits < 1:
        raise ValueError(f"bits must be positive; got {bits!r}")
    return hashfunc


def simhash(features: Features, *, bits: int = 64, hashfunc: HashFunc | None = None) -> int:
    """The simhash of weighted features.

    `features` is a mapping feature -> weight, an iterable of (feature, weight)
    pairs, or an iterable of strings (each occurrence weighs 1). A feature is a string,
    bytes or an int (a dimension of a sparse vector: simhash({12345: 0.5, 987: -1.2})).
    Bit i is 1 when the weights of features whose hash has bit i set outweigh the others:
    the sign of the vector's dot product with hyperplane i (weights may be negative).

    >>> simhash({"a": 1}, bits=3, hashfunc=lambda f: 0b101)
    5
    """
    hashfunc = _hash_function(hashfunc, bits)
    default = hashfunc is xxh64 and bits == 64  # cached digests, no int round trip
    if default and isinstance(features, list) and 0 < len(features) <= _TOKEN_LIST and isinstance(features[0], str):
        # A page's token list: every occurrence votes 1. One float32 matrix-vector product
        # over all occurrences (exact: far below 2**24) is cheaper than a Counter first.
        matrix = _bit_matrix(b"".join(map(_DIGESTS.__getitem__, features)), 64)
        ones = np.ones(len(features), dtype=np.float32) @ matrix.astype(np.float32)
        positive = 2 * ones > len(features)
        return int.from_bytes(np.packbits(positive, bitorder="little").tobytes(), "little")
    names, w = _weighted(features)
    if not len(names):
        return 0
    if default:
        return _default_signs(names, w)
    return _signs(w, _bit_matrix([hashfunc(name) for name in names], bits))


def simhash_weighted(names: Collection[str], weights: npt.NDArray[np.float64]) -> int:
    """simhash(dict(zip(names, weights))) for distinct string features and their weights as an
    array, with the default 64-bit hash: the mapping is not built."""
    return _default_signs(*_nonzero(names, weights))


def _default_signs(names: Collection[Any], weights: npt.NDArray[np.float64]) -> int:
    return _signs(weights, _bit_matrix(_digests(names), 64)) if len(names) else 0


def _signs(weights: npt.NDArray[np.float64], matrix: npt.NDArray[np.uint8]) -> int:
    """Bit i set when the weights of the rows with bit i outweigh the others."""
    ones = weights @ matrix  # weight voting for 1, per bit
    positive = 2 * ones > weights.sum()  # sum of w * (+1 or -1) > 0
    return int.from_bytes(np.packbits(positive, bitorder="little").tobytes(), "little")


def simhash_sparse(
    indices: npt.ArrayLike | Any,
    values: npt.ArrayLike | None = None,
    *,
    bits: int = 64,
    hashfunc: HashFunc | None = None,
) -> int:
    """The simhash of a sparse vector: integer dimensions and their values, as arrays.

    Equal to simhash(dict(zip(indices, values))) (duplicate indices add up), with the
    64-bit hashes computed for the whole array at once. `indices` may instead be a
    scipy.sparse row (shape (1, n)), with `values` left out.

    >>> simhash_sparse([12345, 987654321], [0.5, 1.2]) == simhash({12345: 0.5, 987654321: 1.2})
    True
    """
    if values is None:
        indices, values = _sparse_row(indices)
    dims = np.asarray(indices)
    weights = np.asarray(values, dtype=np.float64)
    if dims.ndim != 1 or dims.shape != weights.shape:
        raise ValueError(
            f"indices and values must be 1-D arrays of one length; got shapes {dims.shape} and {weights.shape}"
        )
    if dims.size and dims.dtype.kind not in "iu":
        raise ValueError(f"indices must be integers (vector dimensions); got dtype {dims.dtype}")
    if not np.isfinite(weights).all():
        raise ValueError("values must be finite numbers; got NaN or infinity")
    if not dims.size:
        return 0
    if hashfunc is None and bits == 64:
        # two's complement, as feature_bytes does for a negative int
        hashes = xxh64_dimensions(
            dims.astype(np.int64).view(np.uint64) if dims.dtype.kind == "i" else dims.astype(np.uint64)
        )
        return _signs(weights, _bit_matrix(hashes.astype("<u8").tobytes(), 64))
    hashfunc = _hash_function(hashfunc, bits)
    return _signs(weights, _bit_matrix([hashfunc(int(d)) for d in dims.tolist()], bits))


def _sparse_row(row: Any) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """Column indices and values of a scipy.sparse row (anything with .tocoo())."""
    if not hasattr(row, "tocoo"):
        raise TypeError(f"give indices and values, or a scipy.sparse row; got {type(row).__name__} and no values")
    coo = row.tocoo()
    if len(coo.shape) == 2 and coo.shape[0] != 1:
        raise ValueError(f"a sparse row has shape (1, n); got {coo.shape}: pass one row, e.g. matrix[i]")
    return np.asarray(coo.coords[-1]), np.asarray(coo.data)


def bit_similarity(a: int, b: int, bits: int = 64) -> float:
    """The share of bits two fingerprints agree on: 1 - hamming(a, b) / bits.

    Not the sketch's estimated Jaccard similarity (sketch.estimate_jaccard).

    >>> bit_similarity(0b1011, 0b1001, bits=4)
    0.75
    """
    if not isinstance(bits, int) or bits < 1:
        raise ValueError(f"bits must be a positive integer; got {bits!r}")
    for name, value in (("a", a), ("b", b)):
        if not 0 <= value < 1 << bits:
            raise ValueError(f"{name} must be an unsigned {bits}-bit fingerprint; got {value!r}")
    return 1 - hamming(a, b) / bits


def to_hex(fingerprint: int) -> str:
    """A 64-bit fingerprint as 16 hex digits."""
    if not 0 <= fingerprint <= MASK64:
        raise ValueError(f"fingerprint must be an unsigned 64-bit integer; got {fingerprint!r}")
    return f"{fingerprint:016x}"


def from_hex(text: str) -> int:
    """Parse 1 to 16 hex digits (an optional 0x prefix) as a 64-bit fingerprint."""
    digits = text.strip().lower().removeprefix("0x")
    if not _HEX.fullmatch(digits):
        raise ValueError(f"a simhash is 1 to 16 hex digits; got {text!r}")
    return int(digits, 16)
