"""SimhashIndex: stored fingerprints in SQL, found by lookups on their two 32-bit halves."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from contextlib import contextmanager
from datetime import datetime, timezone

from sqlalchemy import func, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError

from . import migrate, schema, sql
from .bulk import InsertionSession
from . import urls
from .engine import SCHEMA_LOCK, WRITE, advisory_lock_keys, is_memory, open_engine, open_read_engine, parse_url
from .errors import (
    IndexNotFoundError,
    IndexUnavailableError,
    SchemaVersionError,
    SchemeMismatchError,
    SimhashIndexError,
)
from .fingerprint import DEFAULT, Signature
from .indexes import build_missing_indexes
from .records import (  # noqa: F401 - re-exported: index.py is where users find them
    DEFAULT_MIN_SIMILARITY,
    MAX_SUPPORTED_DISTANCE,
    Duplicate,
    Fingerprint,
    Match,
    _signature,
    as_u64,
    as_utc,
    check_key,
    check_policy,
    key_hash,
)
from .simhash import blocks, hamming, to_signed, to_unsigned
from .sketch import similarity


def _now() -> datetime:
    """The current UTC time in whole seconds, as every SQL backend stores it."""
    return datetime.now(timezone.utc).replace(microsecond=0)


class SimhashIndex:
    """Near-duplicate index over SQLite (default) or PostgreSQL.

    `check_and_add` is atomic across processes: of a group of mutual
    near-duplicates checked concurrently, exactly one is stored.
    """

    def __new__(cls, url: str | URL = "sqlite:///simhash.db", **kwargs: object) -> SimhashIndex:
        """A redis:// or rediss:// URL gives a RedisIndex (same API, duck-typed), anything else a SimhashIndex."""
        if isinstance(url, str) and url.startswith(("redis://", "rediss://")):
            from .redis_index import RedisIndex  # redis_index imports this module

            return RedisIndex(url, **kwargs)  # not a SimhashIndex: Python skips __init__
        return super().__new__(cls)

    def __init__(
        self,
        url: str | URL = "sqlite:///simhash.db",
        *,
        max_distance: int = 3,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        scheme: str | None = DEFAULT.scheme,
        create: bool = True,
    ) -> None:
        check_policy(max_distance, min_similarity)
        self._typed = url if isinstance(url, str) else url.render_as_string(hide_password=False)
        self._shown = urls.masked(self._typed)
        self.url = parse_url(url)
        self.max_distance = max_distance
        self.min_similarity = min_similarity
        if create:
            _make_parent_folder(self.url)
        self._engine = open_engine(self.url)
        self._reads = open_read_engine(self.url, self._engine)
        self._postgres = self.url.get_backend_name() == "postgresql"
        self._lock = threading.RLock() if is_memory(self.url) else None
        try:
            self.scheme = self._open(scheme, create)
        except SimhashIndexError as exc:
            self.close()
            if type(exc) is SimhashIndexError:  # e.g. not a database file: it cannot be opened
                raise IndexUnavailableError(str(exc)) from exc
            raise
        except Exception:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"SimhashIndex({self._shown!r}, max_distance={self.max_distance})"

    # -- opening -----------------------------------------------------------------

    def _open(self, scheme: str | None, create: bool) -> str:
        if not create and self.url.get_backend_name() == "sqlite" and not is_memory(self.url):
            path = sqlite_path(self.url)
            if not path.is_file():  # connecting would create it
                raise IndexNotFoundError(f"{self._shown}: no such database file {str(path.absolute())!r}")
        if create:
            self._upgrade_if_older()
        with self.transaction(write=create) as conn:
            server = conn.dialect.server_version_info or ()
            if self._postgres and server < (14,):  # lookups call bit_count (sql.NEAR_POSTGRES)
                raise SimhashIndexError(
                    f"{self._shown} runs PostgreSQL {'.'.join(map(str, server))}; simhash-index needs "
                    "PostgreSQL 14 or later"
                )
            if self._postgres and create:  # two crawlers opening a new DB must not both create it
                self._lock_schema(conn)
            exists = conn.dialect.has_table(conn, schema.meta.name)
            if not exists and not create:
                raise IndexNotFoundError(f"{self._shown} has no simhash tables: is it the right database?")
            if not exists:
                schema.metadata.create_all(conn)
            stored = dict(conn.execute(select(schema.meta.c.name, schema.meta.c.value)).all())
            version = stored.get("schema_version")
            if version is not None and version != schema.SCHEMA_VERSION:
                raise SchemaVersionError(
                    f"{self._shown} has schema version {version}; this simhash-index reads version "
                    f"{schema.SCHEMA_VERSION}"
                    + (
                        ": opening it with create=True (a crawl, or `simhash-index import`) will upgrade it"
                        if version in migrate.UPGRADABLE
                        else ": use a new database, or the simhash-index version that wrote it"
                    )
                )
            recorded = stored.get("scheme")
            if recorded is not None and scheme is not None and recorded != scheme:
                raise SchemeMismatchError(
                    f"{self._shown} holds fingerprints of another scheme, which are not comparable:\n"
                    f"  database: {recorded}\n  asked:    {scheme}\n"
                    "use the database's fingerprinter settings, or a new database"
                )
            if exists and create:
                build_missing_indexes(conn)
            missing = {"schema_version": schema.SCHEMA_VERSION, "scheme": scheme or DEFAULT.scheme}
            rows = [{"name": k, "value": v} for k, v in missing.items() if k not in stored]
            if rows and create:
                conn.execute(self._insert(schema.meta).on_conflict_do_nothing(), rows)
            return recorded or missing["scheme"]

    def _upgrade_if_older(self) -> None:
        """Upgrade tables an older simhash-index wrote (migrate.UPGRADABLE), once, whoever opens them first."""
        for write in (False, True):
            with self.transaction(write=write) as conn:
                if write and self._postgres:
                    self._lock_schema(conn)
                if not conn.dialect.has_table(conn, schema.meta.name):
                    return
                version = conn.execute(
                    select(schema.meta.c.value).where(schema.meta.c.name == "schema_version")
                ).scalar()
                if version not in migrate.UPGRADABLE:
                    return
                if write:
                    migrate.upgrade(conn, version)

    def _lock_schema(self, conn: Connection) -> None:
        conn.execute(text("SELECT pg_advisory_xact_lock(:c, 0)"), {"c": SCHEMA_LOCK})

    def _insert(self, table):  # noqa: ANN001, ANN202 - dialect-specific insert
        return (postgresql.insert if self._postgres else sqlite.insert)(table)

    @contextmanager
    def transaction(self, *, write: bool = True, single_statement: bool = False) -> Iterator[Connection]:
        """A connection in a transaction, for reports and tools that read the tables directly.

        `write=True` takes SQLite's writer lock at the start. SQLite reads run in
        autocommit mode; `single_statement` reads do on PostgreSQL too, saving the BEGIN
        and COMMIT round trips (not for server-side cursors, which need a transaction).
        Connection failures become IndexUnavailableError, other database errors
        SimhashIndexError, naming the DB.
        """
        options: dict = {WRITE: write}
        if single_statement and not write and self._postgres:
            options["isolation_level"] = "AUTOCOMMIT"
        with self._errors_named(), self._lock or _NO_LOCK, self._engine.connect() as conn:
            conn = conn.execution_options(**options)
            with conn.begin():
                yield conn

    @contextmanager
    def _single_read(self) -> Iterator[sql.RawConnection]:
        """Where one read statement runs: a pooled DB-API connection in autocommit mode
        (engine.open_read_engine), skipping SQLAlchemy's Connection and its begin and commit,
        a third of a lookup's time. A connection that failed is discarded, as SQLAlchemy's
        Connection would."""
        with self._errors_named(), self._lock or _NO_LOCK:
            try:
                raw = self._reads.raw_connection()
            except self._reads.dialect.loaded_dbapi.Error as exc:  # the pool does not wrap these
                raise IndexUnavailableError(f"database {self._shown} is unavailable: {self._scrub(exc)}") from exc
            try:
                yield sql.RawConnection(self._reads.dialect, raw)
            except DBAPIError:
                raw.invalidate()
                raise
            finally:
                raw.close()

    def _scrub(self, error: object) -> str:
        return urls.scrub(urls.first_line(error), self._typed)

    @contextmanager
    def _errors_named(self) -> Iterator[None]:
        """Connection failures as IndexUnavailableError, other database errors as SimhashIndexError, naming the DB."""
        try:
            yield
        except (OperationalError, InterfaceError) as exc:
            raise IndexUnavailableError(f"database {self._shown} is unavailable: {self._scrub(exc.orig)}") from exc
        except SQLAlchemyError as exc:
            raise SimhashIndexError(f"database {self._shown} failed: {self._scrub(exc)}") from exc

    # -- reads --------------------------------------------------------------------

    def __len__(self) -> int:
        with self.transaction(write=False, single_statement=True) as conn:
            return conn.execute(select(func.count()).select_from(schema.documents)).scalar_one()

    def query(self, fingerprint: int) -> list[Match]:
        """Every stored fingerprint within max_distance, nearest first."""
        fingerprint = as_u64(fingerprint)
        with self._single_read() as conn:
            return self._near(conn, fingerprint)

    def get(self, key: str) -> Match | None:
        """The stored page with this key, as a Match at distance 0, or None."""
        d = schema.documents.c
        check_key(key)
        with self.transaction(write=False) as conn:
            row = conn.execute(
                select(d.key, d.fingerprint).where(d.key_hash == key_hash(key), d.key == key)
            ).first()
        if row is None:
            return None
        return Match(row.key, None if row.fingerprint is None else to_unsigned(row.fingerprint), 0, exact=True)

    def duplicates(self) -> list[Duplicate]:
        """Every page logged as a duplicate, oldest first."""
        t = schema.duplicates.c
        with self.transaction(write=False) as conn:
            rows = conn.execute(
                select(t.key, t.duplicate_of, t.distance, t.exact, t.seen_at).order_by(t.id)
            ).all()
        return [Duplicate(row.key, row.duplicate_of, row.distance, row.exact, as_utc(row.seen_at)) for row in rows]

    def _near(self, conn: Connection | sql.RawConnection, fingerprint: int, sketch: bytes | None = None) -> list[Match]:
        """Stored pages within max_distance (and min_similarity, given a sketch), nearest first."""
        matches = []
        for distance, _, key, stored, stored_sketch in sql.near_rows(conn, fingerprint, self.max_distance):
            score = None
            if sketch is not None and stored_sketch is not None and len(stored_sketch) == len(sketch):
                score = similarity(sketch, bytes(stored_sketch))
                if score < self.min_similarity:
                    continue
            matches.append(Match(key, to_unsigned(stored), distance, similarity=score))
        return matches

    def _exact(self, conn: Connection, signature: Signature) -> Match | None:
        if signature.text_hash is None:
            return None
        statement = sql.SELECT_BY_TEXT.format(mark=sql.MARKS[conn.dialect.paramstyle])
        rows = sql.fetch(conn, statement, (to_signed(signature.text_hash),))
        if not rows:
            return None
        key, stored = rows[0]
        stored = None if stored is None else to_unsigned(stored)
        both = stored is not None and signature.simhash is not None
        return Match(key, stored, hamming(stored, signature.simhash) if both else 0, exact=True)

    # -- writes -------------------------------------------------------------------

    def add(self, key: str, fingerprint: Fingerprint, *, text_hash: int | None = None, sketch: bytes | None = None) -> None:
        """Store a page (replacing the stored one with this key), without checking."""
        self.add_many([(key, _signature(fingerprint, text_hash, sketch))])

    def add_many(self, items: Iterable[tuple[str, Fingerprint]], *, batch_size: int = 100_000) -> int:
        """Store many (key, fingerprint or Signature) pairs without checks; returns how many."""
        with self.insertion_session(batch_size=batch_size) as session:
            for key, fingerprint in items:
                session.add(key, fingerprint)
        return session.stored

    def insertion_session(
        self, *, batch_size: int = 100_000, on_batch: Callable[[int], None] | None = None
    ) -> InsertionSession:
        """A context manager for bulk loads: `with index.insertion_session() as s: s.add(key, fp)`."""
        return InsertionSession(self, batch_size=batch_size, on_batch=on_batch)

    def _upsert(self, rows: list[tuple], *, replace: bool = True) -> int:
        """Insert or replace document rows in one transaction; a stored page is no longer a logged duplicate.

        `replace=False`: plain inserts, for a bulk load that dropped the key-hash index.
        """
        with self.transaction() as conn:
            self._write_documents(conn, rows, replace=replace)
            if conn.execute(select(schema.duplicates.c.id).limit(1)).first() is not None:
                statement = sql.DELETE_LOGGED.format(mark=sql.MARKS[conn.dialect.paramstyle])
                conn.exec_driver_sql(statement, [(row[1],) for row in rows])
        return len(rows)

    @staticmethod
    def _write_documents(conn: Connection, rows: list[tuple], *, replace: bool = True) -> None:
        """Upsert rows of sql.UPSERT_COLUMNS but stored_at, straight to the driver's executemany:
        SQLAlchemy's per-row parameter processing costs more than SQLite's inserts."""
        stored_at = _now()
        process = schema.documents.c.stored_at.type.dialect_impl(conn.dialect).bind_processor(conn.dialect)
        stored_at = process(stored_at) if process else stored_at
        mark = sql.MARKS[conn.dialect.paramstyle]
        statement = (sql.UPSERT if replace else sql.INSERT).format(marks=", ".join([mark] * len(sql.UPSERT_COLUMNS)))
        conn.exec_driver_sql(statement, [(*row, stored_at) for row in rows])

    def check_and_add(
        self, key: str, fingerprint: Fingerprint, *, text_hash: int | None = None, sketch: bytes | None = None
    ) -> Match | None:
        """Store the page unless it duplicates a stored one; return that one, or None.

        A key that is already stored is never a duplicate of itself: if its
        content changed, its row is updated in place. A key logged as a
        duplicate before is checked again, and stored if it no longer is one.
        """
        signature = _signature(fingerprint, text_hash, sketch)
        row = sql.document_values(check_key(key), signature)
        own_hash = row[1]  # key_hash(key)
        with self.transaction() as conn:
            # Plain SQL on the driver's cursor: this runs once per crawled page.
            mark = sql.MARKS[conn.dialect.paramstyle]
            if self._postgres:
                self._lock_neighbourhood(conn, signature, own_hash)
            stored = sql.fetch(conn, sql.SELECT_BY_KEY.format(mark=mark), (own_hash,))
            if stored:
                if stored[0][1:] != row[sql.STORED_CONTENT]:
                    self._write_documents(conn, [row])
                return None
            match = self._exact(conn, signature)
            if match is None and signature.near_matchable:
                near = self._near(conn, signature.simhash, signature.sketch)
                match = near[0] if near else None
            if match is None:
                conn.exec_driver_sql(sql.DELETE_LOGGED.format(mark=mark), (own_hash,))
                self._write_documents(conn, [row])
                return None
            self._log_duplicate(conn, key, own_hash, match)
            return match

    def _lock_neighbourhood(self, conn: Connection, signature: Signature, own_hash: int) -> None:
        values = blocks(signature.simhash) if signature.near_matchable else None
        keys = advisory_lock_keys(values, signature.text_hash, own_hash)
        calls = ", ".join(f"pg_advisory_xact_lock(:c{i}, :o{i})" for i in range(len(keys)))
        params = {}
        for i, (class_id, object_id) in enumerate(keys):
            params[f"c{i}"], params[f"o{i}"] = class_id, object_id
        conn.execute(text(f"SELECT {calls}"), params)

    def _log_duplicate(self, conn: Connection, key: str, own_hash: int, match: Match) -> None:
        d = schema.documents.c
        target = conn.execute(select(d.id).where(d.key_hash == key_hash(match.key), d.key == match.key)).scalar_one()
        row = {
            "key": key,
            "key_hash": own_hash,
            "duplicate_of": match.key,
            "duplicate_of_id": target,
            "distance": match.distance,
            "exact": match.exact,
            "seen_at": _now(),
        }
        statement = self._insert(schema.duplicates)
        conn.execute(
            statement.on_conflict_do_update(
                index_elements=["key_hash"], set_={c: statement.excluded[c] for c in row if c != "key_hash"}
            ),
            row,
        )

    # -- lifecycle ----------------------------------------------------------------

    def close(self) -> None:
        self._engine.dispose()
        self._reads.dispose()

    def __enter__(self) -> SimhashIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        return None


_NO_LOCK = _NoLock()


def sqlite_path(url: URL) -> Path:
    """The file of an SQLite URL: its database, or the path of a `file:` URI (`?uri=true`)."""
    database = url.database or ""
    if url.query.get("uri") and database.startswith("file:"):
        database = database.removeprefix("file:").split("?", 1)[0]
    return Path(database)


def _make_parent_folder(url: URL) -> None:
    """Create the folder of a new SQLite file, as Scrapy's -O does for feeds."""
    if url.get_backend_name() == "sqlite" and not is_memory(url):
        try:
            sqlite_path(url).absolute().parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise IndexUnavailableError(
                f"cannot create the folder of {urls.masked(url.render_as_string(hide_password=False))}: {exc}"
            ) from None
