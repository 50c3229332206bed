"""index.py on real SQLite and PostgreSQL: storage, queries and check_and_add."""

from __future__ import annotations

import random
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from conftest import ONE_LAYOUT, delete_redis_keys, driver, examples, without_layout
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from simhash_index import (
    Fingerprinter,
    IndexNotFoundError,
    IndexUnavailableError,
    Match,
    SchemaVersionError,
    SchemeMismatchError,
    Signature,
    SimhashIndex,
    defaults,
    hamming,
)
from simhash_index.fingerprinting.bits import to_unsigned
from simhash_index.fingerprinting.sketch import minhash
from simhash_index.index.probes import MAX_HALVES_RADIUS
from simhash_index.index.sql.engine import SQLITE_PAGE_SIZE
from simhash_index.index.sql.layouts import HALF_KEYS, Layout
from simhash_index.index.sql.statements import PAGE_COLUMNS, fetch

if TYPE_CHECKING:
    import redis

TOP = 1 << 63


@pytest.fixture
def db_url(index_url: str) -> str:
    """This module's tests run on SQL in both layouts and on Redis (conftest's index_url)."""
    return index_url


def flip(value: int, positions) -> int:
    for p in positions:
        value ^= 1 << p
    return value


def far_apart(rng: random.Random, count: int, min_distance: int = 12) -> list[int]:
    """Random fingerprints pairwise at least min_distance apart."""
    out: list[int] = []
    while len(out) < count:
        candidate = rng.getrandbits(64)
        if all(hamming(candidate, other) >= min_distance for other in out):
            out.append(candidate)
    return out


def execute(url: str, statement: str) -> None:
    engine = create_engine(without_layout(url))
    try:
        with engine.begin() as conn:
            conn.execute(text(statement))
    finally:
        engine.dispose()


def redis_client(url: str) -> tuple[redis.Redis, str]:
    """A client of a Redis test URL, and the URL's key prefix."""
    driven = driver("redis", "redis")
    from simhash_index.index.redis.backend import split_url  # needs the redis package

    connect_to, prefix = split_url(url)
    return driven.Redis.from_url(connect_to), prefix


def empty(url: str) -> None:
    """Delete every stored page and logged duplicate; the index's metadata stays."""
    if url.startswith("redis://"):
        client, prefix = redis_client(url)
        delete_redis_keys(client, prefix, keep=("meta",))
        client.close()
        return
    execute(url, "DELETE FROM simhash_duplicates")
    execute(url, "DELETE FROM simhash_documents")


def set_schema_version(url: str, version: str) -> None:
    if url.startswith("redis://"):
        client, prefix = redis_client(url)
        client.hset(f"{prefix}meta", "schema_version", version)
        client.close()
        return
    execute(url, f"UPDATE simhash_meta SET value = '{version}' WHERE name = 'schema_version'")


# -- storage and lookups --------------------------------------------------------------------


def test_add_get_len_and_reopen(db_url):
    a, b = far_apart(random.Random(1), 2)
    with SimhashIndex(db_url) as index:
        assert len(index) == 0
        index.add("a", a)
        index.add("b", b)
        assert len(index) == 2
        assert index.get("a") == Match("a", a, 0, exact=True)
        assert index.get("missing") is None
        assert [m.key for m in index.query(a)] == ["a"]
    index = SimhashIndex(db_url, create=False)  # the context manager closed it; the data stayed
    try:
        assert len(index) == 2
        assert index.get("b").fingerprint == b
    finally:
        index.close()


def test_add_replaces_the_key(db_url):
    old, new = far_apart(random.Random(2), 2)
    with SimhashIndex(db_url) as index:
        index.add("page", old)
        index.add("page", new)
        assert len(index) == 1
        assert index.get("page").fingerprint == new
        assert index.query(old) == []
        assert [m.key for m in index.query(new)] == ["page"]


def test_add_needs_a_fingerprint_or_text_hash(db_url):
    with SimhashIndex(db_url) as index:
        with pytest.raises(ValueError, match="text_hash"):
            index.add("page", None)
        with pytest.raises(ValueError, match="64-bit"):
            index.add("page", 2**64)
        with pytest.raises(ValueError, match="64-bit"):
            index.check_and_add("page", -1)
        with pytest.raises(ValueError, match="64-bit"):
            index.query(2**64)
        assert len(index) == 0


def test_top_bit_fingerprints_round_trip(db_url):
    rng = random.Random(3)
    values = [0, 1, TOP - 1, TOP, TOP + 1, 2**64 - 1] + [rng.getrandbits(64) | TOP for _ in range(20)]
    with SimhashIndex(db_url) as index:
        index.add_many((f"k{i}", v) for i, v in enumerate(values))
        for i, value in enumerate(values):
            assert index.get(f"k{i}").fingerprint == value
            found = {m.key: (m.fingerprint, m.distance) for m in index.query(value)}
            assert found[f"k{i}"] == (value, 0)
            # and everything else it returns really is that close
            expected = {f"k{j}": (v, hamming(v, value)) for j, v in enumerate(values) if hamming(v, value) <= 3}
            assert found == expected


@pytest.mark.parametrize("max_distance", [0, 1, 2, 3])
def test_query_finds_everything_within_max_distance_nearest_first(db_url, max_distance):
    rng = random.Random(4)
    query = rng.getrandbits(64) | TOP
    stored = {f"far{i}": v for i, v in enumerate(far_apart(rng, 30))}
    for distance in range(8):
        for copy in range(2):
            stored[f"d{distance}-{copy}"] = flip(query, rng.sample(range(64), distance))
    with SimhashIndex(db_url, max_distance=max_distance) as index:
        index.add_many(stored.items())
        matches = index.query(query)
    expected = {k: hamming(v, query) for k, v in stored.items() if hamming(v, query) <= max_distance}
    assert {m.key: m.distance for m in matches} == expected
    assert len(matches) == len(expected) >= 2 * (max_distance + 1)
    assert [m.distance for m in matches] == sorted(m.distance for m in matches)
    assert all(m.fingerprint == stored[m.key] for m in matches)


@pytest.mark.parametrize("max_distance", [-1, 9, 64, 2.0, "3"])
def test_max_distance_outside_0_to_8(sqlite_url, max_distance):
    with pytest.raises(ValueError, match="max_distance"):
        SimhashIndex(sqlite_url, max_distance=max_distance)


@pytest.mark.parametrize("min_similarity", [-0.1, 1.5])
def test_min_similarity_outside_0_to_1(sqlite_url, min_similarity):
    with pytest.raises(ValueError, match="min_similarity"):
        SimhashIndex(sqlite_url, min_similarity=min_similarity)


def test_add_many_in_bulk(db_url):
    rng = random.Random(5)
    items = [(f"https://example.com/{i}", rng.getrandbits(64)) for i in range(20_000)]
    with SimhashIndex(db_url) as index:
        assert index.add_many(items, batch_size=7_000) == 20_000
        assert len(index) == 20_000
        for key, value in rng.sample(items, 10):
            assert index.get(key).fingerprint == value
            expected = {k for k, v in items if hamming(v, value) <= 3}
            assert {m.key for m in index.query(value)} == expected
        # the same keys again replace, in the same batch and across batches
        assert (
            index.add_many([("https://example.com/0", 7), ("https://example.com/0", 9), *items[1:3]], batch_size=2) == 4
        )
        assert len(index) == 20_000
        assert index.get("https://example.com/0").fingerprint == 9


# -- check_and_add ----------------------------------------------------------------------------


def test_check_and_add(db_url):
    a, c, d, e, g, h = far_apart(random.Random(6), 6)
    with SimhashIndex(db_url) as index:
        assert index.check_and_add("a", a) is None
        before = datetime.now(timezone.utc).replace(microsecond=0)  # SQL backends store whole seconds
        match = index.check_and_add("b", a ^ 0b101)
        after = datetime.now(timezone.utc)
        assert match == Match("a", a, 2)
        assert index.get("b") is None
        assert len(index) == 1
        [dup] = index.duplicates()
        assert (dup.key, dup.duplicate_of, dup.distance, dup.exact) == ("b", "a", 2, False)
        assert dup.seen_at.tzinfo is not None
        assert before <= dup.seen_at <= after

        assert index.check_and_add("c", c) is None  # far from a
        assert index.check_and_add("d", d, text_hash=12345) is None
        exact = index.check_and_add("e", e, text_hash=12345)  # the same text, whatever its simhash
        assert (exact.key, exact.exact, exact.fingerprint, exact.distance) == ("d", True, d, hamming(d, e))
        assert index.check_and_add("f", Signature(c ^ TOP, 2**64 - 1)) == Match("c", c, 1)
        # f was dropped, so its text hash is not stored: g is new; h has g's text (top bit set)
        assert index.check_and_add("g", Signature(g, 2**64 - 1)) is None
        assert index.check_and_add("h", Signature(h, 2**64 - 1)) == Match("g", g, hamming(g, h), exact=True)
        assert len(index) == 4
        assert {key for key in "abcdefgh" if index.get(key)} == {"a", "c", "d", "g"}
        logged = {x.key: (x.duplicate_of, x.distance, x.exact) for x in index.duplicates()}
        assert logged == {
            "b": ("a", 2, False),
            "e": ("d", hamming(d, e), True),
            "f": ("c", 1, False),
            "h": ("g", hamming(g, h), True),
        }
        assert [x.key for x in index.duplicates()] == ["b", "e", "f", "h"]  # oldest first


def test_rechecking_a_stored_key(db_url):
    a, b, new = far_apart(random.Random(7), 3)
    with SimhashIndex(db_url) as index:
        assert index.check_and_add("a", a) is None
        assert index.check_and_add("b", b) is None
        # the same content again: never a duplicate of itself
        assert index.check_and_add("a", a) is None
        assert index.check_and_add("a", a ^ 1) is None  # a small edit updates the row
        assert index.get("a").fingerprint == a ^ 1
        # changed content: the row follows it
        assert index.check_and_add("a", new) is None
        assert index.get("a").fingerprint == new
        assert [m.key for m in index.query(new)] == ["a"]
        assert index.query(a) == []
        # even content near another stored page updates in place (documented)
        assert index.check_and_add("a", b ^ 0b11) is None
        assert index.get("a").fingerprint == b ^ 0b11
        assert len(index) == 2
        assert index.duplicates() == []


def test_rechecking_a_duplicate_key(db_url):
    a, c, new = far_apart(random.Random(8), 3)
    with SimhashIndex(db_url) as index:
        index.check_and_add("a", a)
        index.check_and_add("c", c)
        assert index.check_and_add("b", a ^ 1) == Match("a", a, 1)
        # dropped again, logged once
        assert index.check_and_add("b", a ^ 1) == Match("a", a, 1)
        assert [(x.key, x.duplicate_of) for x in index.duplicates()] == [("b", "a")]
        # now near another page: still one entry, pointing at the new original
        assert index.check_and_add("b", c ^ 0b110) == Match("c", c, 2)
        assert [(x.key, x.duplicate_of, x.distance) for x in index.duplicates()] == [("b", "c", 2)]
        assert index.get("b") is None
        # new content: stored, and no longer a duplicate
        assert index.check_and_add("b", new) is None
        assert index.get("b").fingerprint == new
        assert index.duplicates() == []
        assert len(index) == 3


def test_short_texts_match_only_exactly(db_url):
    fingerprinter = Fingerprinter(min_length=200)
    short = fingerprinter.signature("Hello, world!")
    assert short.exact_only
    with SimhashIndex(db_url, scheme=fingerprinter.scheme) as index:
        assert index.check_and_add("s1", short) is None
        assert index.get("s1") is not None
        same = index.check_and_add("s2", fingerprinter.signature("  HELLO,   world!"))
        assert (same.key, same.exact, same.distance) == ("s1", True, 0)
        # a fingerprint within distance 3 of a short text is not enough, either way round
        near_short = Signature(short.simhash ^ 1, short.text_hash ^ 1, exact_only=True)
        assert index.check_and_add("s3", near_short) is None
        assert index.check_and_add("long", Signature(short.simhash ^ 0b10, 42)) is None
        assert index.check_and_add("s4", Signature(short.simhash ^ 0b100, 43, exact_only=True)) is None
        assert index.check_and_add("long2", Signature(short.simhash ^ 0b1000, 44)) == Match(
            "long", short.simhash ^ 0b10, 2
        )
        # text_hash only, no simhash at all
        assert index.check_and_add("t1", None, text_hash=99) is None
        assert index.check_and_add("t2", None, text_hash=99) == Match("t1", None, 0, exact=True)
        assert {x.key for x in index.duplicates()} == {"s2", "long2", "t2"}
        assert len(index) == 5


def shingle_set(seed: int, size: int = 200) -> set[str]:
    rng = random.Random(seed)
    return {f"w{rng.getrandbits(32)} w{rng.getrandbits(32)} w{rng.getrandbits(32)}" for _ in range(size)}


def test_sketch_verification(db_url):
    a, other = far_apart(random.Random(9), 2)
    page = shingle_set(1)
    near_copy = set(sorted(page)[:198]) | shingle_set(2, 2)  # Jaccard 198/202, well above min_similarity
    unrelated = shingle_set(3)
    with SimhashIndex(db_url) as index:
        assert index.check_and_add("a", a, sketch=minhash(page)) is None
        # within distance 1, but the text is different: not a duplicate
        assert index.check_and_add("template", a ^ 1, sketch=minhash(unrelated)) is None
        # distance 1 from a, 2 from the template: only a's sketch agrees
        match = index.check_and_add("copy", a ^ 0b100, sketch=minhash(near_copy))
        assert (match.key, match.distance) == ("a", 1)
        assert match.similarity >= index.min_similarity
        # no sketch: simhash alone decides, nearest first
        assert index.check_and_add("bare", a ^ TOP) == Match("a", a, 1)
        assert len(index) == 2
        assert index.check_and_add("other", other, sketch=minhash(unrelated)) is None
    with SimhashIndex(db_url, min_similarity=0.0) as lenient:
        match = lenient.check_and_add("template2", a ^ 0b1000, sketch=minhash(unrelated))
        assert (match.key, match.distance) == ("a", 1)


def test_signatures_of_real_texts(db_url):
    fingerprinter = Fingerprinter()
    rng = random.Random(10)
    page = " ".join(f"word{rng.randrange(500)}" for _ in range(300))
    other = " ".join(f"term{rng.randrange(500)}" for _ in range(300))
    with SimhashIndex(db_url, scheme=fingerprinter.scheme) as index:
        assert index.check_and_add("page", fingerprinter.signature(page)) is None
        # the same text, re-flowed and in capitals: an exact duplicate
        match = index.check_and_add("copy", fingerprinter.signature(page.upper().replace(" ", "\n  ")))
        assert (match.key, match.exact, match.distance) == ("page", True, 0)
        assert index.check_and_add("other", fingerprinter.signature(other)) is None
        assert len(index) == 2


# -- opening ------------------------------------------------------------------------------------


def test_scheme_mismatch(db_url):
    SimhashIndex(db_url, scheme="scheme A").close()
    with pytest.raises(SchemeMismatchError) as info:
        SimhashIndex(db_url, scheme="scheme B")
    assert "scheme A" in str(info.value) and "scheme B" in str(info.value)
    with SimhashIndex(db_url, scheme="scheme A") as index:
        assert index.scheme == "scheme A"
    with SimhashIndex(db_url, scheme=None) as index:  # no check asked for: the recorded one
        assert index.scheme == "scheme A"


def test_scheme_of_another_fingerprinter(db_url):
    SimhashIndex(db_url).close()  # the default Fingerprinter's scheme
    with pytest.raises(SchemeMismatchError):
        SimhashIndex(db_url, scheme=Fingerprinter(ngram=2).scheme)


def test_schema_version_mismatch(db_url):
    SimhashIndex(db_url).close()
    set_schema_version(db_url, "999")
    with pytest.raises(SchemaVersionError, match="999"):
        SimhashIndex(db_url)


def test_create_false_on_an_empty_database(db_url):
    with pytest.raises(IndexNotFoundError):
        SimhashIndex(db_url, create=False)
    if db_url.startswith("sqlite"):  # looking did not leave an empty file behind
        path = Path(make_url(db_url).database)
        assert not path.exists()
        execute(db_url, "CREATE TABLE unrelated (x INTEGER)")  # a database, but not ours
        with pytest.raises(IndexNotFoundError):
            SimhashIndex(db_url, create=False)
    SimhashIndex(db_url).close()
    with SimhashIndex(db_url, create=False) as index:
        assert len(index) == 0


def test_unreachable_database():
    with pytest.raises(IndexUnavailableError):
        SimhashIndex("postgresql://postgres@127.0.0.1:1/test")


@pytest.mark.parametrize(
    ("url", "password"),
    [
        ("postgresql://u:secret@127.0.0.1:1/x", "secret"),  # nothing listens on port 1
        ("postgresql://u:s3Kr%2Fq7w%3Azx9@127.0.0.1:1/x", "s3Kr/q7w:zx9"),  # escaped, as it should be
        ("mysql://u:secret@127.0.0.1/x", "secret"),  # not a supported backend
        ("postgresql//u:secret@127.0.0.1/x", "secret"),  # a typo: not a URL at all
        ("postgresql//u:Zm9v/YmFy+cXV4@127.0.0.1/x", "Zm9v/YmFy+cXV4"),  # ... with a base64 password
        ("postgresql//u:qk7:zx9w@127.0.0.1/x", "qk7:zx9w"),
    ],
)
def test_error_messages_hide_the_password(url, password):
    if url.startswith("postgresql://"):
        driver("psycopg", "postgres")  # without it the error is the missing driver, which names no database
    with pytest.raises(IndexUnavailableError) as info:
        SimhashIndex(url)
    message = str(info.value)
    assert "127.0.0.1" in message  # the message still says which database
    for part in {password, *password.replace("/", ":").split(":")}:  # nor any piece of it
        assert part not in message


def test_repr_hides_the_password(postgres_url):
    # the test server trusts local connections, so a password is accepted and ignored
    url = make_url(postgres_url).set(password="secret")
    with SimhashIndex(url) as index:
        assert "***" in repr(index) and "secret" not in repr(index)


# -- the half lookups: exactly what a scan finds, through the indexes --------------------------------


def lookup_statement(index, dialect: str, fingerprint: int, radius: int) -> tuple[str, tuple]:
    """What query() runs first: SQLite's candidate lookups, or PostgreSQL's whole query."""
    if dialect == "postgresql":
        return index.layout.near(fingerprint, radius, PAGE_COLUMNS)
    return index.layout.batch_candidates([fingerprint], radius)


def batch_statement(index, dialect: str, fingerprints: list[int], radius: int) -> tuple[str, tuple]:
    """What a batch runs to find its candidates (PostgreSQL halves: one lookup a page)."""
    if dialect == "postgresql":
        return index.layout.near_batch(fingerprints, radius) or index.layout.near(fingerprints[0], radius, PAGE_COLUMNS)
    return index.layout.batch_candidates(fingerprints, radius)


LOOKUP_INDEXES = {
    "blocks": {f"ix_simhash_documents_block{i}" for i in range(4)},
    "halves": {"ix_simhash_documents_low_half", "ix_simhash_documents_high_half"},
}


@pytest.mark.parametrize("layout", ["blocks", "halves"])
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_lookups_use_the_layouts_indexes(request, backend, layout):
    """The lookups' expressions must match the indexes' verbatim, or the database scans the table."""
    with SimhashIndex(request.getfixturevalue(f"{backend}_url"), layout=layout) as index:
        rng = random.Random(11)
        index.add_many((f"k{i}", rng.getrandbits(64)) for i in range(2000))
        with index.transaction() as conn:
            name = conn.dialect.name
            if name == "sqlite":
                explain = "EXPLAIN QUERY PLAN "
            else:
                conn.exec_driver_sql("ANALYZE simhash_documents")
                conn.exec_driver_sql("SET LOCAL enable_seqscan = off")  # 2,000 rows: a scan could be cheaper
                explain = "EXPLAIN "
            plans = []
            for radius in range(3, index.layout.max_radius + 1):  # below 3, fewer columns are probed
                statement, parameters = lookup_statement(index, name, 5, radius)
                plans.append(fetch(conn, explain + statement, parameters))
                # a batch of 64: long probe lists travel as one JSON array on SQLite
                statement, parameters = batch_statement(index, name, list(range(5, 5 + 64 * 997, 997)), radius)
                plans.append(fetch(conn, explain + statement, parameters))
        for plan in (" ".join(str(row) for row in rows) for rows in plans):
            assert all(name in plan for name in LOOKUP_INDEXES[layout]), plan
            assert "SCAN simhash_documents" not in plan and "Seq Scan" not in plan, plan


def test_queries_leave_pooled_postgres_connections_transactional(postgres_url):
    """query() reads in autocommit mode; the connection it hands back must open transactions again."""
    with SimhashIndex(postgres_url) as index:
        index.add("a", 5)
        for _ in range(3):
            assert [m.key for m in index.query(5)] == ["a"]
        with pytest.raises(ValueError):
            index.query(-1)
        with index.transaction() as conn:
            assert conn.connection.driver_connection.autocommit is False
            conn.exec_driver_sql("INSERT INTO simhash_meta (name, value) VALUES ('probe', 'x')")
            status = conn.connection.driver_connection.info.transaction_status.name
        assert status == "INTRANS"  # the insert ran in a transaction, not on its own


EDGE_FINGERPRINTS = [0, 1, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**63 + 2**31, 2**64 - 1]


def half_probes(fingerprint: int, radius: int = 3) -> list[list[int]]:
    return Layout("halves").probes(fingerprint, radius)


def half_keys(fingerprint: int) -> tuple[int, int]:
    low, high = half_probes(fingerprint)
    return low[0], high[0]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_half_keys_are_what_the_database_indexes(request, backend):
    """The keys a lookup binds equal the indexed expressions as the database computes them, top bits included."""
    with SimhashIndex(request.getfixturevalue(f"{backend}_url"), layout="halves") as index:
        index.add_many((f"k{fp}", fp) for fp in EDGE_FINGERPRINTS)
        with index.transaction(write=False) as conn:
            expressions = ", ".join(HALF_KEYS.values())
            rows = conn.exec_driver_sql(f"SELECT fingerprint, {expressions} FROM simhash_documents").all()
    assert sorted((to_unsigned(fp), low, high) for fp, low, high in rows) == [
        (fp, *half_keys(fp)) for fp in EDGE_FINGERPRINTS
    ]
    for fp in EDGE_FINGERPRINTS:
        low, high = half_probes(fp)
        assert low == [half_keys(fp ^ flip)[0] for flip in (0, *(1 << bit for bit in range(32)))]
        assert high == [half_keys(fp ^ flip)[1] for flip in (0, *(1 << bit for bit in range(32, 64)))]


@st.composite
def planted(draw):
    query = draw(st.integers(0, 2**64 - 1))
    stored = draw(st.lists(st.integers(0, 2**64 - 1), max_size=30))
    for distance in [*range(10), *draw(st.lists(st.integers(0, 9), max_size=10))]:
        stored.append(flip(query, draw(st.sets(st.integers(0, 63), min_size=distance, max_size=distance))))
    return query, stored


RADII = range(9)


def open_at_radii(url: str) -> list:
    """An index of this URL at every radius its layout answers."""
    largest = MAX_HALVES_RADIUS if "layout=halves" in url else max(RADII)
    return [SimhashIndex(url, max_distance=d) for d in RADII if d <= largest]


def test_query_equals_brute_force(db_url):
    indexes = open_at_radii(db_url)
    try:

        @settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(planted())
        def check(case):
            query, stored = case
            empty(db_url)
            indexes[0].add_many((f"k{i}", v) for i, v in enumerate(stored))
            for max_distance, index in enumerate(indexes):
                expected = {
                    f"k{i}": hamming(v, query) for i, v in enumerate(stored) if hamming(v, query) <= max_distance
                }
                matches = index.query(query)
                assert {m.key: m.distance for m in matches} == expected
                assert [m.distance for m in matches] == sorted(expected.values())

        check()
    finally:
        for index in indexes:
            index.close()


def block_patterns(total: int) -> list[tuple[int, int, int, int]]:
    """Every way to spread `total` flipped bits over the four 16-bit blocks."""
    return [
        (a, b, c, total - a - b - c)
        for a in range(total + 1)
        for b in range(total + 1 - a)
        for c in range(total + 1 - a - b)
        if total - a - b - c <= 16
    ]


def test_every_block_pattern_is_found_within_the_radius_and_not_beyond(db_url):
    """Fingerprints planted at exactly r and r+1 bits, the bits spread over the blocks in every
    way (and both in and out of the halves), are found by a query at radius r, and only those."""
    rng = random.Random(7)
    query = rng.getrandbits(64)
    planted = {}
    for total in range(max(RADII) + 2):
        for pattern in block_patterns(total):
            bits = [16 * block + bit for block, count in enumerate(pattern) for bit in rng.sample(range(16), count)]
            planted[f"{total}:{pattern}"] = flip(query, bits)
    pages = [(f"new:{key}", fp) for key, fp in planted.items()]
    rng.shuffle(pages)
    indexes = open_at_radii(db_url)
    try:
        for radius, index in enumerate(indexes):
            empty(db_url)
            index.add_many(planted.items())
            found = {match.key: match.distance for match in index.query(query)}
            assert found == {key: hamming(fp, query) for key, fp in planted.items() if hamming(fp, query) <= radius}
            # a batch finds them too: each page decided as the brute-force memory index decides it
            empty(db_url)
            index.add("centre", query)
            with SimhashIndex("memory://", max_distance=radius) as model:
                model.add("centre", query)
                expected = [_answer(m) for m in model.check_and_add_many(pages)]
            assert [_answer(m) for m in index.check_and_add_many(pages)] == expected
    finally:
        for index in indexes:
            index.close()


def test_the_halves_layout_refuses_a_radius_it_cannot_answer(request):
    url = request.getfixturevalue("sqlite_url")
    with SimhashIndex(url, layout="halves", max_distance=MAX_HALVES_RADIUS) as index:
        assert index.max_distance == MAX_HALVES_RADIUS
    with pytest.raises(ValueError, match=r"halves layout answers a search radius of at most 5 bits; got 6"):
        SimhashIndex(url, max_distance=MAX_HALVES_RADIUS + 1)
    with SimhashIndex(url) as index:  # the default radius, capped at what the layout answers
        assert index.max_distance == MAX_HALVES_RADIUS
    with SimhashIndex(request.getfixturevalue("postgres_url")) as index:
        assert index.max_distance == defaults.MAX_DISTANCE


# -- property: check_and_add follows its documented rules ------------------------------------------


class Model:
    """check_and_add's documented rules over plain dicts (no sketches)."""

    def __init__(self, max_distance: int) -> None:
        self.max_distance = max_distance
        self.stored: dict[str, tuple[int, Signature]] = {}  # key -> (row order, signature)
        self.duplicates: dict[str, tuple[str, int, bool]] = {}
        self.rows = 0

    def check_and_add(self, key: str, sig: Signature):
        """What the index may return: None, or the set of acceptable (key, distance, exact)."""
        if key in self.stored:
            order, _ = self.stored[key]
            self.stored[key] = (order, sig)  # updated in place, never a duplicate of itself
            return None
        exact = [
            (k, hamming(s.simhash, sig.simhash) if s.simhash is not None and sig.simhash is not None else 0, True)
            for k, (_, s) in self.stored.items()
            if sig.text_hash is not None and s.text_hash == sig.text_hash
        ]
        if exact:
            return set(exact)
        if sig.near_matchable:
            near = sorted(
                (hamming(s.simhash, sig.simhash), order, k)
                for k, (order, s) in self.stored.items()
                if s.near_matchable and hamming(s.simhash, sig.simhash) <= self.max_distance
            )
            if near:
                distance, _, k = near[0]
                return {(k, distance, False)}
        self.duplicates.pop(key, None)
        self.stored[key] = (self.rows, sig)
        self.rows += 1
        return None


@st.composite
def operations(draw):
    centres = draw(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=3))
    ops = []
    for _ in range(draw(st.integers(1, 25))):
        key = draw(st.sampled_from("abcdefgh"))
        fp = flip(draw(st.sampled_from(centres)), draw(st.sets(st.integers(0, 63), max_size=9)))
        text_hash = draw(st.sampled_from([None, 1, 2, 2**64 - 1]))
        # one text is one length: whether it is short (exact only) goes with its text hash
        ops.append((key, Signature(fp, text_hash, exact_only=text_hash == 1)))
    return draw(st.integers(0, max(RADII))), ops


@pytest.mark.parametrize("index_url", ONE_LAYOUT, indirect=True)
def test_check_and_add_follows_the_model(db_url):
    indexes = open_at_radii(db_url)
    try:

        @settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(operations())
        def check(case):
            max_distance, ops = case
            max_distance = min(max_distance, len(indexes) - 1)
            empty(db_url)
            index, model = indexes[max_distance], Model(max_distance)
            for key, sig in ops:
                expected = model.check_and_add(key, sig)
                match = index.check_and_add(key, sig)
                if expected is None:
                    assert match is None
                else:
                    assert (match.key, match.distance, match.exact) in expected
                    model.duplicates[key] = (match.key, match.distance, match.exact)
            for key in "abcdefgh":
                got = index.get(key)
                if key in model.stored:
                    assert got.fingerprint == model.stored[key][1].simhash
                else:
                    assert got is None
            assert len(index) == len(model.stored)
            assert {d.key: (d.duplicate_of, d.distance, d.exact) for d in index.duplicates()} == model.duplicates

        check()
    finally:
        for index in indexes:
            index.close()


# Sketches of texts 1.0, about 0.9 and about 0.3 similar to the first: some candidates pass the
# similarity check and some fail it.
_WORDS = [f"w{i}" for i in range(200)]
SKETCHES = [
    minhash(_WORDS),
    minhash(_WORDS[:190] + [f"x{i}" for i in range(10)]),
    minhash(_WORDS[:100] + [f"y{i}" for i in range(100)]),
]


@st.composite
def signed_operations(draw):
    centres = draw(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=3))
    ops = []
    for _ in range(draw(st.integers(1, 25))):
        fp = flip(draw(st.sampled_from(centres)), draw(st.sets(st.integers(0, 63), max_size=5)))
        text_hash = draw(st.sampled_from([None, 1, 2, 2**64 - 1]))
        sketch = draw(st.sampled_from([None, *SKETCHES]))
        ops.append((draw(st.sampled_from("abcdefgh")), Signature(fp, text_hash, sketch, exact_only=text_hash == 1)))
    return ops


@pytest.mark.parametrize("index_url", ONE_LAYOUT, indirect=True)
def test_every_backend_decides_as_the_rule_in_python(db_url):
    """The Python rule (index/rule.py, run by the memory index) is the specification: each backend,
    the Redis script included, gives the same answers on random sequences, similarity checks too."""
    index = SimhashIndex(db_url)
    try:

        @settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(signed_operations())
        def check(ops):
            empty(db_url)
            with SimhashIndex("memory://", max_distance=index.max_distance) as specification:
                for key, sig in ops:
                    expected, got = specification.check_and_add(key, sig), index.check_and_add(key, sig)
                    described = [
                        None if m is None else (m.key, m.distance, m.exact, m.similarity) for m in (expected, got)
                    ]
                    assert described[1] == described[0], (key, sig)
                assert sorted((d.key, d.duplicate_of) for d in index.duplicates()) == sorted(
                    (d.key, d.duplicate_of) for d in specification.duplicates()
                )

        check()
    finally:
        index.close()


# -- values every backend must refuse or accept alike ------------------------------------------


@pytest.mark.parametrize("key", ["http://example.com/a\x00b", "http://example.com/\ud800"])
def test_keys_no_database_can_store_are_refused_by_name(db_url, key):
    with SimhashIndex(db_url) as index:
        index.check_and_add("http://example.com/ok", 1)
        with pytest.raises(ValueError, match=r"key .* holds a (NUL character|lone surrogate)"):
            index.check_and_add(key, 1 << 40)
        with pytest.raises(ValueError, match="key"):
            index.add_many([("http://example.com/fine", 5), (key, 1 << 41)])
        with pytest.raises(ValueError, match="key"):
            index.get(key)
        assert index.check_and_add("http://example.com/after", 1 ^ 0b11).key == "http://example.com/ok"
        assert index.get("http://example.com/ok") is not None and index.get("http://example.com/after") is None


def test_numpy_integers_are_fingerprints_like_any_other(db_url):
    np = pytest.importorskip("numpy")
    top = np.uint64(0xFFFF0000FFFF0000)  # above 2**63, far from the others
    with SimhashIndex(db_url) as index:
        assert index.check_and_add("http://a.example/np", np.uint64(7)) is None
        assert index.check_and_add("http://a.example/top", top) is None
        assert (
            index.check_and_add("http://a.example/sig", Signature(np.uint64(0x00FF00FF00FF00FF), np.int64(99))) is None
        )
        assert (
            index.get("http://a.example/np").fingerprint == 7
            and type(index.get("http://a.example/np").fingerprint) is int
        )
        assert [m.key for m in index.query(np.uint64(7 ^ 1))] == ["http://a.example/np"]
        assert index.check_and_add("http://a.example/top-copy", int(top) ^ 1).key == "http://a.example/top"
        assert index.check_and_add(
            "http://a.example/text", Signature(0x0F0F0F0F0F0F0F0F, 99)
        ).exact  # the text hash from NumPy
        index.add_many([("http://a.example/bulk", np.int64(0x3333333333333333))])
        assert index.get("http://a.example/bulk").fingerprint == 0x3333333333333333


@pytest.mark.parametrize(
    ("value", "message"),
    [(7.0, "got float"), ("00ff", "from_hex"), (True, "got bool"), (-1, "64-bit"), (2**64, "64-bit")],
)
def test_fingerprints_that_are_not_integers_get_a_message(sqlite_url, value, message):
    with SimhashIndex(sqlite_url) as index:
        for call in (
            lambda: index.check_and_add("k", value),
            lambda: index.query(value),
            lambda: index.add("k", value),
        ):
            with pytest.raises((TypeError, ValueError), match=message):
                call()
        assert len(index) == 0


def test_a_new_sqlite_file_gets_its_folder(tmp_path):
    path = tmp_path / "new" / "deeper" / "simhash.db"
    with SimhashIndex(f"sqlite:///{path}") as index:
        assert index.check_and_add("a", 1) is None
    assert path.is_file()
    with pytest.raises(IndexNotFoundError, match=str(tmp_path / "absent")):
        SimhashIndex(f"sqlite:///{tmp_path / 'absent' / 'x.db'}", create=False)
    assert not (tmp_path / "absent").exists()  # looking created nothing


def test_new_sqlite_files_get_small_pages_and_older_files_keep_theirs(tmp_path):
    new, old = tmp_path / "new.db", tmp_path / "old.db"
    with sqlite3.connect(old) as conn:  # a file made before: 4 KiB pages, rollback journal
        conn.execute("PRAGMA page_size=4096")
        conn.execute("CREATE TABLE unrelated (x)")
    a, b = far_apart(random.Random(43), 2)
    for path in (new, old):
        with SimhashIndex(f"sqlite:///{path}") as index:
            assert index.check_and_add("https://a/", a) is None
            assert index.check_and_add("https://b/", b) is None
            assert index.check_and_add("https://a-copy/", a ^ 0b101).key == "https://a/"
    page_sizes = {}
    for path in (new, old):
        with sqlite3.connect(path) as conn:
            page_sizes[path.name] = conn.execute("PRAGMA page_size").fetchone()[0]
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert page_sizes == {"new.db": SQLITE_PAGE_SIZE, "old.db": 4096}
    assert SQLITE_PAGE_SIZE < 4096


def test_a_logged_duplicate_is_found_by_its_key(db_url):
    a, b = far_apart(random.Random(41), 2)
    with SimhashIndex(db_url) as index:
        index.check_and_add("https://a/", a)
        index.check_and_add("https://b/", b)
        assert index.check_and_add("https://a-copy/", a ^ 0b11) is not None
        found = index.duplicate("https://a-copy/")
        assert (found.key, found.duplicate_of, found.distance, found.exact, found.fingerprint) == (
            "https://a-copy/",
            "https://a/",
            2,
            False,
            a ^ 0b11,
        )
        assert index.duplicate("https://a/") is None and index.duplicate("https://nowhere/") is None
        assert index.check_and_add("https://a-copy/", b ^ (0b111 << 40)) is not None  # logged again, against b now
        assert index.duplicate("https://a-copy/").duplicate_of == "https://b/"


# -- batches: the same answers as one page at a time ----------------------------------------------


@st.composite
def batched_operations(draw):
    """Pages near a few centres (keys repeat, texts collide, sketches around 0.88), cut into batches."""
    centres = draw(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=3))
    base = bytes(range(256))
    pages = []
    for _ in range(draw(st.integers(1, 30))):
        key = draw(st.sampled_from("abcdefghij"))
        fp = flip(draw(st.sampled_from(centres)), draw(st.sets(st.integers(0, 63), max_size=5)))
        text_hash = draw(st.sampled_from([None, 1, 2, 3]))
        changed = draw(st.integers(0, 60))  # slots that differ from the base sketch: similarity 1.0 to ~0.77
        sketch = draw(st.sampled_from([None, bytes((b + 1) % 256 if i < changed else b for i, b in enumerate(base))]))
        pages.append((key, Signature(fp, text_hash, sketch, exact_only=text_hash == 1)))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(pages) - 1)), max_size=6)))
    return pages, cuts


@pytest.mark.parametrize("index_url", ONE_LAYOUT, indirect=True)
def test_batches_decide_as_pages_one_at_a_time(db_url):
    """check_and_add_many over any cut of a sequence answers and stores as check_and_add on
    each page in order, on the memory index that follows rule.py."""
    index = SimhashIndex(db_url)
    try:

        @settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(batched_operations())
        def check(case):
            pages, cuts = case
            empty(db_url)
            with SimhashIndex("memory://", max_distance=index.max_distance) as model:
                expected = [model.check_and_add(key, sig) for key, sig in pages]
                got = []
                for start, end in zip([0, *cuts], [*cuts, len(pages)]):
                    got += index.check_and_add_many(pages[start:end])
                assert [_answer(m) for m in got] == [_answer(m) for m in expected]
                for key in "abcdefghij":
                    assert index.get(key) == model.get(key)
                assert _log(index) == _log(model)

        check()
    finally:
        index.close()


def _answer(match):
    if match is None:
        return None
    similarity = None if match.similarity is None else round(match.similarity, 9)
    return (match.key, match.fingerprint, match.distance, match.exact, similarity)


def _log(index):
    return {d.key: (d.duplicate_of, d.distance, d.exact, d.fingerprint) for d in index.duplicates()}


def test_a_batch_of_5000_pages_is_decided_in_one_transaction(postgres_url):
    """However large, a batch takes one lock (earlier versions took one per block and byte,
    which a default server's lock table could not hold)."""
    rng = random.Random(5)
    pages = [(f"https://big.example/{n}", Signature(rng.getrandbits(64), rng.getrandbits(64))) for n in range(5000)]
    with SimhashIndex(postgres_url) as index:
        assert index.check_and_add_many(pages) == [None] * len(pages)
        assert len(index) == 5000
        copies = [(f"https://copy.example/{n}", Signature(s.simhash ^ 1, None)) for n, (_, s) in enumerate(pages[:8])]
        assert [m.key for m in index.check_and_add_many(copies)] == [key for key, _ in pages[:8]]


BIG_BATCH = """
import random, resource, sys
from simhash_index import Signature, SimhashIndex
limit = 3 << 30  # a batch's memory must grow with its size, not its square (30,000 pages: 7 GiB of pairs)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
rng = random.Random(6)
pages = [(f"https://big.example/{n}", Signature(rng.getrandbits(64), n)) for n in range(30_000)]
pages += [(f"https://copy.example/{n}", Signature(s.simhash ^ 1, 10**6 + n)) for n, (_, s) in enumerate(pages[:50])]
with SimhashIndex(sys.argv[1], max_distance=6) as index:  # 8 bits: a pair of the 30,000 in ten by chance
    answers = index.check_and_add_many(pages)
    assert answers[:30_000] == [None] * 30_000, "a page of the batch matched another by chance"
    assert [m.key for m in answers[30_000:]] == [key for key, _ in pages[:50]]
    assert len(index) == 30_000
"""


@pytest.mark.early
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_batch_of_30000_pages_is_decided_in_memory_linear_in_it(request, backend):
    """A caller may pass a batch of any size: its pages are compared with each other through a
    NearIndex, not a matrix of every pair, and its statements bind at most 10,000 values each."""
    import subprocess
    import sys

    url = request.getfixturevalue(f"{backend}_url")
    result = subprocess.run([sys.executable, "-c", BIG_BATCH, url], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
