"""A distributed crawl: two `scrapy crawl site` processes share one scrapy-redis scheduler
(request queue and dupefilter in Redis) and deduplicate into one shared index: on Redis, the
same server as the scheduler's."""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from conftest import DEFAULT_REDIS, REDIS_ENV, delete_redis_keys, redis_server
from crawlers import assert_consistent, start_crawl
from sites import Fetched, build_cluster_site, serve

from simhash_index import SimhashIndex

pytestmark = pytest.mark.early

CRAWLERS = 2
CRAWL_LIMIT_S = 60  # each crawl; alone, one crawler needs about 8 s for this site


def scrapy_redis_settings(server: str, keys: str) -> list[str]:
    """Settings that make crawlers share one queue and one dupefilter, under `keys`."""
    return [
        "SCHEDULER=scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS=scrapy_redis.dupefilter.RFPDupeFilter",
        f"REDIS_URL={server}",
        f"SCHEDULER_QUEUE_KEY={keys}requests",
        f"SCHEDULER_DUPEFILTER_KEY={keys}dupefilter",
        # The keys are new to this test, so nothing needs flushing at start; and a crawler that
        # flushed on start, or on close, would wipe the queue and dupefilter the other one is using.
        "SCHEDULER_FLUSH_ON_START=False",
        "SCHEDULER_PERSIST=True",
        # A plain Spider on scrapy-redis's scheduler closes once the shared queue is empty and it
        # has nothing in flight: what one crawler pushed stays queued until some crawler pops it.
        # One request at a time, so that a crawler never pops the other's start request too.
        "CONCURRENT_REQUESTS=1",
    ]


def stat(log: str, name: str) -> int:
    found = re.search(rf"'{re.escape(name)}': (\d+)", log)
    return int(found.group(1)) if found else 0


def finish_within(processes: list[subprocess.Popen], logs: list[Path], seconds: float) -> list[str]:
    """Each crawl's log, once all have ended cleanly within `seconds`."""
    deadline = time.monotonic() + seconds
    texts = []
    for process, log in zip(processes, logs):
        try:
            _, stderr = process.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for running in processes:
                running.kill()
            pytest.fail(f"the crawls took more than {seconds} s")
        assert process.returncode == 0, stderr[-2000:]
        text = log.read_text()
        assert "Traceback" not in text, text[text.index("Traceback") - 500 :][:3000]
        assert "simhash/errors" not in text
        assert "finish_reason': 'finished'" in text
        texts.append(text)
    return texts


@pytest.mark.parametrize("backend", ["redis", "postgres"])
def test_two_crawlers_share_a_scrapy_redis_scheduler(backend: str, request, tmp_path: Path) -> None:
    """Each crawler starts from an index page of its own (the site answers none until both were
    asked for, so both crawl from the start); the pages they link to are shared out through the
    queue. Every page is fetched once, both crawlers decide pages, their stats add up to what the
    index holds, and each group of near copies keeps one page."""
    server = redis_server()  # the scheduler's Redis: skips (fails under CI) without one
    keys = f"simhash-test-{uuid.uuid4().hex[:12]}:"
    root = tmp_path / "site"
    info = build_cluster_site(root, clusters=12, members=4, indexes=CRAWLERS)
    db_url = request.getfixturevalue(f"{backend}_url")
    SimhashIndex(db_url).close()  # the index exists before the race (as in test_reliability)
    settings = scrapy_redis_settings(os.environ.get(REDIS_ENV, DEFAULT_REDIS), keys)
    fetched = Fetched(together=info["indexes"])
    try:
        with serve(root, delay=0.2, fetched=fetched) as base:
            logs = [tmp_path / f"crawler{i}.log" for i in range(CRAWLERS)]
            processes = [
                start_crawl(f"{base}/{start}", db_url, log, *settings) for start, log in zip(info["indexes"], logs)
            ]
            texts = finish_within(processes, logs, CRAWL_LIMIT_S)
    finally:
        delete_redis_keys(server, keys)
        server.close()

    paths = [path for cluster in info["clusters"] for path in cluster]
    assert set(fetched.counts) >= {*paths, *info["indexes"]}, "a page was never fetched"
    assert {path for path, count in fetched.counts.items() if count > 1} == set(), "fetched twice"
    pages = [f"{base}/{path}" for path in paths]
    handled = [stat(text, "simhash/kept") + stat(text, "simhash/dropped") for text in texts]
    assert all(handled) and sum(handled) == len(pages) + CRAWLERS, handled  # both crawled, each page once

    with SimhashIndex(db_url, scheme=None) as index:
        stored = {page for page in pages if index.get(page) is not None}
        dropped = {d.key: d.duplicate_of for d in index.duplicates()}
        assert len(index) == len(stored) + CRAWLERS  # and the index pages
    assert stored | set(dropped) == set(pages), "a page was lost"
    assert not stored & set(dropped)
    assert sum(stat(text, "simhash/dropped") for text in texts) == len(dropped)
    assert sum(stat(text, "simhash/kept") for text in texts) == len(stored) + CRAWLERS
    for cluster in info["clusters"]:
        urls = [f"{base}/{path}" for path in cluster]
        kept = [url for url in urls if url in stored]
        assert len(kept) == 1, (cluster, kept)
        assert all(dropped[url] == kept[0] for url in urls if url != kept[0])
    if backend == "postgres":
        assert_consistent(db_url, base, info["clusters"], complete=True)
