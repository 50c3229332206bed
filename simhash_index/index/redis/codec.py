"""How the Redis index writes pages and log entries as Redis values, and reads them back."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from ...fingerprinting.fingerprinter import Signature
from ..records import Duplicate, Match

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


def page_args(key: str, signature: Signature) -> tuple[bytes, str, str, bytes, str, str, str, str]:
    """A page as the script takes it: key, fingerprint, text_hash, sketch, exact_only, words,
    dated, modified (microseconds; '' for not known)."""
    return (
        key.encode("utf-8"),
        hex_or_empty(signature.simhash),
        hex_or_empty(signature.text_hash),
        signature.sketch or b"",
        "1" if signature.exact_only else "0",
        "" if signature.words is None else str(signature.words),
        "" if signature.dated is None else str(micros(signature.dated)),
        "" if signature.modified is None else str(micros(signature.modified)),
    )


def match_of(answer: Any) -> Match | None:
    """A Match from the script's answer for one page: false, or {key, fingerprint, distance,
    exact, similarity} and, when the page superseded it, the reason."""
    if not answer:
        return None
    key, stored, distance, exact, score, *reason = answer
    return Match(
        text_of(key),
        int(stored, 16) if stored else None,
        int(distance),
        exact=exact == 1,
        similarity=float(score) if score else None,
        superseded=text_of(reason[0]) if reason else None,
    )


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
    )


def stored_signature(doc: dict[bytes, bytes], sketch: bytes | None) -> Signature:
    fingerprint, text_hash = doc.get(b"fingerprint"), doc.get(b"text_hash")
    words, dated, modified = doc.get(b"words"), doc.get(b"dated"), doc.get(b"modified")
    return Signature(
        int(fingerprint, 16) if fingerprint else None,
        int(text_hash, 16) if text_hash else None,
        sketch,
        exact_only=doc.get(b"exact_only") == b"1",
        words=int(words) if words else None,
        dated=moment(dated) if dated else None,
        modified=moment(modified) if modified else None,
    )
