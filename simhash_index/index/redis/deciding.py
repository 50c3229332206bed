"""A chunk of pages decided in the writer, by the one duplicate rule (index/rule.py).

The writer reads the stored pages the chunk could see (those stored under its keys, those with
its text hashes, and those its Held finds near its fingerprints), decides each page in order
with rule.decide (a page sees the ones decided before it in the chunk), and turns the decisions
into what the script's `write` stores: 'S' a page stored (new, or its own row updated), 'D' a
duplicate logged, 'X' a stored page superseded by the page just stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from ...fingerprinting.fingerprinter import Signature
from .. import rule
from ..base import Keyed
from ..records import Match, Policy, StoredPage
from . import reading
from .codec import hex_or_empty, page_args, similarity_text
from .following import Follower
from .server import Server

_CHUNK_ORDER = 1 << 62  # pages stored by the chunk are younger than every stored page

Ops = list[bytes | str]


@dataclass
class Decided:
    """The answers for a chunk of pages, and the script's writes that store them."""

    answers: list[Match | None] = field(default_factory=list)
    ops: Ops = field(default_factory=list)


def decide(server: Server, pages: Sequence[Keyed], follower: Follower, policy: Policy, moment: datetime) -> Decided:
    """Read what the pages could see, and decide them in order."""
    seen = Seen(server, pages, follower, policy)
    decided = Decided()
    for position, (key, signature) in enumerate(pages):
        decision = rule.decide(
            signature,
            own=seen.own(key),
            same_text=seen.same_text(signature.text_hash),
            nearby=seen.nearby(position),
            policy=policy,
            moment=moment,
            key=key,
        )
        match = decision.match
        if match is not None and not decision.supersedes:
            decided.ops += ["D", key, hex_or_empty(signature.simhash), match.key, *_evidence(match)]
        elif decision.store:
            decided.ops += ["S", *page_args(key, signature)]
            seen.add(key, signature, position)
            if decision.supersedes:
                matched = decision.matched
                assert match is not None and matched is not None  # a page that supersedes one matched it
                fingerprint = hex_or_empty(matched.signature.simhash)
                decided.ops += ["X", matched.key, key, fingerprint, *_evidence(match), match.superseded or ""]
                seen.supersede(matched.key)
        decided.answers.append(match)
    return decided


def _evidence(match: Match) -> list[str]:
    return [str(match.distance), "1" if match.exact else "0", similarity_text(match.similarity)]


class Seen:
    """The stored pages the chunk can see, read up front, and the pages it stores as it goes."""

    def __init__(self, server: Server, pages: Sequence[Keyed], follower: Follower, policy: Policy) -> None:
        keys = [key for key, _ in pages]
        texts = sorted({s.text_hash for _, s in pages if s.text_hash is not None})
        near = [s.near_simhash for _, s in pages]
        found = iter(follower.near([fp for fp in near if fp is not None], policy.max_distance))
        near_ids = [next(found) if fp is not None else [] for fp in near]
        # the oldest page with a text is its match, unless the chunk hides it (superseded, or its own
        # key updated): without a window, that one of the oldest len(pages) + 1 is enough
        oldest = reading.ALL if policy.window is not None else len(pages) + 1
        stored = reading.read(server, keys, texts, {i for ids in near_ids for i in ids}, oldest=oldest)
        read = stored.pages
        self._by_key = {key: read[i] for key, i in zip(keys, stored.own) if i in read and read[i].key == key}
        self._by_text = {
            text_hash: [read[i] for i in found_ids if i in read and read[i].signature.text_hash == text_hash]
            for text_hash, found_ids in zip(texts, stored.texts)
        }
        self._near = [[read[i] for i in found_ids if i in read] for found_ids in near_ids]
        self._keys = keys
        self._close = _within(pages, policy.max_distance)
        self._chunk: dict[str, StoredPage] = {}  # stored (or updated) by this chunk, by key
        self._position: dict[str, int] = {}  # the position in the chunk of each page it stored
        self._gone: set[str] = set()  # superseded by a page of this chunk
        self._stored = 0

    def own(self, key: str) -> StoredPage | None:
        if key in self._gone:
            return None
        return self._chunk.get(key) or self._by_key.get(key)

    def same_text(self, text_hash: int | None) -> list[StoredPage]:
        if text_hash is None:
            return []
        hidden = self._chunk.keys() | self._gone
        found = [page for page in self._by_text.get(text_hash, ()) if page.key not in hidden]
        return found + [page for page in self._chunk.values() if page.signature.text_hash == text_hash]

    def nearby(self, position: int) -> list[StoredPage]:
        """The stored pages near the chunk's page at `position`, and the pages this chunk stored
        within the radius."""
        found = [page for page in self._near[position] if page.key not in self._chunk and page.key not in self._gone]
        for other in np.flatnonzero(self._close[position]).tolist():
            key = self._keys[other]
            if self._position.get(key) == other:
                found.append(self._chunk[key])
        return found

    def add(self, key: str, signature: Signature, position: int) -> None:
        """The chunk's page at `position` is stored under `key` (a new page, or its own updated)."""
        known = self.own(key)
        if known is not None:
            order = known.order
        else:  # a new page, or one superseded before in the chunk and stored again: a new id
            self._stored += 1
            order = _CHUNK_ORDER + self._stored
        self._gone.discard(key)
        self._chunk[key] = StoredPage(key, signature, order)
        self._position[key] = position

    def supersede(self, key: str) -> None:
        """The page stored under `key` leaves what the chunk sees."""
        self._chunk.pop(key, None)
        self._position.pop(key, None)
        self._gone.add(key)


def _within(pages: Sequence[Keyed], radius: int) -> npt.NDArray[np.bool_]:
    """Which of the chunk's pages are within `radius` of which (False for pages matched by text only)."""
    fingerprints = [signature.near_simhash for _, signature in pages]
    values = np.array([0 if fp is None else fp for fp in fingerprints], np.uint64)
    matchable = np.array([fp is not None for fp in fingerprints])
    close: npt.NDArray[np.bool_] = np.bitwise_count(values[:, None] ^ values[None, :]) <= radius
    close &= matchable[:, None] & matchable[None, :]
    return close
