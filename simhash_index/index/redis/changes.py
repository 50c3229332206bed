"""The change stream: what a writer reads to follow the stored pages, and to tell whether a
write it decided still holds.

Every script call that changes the stored pages (store, update, forget, prune, supersede)
appends one entry a page that came or went to the stream `P changes`, in the same call:
its page id, its fingerprint when near-matchable, its key's hash (codec.key_hash) and its text
hash. A writer stands at a position in the stream (the id of the last entry it read); the
stream keeps about KEEP entries, and `floor` in `P meta` names the first one its last trim kept,
so that a writer before it knows to read the stored fingerprints again. `epoch` in `P meta` changes when
the index is emptied (reset): every writer reads them again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ...fingerprinting.fingerprinter import Signature
from .. import chunk
from .codec import hex_or_empty, key_hash, text_of

KEEP = 200_000  # entries the stream keeps (at least); a writer further behind reads every fingerprint again
FOLLOW_COUNT = 1000  # entries read at a time
BEHIND = 100_000  # more new entries than this at a catch-up: reading every fingerprint again is as cheap
START = "0-0"  # the position before the first entry

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Changes:
    """What entries of the stream say: the near-matchable fingerprints that came and their page
    ids, how many went, and what all of them touch (key hashes, text hashes, fingerprints)."""

    came: U64 = field(default_factory=lambda: np.empty(0, np.uint64))
    ids: I64 = field(default_factory=lambda: np.empty(0, np.int64))
    went: int = 0
    keys: frozenset[str] = frozenset()
    texts: frozenset[str] = frozenset()
    fingerprints: U64 = field(default_factory=lambda: np.empty(0, np.uint64))
    position: str | None = None  # the id of the last entry; None when there was none


def parse(said: Sequence[Any]) -> Changes:
    """Changes from what the script says of entries (script.lua's `reply`): the last entry's
    id, the ids and fingerprints of those that came, how many went, their key hashes, text
    hashes and fingerprints (16 hex digits each, run together; the ids decimal)."""
    last, came_ids, came_fps, went, keys, texts, fingerprints = said
    return Changes(
        _hex_values(came_fps),
        np.array(came_ids.split(), np.int64),
        int(went),
        frozenset(_split16(keys)),
        frozenset(_split16(texts)),
        _hex_values(fingerprints),
        None if not last else text_of(last),
    )


def _hex_values(run: bytes) -> U64:
    return np.frombuffer(bytes.fromhex(run.decode("ascii")), ">u8").astype(np.uint64)


def _split16(run: bytes) -> list[str]:
    text = run.decode("ascii")
    return [text[at : at + 16] for at in range(0, len(text), 16)]


def touches(changes: Changes, pages: Sequence[tuple[str, Signature]], radius: int) -> bool:
    """Whether pages that came or went touch these pages (chunk.touches)."""
    return chunk.touches(
        pages, changes.keys, changes.texts, changes.fingerprints, radius, key_of=key_hash, text_of=hex_or_empty
    )


def position_after(a: str, b: str) -> bool:
    """Whether stream position `a` comes after `b`."""
    return tuple(map(int, a.split("-"))) > tuple(map(int, b.split("-")))
