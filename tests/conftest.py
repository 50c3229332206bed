"""Shared fixtures: database URLs for every backend, on real servers."""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

POSTGRES_ENV = "SIMHASH_TEST_POSTGRES_URL"
REQUIRE_ENV = "SIMHASH_REQUIRE_POSTGRES"  # set by .ci/run: a skipped PostgreSQL test is a failure


def _postgres_base() -> str:
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(f"{REQUIRE_ENV} is set but {POSTGRES_ENV} is not: the PostgreSQL tests must run")
        pytest.skip(f"set {POSTGRES_ENV}=postgresql://user@host/db to run the PostgreSQL tests")
    return url


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh schema, dropped afterwards."""
    base = make_url(_postgres_base()).set(drivername="postgresql+psycopg")
    schema = f"simhash_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as exc:  # the server is down or the URL is wrong
        admin.dispose()
        message = f"PostgreSQL at {base.render_as_string(hide_password=True)} is not usable: {exc}"
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield base.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'simhash.db'}"


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    """Each test that takes it runs once on SQLite and once on PostgreSQL."""
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture(params=["sqlite", "postgres"])
def fresh_db_urls(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], str]]:
    """A factory of fresh, empty databases on one backend per run: SQLite files, or
    PostgreSQL schemas (each a URL whose search_path is its own schema, dropped afterwards)."""
    if request.param == "sqlite":
        counter = itertools.count()
        yield lambda: f"sqlite:///{tmp_path / f'fresh{next(counter)}.db'}"
        return
    base = make_url(_postgres_base()).set(drivername="postgresql+psycopg")
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    schemas: list[str] = []

    def fresh() -> str:
        schema = f"simhash_test_{uuid.uuid4().hex[:12]}"
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        schemas.append(schema)
        return base.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)

    try:
        fresh()  # fails or skips here, as postgres_url does, when the server is not usable
    except Exception as exc:
        admin.dispose()
        message = f"PostgreSQL at {base.render_as_string(hide_password=True)} is not usable: {exc}"
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield fresh
    finally:
        with admin.connect() as conn:
            for schema in schemas:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
