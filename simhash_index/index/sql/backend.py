"""SqlIndex: the index in SQLite (the default) or PostgreSQL, through SQLAlchemy.

check_and_add is atomic across processes: SQLite runs it under `BEGIN IMMEDIATE` (one
writer at a time), PostgreSQL under advisory locks on what the check reads (batch.py).
Reads run on a pool of their own in autocommit mode (engine.open_read_engine).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError

from ... import defaults, urls
from ...errors import IndexNotFoundError, IndexUnavailableError, InvalidArgumentError, SimhashIndexError
from ...fingerprinting.bits import to_signed
from ...fingerprinting.fingerprinter import DEFAULT, Signature
from .. import rule
from ..base import Cluster, Description, Forgotten, Index, Keyed
from ..records import (
    DEFAULT_POLICY,
    Duplicate,
    Match,
    Policy,
    StoredPage,
    key_hash,
    now,
)
from ..texts import TextSizes
from . import bulk, duplicates, forgetting
from . import texts as kept_texts
from .dialects import DIALECTS
from .engine import (
    DEFAULT_ACCESS,
    SNAPSHOT,
    WRITE,
    Access,
    call_deadline,
    is_memory,
    open_engine,
    open_read_engine,
    parse_url,
    sqlite_file,
)
from .layouts import Layout
from .lookup import LOOKUPS, Lookup, LookupName, MemoryLookup, TableLookup, table_near_pages
from .opening import add_later_columns, layout_in_url, make_parent_folder, open_tables
from .schema import DOCUMENTS, SCHEMA_VERSION, tables
from .statements import (
    RawConnection,
    document_row,
    execute_many,
    fetch,
    page_columns,
    pages_where,
    present,
    row_page,
    upsert_documents,
    with_ages,
)
from .writing import Writer


def ages_of(version: str, missing: frozenset[str]) -> str | None:
    """What selects a page's words, own date and Last-Modified at this schema version (None:
    it keeps none of them, before version 5)."""
    if version != SCHEMA_VERSION:
        return None
    return "words, dated, " + present(DOCUMENTS, "modified", missing)


class SqlIndex(Index):
    """Near-duplicate index in an SQLite file or a PostgreSQL database."""

    def __init__(
        self,
        url: str | URL = defaults.DATABASE_URL,
        *,
        policy: Policy = DEFAULT_POLICY,
        scheme: str | None = DEFAULT.scheme,
        create: bool = True,
        layout: Layout | None = None,
        access: Access = DEFAULT_ACCESS,
        radius_chosen: bool = True,
        keep_texts: bool = False,
        lookup: LookupName = "memory",
    ) -> None:
        """`radius_chosen`: False when the policy's radius is the default, which a layout that
        answers less (halves) caps at its largest; a chosen radius beyond it is refused.
        `lookup`: where a write finds the stored pages near its pages (lookup.py): "memory"
        (an index of the fingerprints in this process) or "sql" (the table's block columns)."""
        if create and access.read_only:
            raise InvalidArgumentError("an index opened read-only cannot be created: pass create=False")
        if lookup not in LOOKUPS:
            raise InvalidArgumentError(
                f"lookup must be one of {LOOKUPS} ('memory' unless memory is short); got {lookup!r}"
            )
        self._typed = url if isinstance(url, str) else url.render_as_string(hide_password=False)
        self.url = urls.masked(self._typed)
        self.policy = policy
        self.access = access
        self.read_only = access.read_only
        self.keep_texts = keep_texts
        self._load = bulk.NO_LOAD
        self._deciding = threading.Lock()  # one batch at a time follows the table in this process
        self.sqlalchemy_url, layout = layout_in_url(parse_url(url), layout)
        self.dialect = DIALECTS[self.sqlalchemy_url.get_backend_name()]
        self._file = sqlite_file(self.sqlalchemy_url)
        if create:
            make_parent_folder(self.sqlalchemy_url, self.url)
        elif self._file is not None and not self._file.is_file():  # connecting would create it
            raise IndexNotFoundError(f"{self.url}: no such database file {str(self._file)!r}")
        self._engine = open_engine(self.sqlalchemy_url, access)
        self._reads = open_read_engine(self.sqlalchemy_url, self._engine, access)
        self._lock: AbstractContextManager[Any] = threading.RLock() if is_memory(self.sqlalchemy_url) else nullcontext()
        with self._released_on_failure():
            with self.transaction(write=create) as conn:
                opened = open_tables(
                    conn, self.url, scheme=scheme, default_scheme=DEFAULT.scheme, layout=layout, create=create
                )
            if opened.missing and not access.read_only:
                with self.transaction() as conn:
                    add_later_columns(conn)
                opened = replace(opened, missing=frozenset())
            # the columns a read-only opener finds (an older schema lacks some)
            self._ages = ages_of(opened.version, opened.missing)
            self._page_columns = page_columns(opened.missing)
            self.layout = opened.layout
            if not radius_chosen and self.max_distance > self.layout.max_radius:
                self.policy = replace(self.policy, max_distance=self.layout.max_radius)
            self.layout.check_radius(self.max_distance)
        self.scheme = opened.scheme
        self.created = opened.created
        self._version = opened.version
        self._evidence = opened.evidence
        self.tables = tables(self.layout, evidence=self._evidence)
        self.lookup: Lookup = (
            MemoryLookup(self.layout, self.transaction, self.dialect)
            if lookup == "memory"
            else TableLookup(self.layout)
        )
        self.writer = Writer(self.transaction, self.layout, self.lookup, self._evidence, self.url, self.dialect)

    @property
    def location(self) -> str:
        return self.url if self._file is None else str(self._file)

    # -- connections -----------------------------------------------------------------

    @contextmanager
    def transaction(
        self, *, write: bool = True, single_statement: bool = False, snapshot: bool = False
    ) -> Iterator[Connection]:
        """A connection in a transaction, for reports and tools that read the tables directly.

        `write=True` takes SQLite's writer lock at the start. SQLite reads run in
        autocommit mode, unless `snapshot` asks that they all see one snapshot (PostgreSQL:
        REPEATABLE READ); `single_statement` reads run in autocommit mode on PostgreSQL too.
        Connection failures become IndexUnavailableError, other database errors SimhashIndexError.
        """
        options: dict[str, Any] = {WRITE: write, SNAPSHOT: snapshot and not write}
        isolation = None if write else self.dialect.read_isolation(snapshot=snapshot, single_statement=single_statement)
        if isolation is not None:
            options["isolation_level"] = isolation
        with self._errors_named(), self._lock, self._engine.connect() as conn:
            conn = conn.execution_options(**options)
            with self._deadline(conn.connection.dbapi_connection), conn.begin():
                yield conn

    @contextmanager
    def _deadline(self, dbapi_connection: Any) -> Iterator[None]:
        """PostgreSQL: a call still blocked past the statement timeout (a frozen server) fails."""
        if not self.dialect.networked:
            yield
            return
        timeout = self.access.statement_timeout
        seconds = timeout + max(1.0, 0.1 * timeout)  # the server's own statement_timeout comes first
        with call_deadline(dbapi_connection, seconds) as fired:
            try:
                yield
            except (DBAPIError, self._engine.dialect.loaded_dbapi.Error) as exc:
                if fired[0]:
                    raise IndexUnavailableError(
                        f"database {self.url} is unavailable: no answer within {seconds:g} s "
                        "(statement_timeout, SIMHASH_STATEMENT_TIMEOUT)"
                    ) from exc
                raise

    @contextmanager
    def _single_read(self) -> Iterator[RawConnection]:
        """A pooled DB-API connection in autocommit mode, for one read statement: SQLAlchemy's
        Connection, begin and commit would cost a third of a lookup. A connection that failed
        is discarded."""
        with self._errors_named(), self._lock:
            try:
                raw = self._reads.raw_connection()
            except self._reads.dialect.loaded_dbapi.Error as exc:  # the pool does not wrap these
                raise IndexUnavailableError(f"database {self.url} is unavailable: {self._scrub(exc)}") from exc
            try:
                with self._deadline(raw.dbapi_connection):
                    yield RawConnection(self._reads.dialect, raw)
            except (DBAPIError, IndexUnavailableError):
                raw.invalidate()
                raise
            finally:
                raw.close()

    @contextmanager
    def _errors_named(self) -> Iterator[None]:
        try:
            yield
        except (OperationalError, InterfaceError) as exc:
            raise IndexUnavailableError(f"database {self.url} is unavailable: {self._scrub(exc.orig)}") from exc
        except SQLAlchemyError as exc:
            raise SimhashIndexError(f"database {self.url} failed: {self._scrub(exc)}") from exc

    # -- the interface -------------------------------------------------------------------

    def ping(self) -> None:
        with self._single_read() as conn:
            fetch(conn, "SELECT 1", ())

    def __len__(self) -> int:
        with self._single_read() as conn:
            return int(fetch(conn, "SELECT count(*) FROM simhash_documents", ())[0][0])

    def describe(self) -> Description:
        return Description(self.dialect.name, self._version, self.layout.name, self.layout.assignment)

    def _check_and_add_many(self, pages: Sequence[Keyed]) -> list[Match | None]:
        """Atomically, seeing every committed page (writing.py)."""
        self._writable()
        with self._deciding:
            return self.writer.check_and_add_many(pages, self.policy)

    @property
    def keys_unique(self) -> bool:
        """False during a bulk load that dropped the key-hash index: writes may not rely on it."""
        return self._load.keys_unique

    def _start_bulk_load(self) -> None:
        with self.transaction() as conn:
            self._load = bulk.start(conn, self.tables.documents)

    def _end_bulk_load(self) -> None:
        load, self._load = self._load, bulk.NO_LOAD
        if load.rebuild:
            with self.transaction() as conn:
                bulk.finish(conn, self.tables.documents)

    def _add_many(self, pages: Sequence[Keyed]) -> None:
        self._writable()
        with self.transaction() as conn:
            when = self.dialect.db_time(now())
            rows = [document_row(self.layout, key, signature, when, dialect=self.dialect) for key, signature in pages]
            mark = self.dialect.mark
            execute_many(conn, upsert_documents(self.layout, mark, replace=self.keys_unique), rows)
            if fetch(conn, "SELECT id FROM simhash_duplicates LIMIT 1", ()):  # a stored page is nobody's duplicate
                execute_many(
                    conn, f"DELETE FROM simhash_duplicates WHERE key_hash = {mark}", [(row[1],) for row in rows]
                )
            self.writer.wrote(conn, len(rows), locked=False)

    def _store_texts(self, pages: list[tuple[str, bytes]]) -> None:
        self._writable()
        with self.transaction() as conn:
            kept_texts.store(conn, pages)

    def _texts(self, keys: list[str]) -> dict[str, bytes]:
        with self.transaction(write=False) as conn:
            return kept_texts.read(conn, keys)

    def _text_sizes(self) -> TextSizes:
        with self.transaction(write=False) as conn:
            return kept_texts.sizes(conn)

    def _forget(self, keys: list[str]) -> Forgotten:
        self._writable()
        return self._without_orphan_texts(forgetting.forget(self.transaction, keys))

    def _prune(self, before: datetime) -> Forgotten:
        self._writable()
        return self._without_orphan_texts(forgetting.prune(self.transaction, self.dialect.db_time(before)))

    def _stored_before(self, before: datetime) -> int:
        with self.transaction(write=False) as conn:
            statement = f"SELECT count(*) FROM simhash_documents WHERE stored_at < {self.dialect.mark}"
            return int(fetch(conn, statement, (self.dialect.db_time(before),))[0][0])

    def _reset(self) -> Forgotten:
        self._writable()
        with self.transaction() as conn:
            return self._without_orphan_texts(forgetting.reset(conn), conn)

    def _without_orphan_texts(self, forgotten: Forgotten, conn: Connection | None = None) -> Forgotten:
        """The texts of the pages forgotten go with them."""
        if forgotten.pages or forgotten.duplicates:
            if conn is not None:
                kept_texts.drop_orphans(conn)
            else:
                with self.transaction() as fresh:
                    kept_texts.drop_orphans(fresh)
        return forgotten

    def _query(self, fingerprint: int) -> list[Match]:
        with self._single_read() as conn:
            pages = self._near(conn, fingerprint)
        found = rule.near(Signature(fingerprint, None), pages, self.max_distance)
        return [Match(page.key, page.signature.simhash, bits) for bits, page in found]

    def _near(self, conn: RawConnection | Connection, fingerprint: int) -> list[StoredPage]:
        signature = Signature(fingerprint, None)
        return table_near_pages(conn, self.layout, [signature], self.max_distance, self._page_columns)[0]

    def _get(self, key: str) -> Match | None:
        page = self._page(key)
        return None if page is None else Match(key, page.signature.simhash, 0, exact=True)

    def _page(self, key: str) -> StoredPage | None:
        with self._single_read() as conn:
            rows = fetch(conn, self._pages_where("key_hash", 1), self.dialect.in_parameters([key_hash(key)]))
        for row in rows:
            if row[1] == key:
                return row_page(row, self.dialect)
        return None

    def _logged(self, since: datetime | None) -> Iterator[Duplicate]:
        with self.transaction(write=False) as conn:
            yield from duplicates.logged(conn, self.tables, self._evidence, since)

    def _duplicate(self, key: str) -> Duplicate | None:
        with self.transaction(write=False) as conn:
            return duplicates.one(conn, self.tables, self._evidence, key)

    def _duplicates_of(self, key: str) -> list[Duplicate]:
        with self.transaction(write=False) as conn:
            return duplicates.against(conn, self.tables, self._evidence, key)

    def clusters(self, *, limit: int | None = None) -> Iterator[Cluster]:
        """Each stored page that has duplicates, with them: the largest clusters first (one GROUP BY)."""
        with self.transaction(write=False) as conn:
            yield from duplicates.clusters(conn, self.tables, self._evidence, limit)

    def _neighbourhood(self, key: str, signature: Signature) -> list[StoredPage]:
        found: dict[str, StoredPage] = {}
        with self._single_read() as conn:
            for row in fetch(conn, self._pages_where("key_hash", 1), self.dialect.in_parameters([key_hash(key)])):
                found[row[1]] = row_page(row, self.dialect)
            if signature.text_hash is not None:
                statement = self._pages_where("text_hash", 1)
                for row in fetch(conn, statement, self.dialect.in_parameters([to_signed(signature.text_hash)])):
                    found[row[1]] = row_page(row, self.dialect)
            fingerprint = signature.near_simhash
            if fingerprint is not None:
                found.update((page.key, page) for page in self._near(conn, fingerprint))
            pages = self._with_ages(conn, list(found.values()))
        return sorted(pages, key=lambda page: page.order)

    def _pages_where(self, column: str, count: int) -> str:
        return pages_where(self.dialect, column, count, self._page_columns)

    def _with_ages(self, conn: RawConnection | Connection, pages: list[StoredPage]) -> list[StoredPage]:
        """The pages with their words and dates, which a survivor policy compares."""
        return pages if self._ages is None else with_ages(conn, pages, self._ages)

    def close(self) -> None:
        self._engine.dispose()
        self._reads.dispose()
