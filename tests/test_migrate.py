"""An index written by schema version 1 (four block columns) is upgraded in place when opened."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    create_engine,
    inspect,
)

from simhash_index import Match, SchemaVersionError, Signature, SimhashIndex
from simhash_index.fingerprinting.bits import blocks, to_signed
from simhash_index.fingerprinting.fingerprinter import DEFAULT
from simhash_index.index.records import key_hash
from simhash_index.index.sql.layouts import Layout
from simhash_index.index.sql.schema import SCHEMA_VERSION
from simhash_index.index.sql.statements import PAGE_COLUMNS, fetch
from simhash_index.index.sql.table_indexes import index_names

V1 = MetaData()
V1_META = Table("simhash_meta", V1, Column("name", Text, primary_key=True), Column("value", Text, nullable=False))
V1_DOCUMENTS = Table(
    "simhash_documents",
    V1,
    Column("id", Integer().with_variant(BigInteger, "postgresql"), primary_key=True, autoincrement=True),
    Column("key", Text, nullable=False),
    Column("key_hash", BigInteger, nullable=False, unique=True),
    Column("fingerprint", BigInteger),
    *(Column(f"block{i}", Integer) for i in range(4)),
    Column("text_hash", BigInteger),
    Column("sketch", LargeBinary),
    Column("stored_at", DateTime(timezone=True), nullable=False),
)
for _i in range(4):
    Index(f"ix_simhash_documents_block{_i}", V1_DOCUMENTS.c[f"block{_i}"], V1_DOCUMENTS.c[f"block{(_i + 1) % 4}"])
Index("ix_simhash_documents_text_hash", V1_DOCUMENTS.c.text_hash)
V1_DUPLICATES = Table(
    "simhash_duplicates",
    V1,
    Column("id", Integer().with_variant(BigInteger, "postgresql"), primary_key=True, autoincrement=True),
    Column("key", Text, nullable=False),
    Column("key_hash", BigInteger, nullable=False, unique=True),
    Column("duplicate_of", Text, nullable=False),
    Column("duplicate_of_id", V1_DOCUMENTS.c.id.type, ForeignKey("simhash_documents.id"), nullable=False),
    Column("distance", Integer, nullable=False),
    Column("exact", Boolean, nullable=False),
    Column("seen_at", DateTime(timezone=True), nullable=False),
)

NEAR, SHORT, SHORT_TEXT = 0xF0F0_1234_5678_9ABC, 0x0123_4567_89AB_CDEF, 0x5555_AAAA_5555_AAAA
STORED_AT = datetime(2026, 11, 1, 12, 30, 15, 250_000, tzinfo=timezone.utc)
SEEN_AT = datetime(2026, 11, 2, 8, 0, 59, 999_999, tzinfo=timezone.utc)


def write_version_1(url: str, *, without_indexes: bool = False) -> None:
    """Tables as simhash-index wrote them with schema version 1: a near page, a short text, a logged duplicate.

    `without_indexes`: as a bulk load killed before it rebuilt its block and text-hash indexes left them.
    """
    engine = create_engine(url)
    with engine.begin() as conn:
        V1.create_all(conn)
        if without_indexes:
            for index in V1_DOCUMENTS.indexes:
                index.drop(conn)
        conn.execute(
            V1_META.insert(), [{"name": "schema_version", "value": "1"}, {"name": "scheme", "value": DEFAULT.scheme}]
        )
        near = {f"block{i}": v for i, v in enumerate(blocks(NEAR))}
        conn.execute(
            V1_DOCUMENTS.insert(),
            [
                {
                    "key": "near",
                    "key_hash": key_hash("near"),
                    "fingerprint": to_signed(NEAR),
                    **near,
                    "text_hash": None,
                    "sketch": None,
                    "stored_at": STORED_AT,
                },
                {
                    "key": "short",
                    "key_hash": key_hash("short"),
                    "fingerprint": to_signed(SHORT),
                    **{f"block{i}": None for i in range(4)},
                    "text_hash": to_signed(SHORT_TEXT),
                    "sketch": None,
                    "stored_at": STORED_AT,
                },
            ],
        )
        conn.execute(
            V1_DUPLICATES.insert(),
            {
                "key": "copy",
                "key_hash": key_hash("copy"),
                "duplicate_of": "near",
                "duplicate_of_id": 1,
                "distance": 1,
                "exact": False,
                "seen_at": SEEN_AT,
            },
        )
    engine.dispose()


@pytest.mark.parametrize("without_indexes", [False, True])
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_version_1_is_upgraded_when_opened(request, backend, without_indexes):
    url = request.getfixturevalue(f"{backend}_url")
    write_version_1(url, without_indexes=without_indexes)
    with SimhashIndex(url) as index:
        assert index.query(NEAR ^ 0b1001) == [Match("near", NEAR, 2)]
        assert index.query(SHORT) == []  # a short text stays exact-only: never a near match
        short = Signature(SHORT, SHORT_TEXT, exact_only=True)
        assert index.check_and_add("short copy", short) == Match("short", SHORT, 0, exact=True)
        [copy, short_copy] = index.duplicates()
        assert (copy.key, copy.duplicate_of) == ("copy", "near")
        assert copy.seen_at.replace(microsecond=0) == SEEN_AT.replace(microsecond=0)  # SQLite: whole seconds now
        assert short_copy.key == "short copy"
        assert index.check_and_add("new", NEAR ^ (1 << 63)) == Match("near", NEAR, 1)
        with index.transaction(write=False) as conn:
            version = conn.exec_driver_sql("SELECT value FROM simhash_meta WHERE name = 'schema_version'").scalar()
            name = conn.dialect.name
            if name == "postgresql":
                conn.exec_driver_sql("SET LOCAL enable_seqscan = off")  # 3 rows: a scan would be cheaper
            explain = "EXPLAIN QUERY PLAN " if name == "sqlite" else "EXPLAIN "
            halves = Layout("halves")
            if name == "postgresql":
                statement, parameters = halves.near(NEAR, index.max_distance, PAGE_COLUMNS)
            else:
                statement, parameters = halves.batch_candidates([NEAR], index.max_distance)
            plan = str(fetch(conn, explain + statement, parameters))
            indexes = index_names(conn)
    assert version == SCHEMA_VERSION
    assert "ix_simhash_documents_low_half" in plan and "ix_simhash_documents_high_half" in plan, plan
    assert not any("block" in name for name in indexes) and "ix_simhash_documents_text_hash" in indexes
    with SimhashIndex(url, create=False) as index:  # opening again: nothing left to upgrade
        assert len(index) == 2 and index.get("near") == Match("near", NEAR, 0, exact=True)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_opening_version_1_without_create_does_not_upgrade(request, backend):
    """Read-only openers (reports, create=False) leave an old index alone, and say how to upgrade it."""
    url = request.getfixturevalue(f"{backend}_url")
    write_version_1(url)
    with pytest.raises(SchemaVersionError, match=r"version 1.*upgrade"):
        SimhashIndex(url, create=False)
    engine = create_engine(url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT value FROM simhash_meta WHERE name = 'schema_version'").scalar() == "1"
    engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_version_3_is_read_as_it_is_and_gains_the_radius_when_opened_to_write(request, backend):
    """A version 3 index (no radius column) reads without a migration step; opening it to write adds the column."""
    url = request.getfixturevalue(f"{backend}_url")
    with SimhashIndex(url, max_distance=5) as index:
        index.add("kept", NEAR)
        assert index.check_and_add("dropped", NEAR ^ 0b11111) is not None
    engine = create_engine(url)
    with engine.begin() as conn:  # the index as version 3 wrote it
        drop_version_5_columns(conn)
        conn.exec_driver_sql("ALTER TABLE simhash_duplicates DROP COLUMN radius")
        conn.exec_driver_sql("UPDATE simhash_meta SET value = '3' WHERE name = 'schema_version'")
    with SimhashIndex(url, create=False, read_only=True) as index:
        assert [(d.key, d.distance, d.radius) for d in index.duplicates()] == [("dropped", 5, None)]
    with SimhashIndex(url, max_distance=6) as index:
        assert index.check_and_add("again", NEAR ^ 0b111111) is not None
        assert [(d.key, d.radius) for d in index.duplicates()] == [("dropped", None), ("again", 6)]
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT value FROM simhash_meta WHERE name = 'schema_version'").scalar() == "5"
    engine.dispose()


def drop_version_5_columns(conn) -> None:
    """The columns schema version 5 added: each page's words and dates, and why a page was superseded."""
    conn.exec_driver_sql("ALTER TABLE simhash_documents DROP COLUMN words")
    conn.exec_driver_sql("ALTER TABLE simhash_documents DROP COLUMN dated")
    conn.exec_driver_sql("ALTER TABLE simhash_documents DROP COLUMN modified")
    conn.exec_driver_sql("ALTER TABLE simhash_duplicates DROP COLUMN superseded")


def documents_columns(engine) -> set[str]:
    with engine.connect() as conn:
        return {column["name"] for column in inspect(conn).get_columns("simhash_documents")}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_version_5_index_without_last_modified_gains_it_when_opened_to_write(request, backend):
    """Version 5 as it was written before pages kept their Last-Modified: read as it is (read-only
    openers leave it alone), and given the column by any writer, with create or without."""
    url = request.getfixturevalue(f"{backend}_url")
    dated = datetime(2024, 5, 1, tzinfo=timezone.utc)
    with SimhashIndex(url) as index:
        index.add("old", Signature(NEAR, 1, dated=dated))
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE simhash_documents DROP COLUMN modified")
    with SimhashIndex(url, create=False, read_only=True) as index:
        assert index.get("old") == Match("old", NEAR, 0, exact=True)
        (page,) = index.neighbourhood("old", Signature(NEAR, 1))  # what a dry run copies: its date, no Last-Modified
        assert (page.signature.dated, page.signature.modified) == (dated, None)
    assert "modified" not in documents_columns(engine)
    with SimhashIndex(url, create=False, prefer="newest") as index:
        # the same date; "old"'s Last-Modified is not known: the page checked later is kept
        newer = index.check_and_add("new", Signature(NEAR ^ 1, 2, dated=dated, modified=dated))
        assert (newer.key, newer.superseded) == ("old", "newer")
        older = index.check_and_add("older", Signature(NEAR ^ 2, 3, dated=dated, modified=dated - timedelta(days=1)))
        assert (older.key, older.superseded) == ("new", None)  # "new"'s Last-Modified was stored
    assert "modified" in documents_columns(engine)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT value FROM simhash_meta WHERE name = 'schema_version'").scalar() == "5"
    engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_version_4_is_read_as_it_is_and_gains_words_and_dates_when_opened_to_write(request, backend):
    """A version 4 index reads as it is; opening it to write adds the columns a survivor policy
    compares, and a page stored before (its words not known) is kept against a longer copy."""
    url = request.getfixturevalue(f"{backend}_url")
    with SimhashIndex(url) as index:
        index.add("old", Signature(NEAR, 1, words=10))
        assert index.check_and_add("dropped", NEAR ^ 0b11) is not None
    engine = create_engine(url)
    with engine.begin() as conn:  # the index as version 4 wrote it
        drop_version_5_columns(conn)
        conn.exec_driver_sql("UPDATE simhash_meta SET value = '4' WHERE name = 'schema_version'")
    with SimhashIndex(url, create=False, read_only=True) as index:
        assert [(d.key, d.superseded) for d in index.duplicates()] == [("dropped", None)]
        assert [p.signature.words for p in index.neighbourhood("old", Signature(NEAR, 1))] == [None]  # not kept
    with SimhashIndex(url, prefer="longest") as index:
        longer = index.check_and_add("longer", Signature(NEAR ^ 0b1, 2, words=500))
        assert longer is not None and longer.key == "old" and longer.superseded is None  # "old": words not known
        index.add("new", Signature(NEAR ^ (0b1 << 40), 3, words=20))
        assert index.check_and_add("newer", Signature(NEAR ^ (0b11 << 40), 4, words=30)).superseded == "longer"
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT value FROM simhash_meta WHERE name = 'schema_version'").scalar() == "5"
    engine.dispose()
