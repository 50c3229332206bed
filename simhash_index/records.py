"""What every index backend shares: its limits, its answers, keys and argument checks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import xxhash

from .fingerprint import Signature
from .simhash import to_signed

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


def key_hash(key: str) -> int:
    """Signed 64-bit hash of a key: the unique column (URLs can be too long to index)."""
    return to_signed(xxhash.xxh64_intdigest(key.encode("utf-8", "surrogatepass")))


def _signature(fingerprint: Fingerprint, text_hash: int | None, sketch: bytes | None) -> Signature:
    if isinstance(fingerprint, Signature):
        return fingerprint
    if fingerprint is None and text_hash is None:
        raise ValueError("fingerprint is None and no text_hash given: a page needs one of them to be stored")
    if fingerprint is not None:
        to_signed(fingerprint)  # validates the range
    return Signature(fingerprint, text_hash, sketch)


def as_utc(moment: datetime) -> datetime:
    """A timestamp read back from the DB, as an aware UTC datetime (SQLite drops the zone)."""
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)
