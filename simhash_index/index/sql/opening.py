"""Opening an SQL index: creating its tables, upgrading an older one, and checking that
it holds what the caller expects (schema version, fingerprint scheme, layout)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import URL, Connection

from ... import defaults
from ...errors import (
    IndexNotFoundError,
    IndexUnavailableError,
    InvalidArgumentError,
    LayoutMismatchError,
    SchemaVersionError,
    SchemeMismatchError,
    SimhashIndexError,
)
from . import migrate
from .dialects import dialect_of
from .engine import SCHEMA_LOCK, sqlite_file
from .feeds import feed_for
from .layouts import Layout
from .schema import SCHEMA_VERSION, evidence_of, tables
from .table_indexes import build_missing_indexes

READABLE = ("2", "3", "4", SCHEMA_VERSION)  # versions read as they are, with the evidence columns they have


@dataclass(frozen=True)
class Opened:
    """What an opened index holds."""

    version: str
    scheme: str
    layout: Layout
    missing: frozenset[str] = frozenset()  # the schema.LATER columns a version 5 index lacks
    created: bool = False  # open_tables created the tables

    @property
    def evidence(self) -> tuple[str, ...]:
        """The evidence columns the duplicates log has."""
        return evidence_of(self.version, self.missing)


def lock_schema(conn: Connection) -> None:
    """Two processes opening a new database must not both create it."""
    dialect_of(conn).lock(conn, SCHEMA_LOCK)


def stored_meta(conn: Connection) -> dict[str, str] | None:
    """The simhash_meta rows, or None when the database has no simhash tables."""
    if not conn.dialect.has_table(conn, "simhash_meta"):
        return None
    return dict(conn.exec_driver_sql("SELECT name, value FROM simhash_meta").all())


def check_server(conn: Connection, shown: str) -> None:
    server, dialect = conn.dialect.server_version_info or (), dialect_of(conn)
    if server < dialect.least_server:
        least = ".".join(map(str, dialect.least_server))
        raise SimhashIndexError(
            f"{shown} runs {dialect.title} {'.'.join(map(str, server))}; "
            f"simhash-index needs {dialect.title} {least} or later"
        )


def open_tables(
    conn: Connection, shown: str, *, scheme: str | None, default_scheme: str, layout: Layout | None, create: bool
) -> Opened:
    """Create (when `create`) or read the index's tables and check them; the caller's
    transaction writes when `create` is set, and must not otherwise."""
    check_server(conn, shown)
    if create:
        lock_schema(conn)
    meta = stored_meta(conn)
    created = meta is None
    if meta is None:
        if not create:
            raise IndexNotFoundError(f"{shown} has no simhash tables: is it the right database?")
        chosen = layout or Layout("blocks")
        tables(chosen).metadata.create_all(conn)
        meta = {
            "schema_version": SCHEMA_VERSION,
            "scheme": scheme or default_scheme,
            "layout": chosen.name,
            "block_assignment": chosen.assignment,
        }
        conn.execute(
            text("INSERT INTO simhash_meta (name, value) VALUES (:name, :value)"),
            [{"name": name, "value": value} for name, value in meta.items()],
        )
    version = meta.get("schema_version")
    if version in migrate.UPGRADABLE and create:
        migrate.upgrade(conn, version)
        meta = stored_meta(conn) or {}
        version = meta.get("schema_version")
    if version not in READABLE:
        upgrade = (
            ": opening it to write (a crawl, or `simhash-index import`) upgrades it"
            if version in migrate.UPGRADABLE
            else (": use a new database, or the simhash-index version that wrote it")
        )
        raise SchemaVersionError(
            f"{shown} has schema version {version}; this simhash-index reads version {SCHEMA_VERSION}{upgrade}"
        )
    recorded = meta.get("scheme")
    if recorded is not None and scheme is not None and recorded != scheme:
        raise SchemeMismatchError(
            f"{shown} holds fingerprints of another scheme, which are not comparable:\n"
            f"  database: {recorded}\n  asked:    {scheme}\n"
            "use the database's fingerprinter settings, or a new database"
        )
    found = Layout(meta.get("layout", "halves"), meta.get("block_assignment", "contiguous"))  # type: ignore[arg-type]
    if layout is not None and layout.describe() != found.describe():
        raise LayoutMismatchError(
            f"{shown} is a {found.describe()} index and cannot be opened as a {layout.describe()} one: "
            "open it without a layout (it keeps its own), or use a new database"
        )
    if create:
        build_missing_indexes(conn, tables(found, evidence=evidence_of(version or SCHEMA_VERSION)).documents)
        feed_for(conn).install(conn)
        if "scheme" not in meta:
            conn.execute(
                text("INSERT INTO simhash_meta (name, value) VALUES ('scheme', :v)"), {"v": scheme or default_scheme}
            )
        if version == SCHEMA_VERSION:
            migrate.add_later_columns(conn)
    missing = migrate.missing_later_columns(conn) if version == SCHEMA_VERSION and not create else frozenset()
    return Opened(version or SCHEMA_VERSION, recorded or scheme or default_scheme, found, missing, created)


def add_later_columns(conn: Connection) -> None:
    """The tables gain the schema.LATER columns they lack, for an index opened to write without
    `create` (open_tables adds them otherwise); the caller's transaction writes."""
    lock_schema(conn)
    migrate.add_later_columns(conn)


def layout_in_url(url: URL, layout: Layout | None) -> tuple[URL, Layout | None]:
    """`?layout=halves&block_assignment=interleaved` in the URL: ours, taken out of what the
    driver sees; the same as the arguments of the same names (not two different ones)."""
    query = url.query
    if "layout" not in query and "block_assignment" not in query:
        return url, layout
    name = query.get("layout", defaults.LAYOUT)
    assignment = query.get("block_assignment", defaults.BLOCK_ASSIGNMENT)
    if not isinstance(name, str) or not isinstance(assignment, str):
        raise InvalidArgumentError("give ?layout= and ?block_assignment= once each in the URL")
    given = Layout(name, assignment)  # type: ignore[arg-type]
    if layout is not None and layout.describe() != given.describe():
        raise InvalidArgumentError(
            f"two different layouts given (the URL's and layout=): {given.describe()} and {layout.describe()}"
        )
    return url.difference_update_query(["layout", "block_assignment"]), given


def make_parent_folder(url: URL, shown: str) -> None:
    """Create the folder of a new SQLite file, as Scrapy's -O does for feeds."""
    path = sqlite_file(url)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise IndexUnavailableError(f"cannot create the folder of {shown}: {exc}") from None
