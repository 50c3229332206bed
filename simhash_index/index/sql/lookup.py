"""Where a writer finds the stored pages near a batch: in memory (the default) or in the table.

`MemoryLookup` keeps the stored fingerprints in a NearIndex in this process, built from the
table in one consistent read and kept in step with it through the change feed (changes.py):
inside each write transaction, once the writer holds the writer lock, it reads what was
committed since it last looked, so a decision sees every committed page. It finds the
fingerprints near each page in memory, and reads the rows behind them from the table by
fingerprint, the nearest first: those of the farther ones only for the pages that none of the
nearest settles (rule.settles), as the rule would not look past it. A fingerprint whose row
went meanwhile finds nothing, and the rule decides on the rows as they are. The writer's own
rows join the index once they are committed.

`TableLookup` (`?lookup=sql`) probes the table's lookup columns (layouts.py) instead: no memory
held, and a lookup that reads about probes x N / 65,536 index entries of the blocks layout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Literal, Protocol, get_args

import numpy as np
from sqlalchemy.engine import Connection

from ...errors import IndexUnavailableError
from ...fingerprinting.bits import to_unsigned
from ...fingerprinting.fingerprinter import Signature
from ...fingerprinting.sketch import least_agreeing
from ..chunk import Nearby
from ..memory.near import NearIndex, pairs_between
from ..records import Policy, StoredPage
from . import candidates, changes
from .dialects import POSTGRES, SqlDialect, dialect_of
from .engine import Transaction, lock_writers
from .feeds import FEEDS
from .layouts import Layout
from .statements import PAGE_COLUMNS, RawConnection, fetch, pages_with, row_page

LookupName = Literal["memory", "sql"]
LOOKUPS: tuple[LookupName, ...] = get_args(LookupName)
STALE_SHARE = 4  # build anew once more fingerprints left the table than a quarter of those held
MIN_STALE = 10_000

Settles = Callable[[int, StoredPage], bool]  # (position in the batch, near page): rule.settles


NearPages = Callable[[Connection, Sequence[Signature], Policy, Settles], list[Nearby]]


class Lookup(Protocol):
    """What a writer's batch asks of its lookup, in this order."""

    def prepare(self) -> None:
        """Before the write transaction: get ready (build what needs building)."""

    def catch_up(self, conn: Connection) -> bool:
        """In the write transaction, holding the writer lock: follow the table; False when the
        caller must end the transaction and call prepare() again."""

    def near(self, conn: Connection, signatures: Sequence[Signature], policy: Policy, settles: Settles) -> list[Nearby]:
        """For each signature, the stored pages within the policy's radius that the rule could take
        (a superset is fine), or the nearest of them when one of those settles it."""

    def wrote(self, conn: Connection) -> None:
        """After the batch's writes, before its commit."""

    def committed(self) -> None:
        """After the commit."""


class TableLookup:
    """Probes of the table's lookup columns (layouts.py), in the write transaction."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout

    def prepare(self) -> None:
        pass

    def catch_up(self, conn: Connection) -> bool:
        return True

    def near(self, conn: Connection, signatures: Sequence[Signature], policy: Policy, settles: Settles) -> list[Nearby]:
        return [Nearby(pages) for pages in table_near_pages(conn, self.layout, signatures, policy.max_distance)]

    def wrote(self, conn: Connection) -> None:
        pass

    def committed(self) -> None:
        pass


class MemoryLookup:
    """A NearIndex of the stored fingerprints, following the table through its change feed;
    beside each fingerprint its row id and sketch bits (candidates.py)."""

    def __init__(self, layout: Layout, transaction: Transaction, dialect: SqlDialect) -> None:
        """`transaction(write=..., snapshot=...)`: a transaction on the index's database."""
        self.layout = layout
        self._transaction = transaction
        self._feed = FEEDS[dialect]
        self.index: NearIndex | None = None
        self._mark: changes.Mark | None = None
        self._stale = 0
        self._own: changes.Changes | None = None
        self.builds = 0  # times the index was built from the table
        self.found = 0  # candidates within the radius, turned away in memory, rows read: over the lookup's life
        self.turned_away = 0
        self.read = 0

    def prepare(self) -> None:
        if self.index is not None and self._stale * STALE_SHARE <= max(MIN_STALE, len(self.index)):
            return
        with self._transaction(write=False, snapshot=True) as conn:
            found = self._feed.stored(conn, self.layout) if self._feed.installed(conn) else None
        if found is None:  # an index written before the feed, opened without create
            with self._transaction(write=True) as conn:
                lock_writers(conn)
                self._feed.install(conn)
            with self._transaction(write=False, snapshot=True) as conn:
                found = self._feed.stored(conn, self.layout)
        self._mark = found.mark
        self.index = NearIndex(found.fingerprints, found.payload)
        self._stale = 0
        self.builds += 1

    def catch_up(self, conn: Connection) -> bool:
        self._own = None
        return self.follow(conn) is not None and self.index is not None

    def follow(self, conn: Connection) -> changes.Changes | None:
        """Follow what was committed since the last look (by other writers: this transaction's
        own rows wait for its commit); None when the lookup can no longer follow the table."""
        found = None if self._mark is None else self._feed.since(conn, self._mark)
        if found is None:
            self.index = None
            return None
        self._follow(found)
        return found

    def near(self, conn: Connection, signatures: Sequence[Signature], policy: Policy, settles: Settles) -> list[Nearby]:
        """The candidates the rule could take (candidates.could_pass) of each page; the rows of its
        nearest read first (one statement), those of its farther ones too (a second statement for
        the batch) unless one of the nearest settles it."""
        found = [Nearby([]) for _ in signatures]
        wanted = [(i, fp) for i, s in enumerate(signatures) if (fp := s.near_simhash) is not None]
        if not wanted or self.index is None:
            return found
        queries = np.array([fp for _, fp in wanted], np.uint64)
        hits = self.index.search(queries, policy.max_distance)
        bits, known = candidates.query_bits([signatures[i].sketch for i, _ in wanted])
        needed = least_agreeing(policy.min_similarity)
        kept = candidates.could_pass(hits.payload, bits[hits.queries], known[hits.queries], needed)
        self.found += len(kept)
        self.turned_away += len(kept) - int(kept.sum())
        at, fingerprints, ids = hits.queries[kept], hits.fingerprints[kept], candidates.row_ids(hits.payload[kept])
        if not len(at):
            return found
        distance = np.bitwise_count(fingerprints ^ queries[at])
        least = np.full(len(wanted), 64, distance.dtype)
        np.minimum.at(least, at, distance)
        nearest = distance == least[at]
        read = self._pages(conn, np.unique(ids[nearest]).tolist())
        farther: dict[int, list[Entry]] = {}  # position in the batch -> its farther candidates
        for query, entry, first in zip(at.tolist(), zip(ids.tolist(), fingerprints.tolist()), nearest.tolist()):
            position = wanted[query][0]
            if first:
                found[position].pages += _current(read, [entry])
            else:
                farther.setdefault(position, []).append(entry)
        unsettled = {p for p in farther if not any(settles(p, page) for page in found[p].pages)}
        more = self._pages(conn, sorted({row_id for p in unsettled for row_id, _ in farther[p]}))
        for position, entries in farther.items():
            if position in unsettled:
                found[position].pages += _current(more, entries)
            else:
                found[position].rest = partial(self._rest, conn, entries)
        for nearby in found:
            nearby.pages = sorted({page.key: page for page in nearby.pages}.values(), key=lambda page: page.order)
        return found

    def _pages(self, conn: Connection, ids: list[int]) -> dict[int, StoredPage]:
        """The stored pages with these row ids, by id (one statement)."""
        self.read += len(ids)
        return {page.order: page for page in pages_by_id(conn, ids)}

    def _rest(self, conn: Connection, entries: list[Entry]) -> list[StoredPage]:
        """The farther candidates of a page, read when the batch hid the nearest that settled it."""
        return _current(self._pages(conn, sorted({row_id for row_id, _ in entries})), entries)

    def wrote(self, conn: Connection) -> None:
        if self._mark is None:
            return
        self._own = self._feed.written(conn, self._mark)

    def committed(self) -> None:
        if self._own is not None:
            self._follow(self._own)
            self._own = None

    def _follow(self, found: changes.Changes) -> None:
        if self.index is not None:
            self.index.add(found.added, found.payload)
        self._stale += found.removed
        self._mark = found.mark


Entry = tuple[int, int]  # a candidate as the NearIndex holds it: (row id, fingerprint)


def _current(pages: dict[int, StoredPage], entries: list[Entry]) -> list[StoredPage]:
    """The pages of these entries whose rows still hold the entry's fingerprint: a row whose
    fingerprint changed is held again under its new one (the change feed adds it), and a row
    gone is not read at all."""
    found = (pages.get(row_id) for row_id, _ in entries)
    return [
        page for page, (_, fingerprint) in zip(found, entries) if page and page.signature.near_simhash == fingerprint
    ]


def table_near_pages(
    conn: Connection | RawConnection,
    layout: Layout,
    signatures: Sequence[Signature],
    max_distance: int,
    selected: str = PAGE_COLUMNS,
) -> list[list[StoredPage]]:
    """For each signature, the stored pages within max_distance of it, oldest first, read by the
    table's lookup columns (`selected`: the columns as page_columns gives them; in the halves
    layout, pages matched only by their text may be among them: the rule leaves them out)."""
    wanted = [(i, fp) for i, s in enumerate(signatures) if (fp := s.near_simhash) is not None]
    found: list[list[StoredPage]] = [[] for _ in signatures]
    if not wanted:
        return found
    if dialect_of(conn).counts_bits:
        return _near_postgres(conn, layout, wanted, found, max_distance, selected)
    queries = np.array([fp for _, fp in wanted], dtype=np.uint64)
    rows = fetch(conn, *layout.batch_candidates(queries.tolist(), max_distance))
    stored = np.unique(np.array([row[0] for row in rows], dtype=np.int64)).view(np.uint64)
    at, other = pairs_between(queries, stored, max_distance)
    if not len(at):
        return found
    by_fingerprint = pages_by_fingerprint(conn, layout, np.unique(stored[other]).tolist(), selected)
    for query, fingerprint in zip(at.tolist(), stored[other].tolist()):
        found[wanted[query][0]] += by_fingerprint.get(fingerprint, ())
    for pages in found:
        pages.sort(key=lambda page: page.order)
    return found


def pages_by_fingerprint(
    conn: Connection | RawConnection, layout: Layout, fingerprints: list[int], selected: str = PAGE_COLUMNS
) -> dict[int, list[StoredPage]]:
    """The stored pages with these fingerprints, by fingerprint (one statement)."""
    found: dict[int, list[StoredPage]] = {}
    if not fingerprints:
        return found
    dialect = dialect_of(conn)
    where, parameters = layout.rows_with_fingerprints(fingerprints, dialect)
    for row in fetch(conn, f"SELECT {selected} FROM simhash_documents WHERE {where}", parameters):
        page = row_page(row, dialect)
        if page.signature.simhash is not None:
            found.setdefault(page.signature.simhash, []).append(page)
    return found


def pages_by_id(conn: Connection, ids: list[int]) -> list[StoredPage]:
    """The stored pages with these row ids (one statement; a row gone meanwhile is not there)."""
    if not ids:
        return []
    dialect = dialect_of(conn)
    return [row_page(row, dialect) for row in pages_with(conn, "id", ids)]


def _near_postgres(
    conn: Connection | RawConnection,
    layout: Layout,
    wanted: list[tuple[int, int]],
    found: list[list[StoredPage]],
    max_distance: int,
    selected: str,
) -> list[list[StoredPage]]:
    """`found` filled in at the positions `wanted` (position, fingerprint). Blocks: one statement
    for the whole batch. Halves: one statement a page, all sent in one pipeline (one round trip)."""
    batch = layout.near_batch([fp for _, fp in wanted], max_distance)
    if batch is not None:
        # a set: with one block probed (radius 0) there is no UNION to make each hit one row
        hits = sorted({(n, to_unsigned(fingerprint)) for n, fingerprint in fetch(conn, *batch)})
        by_fingerprint = pages_by_fingerprint(conn, layout, sorted({fp for _, fp in hits}), selected)
        for n, fingerprint in hits:
            found[wanted[n - 1][0]] += by_fingerprint.get(fingerprint, [])
        for pages in found:
            pages.sort(key=lambda page: page.order)
        return found
    raw = conn.connection.dbapi_connection
    if raw is None:
        raise IndexUnavailableError("the database connection was closed in the middle of a batch")
    cursors = []
    with raw.pipeline():
        for _, fingerprint in wanted:
            cursor = raw.cursor()
            cursor.execute(*layout.near(fingerprint, max_distance, selected))
            cursors.append(cursor)
    for (position, _), cursor in zip(wanted, cursors):
        fetched = cursor.fetchall()
        cursor.close()
        found[position] = [row_page(row, POSTGRES) for row in fetched]
    return found
