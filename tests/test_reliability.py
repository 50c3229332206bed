"""Many crawlers on one index, and crashes: real `scrapy crawl` processes on real databases."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from crawlers import assert_consistent, db_state, decided, start_crawl
from sites import build_cluster_site, serve
from sqlalchemy import create_engine, text

from simhash_index.index.sql.engine import parse_url

pytestmark = pytest.mark.early


def finish(processes: list[subprocess.Popen], logs: list[Path]) -> None:
    for process, log in zip(processes, logs):
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr[-2000:]
        content = log.read_text()
        assert "Traceback" not in content, content[content.index("Traceback") - 500 :][:3000]
        assert "simhash/errors" not in content
        assert "finish_reason': 'finished'" in content


@pytest.mark.parametrize(("backend", "crawlers", "rounds"), [("postgres", 4, 2), ("sqlite", 2, 2)])
def test_many_crawlers_share_one_index(backend: str, crawlers: int, rounds: int, request, tmp_path: Path) -> None:
    root = tmp_path / "site"
    info = build_cluster_site(root, clusters=12, members=4, indexes=crawlers)
    db_url = request.getfixturevalue(f"{backend}_url")
    with serve(root) as base:
        for round_number in range(rounds):
            if round_number:
                reset_tables(db_url)
            logs = [tmp_path / f"r{round_number}-c{i}.log" for i in range(crawlers)]
            processes = [start_crawl(f"{base}/{info['indexes'][i]}", db_url, logs[i]) for i in range(crawlers)]
            finish(processes, logs)
            assert_consistent(db_url, base, info["clusters"], complete=True)


def reset_tables(db_url: str) -> None:
    engine = create_engine(parse_url(db_url))
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM simhash_duplicates"))
        conn.execute(text("DELETE FROM simhash_documents"))
    engine.dispose()


def test_sigkill_mid_crawl_leaves_a_consistent_index(sqlite_url: str, tmp_path: Path) -> None:
    root = tmp_path / "site"
    info = build_cluster_site(root, clusters=15, members=4, indexes=1)
    jobdir = tmp_path / "job"
    with serve(root, delay=0.1) as base:
        start = f"{base}/{info['indexes'][0]}"
        feed = tmp_path / "killed.jsonl"
        crawl = start_crawl(
            start,
            sqlite_url,
            tmp_path / "killed.log",
            f"JOBDIR={jobdir}",
            "CONCURRENT_REQUESTS=4",
            "FEED_EXPORT_BATCH_ITEM_COUNT=0",
            "FEEDS=" + json.dumps({str(feed): {"format": "jsonl"}}),
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if decided(sqlite_url) >= 15:
                break
            time.sleep(0.2)
        os.kill(crawl.pid, signal.SIGKILL)
        crawl.communicate()
        stored, dropped = db_state(sqlite_url)
        assert 15 <= len(stored) + len(dropped) < 60  # killed mid-way
        assert_consistent(sqlite_url, base, info["clusters"], complete=False)
        # an item is passed on only after its batch committed: every page the feed got is stored
        passed_on = [json.loads(line)["url"] for line in feed.read_text().splitlines() if line.endswith("}")]
        assert all(url in stored for url in passed_on if not url.endswith(info["indexes"][0]))

        # The rerun revisits pages the killed run already decided on: stored pages stay
        # stored (not duplicates of themselves), logged ones are dropped again.
        resumed = start_crawl(start, sqlite_url, tmp_path / "resumed.log", f"JOBDIR={jobdir}")
        finish([resumed], [tmp_path / "resumed.log"])
    assert_consistent(sqlite_url, base, info["clusters"], complete=True)
