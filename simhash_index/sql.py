"""The plain SQL of the index's hot paths, run on the driver's cursor.

A crawl runs these once per page: SQLAlchemy's statement and row machinery would
cost more than the database's own work, so they bypass it (values still bound as
parameters, never formatted into the SQL).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import PoolProxiedConnection

from .records import Fingerprint, _signature, check_key, key_hash
from .simhash import to_signed

MASK64 = (1 << 64) - 1
MARKS = {"qmark": "?", "format": "%s", "pyformat": "%s"}  # positional placeholder by DB-API paramstyle
# The index expressions of the fingerprint's halves, as signed 32-bit values (4 bytes in a
# SQLite index entry): bits 0-31 offset by -2**31 (SQLite has no XOR), bits 32-63 as the
# arithmetic shift of the signed column gives them.
HALF_KEYS = {
    "low_half": "((fingerprint & 4294967295) - 2147483648)",
    "high_half": "(fingerprint >> 32)",
}
UPSERT_COLUMNS = ("key", "key_hash", "fingerprint", "exact_only", "text_hash", "sketch", "stored_at")
INSERT = f"INSERT INTO simhash_documents ({', '.join(UPSERT_COLUMNS)}) VALUES ({{marks}})"
UPSERT = (
    f"{INSERT} ON CONFLICT (key_hash) "
    f"DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in UPSERT_COLUMNS if c != 'key_hash')}"
)
SELECT_BY_KEY = "SELECT id, fingerprint, exact_only, text_hash FROM simhash_documents WHERE key_hash = {mark}"
STORED_CONTENT = slice(2, 5)  # of a document_values() row: what SELECT_BY_KEY reads back after the id
SELECT_BY_TEXT = "SELECT key, fingerprint FROM simhash_documents WHERE text_hash = {mark} LIMIT 1"
DELETE_LOGGED = "DELETE FROM simhash_duplicates WHERE key_hash = {mark}"
# Both half lookups in one round trip: a half equal to the query's or one bit off (33
# values each). Complete for distance <= 3: two halves with >= 2 flipped bits each would
# add up to >= 4. Each lookup reads ~33N/2**32 rows; PostgreSQL takes each half's 33
# values as one array parameter (one bind instead of 66, and a simpler plan).
# Rows come with exact_only, for the caller to skip: a partial index (WHERE exact_only = 0)
# would keep PostgreSQL's planner from its statistics on the expressions. SQLite's query()
# runs these; on PostgreSQL they count the rows a lookup reads (benchmarks), and query()
# runs NEAR_POSTGRES.
_LOOKUP = "SELECT id, fingerprint, exact_only FROM simhash_documents WHERE {expression} {test}"
CANDIDATES = {
    "sqlite": " UNION ALL ".join(
        _LOOKUP.format(expression=e, test=f"IN ({', '.join(['?'] * 33)})") for e in HALF_KEYS.values()
    ),
    "postgresql": " UNION ALL ".join(
        _LOOKUP.format(expression=e, test="= ANY(%s::bigint[])") for e in HALF_KEYS.values()
    ),
}
# PostgreSQL answers a whole query in one statement, as a round trip costs it more than the
# lookup: both halves' probes OR'ed into one bitmap (a page near in both halves comes once),
# the distance and exact_only tests on the server (bit_count: PostgreSQL 14 or later), and
# the matches' keys and sketches with them. A query that finds pages took two round trips
# before (1M pages: 1.3k-1.5k -> 2.1k-2.5k such queries/s).
NEAR_POSTGRES = (
    "SELECT id, key, fingerprint, sketch FROM simhash_documents WHERE ("
    + " OR ".join(f"{e} = ANY(%s::bigint[])" for e in HALF_KEYS.values())
    + ") AND exact_only = 0 AND bit_count((fingerprint # %s::bigint)::bit(64)) <= %s"
)
_FLIPS = (0, *(1 << bit for bit in range(32)))
_SIGN = 0x80000000


def half_keys(fingerprint: int) -> tuple[int, int]:
    """The values of HALF_KEYS for an unsigned 64-bit fingerprint."""
    return (fingerprint & 0xFFFFFFFF) - _SIGN, ((fingerprint >> 32) ^ _SIGN) - _SIGN


def probe_keys(fingerprint: int) -> tuple[list[int], list[int]]:
    """Per half, the keys (HALF_KEYS values) of that half equal to the fingerprint's or one bit off."""
    low, high = fingerprint & 0xFFFFFFFF, (fingerprint >> 32) ^ _SIGN
    return [(low ^ flip) - _SIGN for flip in _FLIPS], [(high ^ flip) - _SIGN for flip in _FLIPS]


def probe_values(dialect_name: str, fingerprint: int) -> tuple:
    """Parameters of CANDIDATES[dialect_name]: 66 values for SQLite, two array literals for PostgreSQL.

    The arrays go as text ('{1,2,...}', cast by the statement): the driver's own list
    adaptation costs more than PostgreSQL's lookups.
    """
    low, high = probe_keys(fingerprint)
    if dialect_name == "sqlite":
        return (*low, *high)
    return "{" + ",".join(map(str, low)) + "}", "{" + ",".join(map(str, high)) + "}"


def near_values(fingerprint: int, max_distance: int) -> tuple:
    """Parameters of NEAR_POSTGRES."""
    return (*probe_values("postgresql", fingerprint), to_signed(fingerprint), max_distance)


def lookup(dialect_name: str, fingerprint: int, max_distance: int) -> tuple[str, tuple]:
    """The first statement query() runs on this dialect, with its parameters: SQLite's half
    lookups (CANDIDATES), or PostgreSQL's whole query (NEAR_POSTGRES)."""
    if dialect_name == "postgresql":
        return NEAR_POSTGRES, near_values(fingerprint, max_distance)
    return CANDIDATES[dialect_name], probe_values(dialect_name, fingerprint)


def document_values(key: str, fingerprint: Fingerprint) -> tuple:
    """A documents row in UPSERT_COLUMNS order, without stored_at (the writer adds it)."""
    check_key(key)
    if type(fingerprint) is int:  # the bulk-load case: no Signature
        return (key, key_hash(key), to_signed(fingerprint), 0, None, None)
    signature = _signature(fingerprint, None, None)
    fp, th = signature.simhash, signature.text_hash
    return (
        key,
        key_hash(key),
        None if fp is None else to_signed(fp),
        int(not signature.near_matchable),
        None if th is None else to_signed(th),
        signature.sketch,
    )


@dataclass(frozen=True)
class RawConnection:
    """What fetch needs of a connection (its dialect, its pooled DB-API connection), without SQLAlchemy's."""

    dialect: Dialect
    connection: PoolProxiedConnection


def fetch(conn: Connection | RawConnection, statement: str, parameters: tuple) -> list[tuple]:
    """Rows of plain SQL as plain tuples, from the DB-API cursor of the connection's transaction.

    `conn` is a SQLAlchemy Connection, or a RawConnection (SimhashIndex._single_read).

    A query's statements cost more in SQLAlchemy's execution and row machinery than in
    SQLite's index lookups. A driver error is still raised as SQLAlchemy's, as transaction()
    expects; a lost PostgreSQL connection is replaced at the pool's next pre-ping.
    """
    dbapi = conn.dialect.loaded_dbapi
    cursor = conn.connection.cursor()
    try:
        cursor.execute(statement, parameters)
        return cursor.fetchall()
    except dbapi.Error as exc:
        raise DBAPIError.instance(statement, parameters, exc, dbapi.Error, dialect=conn.dialect) from exc
    finally:
        cursor.close()


def near_rows(conn: Connection | RawConnection, fingerprint: int, max_distance: int) -> list[tuple]:
    """(distance, id, key, fingerprint, sketch) of the near-matchable stored pages within
    max_distance of an unsigned fingerprint, nearest first.

    PostgreSQL answers in one statement (NEAR_POSTGRES). SQLite, with no round trips to save,
    reads the half lookups' rows, then the keys and sketches of the near ones.
    """
    name = conn.dialect.name
    statement, parameters = lookup(name, fingerprint, max_distance)
    if name == "postgresql":
        rows = fetch(conn, statement, parameters)
        return sorted((_distance(stored, fingerprint), row_id, key, stored, s) for row_id, key, stored, s in rows)
    near = {}
    for row_id, stored, exact_only in fetch(conn, statement, parameters):
        distance = _distance(stored, fingerprint)
        if distance <= max_distance and not exact_only:
            near[row_id] = distance  # a page near in both halves comes once per half
    if not near:
        return []
    mark = MARKS[conn.dialect.paramstyle]
    statement = f"SELECT id, key, fingerprint, sketch FROM simhash_documents WHERE id IN ({', '.join([mark] * len(near))})"
    rows = fetch(conn, statement, tuple(near))
    # a row missing was replaced between the two reads of an autocommit query
    return sorted((near[row_id], row_id, key, stored, s) for row_id, key, stored, s in rows)


def _distance(stored: int, fingerprint: int) -> int:
    """Bits between a stored (signed) fingerprint and an unsigned one."""
    return ((stored ^ fingerprint) & MASK64).bit_count()
