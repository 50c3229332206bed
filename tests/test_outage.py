"""The index's database going away mid-crawl, on a throwaway PostgreSQL cluster we stop and start.

The cluster lives under a temp dir on its own port, so the shared server is never touched.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REQUIRE_ENV
from crawling import CrawlResult
from sites import build_cluster_site, serve
from test_reliability import decided, start_crawl


@dataclass
class Cluster:
    bin_dir: Path
    data: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql://postgres:s3cret@127.0.0.1:{self.port}/postgres"

    def ctl(self, *args: str) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", str(self.bin_dir / "pg_ctl"), "-D", str(self.data), *args],
            check=True,
            capture_output=True,
            timeout=60,
        )

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data}"
        self.ctl("-o", options, "-l", str(self.data / "server.log"), "-w", "start")

    def stop(self) -> None:
        self.ctl("-m", "fast", "-w", "stop")


def feeds(path: Path) -> str:
    return "FEEDS=" + json.dumps({str(path): {"format": "jsonl"}})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not bins or os.geteuid() != 0 or not shutil.which("runuser"):
        message = "needs PostgreSQL's initdb and root (to run it as the postgres user)"
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(message)
        pytest.skip(message)
    home = Path(tempfile.mkdtemp(prefix="simhash-test-pg-"))  # pytest's tmp dirs are closed to other users
    shutil.chown(home, "postgres")
    home.chmod(0o700)
    data = home / "data"
    bin_dir = Path(bins[-1]).parent
    subprocess.run(
        ["runuser", "-u", "postgres", "--", str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    cluster = Cluster(bin_dir, data, _free_port())
    cluster.start()
    try:
        yield cluster
    finally:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(home, ignore_errors=True)


def _result(process, log: Path, feed: Path) -> CrawlResult:
    _, stderr = process.communicate(timeout=300)
    kept = [json.loads(line) for line in feed.read_text().splitlines()] if feed.exists() else []
    return CrawlResult(kept, log.read_text() + stderr, process.returncode)


def _wait_for_decisions(db_url: str, count: int) -> None:
    deadline = time.monotonic() + 60
    while decided(db_url) < count:
        assert time.monotonic() < deadline, "the crawl made no progress"
        time.sleep(0.1)


def test_database_lost_mid_crawl_stops_the_spider(cluster: Cluster, tmp_path: Path) -> None:
    root = tmp_path / "site"
    info = build_cluster_site(root, clusters=15, members=4, indexes=1)
    feed, log = tmp_path / "kept.jsonl", tmp_path / "crawl.log"
    with serve(root, delay=0.1) as base:
        crawl = start_crawl(f"{base}/{info['indexes'][0]}", cluster.url, log, "CONCURRENT_REQUESTS=2", feeds(feed))
        _wait_for_decisions(cluster.url, 8)
        cluster.stop()
        result = _result(crawl, log, feed)
    assert result.returncode == 1  # the crawl stopped short: a script must be able to tell
    assert "Traceback" not in result.log
    assert "'finish_reason': 'simhash_index_error'" in result.log
    assert result.log.count("closing the spider (SIMHASH_ON_DB_ERROR=stop)") == 1
    assert "s3cret" not in result.log and "127.0.0.1:%d" % cluster.port in result.log
    assert result.stat("simhash/errors/db") >= 1
    # items that met the outage went on un-deduplicated rather than vanish
    assert len(result.kept) >= result.stat("simhash/kept") + result.stat("simhash/errors/db")


def test_database_lost_mid_crawl_passes_items_and_reconnects(cluster: Cluster, tmp_path: Path) -> None:
    root = tmp_path / "site"
    info = build_cluster_site(root, clusters=15, members=4, indexes=1)
    feed, log = tmp_path / "kept.jsonl", tmp_path / "crawl.log"
    with serve(root, delay=0.1) as base:
        crawl = start_crawl(
            f"{base}/{info['indexes'][0]}",
            cluster.url,
            log,
            "CONCURRENT_REQUESTS=2",
            "SIMHASH_ON_DB_ERROR=pass",
            feeds(feed),
        )
        _wait_for_decisions(cluster.url, 8)
        cluster.stop()
        time.sleep(1.5)
        cluster.start()
        before = decided(cluster.url)
        result = _result(crawl, log, feed)
    assert result.returncode == 0
    assert "Traceback" not in result.log
    assert "'finish_reason': 'finished'" in result.log
    assert result.log.count("items pass through un-deduplicated") == 1
    errors = result.stat("simhash/errors/db")
    assert errors >= 1
    assert decided(cluster.url) > before  # deduplicating again once the database was back
    pages = sum(len(c) for c in info["clusters"]) + 1
    assert result.stat("simhash/kept") + result.stat("simhash/dropped") + errors == pages
