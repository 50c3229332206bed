"""Real crawls with `scrapy crawl site` against a local HTTP server, on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from crawling import CrawlResult, crawl
from sites import build_site, english_article, page, serve

from simhash_index import SimhashIndex, defaults


def _check_dedup(base: str, info: dict, result, db_url: str) -> None:
    assert result.returncode == 0, result.log[-3000:]
    assert "Traceback" not in result.log
    kept = result.kept_paths
    assert len(result.kept) == len(kept)  # no page twice
    with SimhashIndex(db_url, scheme=None) as index:
        logged = index.duplicates()
        stored = len(index)
    dropped = {d.key.removeprefix(base + "/"): d.duplicate_of.removeprefix(base + "/") for d in logged}
    for cluster in info["clusters"]:
        survivors = [p for p in cluster if p in kept]
        assert len(survivors) == 1, (cluster, survivors)
        for member in cluster:
            if member != survivors[0]:
                assert dropped.get(member) == survivors[0], (member, dropped.get(member))
    for single in info["singles"]:
        assert single in kept, single
    assert set(dropped) == {p for c in info["clusters"] for p in c} - kept
    assert kept == set(info["singles"]) | {p for c in info["clusters"] for p in c} - set(dropped)
    assert stored == len(kept)
    assert result.stat("simhash/kept") == len(kept)
    assert result.stat("simhash/dropped") == len(dropped)
    # which drops are exact depends on which copy the crawl met first (the print view's title differs)
    assert result.stat("simhash/dropped_exact") == sum(d.exact for d in logged)
    for item in result.kept:
        assert (len(item["simhash"]) == 16 and set(item["simhash"]) <= set("0123456789abcdef")) or item["url"].endswith(
            "index.html"
        )
        assert item["text"] and item["title"]


def test_crawl_drops_near_duplicates_and_recrawl_keeps_decisions(site, db_url: str, tmp_path: Path) -> None:
    base, info = site
    first = crawl(f"{base}/index.html", db_url, tmp_path / "run")
    _check_dedup(base, info, first, db_url)
    assert not any(item["url"].endswith((".pdf", ".png")) for item in first.kept)
    assert all(item["url"].startswith(base) for item in first.kept)

    second = crawl(f"{base}/index.html", db_url, tmp_path / "run")
    _check_dedup(base, info, second, db_url)
    assert second.kept_paths == first.kept_paths  # stored pages are not duplicates of themselves
    assert second.stat("simhash/dropped") == first.stat("simhash/dropped")
    # the start says whether the index is new, or how many pages it holds
    assert "simhash: a new index, created at " in first.log and "simhash: the index at " not in first.log
    held = rf"simhash: the index at \S.* holds {first.stat('simhash/kept')} pages \(radius {defaults.MAX_DISTANCE}\)"
    assert re.search(held, second.log)


@dataclass
class SharedCrawl:
    base: str
    info: dict
    db: Path
    result: CrawlResult


@pytest.fixture(scope="module")
def shared_crawl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedCrawl]:
    """One crawl of the test site that several tests read (a crawl costs seconds): breadth-first,
    at DEBUG level, into an SQLite file in folders not made yet (docs/scrapy.md's example)."""
    tmp_path = tmp_path_factory.mktemp("shared")
    info = build_site(tmp_path / "site")
    db = tmp_path / "new" / "folder" / "db.sqlite"
    with serve(tmp_path / "site") as base:
        result = crawl(
            f"{base}/index.html",
            f"sqlite:///{db}",
            tmp_path / "bfs",
            "DEPTH_PRIORITY=1",
            "SCHEDULER_DISK_QUEUE=scrapy.squeues.PickleFifoDiskQueue",
            "SCHEDULER_MEMORY_QUEUE=scrapy.squeues.FifoMemoryQueue",
            "LOG_LEVEL=DEBUG",
        )
    yield SharedCrawl(base, info, db, result)


def test_crawl_breadth_first_keeps_one_per_cluster(shared_crawl: SharedCrawl) -> None:
    _check_dedup(shared_crawl.base, shared_crawl.info, shared_crawl.result, f"sqlite:///{shared_crawl.db}")


def test_log_lines_never_carry_page_bodies(shared_crawl: SharedCrawl) -> None:
    result = shared_crawl.result
    assert result.returncode == 0
    assert "Scraped from" in result.log and "near-duplicate of" in result.log
    assert "<p>" not in result.log  # no HTML body in any line
    assert max(len(line) for line in result.log.splitlines()) < 2000


def test_disabled_pipeline_keeps_everything(site, sqlite_url: str, tmp_path: Path) -> None:
    base, info = site
    result = crawl(f"{base}/index.html", sqlite_url, tmp_path / "off", "SIMHASH_ENABLED=False")
    assert result.returncode == 0
    assert result.kept_paths == set(info["singles"]) | {p for c in info["clusters"] for p in c}
    assert result.stat("simhash/kept") == 0


def test_the_start_page_is_crawled_once(tmp_path: Path, sqlite_url: str) -> None:
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text(
        page("Home", english_article(31)).replace("<ul>", '<ul><li><a href="/a.html">a</a></li>')
    )
    (root / "a.html").write_text(
        page("A", english_article(32)).replace("<ul>", '<ul><li><a href="/index.html">home</a></li>')
    )
    with serve(root) as base:
        result = crawl(f"{base}/index.html", sqlite_url, tmp_path / "run")
    assert result.returncode == 0, result.log[-2000:]
    assert sorted(item["url"] for item in result.kept) == [f"{base}/a.html", f"{base}/index.html"]
    with SimhashIndex(sqlite_url, scheme=None) as index:
        assert result.stat("simhash/kept") == len(index) == 2


def test_a_bad_setting_is_one_error_line_and_exit_status_1(tmp_path: Path, sqlite_url: str) -> None:
    result = crawl("http://127.0.0.1:9/index.html", sqlite_url, tmp_path / "run", "SIMHASH_MAX_DISTANCE=9")
    assert result.returncode == 1
    assert "Traceback" not in result.log and "Task exception was never retrieved" not in result.log
    errors = [line for line in result.log.splitlines() if " ERROR: " in line or " CRITICAL: " in line]
    assert errors == [errors[0]] and "SIMHASH_MAX_DISTANCE must be from 0 to 8; got 9" in errors[0]


def test_a_missing_folder_is_created_and_an_unusable_index_exits_1(shared_crawl: SharedCrawl, tmp_path: Path) -> None:
    created = shared_crawl.result
    assert created.returncode == 0 and shared_crawl.db.is_file() and created.stat("simhash/kept") > 0
    assert f"simhash: a new index, created at {shared_crawl.db} (radius {defaults.MAX_DISTANCE}); " in created.log
    (tmp_path / "file").write_text("a file where a folder should be")
    blocked = crawl(f"{shared_crawl.base}/index.html", f"sqlite:///{tmp_path / 'file' / 'db.sqlite'}", tmp_path / "run")
    assert blocked.returncode == 1, blocked.log[-2000:]
    assert "Traceback" not in blocked.log
    assert "cannot open the index" in blocked.log and "'finish_reason': 'simhash_index_unavailable'" in blocked.log
    assert blocked.kept == [] and blocked.stat("downloader/request_count") == 0
