"""An index held in this process's memory: for dry runs, examples and tests.

The same rule and answers as the database backends; nothing outlives the object. Near pages
are found through a NearIndex of the stored fingerprints (held to brute force by its tests).
Thread-safe: one lock serialises every call.
"""

from __future__ import annotations

import itertools
import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from ...fingerprinting.fingerprinter import DEFAULT, Signature
from .. import rule
from ..base import Description, Forgotten, Index, Keyed
from ..records import DEFAULT_POLICY, Duplicate, Match, Policy, StoredPage, now
from ..texts import TextSizes
from .near import NearIndex

SCHEMA_VERSION = "1"
REBUILD_FROM = 1024  # the NearIndex is built anew when a quarter of its fingerprints (at least this many) went
_COPIED = 1 << 62  # copied pages rank before any page stored here


@dataclass
class _Logged:
    order: int
    duplicate: Duplicate


class MemoryIndex(Index):
    """Pages in dicts, by key and by text hash; near pages found through a NearIndex of their fingerprints."""

    def __init__(
        self,
        url: str = "memory://",
        *,
        policy: Policy = DEFAULT_POLICY,
        scheme: str | None = DEFAULT.scheme,
        keep_texts: bool = False,
    ) -> None:
        self.url = url
        self.policy = policy
        self.keep_texts = keep_texts
        self.created = True  # nothing outlives the object
        self.scheme = scheme or DEFAULT.scheme
        self._lock = threading.RLock()
        self._order = itertools.count(1)
        self._pages: dict[str, StoredPage] = {}
        self._by_text: dict[int, set[str]] = defaultdict(set)
        self._near = NearIndex()
        self._by_fingerprint: dict[int, set[str]] = defaultdict(set)  # near-matchable pages
        self._stale = 0  # fingerprints in _near whose pages went
        self._log: dict[str, _Logged] = {}
        self._log_order = itertools.count(1)
        self._kept_texts: dict[str, bytes] = {}

    def __len__(self) -> int:
        return len(self._pages)

    def ping(self) -> None:
        pass

    def describe(self) -> Description:
        return Description("memory", SCHEMA_VERSION)

    # -- storage -----------------------------------------------------------------------

    def _put(self, key: str, signature: Signature, stored_at: datetime, order: int | None = None) -> None:
        old = self._pages.get(key)
        if old is not None:
            self._unindex(old)
            order = old.order
        page = StoredPage(key, signature, next(self._order) if order is None else order, stored_at)
        self._pages[key] = page
        if signature.text_hash is not None:
            self._by_text[signature.text_hash].add(key)
        fingerprint = signature.near_simhash
        if fingerprint is not None:
            self._near.add([fingerprint])
            self._by_fingerprint[fingerprint].add(key)
        self._log.pop(key, None)  # a stored page is nobody's duplicate

    def _unindex(self, page: StoredPage) -> None:
        signature = page.signature
        if signature.text_hash is not None:
            self._by_text[signature.text_hash].discard(page.key)
        fingerprint = signature.near_simhash
        if fingerprint is not None:
            self._by_fingerprint[fingerprint].discard(page.key)
            self._stale += 1
            if self._stale * 4 > max(REBUILD_FROM, len(self._near)):
                self._near = NearIndex(fp for fp, keys in self._by_fingerprint.items() if keys)
                self._stale = 0

    def _candidates(self, signature: Signature) -> list[StoredPage]:
        """The stored pages within the radius of this one, when it is near-matchable."""
        fingerprint = signature.near_simhash
        if fingerprint is None:
            return []
        found = self._near.search([fingerprint], self.max_distance).fingerprints.tolist()
        return [self._pages[key] for fp in dict.fromkeys(found) for key in self._by_fingerprint.get(fp, ())]

    # -- the interface -------------------------------------------------------------------

    def _check_and_add_many(self, pages: Sequence[Keyed]) -> list[Match | None]:
        answers: list[Match | None] = []
        with self._lock:
            moment = now()
            for key, signature in pages:
                same_text = (
                    [self._pages[k] for k in self._by_text.get(signature.text_hash, ())]
                    if signature.text_hash is not None
                    else []
                )
                decision = rule.decide(
                    signature,
                    own=self._pages.get(key),
                    same_text=same_text,
                    nearby=self._candidates(signature),
                    policy=self.policy,
                    moment=moment,
                    key=key,
                )
                if decision.supersedes:
                    self._supersede(key, signature, decision.match, moment)  # type: ignore[arg-type]
                elif decision.match is not None:
                    self._log_duplicate(key, signature, decision.match, moment)
                elif decision.store:
                    self._put(key, signature, moment)
                answers.append(decision.match)
        return answers

    def _log_duplicate(self, key: str, signature: Signature, match: Match, moment: datetime) -> None:
        entry = self._log.get(key)
        duplicate = Duplicate(
            key,
            match.key,
            match.distance,
            match.exact,
            moment,
            signature.simhash,
            match.similarity,
            self.max_distance,
            match.superseded,
            match.added,
        )
        self._log[key] = _Logged(entry.order if entry else next(self._log_order), duplicate)

    def _supersede(self, key: str, signature: Signature, match: Match, moment: datetime) -> None:
        """Store the page in place of its match, which becomes its duplicate with its own duplicates."""
        old = self._pages.pop(match.key)
        self._unindex(old)
        self._put(key, signature, moment)
        for entry in self._log.values():
            if entry.duplicate.duplicate_of == old.key:
                entry.duplicate = replace(entry.duplicate, duplicate_of=key)
        demoted = replace(match, key=key, fingerprint=signature.simhash)
        self._log_duplicate(old.key, old.signature, demoted, moment)

    def _add_many(self, pages: Sequence[Keyed]) -> None:
        with self._lock:
            moment = now()
            for key, signature in pages:
                self._put(key, signature, moment)

    def _query(self, fingerprint: int) -> list[Match]:
        with self._lock:
            found = rule.near(
                Signature(fingerprint, None), self._candidates(Signature(fingerprint, None)), self.max_distance
            )
        return [Match(page.key, page.signature.simhash, bits) for bits, page in found]

    def _get(self, key: str) -> Match | None:
        page = self._pages.get(key)
        return None if page is None else Match(key, page.signature.simhash, 0, exact=True)

    def _page(self, key: str) -> StoredPage | None:
        return self._pages.get(key)

    def _store_texts(self, pages: list[tuple[str, bytes]]) -> None:
        with self._lock:
            self._kept_texts.update(pages)

    def _texts(self, keys: list[str]) -> dict[str, bytes]:
        with self._lock:
            return {key: self._kept_texts[key] for key in keys if key in self._kept_texts}

    def _text_sizes(self) -> TextSizes:
        with self._lock:
            return TextSizes(len(self._kept_texts), sum(map(len, self._kept_texts.values())))

    def _forget(self, keys: list[str]) -> Forgotten:
        with self._lock:
            doomed = [key for key in keys if key in self._pages]
            return self._remove(doomed, {key for key in keys if key in self._log}, before=None)

    def _prune(self, before: datetime) -> Forgotten:
        with self._lock:
            doomed = [p.key for p in self._pages.values() if p.stored_at is not None and p.stored_at < before]
            return self._remove(doomed, set(), before=before)

    def _stored_before(self, before: datetime) -> int:
        with self._lock:
            return sum(1 for p in self._pages.values() if p.stored_at is not None and p.stored_at < before)

    def _reset(self) -> Forgotten:
        with self._lock:
            return self._remove(list(self._pages), set(self._log), before=None)

    def _remove(self, pages: list[str], logged: set[str], *, before: datetime | None) -> Forgotten:
        gone = set(pages)
        for key in pages:
            self._unindex(self._pages.pop(key))
        doomed = [
            key
            for key, entry in self._log.items()
            if key in logged
            or entry.duplicate.duplicate_of in gone
            or (before is not None and entry.duplicate.seen_at < before)
        ]
        for key in doomed:
            del self._log[key]
        for key in [*pages, *doomed]:
            self._kept_texts.pop(key, None)
        return Forgotten(len(pages), len(doomed))

    def _logged(self, since: datetime | None) -> Iterator[Duplicate]:
        with self._lock:
            entries = sorted(self._log.values(), key=lambda entry: entry.order)
        for entry in entries:
            if since is None or entry.duplicate.seen_at >= since:
                yield entry.duplicate

    def _duplicate(self, key: str) -> Duplicate | None:
        entry = self._log.get(key)
        return None if entry is None else entry.duplicate

    def _neighbourhood(self, key: str, signature: Signature) -> list[StoredPage]:
        with self._lock:
            found = {page.key: page for page in self._candidates(signature)}
            if signature.text_hash is not None:
                found.update((k, self._pages[k]) for k in self._by_text.get(signature.text_hash, ()))
            if key in self._pages:
                found[key] = self._pages[key]
        return sorted(found.values(), key=lambda page: page.order)

    def copy_in(self, pages: Sequence[StoredPage]) -> None:
        """Store pages another index holds, older than every page stored here and in their
        own order (a dry run's view of the database); keys already here are left alone."""
        with self._lock:
            for page in pages:
                if page.key not in self._pages:
                    self._put(page.key, page.signature, page.stored_at or now(), order=page.order - _COPIED)

    def close(self) -> None:
        pass
