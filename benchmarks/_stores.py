"""Where the SQL benchmarks put an index: a throwaway PostgreSQL schema, and what it takes on disk."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from simhash_index import SimhashIndex

DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
LAYOUT = "halves"  # what the scale benchmarks measure; layouts.py compares both


@contextmanager
def postgres_schema(base_url: str) -> Iterator[str]:
    """A URL whose search_path is a fresh schema, dropped afterwards."""
    base = make_url(base_url).set(drivername="postgresql+psycopg")
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        try:
            yield base.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    finally:
        admin.dispose()


def vacuum(url: str) -> None:
    """VACUUM ANALYZE after a PostgreSQL load, as autovacuum would: index-only scans need the visibility map."""
    engine = create_engine(make_url(url).set(drivername="postgresql+psycopg"), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("VACUUM (ANALYZE) simhash_documents")
    finally:
        engine.dispose()


def disk_bytes(backend: str, index: SimhashIndex, path: Path | None) -> int:
    """SQLite: the database file with the WAL folded in; PostgreSQL: the index's tables with their indexes."""
    if backend == "sqlite":
        connection = sqlite3.connect(path, isolation_level=None)
        try:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            connection.close()
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    with index.transaction(write=False) as conn:
        return conn.exec_driver_sql(
            "SELECT pg_total_relation_size('simhash_documents') + pg_total_relation_size('simhash_duplicates')"
        ).scalar_one()


def storage_parts(backend: str, index: SimhashIndex, path: Path | None) -> dict[str, int]:
    """Bytes per table and index (SQLite: dbstat; PostgreSQL: per relation): where a page's bytes go."""
    if backend == "sqlite":
        connection = sqlite3.connect(path)
        try:
            return dict(connection.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall())
        finally:
            connection.close()
    with index.transaction(write=False) as conn:
        rows = conn.exec_driver_sql(
            "SELECT c.relname, CASE WHEN c.relkind = 'r' THEN pg_table_size(c.oid) ELSE pg_relation_size(c.oid) END "
            "FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'i')"
        ).all()
    return {name: size for name, size in rows}


def candidate_statement(index: Any, dialect: str) -> str:
    """The SQL reading a fingerprint's candidate rows (id, fingerprint, exact_only) in the index's layout."""
    statement: str = index.layout.candidates_sql("sqlite")
    return statement.replace("?", "%s") if dialect == "postgresql" else statement


def lookup_statement(index: Any, dialect: str, fingerprint: int) -> tuple[str, tuple[object, ...]]:
    """The statement query() runs for one fingerprint, and its parameters."""
    layout = index.layout
    if dialect == "postgresql":
        return layout.near_sql(), layout.near_parameters(fingerprint, index.max_distance)
    return layout.candidates_sql("sqlite"), layout.candidates_parameters(fingerprint)
