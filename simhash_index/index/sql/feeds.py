"""The change feed of each database (changes.py), chosen once by its dialect (dialects.py)."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from .changes import Feed
from .changes_postgres import PostgresFeed
from .changes_sqlite import SqliteFeed
from .dialects import POSTGRES, SQLITE, SqlDialect, dialect_of
from .statements import RawConnection

FEEDS: dict[SqlDialect, Feed] = {SQLITE: SqliteFeed(), POSTGRES: PostgresFeed()}


def feed_for(conn: Connection | RawConnection) -> Feed:
    """The change feed of the connection's database."""
    return FEEDS[dialect_of(conn)]
