"""A Scrapy user's view, in real `scrapy crawl` processes against a local server: the add-on,
the skip middleware, the progress line, a quiet log, the exit status, saved sites on disk."""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest
from crawling import CrawlResult, crawl, user_project
from scrapy.settings import Settings
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler
from sites import build_site, english_article, page, serve

from crawler.spiders.site import check_arguments
from simhash_index import SimhashIndex
from simhash_index.scrapy import (
    Addon,
    SimhashDedupPipeline,
    SimhashLogFormatter,
    SimhashLogStats,
    SimhashSkipDuplicatesMiddleware,
)
from simhash_index.scrapy.addon import PIPELINE, PIPELINE_PRIORITY


def dropped_count(info: dict) -> int:
    return sum(len(cluster) - 1 for cluster in info["clusters"])


# -- the add-on ------------------------------------------------------------------------


def test_the_addon_installs_every_component_once() -> None:
    settings = Settings()
    Addon().update_settings(settings)

    def enabled(name: str) -> dict:
        return {load_object(c): p for c, p in settings.getwithbase(name).items() if p is not None}

    assert enabled("ITEM_PIPELINES") == {SimhashDedupPipeline: PIPELINE_PRIORITY}
    assert enabled("EXTENSIONS")[SimhashLogStats] == 0
    assert SimhashSkipDuplicatesMiddleware in enabled("DOWNLOADER_MIDDLEWARES")
    assert load_object(settings["LOG_FORMATTER"]) is SimhashLogFormatter
    Addon().update_settings(settings)  # twice: still once each
    assert enabled("ITEM_PIPELINES") == {SimhashDedupPipeline: PIPELINE_PRIORITY}


def test_the_addon_keeps_the_projects_own_choices() -> None:
    mine = "myproject.formatter.Mine"
    settings = Settings()
    settings.set("ITEM_PIPELINES", {PIPELINE: 700}, priority="project")
    settings.set("LOG_FORMATTER", mine, priority="project")
    Addon().update_settings(settings)
    assert settings.getdict("ITEM_PIPELINES") == {PIPELINE: 700}  # not listed twice, its priority kept
    assert settings["LOG_FORMATTER"] == mine


class StoreItems:
    """A storage pipeline of a user's project."""

    def process_item(self, item, spider=None):
        return item


class ExportItems(StoreItems):
    pass


@pytest.mark.parametrize("listed", ["by the add-on", "in ITEM_PIPELINES"])
def test_pipelines_before_ours_are_named_in_a_warning(
    sqlite_url: str, listed: str, caplog: pytest.LogCaptureFixture
) -> None:
    pipelines = {StoreItems: 100, ExportItems: 300}
    settings = {"SIMHASH_DATABASE_URL": sqlite_url, "SIMHASH_WORKERS": 0, "ITEM_PIPELINES": pipelines}
    if listed == "by the add-on":
        settings["ADDONS"] = {Addon: 100}
    else:
        pipelines[PIPELINE] = PIPELINE_PRIORITY
    SimhashDedupPipeline.from_crawler(get_crawler(settings_dict=settings))
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        f"simhash: {__name__}.StoreItems (100) run before SimhashDedupPipeline ({PIPELINE_PRIORITY}) in "
        f"ITEM_PIPELINES and receive every item, duplicates too: give a pipeline that stores items a number "
        f"above {PIPELINE_PRIORITY}"
    ]
    caplog.clear()
    del pipelines[StoreItems]
    SimhashDedupPipeline.from_crawler(get_crawler(settings_dict=settings))
    assert [r for r in caplog.records if r.levelname == "WARNING"] == []


SPIDER = """
import scrapy


class PagesSpider(scrapy.Spider):
    name = "pages"

    async def start(self):  # the pages are linked from the start page (start requests are never skipped)
        yield scrapy.Request("{base}/index.html", callback=self.parse_index)

    def parse_index(self, response):
        for path in {paths!r}:
            yield scrapy.Request("{base}/" + path, meta={{"simhash_dont_skip": path == {always!r}}})

    def parse(self, response):
        yield {{"url": response.url, "html": response.text}}
"""


def test_addon_project_and_the_skip_middleware_on_a_recrawl(site, tmp_path: Path, sqlite_url: str) -> None:
    base, info = site
    paths = [path for cluster in info["clusters"] for path in cluster] + info["singles"]
    always = info["clusters"][0][-1]  # fetched on every crawl: meta simhash_dont_skip
    settings = 'ADDONS = {"simhash_index.scrapy.Addon": 100}\n'
    project = user_project(tmp_path, SPIDER.format(paths=paths, base=base, always=always), settings)
    first = crawl("", sqlite_url, tmp_path / "out", cwd=project, spider="pages")
    assert first.returncode == 0, first.log[-2000:]
    assert "SimhashDedupPipeline" in first.log and "SimhashLogStats" in first.log
    assert "<p>" not in first.log and first.stat("simhash/dropped") == dropped_count(info)
    assert "SimhashSkipDuplicatesMiddleware" not in first.log  # opt-in
    with SimhashIndex(sqlite_url, scheme=None) as index:
        logged = {d.key for d in index.duplicates()}
    assert len(logged) == dropped_count(info)

    second = crawl("", sqlite_url, tmp_path / "out", "SIMHASH_SKIP_DUPLICATES=True", cwd=project, spider="pages")
    assert second.returncode == 0, second.log[-2000:]
    assert "SimhashSkipDuplicatesMiddleware" in second.log
    skipped = len(logged - {f"{base}/{always}"})
    assert second.stat("simhash/skipped_requests") == skipped
    assert second.stat("downloader/request_count") == first.stat("downloader/request_count") - skipped
    assert {item["url"] for item in second.kept} == {item["url"] for item in first.kept}
    assert second.stat("simhash/dropped") == (1 if f"{base}/{always}" in logged else 0)
    said = f"{skipped} requests skipped (logged duplicates), so the links on those pages were not followed"
    assert said in second.log


def test_a_recrawl_never_skips_its_start_and_says_what_skipping_cost(tmp_path: Path, sqlite_url: str) -> None:
    root = tmp_path / "site"
    root.mkdir()
    twins = {"a": english_article(71), "b": english_article(72)}  # each page under two URLs
    for name, text in twins.items():
        for path in (f"{name}.html", f"{name}-copy.html"):
            child = path.replace(".html", "-child.html")  # reached only through this page
            linked = page(name, text).replace("<ul>", f'<ul><li><a href="{child}">more</a></li>', 1)
            (root / path).write_text(linked, encoding="utf-8")
            (root / child).write_text(page(child, english_article(len(child) * 7 + ord(name))), encoding="utf-8")
    hub = "".join(f'<li><a href="{name}{copy}.html">x</a></li>' for name in twins for copy in ("", "-copy"))
    (root / "index.html").write_text(f"<html><body><ul>{hub}</ul></body></html>", encoding="utf-8")
    with serve(root) as base:
        first = crawl(f"{base}/index.html", sqlite_url, tmp_path / "run")
        assert first.returncode == 0, first.log[-2000:]
        with SimhashIndex(sqlite_url, scheme=None) as index:
            logged = sorted(d.key for d in index.duplicates())
        assert [url.rsplit("/", 1)[1][0] for url in logged] == ["a", "b"]  # one of each pair dropped
        start, skipped = logged  # the logged copy of a is a start URL of the recrawl; b's is only linked
        skipping = ("SIMHASH_SKIP_DUPLICATES=True", "LOG_LEVEL=DEBUG")
        second = crawl(f"{base}/index.html,{start}", sqlite_url, tmp_path / "run", *skipping)
    assert second.returncode == 0, second.log[-2000:]
    assert second.stat("simhash/skipped_requests") == 1
    fetched = set(re.findall(r"Crawled \(\d+\) <GET ([^>]+)>", second.log))
    assert start in fetched and start.replace(".html", "-child.html") in fetched  # fetched, and its links followed
    assert skipped not in fetched and skipped.replace(".html", "-child.html") not in fetched
    assert "1 requests skipped (logged duplicates), so the links on those pages were not followed" in second.log


def test_the_skip_middleware_without_the_pipeline_says_so(site, tmp_path: Path, sqlite_url: str) -> None:
    base, info = site
    settings = (
        'DOWNLOADER_MIDDLEWARES = {"simhash_index.scrapy.SimhashSkipDuplicatesMiddleware": 60}\n'
        "SIMHASH_SKIP_DUPLICATES = True\n"
    )
    pages = [path for path in info["singles"] if path != "index.html"]  # the start page, not an item
    project = user_project(tmp_path, SPIDER.format(paths=pages, base=base, always=""), settings)
    result = crawl("", sqlite_url, tmp_path / "out", cwd=project, spider="pages")
    assert result.returncode == 0, result.log[-2000:]
    assert "SimhashDedupPipeline is not in ITEM_PIPELINES: nothing is skipped" in result.log
    assert len(result.kept) == len(pages)


# -- the `site` project's log ------------------------------------------------------------


@dataclass
class SiteCrawls:
    """Two crawls of the test site (tests/sites.py) into new SQLite files, read by several tests."""

    info: dict
    progress: CrawlResult  # progress lines every 0.2 s, from a slow server; the URL given with -s
    quiet: CrawlResult  # LOGSTATS_INTERVAL=0 (no progress lines); SIMHASH_DATABASE_URL from the environment
    quiet_db: Path


@pytest.fixture(scope="module")
def site_crawls(tmp_path_factory: pytest.TempPathFactory) -> SiteCrawls:
    """A crawl costs seconds: one with progress lines and one without, instead of one per test."""
    tmp_path = tmp_path_factory.mktemp("site-crawls")
    root = tmp_path / "site"
    info = build_site(root)
    with serve(root, delay=0.05) as base:  # slow enough for several progress lines
        db = f"sqlite:///{tmp_path / 'progress.db'}"
        progress = crawl(f"{base}/index.html", db, tmp_path / "run", "LOGSTATS_INTERVAL=0.2")
    quiet_db = tmp_path / "from-env.db"
    with serve(root) as base:
        env = {"SIMHASH_DATABASE_URL": f"sqlite:///{quiet_db}"}
        quiet = crawl(f"{base}/index.html", None, tmp_path / "quiet", "LOGSTATS_INTERVAL=0", env=env)
    return SiteCrawls(info, progress, quiet, quiet_db)


def test_the_site_log_is_one_line_per_drop_and_no_line_per_page(site_crawls: SiteCrawls) -> None:
    info, result = site_crawls.info, site_crawls.progress
    assert result.returncode == 0, result.log[-2000:]
    lines = result.log.splitlines()
    assert not [line for line in lines if " DEBUG: " in line]
    assert not [line for line in lines if "Crawled (" in line or "Ignoring response" in line]
    drops = [line for line in lines if "] INFO: Dropped: " in line]
    assert len(drops) == result.stat("simhash/dropped") == dropped_count(info)
    errors = result.stat("site/http_errors")
    assert errors == result.stat("downloader/response_status_count/404") > 0  # the pages' navigation links
    assert f"skipped {errors} error pages ({errors} HTTP 404)" in result.log
    summary = [line for line in lines if "pages checked:" in line]
    assert len(summary) == 1 and f"{dropped_count(info)} dropped" in summary[0]


def test_the_error_pages_line_counts_the_pages_the_spider_skipped(tmp_path: Path, sqlite_url: str) -> None:
    """Issue 51: "skipped 31 error pages (32 HTTP 404)": the count by status was Scrapy's, which
    counts the robots.txt that is not there too."""
    (tmp_path / "site").mkdir()
    home = page("Home", english_article(42)).replace("<ul>", '<ul><li><a href="/missing.html">gone</a></li>', 1)
    (tmp_path / "site" / "index.html").write_text(home, encoding="utf-8")
    with serve(tmp_path / "site") as base:
        result = crawl(f"{base}/index.html", sqlite_url, tmp_path / "run", "ROBOTSTXT_OBEY=True")
    assert result.returncode == 0, result.log[-2000:]
    pages = 1 + 5  # missing.html and the page's five navigation links
    assert result.stat("downloader/response_status_count/404") == pages + 1  # and robots.txt
    assert f"skipped {pages} error pages ({pages} HTTP 404);" in result.log
    assert result.stat("site/http_errors") == result.stat("site/http_errors/404") == pages


def test_the_progress_line_counts_drops(site_crawls: SiteCrawls) -> None:
    result, quiet = site_crawls.progress, site_crawls.quiet
    assert result.returncode == 0, result.log[-2000:]
    progress = [line for line in result.log.splitlines() if "simhash: checked " in line]
    assert progress, result.log[-3000:]
    counts = [re.search(r"checked (\d+) pages \(at \d+ pages/min\), dropped (\d+) \(at", line) for line in progress]
    assert all(counts) and all(int(m.group(2)) <= int(m.group(1)) for m in counts if m)
    assert int(counts[-1].group(2)) <= dropped_count(site_crawls.info)
    assert quiet.returncode == 0 and quiet.stat("simhash/kept") > 0
    assert "simhash: checked " not in quiet.log and "SimhashLogStats" not in quiet.log


def test_the_site_project_reads_the_database_url_from_the_environment(site_crawls: SiteCrawls) -> None:
    info, result = site_crawls.info, site_crawls.quiet
    assert result.returncode == 0, result.log[-2000:]
    with SimhashIndex(f"sqlite:///{site_crawls.quiet_db}", scheme=None) as index:
        assert len(index) == result.stat("simhash/kept") == len(info["singles"]) + len(info["clusters"])


def test_a_directory_listing_never_reaches_the_log(tmp_path: Path, sqlite_url: str) -> None:
    root = tmp_path / "site"
    (root / "listing").mkdir(parents=True)
    (root / "listing" / "zebra-quokka-archive.zip").write_bytes(b"PK")  # a link the spider does not follow
    (root / "listing" / "yak-report.tar.gz").write_bytes(b"\x1f\x8b")
    (root / "index.html").write_text(
        page("Home", english_article(41)).replace("<ul>", '<ul><li><a href="/listing/">files</a></li>'),
        encoding="utf-8",
    )
    with serve(root) as base:
        result = crawl(f"{base}/index.html", sqlite_url, tmp_path / "run", "LOG_LEVEL=DEBUG")
    assert result.returncode == 0, result.log[-2000:]
    assert f"{base}/listing/" in {item["url"] for item in result.kept}  # the short listing page was an item
    assert f"Scraped from <200 {base}/listing/>" in result.log
    for line in result.log.splitlines():
        assert "zebra-quokka" not in line and "yak-report" not in line, line  # no body text
        assert not line.lstrip().startswith(("<li>", "<hr>", "<ul>", "</", "<!DOCTYPE")), line  # no raw newline


# -- the exit status ------------------------------------------------------------------------


def test_a_crawl_that_fetched_nothing_exits_1(tmp_path: Path, sqlite_url: str) -> None:
    result = crawl("http://127.0.0.1:9/index.html", sqlite_url, tmp_path / "run", "RETRY_ENABLED=False")
    assert result.returncode == 1
    errors = [line for line in result.log.splitlines() if " ERROR: " in line]
    pattern = r"the crawl fetched nothing: 1 requests, no response \(1 \w*ConnectionRefusedError\): check the start"
    assert len([e for e in errors if re.search(pattern, e)]) == 1, errors
    assert "no item reached the pipeline" in result.log


def test_a_crawl_that_fetched_only_an_error_page_exits_1(tmp_path: Path, sqlite_url: str) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "robots.txt").write_text("User-agent: *\nAllow: /\n")  # a 200 that is not a page
    with serve(tmp_path / "site") as base:
        result = crawl(f"{base}/missing.html", sqlite_url, tmp_path / "run", "ROBOTSTXT_OBEY=True")
    assert result.returncode == 1, result.log[-2000:]
    errors = [line for line in result.log.splitlines() if " ERROR: " in line]
    assert [e.partition(" ERROR: ")[2] for e in errors] == [
        "the crawl fetched nothing useful: every page was an HTTP error (1 HTTP 404): check the start URLs"
    ]


# -- a site saved to disk ---------------------------------------------------------------------


def test_crawl_a_saved_folder_offline(tmp_path: Path, sqlite_url: str) -> None:
    root = tmp_path / "saved"
    info = build_site(root)
    result = crawl(str(root), sqlite_url, tmp_path / "run")
    assert result.returncode == 0, result.log[-2000:]
    prefix = root.resolve().as_uri() + "/"
    kept = {item["url"].removeprefix(prefix) for item in result.kept}
    assert all(item["url"].startswith(prefix) for item in result.kept)
    for cluster in info["clusters"]:
        assert len([p for p in cluster if p in kept]) == 1, cluster
    assert set(info["singles"]) <= kept
    assert result.stat("simhash/dropped") == dropped_count(info)
    assert result.stat("downloader/request_count") == len(kept) + dropped_count(info)  # no file fetched twice


def test_crawl_from_a_file_url_follows_links_within_its_folder(tmp_path: Path, sqlite_url: str) -> None:
    saved = tmp_path / "mirror" / "example.com"
    (saved / "sub").mkdir(parents=True)
    links = '<ul><li><a href="a.html">a</a></li><li><a href="sub/b.html">b</a></li><li><a href="../out.html">x</a>'
    (saved / "index.html").write_text(page("Home", english_article(51)).replace("<ul>", links), encoding="utf-8")
    (saved / "a.html").write_text(page("A", english_article(52)), encoding="utf-8")
    (saved / "sub" / "b.html").write_text(page("B", english_article(52)), encoding="utf-8")  # a copy of a.html
    (tmp_path / "mirror" / "out.html").write_text(page("Out", english_article(53)), encoding="utf-8")
    result = crawl((saved / "index.html").as_uri(), sqlite_url, tmp_path / "run")
    assert result.returncode == 0, result.log[-2000:]
    crawled = {item["url"] for item in result.kept}
    assert (saved / "index.html").as_uri() in crawled and len(crawled) == 2  # a.html or its copy, not out.html
    assert result.stat("simhash/dropped") == 1
    assert result.stat("downloader/request_count") == 3


def built_docs(root: Path) -> dict[str, str]:
    """A small site as documentation builders write it: a folder per page, holding its
    index.html, and links to folders (`guide/`), which a web server answers with their index."""
    links = {
        "index.html": ["guide/", "api/", "empty/"],  # empty/ has no index.html: nothing to fetch
        "guide/index.html": ["intro/", "../api/", "../"],
        "guide/intro/index.html": ["../../", "../", "../../api"],  # a folder link without its slash
        "api/index.html": ["../guide/intro/"],
    }
    (root / "empty").mkdir(parents=True)
    for seed, (name, targets) in enumerate(links.items(), 61):
        listed = "".join(f'<li><a href="{target}">{target}</a></li>' for target in targets)
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(page(name, english_article(seed)).replace("<ul>", "<ul>" + listed, 1))
    return {name: (root / name).resolve().as_uri() for name in links}


@pytest.mark.parametrize("start", ["file", "folder"])
def test_links_to_folders_are_their_index_html(tmp_path: Path, sqlite_url: str, start: str) -> None:
    pages = built_docs(tmp_path / "docs")
    start_url = pages["index.html"] if start == "file" else str(tmp_path / "docs")
    result = crawl(start_url, sqlite_url, tmp_path / "run")
    assert result.returncode == 0, result.log[-2000:]
    assert {item["url"] for item in result.kept} == set(pages.values())  # every page, from a file start too
    assert "Is a directory" not in result.log and " ERROR: " not in result.log
    assert result.stat("downloader/request_count") == len(pages)  # each page once, nothing retried


@pytest.mark.parametrize(
    ("start", "message"),
    [
        ("example.com/no/such/folder", "start_url 'example.com/no/such/folder' is neither an http(s) URL nor an"),
        ("htp://example.com/", "start_url 'htp://example.com/' is not an http(s) URL, a file:// URL or a local"),
        ("", "start_url is required: scrapy crawl site -a start_url=https://example.com/"),
    ],
)
def test_a_bad_or_missing_start_url_is_one_error_line_and_exit_1(
    tmp_path: Path, sqlite_url: str, start: str, message: str
) -> None:
    result = crawl(start, sqlite_url, tmp_path / "run")
    assert result.returncode == 1
    assert "Traceback" not in result.log and "never retrieved" not in result.log, result.log[-3000:]
    errors = [line for line in result.log.splitlines() if " ERROR: " in line or " CRITICAL: " in line]
    assert len(errors) == 1 and f"ERROR: cannot start the crawl: {message}" in errors[0], errors


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"start_ur": "http://127.0.0.1:9/"}, "unknown argument start_ur: did you mean start_url?"),
        ({"start_url": "http://127.0.0.1:9/", "depth": "2"}, "unknown argument depth: the site spider takes start_url"),
    ],
)
def test_an_unknown_spider_argument_is_named(
    tmp_path: Path, sqlite_url: str, arguments: dict[str, str], message: str
) -> None:
    """Issue 51: `-a start_ur=...` said "start_url is required"."""
    result = crawl(None, sqlite_url, tmp_path / "run", arguments=arguments)
    assert result.returncode == 1
    assert "Traceback" not in result.log, result.log[-3000:]
    errors = [line for line in result.log.splitlines() if " ERROR: " in line or " CRITICAL: " in line]
    assert len(errors) == 1 and f"ERROR: cannot start the crawl: {message}" in errors[0], errors


def test_scrapys_spider_arguments_and_the_feeds_parameters_are_known() -> None:
    feeds = Settings({"FEEDS": {"out/%(site)s-%(batch_id)d.jsonl": {"format": "jsonl"}}})
    check_arguments(["start_url", "user_agent", "download_delay", "http_user", "_job", "site"], feeds)
    with pytest.raises(ValueError, match="unknown argument user_agnet: did you mean user_agent"):
        check_arguments(["user_agnet"], feeds)


def test_a_request_that_gets_no_response_is_one_line(tmp_path: Path, sqlite_url: str) -> None:
    """A start URL on a closed port, beside one that answers, its robots.txt fetched too: the
    failure is one line (the URL and the error), counted, and no traceback."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text(page("Home", english_article(41)))
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/"
    with serve(tmp_path / "site") as base:
        result = crawl(f"{base}/index.html,{closed}", sqlite_url, tmp_path / "run", "ROBOTSTXT_OBEY=True")
    assert result.returncode == 0, result.log[-3000:]
    assert "Traceback" not in result.log, result.log[-3000:]
    failed = [line.partition(" [site] ")[2] for line in result.log.splitlines() if " [site] ERROR: " in line]
    assert len(failed) == 1 and failed[0].startswith(f"ERROR: cannot fetch {closed}: Connection was refused"), failed
    assert result.stat("site/fetch_errors") == 1 and result.stat("simhash/kept") == 1


@pytest.mark.parametrize("name", ["simhash_index.scrapy.failures", "simhash_index.scrapy.commands.crawl"])
def test_doctests(name: str) -> None:
    import doctest
    import importlib

    results = doctest.testmod(importlib.import_module(name))
    assert results.attempted > 0 and results.failed == 0
