"""The index's database going away mid-crawl, on a throwaway PostgreSQL cluster we stop and start.

The cluster lives under a temp dir on its own port, so the shared server is never touched; the
module's tests share it (initdb takes seconds), each on a fresh database of its own.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from conftest import REQUIRE_ENV
from crawlers import decided, start_crawl
from crawling import CrawlResult
from sites import Delay, build_cluster_site, serve
from sqlalchemy import create_engine, text

pytestmark = pytest.mark.early


@dataclass
class Cluster:
    bin_dir: Path
    data: Path
    port: int
    database: str = "postgres"

    @property
    def url(self) -> str:
        return f"postgresql://postgres:s3cret@127.0.0.1:{self.port}/{self.database}"

    def ctl(self, *args: str, check: bool = True) -> int:
        return subprocess.run(
            ["runuser", "-u", "postgres", "--", str(self.bin_dir / "pg_ctl"), "-D", str(self.data), *args],
            check=check,
            capture_output=True,
            timeout=60,
        ).returncode

    def running(self) -> bool:
        return self.ctl("status", check=False) == 0

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data}"
        self.ctl("-o", options, "-l", str(self.data / "server.log"), "-w", "start")

    def stop(self) -> None:
        self.ctl("-m", "fast", "-w", "stop")

    def processes(self) -> list[int]:
        """The server's processes: the postmaster and its children."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        found = [postmaster]
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(stat[1]) == postmaster:
                    found.append(int(entry))
        return found

    def freeze(self) -> None:
        """What a hung server or a network partition looks like: it accepts nothing, answers nothing."""
        self._signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self._signal(signal.SIGCONT)

    def _signal(self, number: int) -> None:
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):  # a backend that just exited
                os.kill(pid, number)


def feeds(path: Path) -> str:
    return "FEEDS=" + json.dumps({str(path): {"format": "jsonl"}})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server() -> Iterator[Cluster]:
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


@pytest.fixture
def cluster(server: Cluster) -> Iterator[Cluster]:
    """The module's server, its URL on a fresh database; running and thawed again afterwards."""
    database = f"test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server.url.replace("postgresql:", "postgresql+psycopg:"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{database}"'))
    finally:
        admin.dispose()
    try:
        yield replace(server, database=database)
    finally:
        if server.running():
            server.thaw()
        else:
            server.start()


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
    assert "s3cret" not in result.log and f"127.0.0.1:{cluster.port}" in result.log
    assert result.stat("simhash/errors/db") >= 1
    # items that met the outage went on un-deduplicated rather than vanish
    assert len(result.kept) >= result.stat("simhash/kept") + result.stat("simhash/errors/db")


def _crawl_through_an_outage(
    cluster: Cluster, tmp_path: Path, interrupt: Callable[[Path], None], *settings: str
) -> tuple[CrawlResult, int, int]:
    """A crawl with SIMHASH_ON_DB_ERROR=pass, `interrupt(log)` run once pages are being decided:
    the result, the pages the site has, and the decisions stored when the interruption was over.
    The site is slow until the crawl decides pages again, so that pages are left once it is back."""
    root = tmp_path / "site"
    info = build_cluster_site(root, clusters=25, members=4, indexes=1)
    feed, log = tmp_path / "kept.jsonl", tmp_path / "crawl.log"
    pace = Delay(0.3)
    with serve(root, delay=pace) as base:
        crawl = start_crawl(
            f"{base}/{info['indexes'][0]}",
            cluster.url,
            log,
            "CONCURRENT_REQUESTS=2",
            "SIMHASH_ON_DB_ERROR=pass",
            *settings,
            feeds(feed),
        )
        _wait_for_decisions(cluster.url, 8)
        interrupt(log)
        before = decided(cluster.url)
        _wait_for_decisions(cluster.url, before + 1)  # deduplicating again once the database is back
        pace.seconds = 0
        result = _result(crawl, log, feed)
    return result, sum(len(c) for c in info["clusters"]) + 1, before


def _assert_dedup_resumed_and_every_page_counted(
    result: CrawlResult, cluster: Cluster, pages: int, before: int
) -> None:
    errors = result.stat("simhash/errors/db")
    assert errors >= 1
    assert decided(cluster.url) > before  # deduplicating again once the database was back
    assert result.stat("simhash/kept") + result.stat("simhash/dropped") + errors == pages


def test_database_lost_mid_crawl_passes_items_and_reconnects(cluster: Cluster, tmp_path: Path) -> None:
    def restart(log: Path) -> None:
        cluster.stop()
        time.sleep(1.5)
        cluster.start()

    result, pages, before = _crawl_through_an_outage(cluster, tmp_path, restart)
    assert result.returncode == 0
    assert "Traceback" not in result.log
    assert "'finish_reason': 'finished'" in result.log
    assert result.log.count("items pass through un-deduplicated") == 1
    _assert_dedup_resumed_and_every_page_counted(result, cluster, pages, before)


FAST_TIMEOUTS = ("SIMHASH_CONNECT_TIMEOUT=2", "SIMHASH_STATEMENT_TIMEOUT=2")


def test_a_frozen_database_passes_items_and_recovers(cluster: Cluster, tmp_path: Path) -> None:
    frozen_for: list[float] = []

    def freeze_and_thaw(log: Path) -> None:
        cluster.freeze()
        try:
            deadline = time.monotonic() + 60
            while "no answer within" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.2)
            frozen_for.append(time.monotonic())
            time.sleep(2)  # items keep flowing (passed through) while the server is frozen
        finally:
            cluster.thaw()

    result, pages, before = _crawl_through_an_outage(cluster, tmp_path, freeze_and_thaw, *FAST_TIMEOUTS)
    assert result.returncode == 0, result.log[-3000:]
    assert "Traceback" not in result.log and "'finish_reason': 'finished'" in result.log
    assert "no answer within" in result.log and time.monotonic() > frozen_for[0]
    _assert_dedup_resumed_and_every_page_counted(result, cluster, pages, before)


def test_a_frozen_database_at_start_closes_the_spider_in_time(cluster: Cluster, tmp_path: Path) -> None:
    root = tmp_path / "site"
    info = build_cluster_site(root, clusters=2, members=2, indexes=1)
    log = tmp_path / "crawl.log"
    cluster.freeze()
    try:
        with serve(root) as base:
            started = time.monotonic()
            crawl = start_crawl(f"{base}/{info['indexes'][0]}", cluster.url, log, *FAST_TIMEOUTS)
            _, stderr = crawl.communicate(timeout=120)
            took = time.monotonic() - started
    finally:
        cluster.thaw()
    text = log.read_text() + stderr
    assert crawl.returncode == 1 and "'finish_reason': 'simhash_index_unavailable'" in text
    assert "Traceback" not in text
    assert took < 60, took  # a guard against the old hang (130 s), not a measurement


def test_report_commands_on_a_frozen_database_fail_in_time(cluster: Cluster) -> None:
    cluster.freeze()
    try:
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", "from simhash_index.cli import main; main()", "stats", "--db", cluster.url],
            capture_output=True,
            text=True,
            timeout=120,
        )
        took = time.monotonic() - started
    finally:
        cluster.thaw()
    assert done.returncode == 2 and done.stderr.startswith("Error: ") and "s3cret" not in done.stderr
    assert took < 60, took  # a guard against a hang, not a measurement
