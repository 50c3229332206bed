"""The change feed of each database (changes.py), chosen once by its dialect."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from .changes import Feed
from .changes_postgres import PostgresFeed
from .changes_sqlite import SqliteFeed
from .statements import RawConnection

FEEDS: dict[str, Feed] = {"sqlite": SqliteFeed(), "postgresql": PostgresFeed()}


def feed_for(conn: Connection | RawConnection) -> Feed:
    """The change feed of the connection's database."""
    return FEEDS[conn.dialect.name]
