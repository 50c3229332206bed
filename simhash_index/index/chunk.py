"""What a chunk of pages decided together sees: the stored pages read for it up front, and the
pages it stores as it goes (a page sees those decided before it in the chunk). A backend that
decides a batch in the writer (sql/batch.py, redis/deciding.py) reads what the chunk could see,
then asks rule.decide about each page with what Chunk gives it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
import numpy.typing as npt

from ..fingerprinting.fingerprinter import Signature
from . import rule
from .base import Keyed
from .memory.near import pairs_between
from .records import Policy, StoredPage

CHUNK_ORDER = 1 << 62  # the age rank of pages stored by the chunk: younger than every stored page


@dataclass
class Nearby:
    """The stored pages near one page of a chunk, oldest first: all of them, or (`rest` not
    None) the nearest, one of which settles the page, and `rest` reads the others."""

    pages: list[StoredPage]
    rest: Callable[[], list[StoredPage]] | None = None


class Chunk:
    """The stored pages a chunk can see and the pages it stores: `by_key`, the stored pages
    under its keys; `by_text`, those with its text hashes; `near`, those near each of its pages."""

    def __init__(
        self,
        pages: Sequence[Keyed],
        policy: Policy,
        moment: datetime | None,
        *,
        by_key: dict[str, StoredPage],
        by_text: dict[int, list[StoredPage]],
    ) -> None:
        self.keys = [key for key, _ in pages]
        self.signatures = [signature for _, signature in pages]
        self.policy, self.moment = policy, moment
        self.by_key, self.by_text = by_key, by_text
        self.near: list[Nearby] = []  # set by the backend once it has looked (a lookup may ask `settles`)
        self._close = _within(pages, policy.max_distance)
        self._chunk: dict[str, StoredPage] = {}  # stored (or updated) by this chunk, by key
        self._texts: dict[int, dict[str, None]] = {}  # their keys by text hash
        self._position: dict[str, int] = {}  # the position in the chunk of each page it stored
        self.gone: set[str] = set()  # superseded by a page of this chunk
        self._stored = itertools.count(CHUNK_ORDER)  # the age ranks of the pages it stores, in order

    def own(self, key: str) -> StoredPage | None:
        """The page stored under this key, as the chunk left it."""
        if key in self.gone:
            return None
        return self._chunk.get(key) or self.by_key.get(key)

    def same_text(self, text_hash: int | None) -> list[StoredPage]:
        """The stored pages with this text hash, as the chunk left them."""
        if text_hash is None:
            return []
        read = [page for page in self.by_text.get(text_hash, ()) if self._in_sight(page)]
        return read + [self._chunk[key] for key in self._texts.get(text_hash, ())]

    def nearby(self, position: int) -> list[StoredPage]:
        """The stored pages near the chunk's page at `position` (only the nearest, when one of
        those still in sight settles it), and the pages this chunk stored within the radius."""
        nearby = self.near[position]
        found = [page for page in nearby.pages if self._in_sight(page)]
        # the lookup found one of the nearest that settles it: only if this chunk hid some may it be gone
        hidden = len(found) < len(nearby.pages)
        if nearby.rest is not None and hidden and not any(self.settles(position, page) for page in found):
            nearby.pages += nearby.rest()  # the nearest that settled it went with this chunk
            nearby.rest = None
            return self.nearby(position)
        for other in self._close.get(position, ()):
            key = self.keys[other]
            if self._position.get(key) == other:
                found.append(self._chunk[key])
        return found

    def settles(self, position: int, page: StoredPage) -> bool:
        """Whether the near page would be the match of the chunk's page at `position` (rule.settles)."""
        return rule.settles(self.signatures[position], page, self.policy, self.moment)

    def add(self, key: str, signature: Signature, position: int) -> None:
        """The chunk's page at `position` is stored under `key` (a new page, or its own updated;
        a page superseded before in the chunk and stored again is a new page: see `stored_again`)."""
        known = self.stored_again(key) if key in self.gone else self.own(key)
        self.gone.discard(key)
        self._leave(key)
        self._chunk[key] = (
            StoredPage(key, signature, next(self._stored)) if known is None else replace(known, signature=signature)
        )
        self._position[key] = position
        if signature.text_hash is not None:
            self._texts.setdefault(signature.text_hash, {})[key] = None

    def stored_again(self, key: str) -> StoredPage | None:
        """The page a key superseded before in the chunk is stored as when stored again (None: a new page)."""
        return None

    def supersede(self, key: str) -> None:
        """The page stored under `key` leaves what the chunk sees."""
        self._leave(key)
        self.gone.add(key)

    def _in_sight(self, page: StoredPage) -> bool:
        return page.key not in self._chunk and page.key not in self.gone

    def _leave(self, key: str) -> None:
        page = self._chunk.pop(key, None)
        self._position.pop(key, None)
        if page is not None and page.signature.text_hash is not None:
            self._texts[page.signature.text_hash].pop(key, None)


def _within(pages: Sequence[Keyed], radius: int) -> dict[int, list[int]]:
    """For each page of the chunk, the positions of the others within `radius` (none for pages
    matched by text only): in memory linear in the chunk (near.pairs_between)."""
    positions = [i for i, (_, signature) in enumerate(pages) if signature.near_simhash is not None]
    values = np.array([pages[i][1].near_simhash for i in positions], np.uint64)
    close: dict[int, list[int]] = {}
    for a, b in zip(*pairs_between(values, values, radius)):
        if a != b:
            close.setdefault(positions[a], []).append(positions[b])
    return close


def touches(
    pages: Sequence[Keyed],
    keys: Container[object],
    texts: Container[object],
    fingerprints: npt.NDArray[np.uint64],
    radius: int,
    *,
    key_of: Callable[[str], object],
    text_of: Callable[[int], object],
) -> bool:
    """Whether pages that came or went (their `keys` and `texts` as `key_of` and `text_of` give a
    page's key and text hash, and their near-matchable `fingerprints`) share a key or a text with
    these pages, or come within `radius` of one of their fingerprints: then a decision on these
    pages may no longer hold."""
    if any(key_of(key) in keys for key, _ in pages):
        return True
    if any(s.text_hash is not None and text_of(s.text_hash) in texts for _, s in pages):
        return True
    near = [fp for _, s in pages if (fp := s.near_simhash) is not None]
    if not near or not len(fingerprints):
        return False
    return bool(len(pairs_between(np.array(near, np.uint64), fingerprints, radius)[0]))
