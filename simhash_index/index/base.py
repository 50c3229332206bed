"""The index interface every backend implements: SQL (SQLite, PostgreSQL), Redis, memory.

The public methods check and normalise their arguments here, once; a backend implements
the protected `_` methods, which get plain values (checked keys, Signatures of ints).
What backends share beside (refusing writes to a read-only index, scrubbing credentials
from messages, releasing connections when opening fails) is here too.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType

from .. import defaults, urls
from ..errors import IndexUnavailableError, SimhashIndexError
from ..fingerprinting.fingerprinter import Signature
from . import texts
from .records import Duplicate, Fingerprint, Match, Policy, StoredPage, as_signature, as_u64, as_utc, check_key

Keyed = tuple[str, Signature]  # a page as a backend is given it: its checked key and Signature


@dataclass(frozen=True)
class Cluster:
    """A stored page and the pages dropped as its duplicates, nearest first."""

    key: str
    duplicates: tuple[Duplicate, ...]


@dataclass(frozen=True)
class Forgotten:
    """What forget, prune or reset removed: stored pages, and duplicates logged."""

    pages: int = 0
    duplicates: int = 0

    def __add__(self, other: Forgotten) -> Forgotten:
        return Forgotten(self.pages + other.pages, self.duplicates + other.duplicates)


@dataclass(frozen=True)
class Description:
    """What an index is, for `stats` and error messages."""

    backend: str  # "sqlite", "postgresql", "redis" or "memory"
    schema_version: str
    layout: str | None = None  # SQL: "blocks" or "halves"
    block_assignment: str | None = None


class Index(ABC):
    """Near-duplicate index: stored pages' fingerprints, checked and stored atomically.

    Of a group of mutual near-duplicates checked concurrently (from any process, on any
    backend), exactly one is stored and the others are logged as its duplicates.
    """

    url: str  # as it may be shown: credentials hidden
    scheme: str  # the fingerprint settings the stored fingerprints were made with
    policy: Policy
    keep_texts: bool = False  # store_texts keeps pages' texts (open_index(keep_texts=True), ?texts=1)
    read_only: bool = False  # every write is refused (open_index(read_only=True))
    created: bool = False  # opening it created it: a new, empty index
    _typed: str = ""  # the URL as given, credentials and all: what _scrub takes out of messages

    @property
    def max_distance(self) -> int:
        return self.policy.max_distance

    @property
    def min_similarity(self) -> float:
        return self.policy.min_similarity

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r}, max_distance={self.max_distance})"

    # -- checking and storing --------------------------------------------------------

    def check_and_add(
        self, key: str, fingerprint: Fingerprint, *, text_hash: int | None = None, sketch: bytes | None = None
    ) -> Match | None:
        """Store the page unless it duplicates a stored one; return that one, or None.

        A key that is already stored is never a duplicate of itself: if its content
        changed, its row is updated in place. A key logged as a duplicate before is
        checked again, and stored if it no longer is one.
        """
        return self._check_and_add_many([(check_key(key), as_signature(fingerprint, text_hash, sketch))])[0]

    def check_and_add_many(self, items: Iterable[tuple[str, Fingerprint]]) -> list[Match | None]:
        """check_and_add for each (key, fingerprint or Signature), in order, as one atomic
        step with one commit: a later page can be a duplicate of an earlier one."""
        pages = [(check_key(key), as_signature(fingerprint)) for key, fingerprint in items]
        return self._check_and_add_many(pages) if pages else []

    def add(
        self, key: str, fingerprint: Fingerprint, *, text_hash: int | None = None, sketch: bytes | None = None
    ) -> None:
        """Store a page (replacing the stored one with this key), without checking."""
        self._add_many([(check_key(key), as_signature(fingerprint, text_hash, sketch))])

    def add_many(self, items: Iterable[tuple[str, Fingerprint]], *, batch_size: int = defaults.BULK_BATCH_SIZE) -> int:
        """Store many (key, fingerprint or Signature) pairs without checks; returns how many."""
        with self.insertion_session(batch_size=batch_size) as session:
            for key, fingerprint in items:
                session.add(key, fingerprint)
        return session.stored

    def insertion_session(
        self, *, batch_size: int = defaults.BULK_BATCH_SIZE, on_batch: Callable[[int], None] | None = None
    ) -> InsertionSession:
        """A bulk load: `with index.insertion_session() as s: s.add(key, fp)`, stored in batches."""
        self._writable()
        return InsertionSession(self, batch_size=batch_size, on_batch=on_batch)

    # -- texts (index/texts.py) -------------------------------------------------------

    def store_texts(self, pages: Iterable[tuple[str, str]]) -> int:
        """Keep the (key, text) pages' texts, compressed, when the index keeps texts
        (`keep_texts`); a key's text replaces the one kept before. Returns how many were kept."""
        if not self.keep_texts:
            return 0
        packed = [(check_key(key), texts.pack(text)) for key, text in pages]
        if packed:
            self._store_texts(packed)
        return len(packed)

    def text(self, key: str) -> str | None:
        """The text kept for this key, or None."""
        found = self._texts([check_key(key)]).get(key)
        return None if found is None else texts.unpack(found)

    def text_sizes(self) -> texts.TextSizes:
        """How many texts are kept, and their compressed size."""
        return self._text_sizes()

    # -- forgetting (docs/operating.md) ----------------------------------------------

    def forget(self, keys: Iterable[str]) -> Forgotten:
        """Remove the pages stored under these keys, and the duplicates logged against them
        (a page dropped as a copy of a forgotten one is checked anew when it comes back);
        a key logged as a duplicate leaves the log."""
        return self._forget(list(dict.fromkeys(check_key(key) for key in keys)))

    def prune(self, *, before: datetime) -> Forgotten:
        """Forget every page stored before `before` (naive means UTC), with the duplicates
        logged against them, and every duplicate logged before it. Runs in short
        transactions of a bounded number of rows: a crawl can go on meanwhile."""
        return self._prune(as_utc(before))

    def stored_before(self, before: datetime) -> int:
        """How many pages are stored before `before` (naive means UTC): the pages prune would forget."""
        return self._stored_before(as_utc(before))

    def reset(self) -> Forgotten:
        """Empty the index: every page and every logged duplicate (its settings stay)."""
        return self._reset()

    # -- reading ---------------------------------------------------------------------

    def query(self, fingerprint: int) -> list[Match]:
        """Every stored page within max_distance, nearest first (then oldest)."""
        return self._query(as_u64(fingerprint))

    def get(self, key: str) -> Match | None:
        """The stored page with this key, as a Match at distance 0, or None."""
        return self._get(check_key(key))

    def page(self, key: str) -> StoredPage | None:
        """The stored page with this key, with its signature, age rank and time stored; or None."""
        return self._page(check_key(key))

    def duplicate(self, key: str) -> Duplicate | None:
        """The page logged as a duplicate under this key, or None."""
        return self._duplicate(check_key(key))

    def duplicates(self) -> list[Duplicate]:
        """Every page logged as a duplicate, in the order first logged."""
        return list(self.logged())

    def logged(self, *, since: datetime | None = None) -> Iterator[Duplicate]:
        """The duplicates log, streamed in the order first logged; `since`: only pages
        dropped at or after it (naive means UTC)."""
        return self._logged(None if since is None else as_utc(since))

    def duplicates_of(self, key: str) -> list[Duplicate]:
        """The pages logged against the stored page `key`, in the order first logged: those
        dropped as its duplicates, and those it superseded (`superseded` set)."""
        return self._duplicates_of(check_key(key))

    def clusters(self, *, limit: int | None = None) -> Iterator[Cluster]:
        """Each stored page that has duplicates, with them: the largest clusters first."""
        groups: dict[str, list[tuple[int, Duplicate]]] = defaultdict(list)
        for order, duplicate in enumerate(self.logged()):
            groups[duplicate.duplicate_of].append((order, duplicate))
        ranked = sorted(groups.items(), key=lambda item: (-len(item[1]), item[1][0][0]))
        for stored, members in itertools.islice(ranked, limit):
            members.sort(key=lambda member: (member[1].distance, member[0]))
            yield Cluster(stored, tuple(duplicate for _, duplicate in members))

    def neighbourhood(self, key: str, signature: Signature) -> list[StoredPage]:
        """The stored pages a check of this page could see: its key, its text, its near
        pages (a superset is fine); what a dry run copies to decide as the index would."""
        return self._neighbourhood(check_key(key), as_signature(signature))

    @abstractmethod
    def ping(self) -> None:
        """Reach the server once: IndexUnavailableError when it does not answer in time."""

    @abstractmethod
    def __len__(self) -> int:
        """Pages stored."""

    @abstractmethod
    def describe(self) -> Description:
        """The backend, schema version and layout."""

    @property
    def location(self) -> str:
        """Where the index is, as a user looks for it: an SQLite file's absolute path, else its
        URL (credentials hidden; a Redis index's with its prefix)."""
        return self._where

    # -- for backends ------------------------------------------------------------------

    @property
    def _where(self) -> str:
        """The index as messages name it."""
        return self.url

    def _writable(self) -> None:
        """Called first by every write: refused when the index was opened read-only."""
        if self.read_only:
            raise SimhashIndexError(f"{self._where} was opened read-only: open it with read_only=False to write")

    def _scrub(self, error: object) -> str:
        """An error's first line, without the credentials of the URL the index was opened with."""
        return urls.scrub(urls.first_line(error), self._typed)

    @contextmanager
    def _released_on_failure(self) -> Iterator[None]:
        """Opening: when it fails the connections are closed; a plain SimhashIndexError (not a
        database file, a database number the server lacks) becomes IndexUnavailableError."""
        try:
            yield
        except SimhashIndexError as exc:
            self.close()
            if type(exc) is SimhashIndexError:
                raise IndexUnavailableError(str(exc)) from exc
            raise
        except BaseException:
            self.close()
            raise

    def _start_bulk_load(self) -> None:  # noqa: B027 - a hook most backends leave empty
        """An insertion session begins: a backend may prepare for a large load."""

    def _end_bulk_load(self) -> None:  # noqa: B027 - a hook most backends leave empty
        """An insertion session ends, whether or not its last batch was stored."""

    @abstractmethod
    def _check_and_add_many(self, pages: Sequence[Keyed]) -> list[Match | None]: ...

    @abstractmethod
    def _add_many(self, pages: Sequence[Keyed]) -> None: ...

    @abstractmethod
    def _query(self, fingerprint: int) -> list[Match]: ...

    @abstractmethod
    def _get(self, key: str) -> Match | None: ...

    @abstractmethod
    def _page(self, key: str) -> StoredPage | None: ...

    @abstractmethod
    def _store_texts(self, pages: list[tuple[str, bytes]]) -> None: ...

    @abstractmethod
    def _texts(self, keys: list[str]) -> dict[str, bytes]: ...

    @abstractmethod
    def _text_sizes(self) -> texts.TextSizes: ...

    @abstractmethod
    def _forget(self, keys: list[str]) -> Forgotten: ...

    @abstractmethod
    def _prune(self, before: datetime) -> Forgotten: ...

    @abstractmethod
    def _reset(self) -> Forgotten: ...

    @abstractmethod
    def _stored_before(self, before: datetime) -> int: ...

    @abstractmethod
    def _logged(self, since: datetime | None) -> Iterator[Duplicate]: ...

    @abstractmethod
    def _duplicate(self, key: str) -> Duplicate | None: ...

    def _duplicates_of(self, key: str) -> list[Duplicate]:
        """The whole log read for one page: a backend that finds them by their stored page does better."""
        return [duplicate for duplicate in self.logged() if duplicate.duplicate_of == key]

    @abstractmethod
    def _neighbourhood(self, key: str, signature: Signature) -> list[StoredPage]: ...

    # -- lifecycle ---------------------------------------------------------------------

    @abstractmethod
    def close(self) -> None:
        """Release the connections."""

    def __enter__(self) -> Index:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class InsertionSession:
    """Stores pages in batches of `batch_size` without checks; a key added twice keeps its
    last fingerprint. `on_batch(stored_so_far)` is called after each batch."""

    def __init__(self, index: Index, *, batch_size: int, on_batch: Callable[[int], None] | None = None) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer; got {batch_size!r}")
        self.index = index
        self.batch_size = batch_size
        self.on_batch = on_batch
        self.stored = 0
        self._batch: list[Keyed] = []

    def __enter__(self) -> InsertionSession:
        self.index._start_bulk_load()
        return self

    def add(self, key: str, fingerprint: Fingerprint) -> None:
        """Store a page (an int fingerprint or a Signature); replaces a stored one with this key."""
        self._batch.append((check_key(key), as_signature(fingerprint)))
        if len(self._batch) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        if self._batch:
            self.index._add_many(self._batch)
            self.stored += len(self._batch)
            self._batch = []
            if self.on_batch is not None:
                self.on_batch(self.stored)

    def __exit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        try:
            if exc_type is None:
                self.flush()
        finally:
            self.index._end_bulk_load()
