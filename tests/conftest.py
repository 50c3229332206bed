"""Shared fixtures: index URLs for every backend (SQLite, PostgreSQL, Redis), on real servers."""

from __future__ import annotations

import importlib
import itertools
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest
import scrapy
from scrapy.crawler import Crawler
from sites import build_site, serve
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url

if TYPE_CHECKING:
    import redis

POSTGRES_ENV = "SIMHASH_TEST_POSTGRES_URL"
REQUIRE_ENV = "SIMHASH_REQUIRE_POSTGRES"  # set by .ci/run: a skipped PostgreSQL or Redis test is a failure
REDIS_ENV = "SIMHASH_TEST_REDIS_URL"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"
EXAMPLES_ENV = "SIMHASH_TEST_EXAMPLES"  # a factor: 10 runs ten times the Hypothesis examples, for a longer hunt


def examples(count: int) -> int:
    """A Hypothesis test's max_examples: `count`, times SIMHASH_TEST_EXAMPLES when it is set."""
    return count * int(os.environ.get(EXAMPLES_ENV, "1"))


try:  # .ci/versions runs tests that need no Hypothesis, without it installed
    from hypothesis import settings
except ImportError:
    pass
else:
    settings.register_profile("simhash", max_examples=examples(settings.default.max_examples))
    settings.load_profile("simhash")  # the tests that name no max_examples scale too


def pytest_configure(config: pytest.Config) -> None:
    """The asyncio reactor, as Scrapy installs it for a crawl: tests drive the pipeline's coroutines
    on its event loop (driving.py); Scrapy before 2.14 also needs one to make a test crawler."""
    from scrapy.utils.reactor import install_reactor

    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `early` (crawls and process races of many seconds) first: xdist's worksteal
    hands each worker a contiguous share and steals from the end, so a long test collected last
    would run alone at the end of the run."""
    items.sort(key=lambda item: item.get_closest_marker("early") is None)


def open_stats(crawler: Crawler) -> None:
    """Open a test crawler's stats, as its engine would: Scrapy < 2.14 takes the spider (there is
    none here), later ones deprecate the argument."""
    assert crawler.stats is not None
    if scrapy.version_info < (2, 14):
        crawler.stats.open_spider(None)
    else:
        crawler.stats.open_spider()


def driver(name: str, extra: str) -> ModuleType:
    """An optional database driver: skips the test (or the module, at import) when it is not
    installed, and fails under SIMHASH_REQUIRE_POSTGRES, where CI installs every extra."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        message = f"{exc}: install the {extra} extra to run these tests (pip install '.[{extra}]' in the clone)"
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(message)
        pytest.skip(message, allow_module_level=True)


def _postgres_base() -> str:
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(f"{REQUIRE_ENV} is set but {POSTGRES_ENV} is not: the PostgreSQL tests must run")
        pytest.skip(f"set {POSTGRES_ENV}=postgresql://user@host/db to run the PostgreSQL tests")
    return url


def _postgres_unusable(base: URL, exc: Exception) -> None:
    """Skip, or fail when CI requires PostgreSQL, naming the server (password hidden)."""
    message = f"PostgreSQL at {base.render_as_string(hide_password=True)} is not usable: {exc}"
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(message)
    pytest.skip(message)


def _schema_url(base: URL, schema: str) -> str:
    """A URL whose connections work in this schema. Their commits do not wait for the disk
    (synchronous_commit=off; nothing else changes): a test's data need not outlive a crash of the
    server, and the writer races commit thousands of times, each holding the writer lock."""
    options = f"-csearch_path={schema} -csynchronous_commit=off"
    return base.update_query_dict({"options": options}).render_as_string(hide_password=False)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh schema, dropped afterwards."""
    base = make_url(_postgres_base()).set(drivername="postgresql+psycopg")
    driver("psycopg", "postgres")
    schema = f"simhash_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as exc:  # the server is down or the URL is wrong
        admin.dispose()
        _postgres_unusable(base, exc)
    try:
        yield _schema_url(base, schema)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'simhash.db'}"


def redis_server() -> redis.Redis:
    """A client of the test Redis server; skips the test (fails under CI) when it is not usable."""
    driven = driver("redis", "redis")
    base = os.environ.get(REDIS_ENV, DEFAULT_REDIS)
    client = driven.Redis.from_url(base, socket_connect_timeout=5)
    try:
        client.ping()
    except driven.RedisError as exc:
        client.close()
        message = f"Redis at {base} is not usable ({exc}): start one, or set {REDIS_ENV}"
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(message)
        pytest.skip(message)
    return client


def redis_prefix_url(prefix: str) -> str:
    base = os.environ.get(REDIS_ENV, DEFAULT_REDIS)
    return f"{base}{'&' if '?' in base else '?'}prefix={prefix}"


def delete_redis_keys(client: redis.Redis, prefix: str, *, keep: tuple[str, ...] = ()) -> None:
    """Delete every key under a prefix (our test prefixes hold no glob characters), but `keep`."""
    kept = {f"{prefix}{name}".encode() for name in keep}
    doomed = [key for key in client.scan_iter(match=f"{prefix}*", count=1000) if key not in kept]
    for start in range(0, len(doomed), 1000):
        client.unlink(*doomed[start : start + 1000])


def _fresh_redis_prefix() -> str:
    return f"simhash-test-{uuid.uuid4().hex[:12]}:"


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A Redis URL with a key prefix of its own; its keys are deleted afterwards."""
    client = redis_server()
    prefix = _fresh_redis_prefix()
    try:
        yield redis_prefix_url(prefix)
    finally:
        delete_redis_keys(client, prefix)
        client.close()


@pytest.fixture(params=["memory", "sqlite", "postgres", "redis"])
def any_url(request: pytest.FixtureRequest) -> str:
    """Each test that takes it runs on every backend: the memory index too."""
    return "memory://" if request.param == "memory" else str(request.getfixturevalue(f"{request.param}_url"))


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def db_url(request: pytest.FixtureRequest) -> str:
    """Each test that takes it runs once on SQLite, once on PostgreSQL and once on Redis."""
    return request.getfixturevalue(f"{request.param}_url")


def without_layout(url: str) -> str:
    """An SQL URL for SQLAlchemy itself: the library's ?layout= taken out."""
    return make_url(url).difference_update_query(["layout", "block_assignment"]).render_as_string(hide_password=False)


def with_layout(url: str, layout: str) -> str:
    """An SQL URL whose new index gets this layout (`?layout=`)."""
    return make_url(url).update_query_dict({"layout": layout}).render_as_string(hide_password=False)


# A SQL table's layout decides only its own lookup (`?lookup=sql`, `query`): writers look up in
# memory, so a test of what writers decide overrides index_url's or fresh_db_urls' params with these
# (`pytest.mark.parametrize("index_url", ONE_LAYOUT, indirect=True)`).
ONE_LAYOUT = ["sqlite", "postgres", "redis"]


@pytest.fixture(params=["sqlite", "sqlite-halves", "postgres", "postgres-halves", "redis"])
def index_url(request: pytest.FixtureRequest) -> str:
    """The index suite's backends: SQL in both layouts ("blocks", the default, and "halves"), and Redis."""
    backend, _, layout = request.param.partition("-")
    url = request.getfixturevalue(f"{backend}_url")
    return with_layout(url, layout) if layout else url


@pytest.fixture(params=["sqlite", "sqlite-halves", "postgres", "postgres-halves", "redis"])
def fresh_db_urls(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], str]]:
    """A factory of fresh, empty indexes on one backend (and SQL layout) per run: SQLite
    files, PostgreSQL schemas (each a URL whose search_path is its own schema, dropped
    afterwards), or Redis key prefixes (their keys deleted afterwards)."""
    backend, _, layout = request.param.partition("-")
    if backend == "sqlite":
        counter = itertools.count()
        yield lambda: with_layout(f"sqlite:///{tmp_path / f'fresh{next(counter)}.db'}", layout or "blocks")
        return
    if backend == "redis":
        client = redis_server()
        prefixes: list[str] = []

        def fresh_prefix() -> str:
            prefixes.append(_fresh_redis_prefix())
            return redis_prefix_url(prefixes[-1])

        try:
            yield fresh_prefix
        finally:
            for prefix in prefixes:
                delete_redis_keys(client, prefix)
            client.close()
        return
    base = make_url(_postgres_base()).set(drivername="postgresql+psycopg")
    driver("psycopg", "postgres")
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    schemas: list[str] = []

    def fresh() -> str:
        schema = f"simhash_test_{uuid.uuid4().hex[:12]}"
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        schemas.append(schema)
        return with_layout(_schema_url(base, schema), layout or "blocks")

    try:
        fresh()  # fails or skips here, as postgres_url does, when the server is not usable
    except Exception as exc:
        admin.dispose()
        _postgres_unusable(base, exc)
    try:
        yield fresh
    finally:
        with admin.connect() as conn:
            for schema in schemas:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, dict]]:
    """The test site (tests/sites.py) served on 127.0.0.1: its base URL and what it holds."""
    root = tmp_path / "site"
    info = build_site(root)
    with serve(root) as base:
        yield base, info
