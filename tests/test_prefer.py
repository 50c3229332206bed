"""The survivor policy (prefer=): which copy of a group of duplicates is kept, on every backend."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone
from functools import partial
from pathlib import Path

import pytest
from conftest import ONE_LAYOUT
from crawling import SPIDER, CrawlResult, crawl, docs_block, user_project
from racing import GROUPS, PROCESSES, make_groups, run_workers
from sites import POSTS, SNAPSHOTS, VERSIONS, build_snapshots, build_versioned_docs, serve

from simhash_index import Signature, SimhashIndex
from simhash_index.index.explain import explain
from simhash_index.index.prefer import Contender

DAY0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
BASE = 0x5A5A_F0F0_1234_8421


def test_first_keeps_the_stored_page(any_url):
    with SimhashIndex(any_url) as index:
        index.check_and_add("a", Signature(BASE, 1, words=10))
        match = index.check_and_add("b", Signature(BASE ^ 1, 2, words=99))
        assert match is not None and match.key == "a" and match.superseded is None
        assert index.get("b") is None


def test_longest_keeps_the_longer_copy_and_moves_the_cluster(any_url):
    with SimhashIndex(any_url, prefer="longest") as index:
        assert index.check_and_add("short", Signature(BASE, 1, words=100)) is None
        dropped = index.check_and_add("shorter", Signature(BASE ^ 0b11, 2, words=50))
        assert dropped is not None and dropped.key == "short" and dropped.superseded is None
        kept = index.check_and_add("long", Signature(BASE ^ 0b1, 3, words=237))
        assert kept is not None and (kept.key, kept.distance, kept.superseded) == ("short", 1, "longer")
        assert index.get("long") is not None and index.get("short") is None and len(index) == 1
        logged = {d.key: (d.duplicate_of, d.superseded) for d in index.duplicates()}
        assert logged == {"shorter": ("long", None), "short": ("long", "longer")}
        [cluster] = list(index.clusters())
        assert cluster.key == "long" and {d.key for d in cluster.duplicates} == {"short", "shorter"}
        # a page that matches the survivor is its duplicate; the superseded page is not stored
        assert index.check_and_add("again", Signature(BASE ^ 0b111, 4, words=10)).key == "long"


def test_newest_keeps_the_page_with_the_later_date(any_url):
    with SimhashIndex(any_url, prefer="newest") as index:
        index.check_and_add("v1", Signature(BASE, 1, dated=DAY0 + timedelta(days=30)))
        older = index.check_and_add("v0", Signature(BASE ^ 1, 2, dated=DAY0))
        assert older.key == "v1" and older.superseded is None
        newer = index.check_and_add("v2", Signature(BASE ^ 2, 3, dated=DAY0 + timedelta(days=60)))
        assert newer.key == "v1" and newer.superseded == "newer"
        # an exact copy (the same text) with a later date supersedes too
        exact = index.check_and_add("v2-mirror", Signature(BASE ^ 2, 3, dated=DAY0 + timedelta(days=90)))
        assert exact.exact and exact.key == "v2" and exact.superseded == "newer"
        assert index.get("v2-mirror") is not None and len(index) == 1
        assert index.duplicate("v2").superseded == "newer"


def test_newest_falls_through_a_tie_to_last_modified_then_to_the_later_check(any_url):
    """Own dates that tie (or that one page lacks) pass to Last-Modified; when that ties too, or
    is not known, the page checked later is the newer."""
    day = timedelta(days=1)
    with SimhashIndex(any_url, prefer="newest") as index:
        index.check_and_add("b", Signature(BASE, 1, dated=DAY0, modified=DAY0 + 5 * day))
        older = index.check_and_add("a", Signature(BASE ^ 1, 2, dated=DAY0, modified=DAY0 + 2 * day))
        assert (older.key, older.superseded) == ("b", None)  # the same date: Last-Modified decides
        newer = index.check_and_add("c", Signature(BASE ^ 2, 3, dated=DAY0, modified=DAY0 + 9 * day))
        assert (newer.key, newer.superseded) == ("b", "newer")
        undated = index.check_and_add("d", Signature(BASE ^ 4, 4, modified=DAY0 + 7 * day))
        assert (undated.key, undated.superseded) == ("c", None)  # no date of its own: Last-Modified decides
        tie = index.check_and_add("e", Signature(BASE ^ 8, 5, dated=DAY0, modified=DAY0 + 9 * day))
        assert (tie.key, tie.superseded) == ("c", "newer")  # both tie: checked later
        unknown = index.check_and_add("f", Signature(BASE ^ 16, 6, dated=DAY0))
        assert (unknown.key, unknown.superseded) == ("e", "newer")  # a tie, then no Last-Modified
        earlier = index.check_and_add("g", Signature(BASE ^ 32, 7, dated=DAY0 - day, modified=DAY0 + 99 * day))
        assert (earlier.key, earlier.superseded) == ("f", None)  # an earlier own date: the rest is not read
        assert {d.key: d.duplicate_of for d in index.duplicates()} == dict.fromkeys("abcdeg", "f")


def test_a_batch_supersedes_as_single_checks_do(any_url):
    pages = [
        ("a", Signature(BASE, 1, words=10)),
        ("b", Signature(BASE ^ 1, 2, words=30)),
        ("c", Signature(BASE ^ 2, 3, words=20)),
        ("d", Signature(BASE ^ 4, 4, words=40)),
        ("a", Signature(BASE, 1, words=10)),  # the first page again, superseded in this batch: checked anew
    ]
    with SimhashIndex(any_url, prefer="longest") as index:
        answers = index.check_and_add_many(pages)
        assert [(m.key, m.superseded) if m else None for m in answers] == [
            None,
            ("a", "longer"),
            ("b", None),
            ("b", "longer"),
            ("d", None),
        ]
        assert {d.key: d.duplicate_of for d in index.duplicates()} == {"a": "d", "b": "d", "c": "d"}
        assert len(index) == 1 and index.get("d") is not None


def test_a_function_decides(any_url):
    def prefer_canonical(new: Contender, stored: Contender) -> bool:
        return "/latest/" in new.key and "/latest/" not in stored.key

    with SimhashIndex(any_url, prefer=prefer_canonical) as index:
        index.check_and_add("https://docs.example/0.22/", Signature(BASE, 1))
        kept = index.check_and_add("https://docs.example/latest/", Signature(BASE ^ 1, 2))
        assert kept.superseded == "preferred"
        assert index.check_and_add("https://docs.example/0.34/", Signature(BASE ^ 2, 3)).superseded is None
        assert index.get("https://docs.example/latest/") is not None and len(index) == 1


def test_a_bad_policy_names_the_choices():
    with pytest.raises(ValueError, match="prefer must be one of first, longest, newest or a function"):
        SimhashIndex("memory://", prefer="longer")


def test_explain_says_superseded_by(any_url):
    with SimhashIndex(any_url, prefer="longest") as index:
        index.check_and_add("short", Signature(BASE, 1, words=100))
        index.check_and_add("long", Signature(BASE ^ 1, 2, words=200))
        assert explain(index, "short").reasons() == [
            "superseded by long (longer): stored until that copy came (1 bits apart), "
            "which the survivor policy (prefer) keeps instead"
        ]


@pytest.mark.parametrize("policy", ["longest", "newest"])
def test_the_same_decisions_as_the_rule(request, any_url, policy):
    """Random sequences of near and exact copies, with and without words and dates (few, so that
    they often tie), decided as the memory index (the rule's reference) decides them: every
    backend, and the Redis script."""
    if any_url == "memory://":
        pytest.skip("the reference itself")
    rng = random.Random(7)
    bases = [BASE ^ (0xFFFF << (16 * i)) for i in range(3)]
    batches = []
    for _ in range(12):
        batch = []
        for _ in range(rng.randint(1, 4)):
            base = rng.choice(bases)
            flipped = base ^ (1 << rng.randrange(64)) if rng.random() < 0.8 else base
            words = rng.choice([None, *range(10, 200, 7)])
            dated, modified = (rng.choice([None, *(DAY0 + timedelta(days=d) for d in range(0, 40, 11))]) for _ in "ab")
            key = f"https://site.example/{rng.randrange(30)}"
            batch.append((key, Signature(flipped, flipped, words=words, dated=dated, modified=modified)))
        batches.append(batch)
    outcomes = []
    for url in ("memory://", any_url):
        with SimhashIndex(url, prefer=policy) as index:
            answers = []
            for batch in batches:
                answers += [(m.key, m.superseded) if m else None for m in index.check_and_add_many(batch)]
            logged = {d.key: (d.duplicate_of, d.superseded) for d in index.duplicates()}
            stored = {key for batch in batches for key, _ in batch if index.get(key) is not None}
            outcomes.append((answers, logged, stored))
    assert outcomes[1] == outcomes[0]
    assert any(a and a[1] for a in outcomes[0][0]), "no page superseded another: the test tests nothing"


def check_longest(rounds, barrier, results) -> None:
    """Worker: wait for the others, then check each page with prefer='longest', one at a time."""
    import traceback

    for number, (url, items) in enumerate(rounds):
        try:
            with SimhashIndex(url, create=False, prefer="longest") as index:
                barrier.wait(timeout=120)
                returned = {}
                for key, fingerprint, words in items:
                    match = index.check_and_add(key, Signature(fingerprint, None, words=words))
                    returned[key] = None if match is None else (match.key, match.superseded)
        except BaseException:
            results.put((number, "error", traceback.format_exc()))
            barrier.abort()
            return
        results.put((number, "ok", returned))


@pytest.mark.parametrize("fresh_db_urls", ONE_LAYOUT, indirect=True)
def test_concurrent_writers_keep_the_longest_of_each_group(fresh_db_urls):
    """Processes check copies of the same groups at once, each copy of its own length: one page
    of each group survives, the longest, and every other page is logged as its duplicate."""
    rng = random.Random(5)
    groups = make_groups(rng)
    pages: dict[str, tuple[int, int, int]] = {}
    work: list[list[tuple[str, int, int]]] = [[] for _ in range(PROCESSES)]
    for g, members in enumerate(groups):
        lengths = rng.sample(range(100, 10_000), PROCESSES * len(members))
        for process in range(PROCESSES):
            for m, fingerprint in enumerate(members):
                key = f"https://p{process}.example/g{g}/m{m}"
                pages[key] = (g, fingerprint, lengths.pop())
                work[process].append((key, fingerprint, pages[key][2]))
    for items in work:
        rng.shuffle(items)
    url = fresh_db_urls()
    SimhashIndex(url).close()
    run_workers(partial(check_longest), [[(url, items)] for items in work], PROCESSES)
    longest = {}
    for key, (g, _, words) in pages.items():
        if g not in longest or words > pages[longest[g]][2]:
            longest[g] = key
    with SimhashIndex(url, create=False) as index:
        stored = {key for key in pages if index.get(key) is not None}
        duplicates = index.duplicates()
    assert stored == set(longest.values()) and len(stored) == GROUPS
    assert sorted(d.key for d in duplicates) == sorted(pages.keys() - stored)
    for duplicate in duplicates:
        assert duplicate.duplicate_of == longest[pages[duplicate.key][0]]


# -- crawls of a versioned documentation site ---------------------------------------------


def crawl_versions(tmp_path, policy: str) -> tuple[dict[str, str], list[dict], str]:
    """Crawl the versioned site with SIMHASH_PREFER=policy: the kept copy of each page kind,
    the items the feed got, and the log."""
    root = tmp_path / "site"
    if not root.exists():
        root.mkdir()
        build_versioned_docs(root)
    db = f"sqlite:///{tmp_path / f'{policy}.db'}"
    with serve(root) as base:
        result = crawl(f"{base}/index.html", db, tmp_path / policy, f"SIMHASH_PREFER={policy}", "SIMHASH_WORKERS=0")
    assert result.returncode == 0, result.log[-3000:]
    with SimhashIndex(db, scheme=None) as index:
        kept = {}
        for version in VERSIONS:
            for kind in ("index", "guide", "changelog"):
                if index.get(f"{base}/{version}/{kind}.html") is not None:
                    assert kind not in kept, f"two copies of {kind} kept"
                    kept[kind] = version
    return kept, result.kept, result.log


def test_a_crawl_keeps_the_longest_changelog_and_the_newest_pages(tmp_path):
    longest, _, log = crawl_versions(tmp_path, "longest")
    assert longest["changelog"] == "latest", log[-3000:]
    newest, items, log = crawl_versions(tmp_path, "newest")
    assert newest == {"index": "latest", "guide": "latest", "changelog": "latest"}, log[-3000:]
    superseded = log.count(" supersedes ")
    # every kept item went on; an item superseded later had gone on before: the signal says which
    assert len(items) == 1 + 3 + superseded
    assert superseded == 0 or f"'simhash/superseded': {superseded}" in log


def test_the_readme_storage_pipeline_replaces_a_superseded_item(tmp_path: Path, sqlite_url: str) -> None:
    root = tmp_path / "site"
    root.mkdir()
    kinds = build_versioned_docs(root)
    settings = docs_block("pipeline-settings") + docs_block("prefer-settings")
    with serve(root) as base:
        paths = [path for paths in kinds.values() for path in paths]
        project = user_project(tmp_path, SPIDER.format(paths=paths, base=base), settings)
        (project / "myproject" / "pipelines.py").write_text(docs_block("superseded-pipeline"), encoding="utf-8")
        result = crawl("", sqlite_url, tmp_path / "out", cwd=project, spider="pages")
    assert result.returncode == 0, result.log[-3000:]
    stored = json.loads((project / "pages.json").read_text())
    assert sorted(stored) == sorted(f"{base}/{paths[-1]}" for paths in kinds.values())  # the latest of each
    assert " supersedes " in result.log


def prefer_stable(new: Contender, stored: Contender) -> bool:
    """A policy named by its import path in SIMHASH_PREFER (test_the_setting_takes_a_function)."""
    return "/stable/" in new.key


def test_the_setting_names_the_choices_and_takes_a_function():
    from scrapy.settings import Settings

    from simhash_index.scrapy.settings import PipelineSettings

    assert PipelineSettings.from_settings(Settings({"SIMHASH_PREFER": "newest"})).prefer == "newest"
    loaded = PipelineSettings.from_settings(Settings({"SIMHASH_PREFER": "test_prefer.prefer_stable"})).prefer
    assert loaded is prefer_stable
    with pytest.raises(ValueError, match="SIMHASH_PREFER must be first, longest, newest, or a function"):
        PipelineSettings.from_settings(Settings({"SIMHASH_PREFER": "longer"}))


# -- crawls of a site's snapshots whose posts share their dates ------------------------------


def crawl_snapshots(tmp_path: Path, order: list[str], **site: bool) -> tuple[dict[str, str], list[CrawlResult]]:
    """Crawl the snapshots (build_snapshots(**site)) with SIMHASH_PREFER=newest into one index,
    one crawl a snapshot in this order, as a recrawl of a site's history does: the snapshot of
    each post that was kept, and the crawls."""
    root = tmp_path / "site"
    build_snapshots(root, **site)
    db = f"sqlite:///{tmp_path / 'newest.db'}"
    results = []
    with serve(root) as base:
        for snapshot in order:
            result = crawl(f"{base}/{snapshot}/index.html", db, tmp_path / "out", "SIMHASH_PREFER=newest")
            assert result.returncode == 0, result.log[-3000:]
            results.append(result)
        with SimhashIndex(db, scheme=None) as index:
            kept = {}
            for snapshot in SNAPSHOTS:
                for post in POSTS:
                    if index.get(f"{base}/{snapshot}/{post}.html") is not None:
                        assert post not in kept, f"two snapshots of {post} kept"
                        kept[post] = snapshot
    return kept, results


def test_a_recrawl_of_snapshots_oldest_first_keeps_the_newest_though_their_dates_tie(tmp_path):
    """Every snapshot of a post says the same date, and its files the same Last-Modified: the
    page crawled later (the newer snapshot) is kept, superseding the older one each time."""
    kept, results = crawl_snapshots(tmp_path, list(SNAPSHOTS), same_modified=True)
    assert kept == dict.fromkeys(POSTS, "2024-11"), results[-1].log[-3000:]
    assert [r.stat("simhash/superseded") for r in results] == [0, len(POSTS), len(POSTS)]


def test_a_recrawl_of_snapshots_newest_first_keeps_the_newest_by_last_modified(tmp_path):
    """The posts' dates tie, so their Last-Modified decides: crawled first, the newest snapshot
    stays, and the older ones crawled after it are its duplicates (the later crawl would win)."""
    kept, results = crawl_snapshots(tmp_path, list(reversed(SNAPSHOTS)))
    assert kept == dict.fromkeys(POSTS, "2024-11"), results[-1].log[-3000:]
    assert [(r.stat("simhash/superseded"), r.stat("simhash/dropped")) for r in results] == [
        (0, 0),
        (0, len(POSTS)),
        (0, len(POSTS)),
    ]
