"""What every index backend shares: its limits, its answers, keys and argument checks."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from datetime import datetime, timezone

import xxhash

from .fingerprint import Signature
from .simhash import to_signed

MASK64 = (1 << 64) - 1

MAX_SUPPORTED_DISTANCE = 3  # halves probed one bit off: pigeonhole finds every match within 3 bits
DEFAULT_MIN_SIMILARITY = 0.88  # estimated Jaccard; measured on the eval corpus (README, Accuracy)

Fingerprint = int | Signature | None


@dataclass(frozen=True)
class Match:
    """A stored page near a query: its key, fingerprint and Hamming distance."""

    key: str
    fingerprint: int | None
    distance: int
    exact: bool = False
    similarity: float | None = None


@dataclass(frozen=True)
class Duplicate:
    """A page dropped as a duplicate of a stored one."""

    key: str
    duplicate_of: str
    distance: int
    exact: bool
    seen_at: datetime


def check_policy(max_distance: int, min_similarity: float) -> None:
    """Refuse a max_distance or min_similarity no index backend supports."""
    if not isinstance(max_distance, int) or not 0 <= max_distance <= MAX_SUPPORTED_DISTANCE:
        raise ValueError(
            f"max_distance must be an integer from 0 to {MAX_SUPPORTED_DISTANCE} "
            f"(the index's lookups find every match within 3 bits); got {max_distance!r}"
        )
    if not 0.0 <= min_similarity <= 1.0:
        raise ValueError(f"min_similarity must be between 0 and 1; got {min_similarity!r}")


def check_key(key: object) -> str:
    """A page key (URL) every backend can store: text without NUL characters or lone
    surrogates (PostgreSQL and SQLite's driver refuse both); ValueError naming it otherwise."""
    if not isinstance(key, str):
        raise TypeError(f"key must be a string (the page's URL); got {type(key).__name__}")
    if "\x00" in key:
        raise ValueError(f"key {_shown(key)} holds a NUL character, which no database stores: drop or escape it")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"key {_shown(key)} holds a lone surrogate, not text: decode the URL properly") from None
    return key


def _shown(key: str) -> str:
    """A key for a message: escaped, at most 200 characters."""
    text = key.encode("unicode_escape", "backslashreplace").decode("ascii")
    return "'" + (text if len(text) <= 200 else text[:180] + "...") + "'"


def key_hash(key: str) -> int:
    """Signed 64-bit hash of a key: the unique column (URLs can be too long to index)."""
    return to_signed(xxhash.xxh64_intdigest(key.encode("utf-8", "surrogatepass")))


def as_u64(value: object, name: str = "fingerprint") -> int:
    """An unsigned 64-bit value as a plain int: any integral type (NumPy's too) is accepted;
    anything else is refused with a message naming the argument."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        hint = " (parse hex with simhash_index.simhash.from_hex)" if isinstance(value, str) else ""
        raise TypeError(f"{name} must be an unsigned 64-bit integer; got {type(value).__name__} {value!r}{hint}")
    number = operator.index(value)
    if not 0 <= number <= MASK64:
        raise ValueError(f"{name} must be an unsigned 64-bit integer; got {number!r}")
    return number


def _signature(fingerprint: object, text_hash: object, sketch: object) -> Signature:
    """What check_and_add and add were given, as a Signature of plain ints and bytes (checked)."""
    if isinstance(fingerprint, Signature):
        fingerprint, text_hash, sketch, exact_only = (
            fingerprint.simhash, fingerprint.text_hash, fingerprint.sketch, fingerprint.exact_only
        )
    else:
        exact_only = False
    if fingerprint is None and text_hash is None:
        raise ValueError("fingerprint is None and no text_hash given: a page needs one of them to be stored")
    if sketch is not None and not isinstance(sketch, (bytes, bytearray, memoryview)):
        raise TypeError(f"sketch must be bytes (Fingerprinter.signature makes it); got {type(sketch).__name__}")
    return Signature(
        None if fingerprint is None else as_u64(fingerprint),
        None if text_hash is None else as_u64(text_hash, "text_hash"),
        None if sketch is None else bytes(sketch),
        exact_only=bool(exact_only),
    )


def as_utc(moment: datetime) -> datetime:
    """A timestamp read back from the DB, as an aware UTC datetime (SQLite drops the zone)."""
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)
