"""Native crashes during extraction cost one page, never the crawl (real `scrapy crawl` processes)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from crawlers import start_crawl
from crawling import crawl
from sites import Delay, build_cluster_site, english_article, page, serve

from simhash_index import SimhashIndex

pytestmark = pytest.mark.early


def children(pid: int) -> list[int]:
    """Processes whose parent is pid."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry))
    return found


def workers_of(pid: int) -> list[int]:
    found = []
    for child in children(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as cmdline:
                if b"simhash_index.workers" in cmdline.read():
                    found.append(child)
        except OSError:
            continue
    return found


def stat(log: str, name: str) -> int:
    import re

    match = re.search(rf"'{re.escape(name)}': (\d+)", log)
    return int(match.group(1)) if match else 0


def test_a_worker_killed_mid_page_costs_that_page_only(tmp_path: Path, sqlite_url: str) -> None:
    root = tmp_path / "site"
    root.mkdir()
    paths = []
    for i in range(24):  # pages heavy enough that a worker is usually mid-page when killed
        paragraphs = english_article(500 + i, paragraphs=40, sentences=12) * 6
        (root / f"p{i}.html").write_text(page(f"Page {i}", paragraphs))
        paths.append(f"p{i}.html")
    (root / "index.html").write_text(
        "<html><body>" + "".join(f'<a href="/{p}">{p}</a> ' for p in paths) + "</body></html>"
    )
    feed, log = tmp_path / "kept.jsonl", tmp_path / "crawl.log"
    pace = Delay(0.4)  # a crawl long enough for three kills on a fast machine too; then quick
    with serve(root, delay=pace) as base:
        process = start_crawl(
            f"{base}/index.html",
            sqlite_url,
            log,
            "SIMHASH_WORKERS=2",
            "CONCURRENT_REQUESTS=4",
            "FEEDS=" + json.dumps({str(feed): {"format": "jsonl"}}),
        )
        killed: set[int] = set()
        deadline = time.monotonic() + 120
        while process.poll() is None and len(killed) < 3 and time.monotonic() < deadline:
            time.sleep(0.7)
            fresh = [pid for pid in workers_of(process.pid) if pid not in killed]
            started = log.exists() and "worker processes" in log.read_text()  # the pipeline is open
            if fresh and started:
                os.kill(fresh[0], signal.SIGKILL)
                killed.add(fresh[0])
        pace.seconds = 0
        _, stderr = process.communicate(timeout=300)
    text = log.read_text()
    assert process.returncode == 0, text[-3000:] + stderr[-2000:]
    assert "'finish_reason': 'finished'" in text
    assert len(killed) == 3
    crashes = stat(text, "simhash/errors/worker_crash")
    assert 1 <= crashes <= 3  # a worker killed between pages costs nothing
    assert text.count("while analysing") == crashes  # each crash logged once, with its URL
    decided = stat(text, "simhash/kept") + stat(text, "simhash/dropped") + stat(text, "simhash/errors")
    assert decided == len(paths) + 1  # every page accounted for, the index page too
    kept = [json.loads(line) for line in feed.read_text().splitlines()]
    assert len(kept) == len(paths) + 1  # the pages are all different: crashed ones passed through
    with SimhashIndex(sqlite_url, scheme=None) as index:
        assert len(index) == stat(text, "simhash/kept")


def test_a_concurrent_crawl_accounts_for_every_page(tmp_path: Path, db_url: str) -> None:
    root = tmp_path / "site"
    info = build_cluster_site(root, clusters=12, members=5, indexes=1)
    with serve(root) as base:
        result = crawl(
            f"{base}/{info['indexes'][0]}",
            db_url,
            tmp_path / "run",
            "CONCURRENT_REQUESTS=32",
            "SIMHASH_WORKERS=2",
            "SIMHASH_BATCH_SIZE=16",
        )
    assert result.returncode == 0, result.log[-3000:]
    assert "Traceback" not in result.log
    pages = sum(len(cluster) for cluster in info["clusters"]) + 1  # and the index page
    counted = sum(result.stat(f"simhash/{name}") for name in ("kept", "dropped", "errors", "no_text"))
    assert counted == pages
    with SimhashIndex(db_url, scheme=None) as index:
        assert len(index) == result.stat("simhash/kept") and len(index.duplicates()) == result.stat("simhash/dropped")
        for duplicate in index.duplicates():  # each drop points at a stored page, and is not stored itself
            assert index.get(duplicate.duplicate_of) is not None and index.get(duplicate.key) is None
    assert result.stat("simhash/kept") <= len(info["clusters"]) * 2
