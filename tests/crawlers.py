"""Real `scrapy crawl` processes on one index, and what they left in it (read with plain SQL)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from crawling import CRAWL_DEFAULTS, REPO
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError, ProgrammingError

from simhash_index.index.sql.engine import parse_url


def start_crawl(start_url: str, db_url: str, log: Path, *settings: str) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        "site",
        "-a",
        f"start_url={start_url}",
        "-s",
        f"SIMHASH_DATABASE_URL={db_url}",
        "-s",
        f"LOG_FILE={log}",
        "-s",
        "ROBOTSTXT_OBEY=False",
    ]
    for setting in CRAWL_DEFAULTS + settings:  # a later -s wins
        command += ["-s", setting]
    return subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def db_state(db_url: str) -> tuple[dict[str, int], dict[str, tuple[str, int]]]:
    """(stored key -> id, dropped key -> (duplicate_of, duplicate_of_id)), read with plain SQL."""
    engine = create_engine(parse_url(db_url))
    try:
        with engine.connect() as conn:
            stored = dict(conn.execute(text("SELECT key, id FROM simhash_documents")).all())
            dropped = {
                k: (d, i)
                for k, d, i in conn.execute(
                    text("SELECT key, duplicate_of, duplicate_of_id FROM simhash_duplicates")
                ).all()
            }
    finally:
        engine.dispose()
    return stored, dropped


def assert_consistent(db_url: str, base: str, clusters: list[list[str]], *, complete: bool) -> None:
    """Each cluster has at most (with complete: exactly) one stored page and every other
    crawled member is logged as a duplicate of that stored page; no row points nowhere."""
    stored, dropped = db_state(db_url)
    assert not set(stored) & set(dropped)
    for key, (duplicate_of, target_id) in dropped.items():
        assert stored.get(duplicate_of) == target_id, (key, duplicate_of)
    for cluster in clusters:
        urls = [f"{base}/{p}" for p in cluster]
        kept = [u for u in urls if u in stored]
        assert len(kept) <= 1, kept
        if complete:
            assert len(kept) == 1, cluster
            assert all(dropped[u][0] == kept[0] for u in urls if u != kept[0])


def decided(db_url: str) -> int:
    """Pages stored or logged so far; 0 before the crawler has created its tables."""
    try:
        stored, dropped = db_state(db_url)
    except (OperationalError, ProgrammingError):
        return 0
    return len(stored) + len(dropped)
