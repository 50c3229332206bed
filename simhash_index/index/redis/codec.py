"""How the Redis index writes pages, log entries and change entries as Redis values, and reads them back.

A page's Signature is stored field by field (FIELDS, one line a field): in its hash `P doc:<id>`,
or, for a value that can be longer than Redis's compact hashes hold (64 bytes), under a key of
its own, `P <field>:<id>` (BLOBS). Every field a Signature has must be in FIELDS
(tests/test_redis_index.py holds them together).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from ...fingerprinting.fingerprinter import Signature
from ..records import Duplicate, StoredPage

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def hex_or_empty(value: int | None) -> str:
    return "" if value is None else f"{value:016x}"


def text_of(value: bytes) -> str:
    return value.decode("utf-8", "surrogatepass")


def micros(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)


def moment(micros: bytes | int) -> datetime:
    return _EPOCH + timedelta(microseconds=int(micros))


def glob_escape(text: str) -> str:
    """A prefix as a SCAN pattern matches it literally."""
    return "".join("\\" + char if char in "*?[]\\" else char for char in text)


def key_hash(key: str) -> str:
    """A key as change entries name it: the first 16 hex digits of its SHA-1 (the script's redis.sha1hex)."""
    return hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(frozen=True)
class Field:
    """A Signature field as a page's hash (or, `blob`, a key of its own) stores it; None (and
    False) are not stored."""

    attribute: str  # of Signature
    name: str  # the hash field, or the middle of the blob's key
    encode: Callable[[Any], bytes | str]
    decode: Callable[[bytes], Any]
    blob: bool = False


FIELDS = (
    Field("simhash", "fingerprint", hex_or_empty, lambda value: int(value, 16)),
    Field("text_hash", "text_hash", hex_or_empty, lambda value: int(value, 16)),
    Field("exact_only", "exact_only", lambda _: "1", lambda value: value == b"1"),
    Field("words", "words", str, int),
    Field("dated", "dated", lambda value: str(micros(value)), moment),
    Field("modified", "modified", lambda value: str(micros(value)), moment),
    Field("sketch", "sketch", bytes, bytes, blob=True),
    Field("shingles", "shingles", str, int),
    Field("bloom", "bloom", bytes, bytes, blob=True),
)
IN_HASH = tuple(field for field in FIELDS if not field.blob)
BLOBS = tuple(field for field in FIELDS if field.blob)
BLOB_NAMES = " ".join(field.name for field in BLOBS)  # as every script call is told them


def page_args(key: str, signature: Signature) -> list[bytes | str]:
    """A page as the script takes it: its key, how many hash fields, those fields' names and
    values, then each blob's value in BLOBS order ('' for none)."""
    fields: list[bytes | str] = []
    for field in IN_HASH:
        value = getattr(signature, field.attribute)
        if value is not None and value is not False:
            fields += [field.name, field.encode(value)]
    blobs = [b"" if (value := getattr(signature, field.attribute)) is None else field.encode(value) for field in BLOBS]
    return [key.encode("utf-8"), str(len(fields) // 2), *fields, *blobs]


def stored_signature(doc: dict[bytes, bytes], blobs: Sequence[bytes | None]) -> Signature:
    """The Signature of a page's hash and its blobs (in BLOBS order; None for a missing one)."""
    values: dict[str, Any] = {}
    for field in IN_HASH:
        found = doc.get(field.name.encode())
        if found:
            values[field.attribute] = field.decode(found)
    for field, blob in zip(BLOBS, blobs):
        if blob is not None:
            values[field.attribute] = field.decode(blob)
    return Signature(values.pop("simhash", None), values.pop("text_hash", None), **values)


def stored_page(page_id: int, doc: dict[bytes, bytes], blobs: Sequence[bytes | None]) -> StoredPage:
    return StoredPage(text_of(doc[b"key"]), stored_signature(doc, blobs), page_id, moment(doc[b"stored_at"]))


def duplicate_of_entry(entry: dict[bytes, bytes]) -> Duplicate:
    fingerprint, score, radius = entry.get(b"fingerprint"), entry.get(b"similarity"), entry.get(b"radius")
    return Duplicate(
        text_of(entry[b"key"]),
        text_of(entry[b"duplicate_of"]),
        int(entry[b"distance"]),
        entry[b"exact"] == b"1",
        moment(entry[b"seen_at"]),
        int(fingerprint, 16) if fingerprint else None,
        float(score) if score else None,
        int(radius) if radius else None,
        text_of(entry[b"superseded"]) if b"superseded" in entry else None,
        int(entry[b"added"]) if b"added" in entry else None,
    )


def similarity_text(value: float | None) -> str:
    return "" if value is None else repr(float(value))
