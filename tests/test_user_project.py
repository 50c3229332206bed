"""The pipeline in a separate Scrapy project, set up exactly as the README and docs/scrapy.md say."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from crawling import SPIDER, CrawlResult, crawl, docs_block, user_project
from sites import build_site, english_article, page, serve

from simhash_index import SimhashIndex


@dataclass
class ReadmeCrawl:
    base: str
    cluster: list[str]
    project: Path
    db_url: str
    result: CrawlResult


@pytest.fixture(scope="module", params=["pipeline-settings", "pipeline-settings-explicit"])
def readme_crawl(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ReadmeCrawl:
    """A new project set up with one of the documented settings blocks and its DroppedPages
    extension, crawling the site's first cluster: one crawl read by several tests."""
    tmp_path = tmp_path_factory.mktemp("readme")
    root = tmp_path / "site"
    cluster = build_site(root)["clusters"][0]
    db_url = f"sqlite:///{tmp_path / 'simhash.db'}"
    extension = 'EXTENSIONS = {**globals().get("EXTENSIONS", {}), "myproject.extensions.DroppedPages": 500}\n'
    with serve(root) as base:
        project = user_project(tmp_path, SPIDER.format(paths=cluster, base=base), docs_block(request.param) + extension)
        (project / "myproject" / "extensions.py").write_text(docs_block("dropped-extension"), encoding="utf-8")
        result = crawl("", db_url, tmp_path / "out", cwd=project, spider="pages")
    return ReadmeCrawl(base, cluster, project, db_url, result)


def test_readme_settings_work_in_a_new_project(readme_crawl: ReadmeCrawl) -> None:
    base, cluster, result = readme_crawl.base, readme_crawl.cluster, readme_crawl.result
    assert result.returncode == 0, result.log[-2000:]
    assert "Traceback" not in result.log
    assert "SimhashDedupPipeline" in result.log and "SimhashLogStats" in result.log
    assert "<p>" not in result.log  # the log formatter is on
    assert len(result.kept) == 1
    with SimhashIndex(readme_crawl.db_url, scheme=None) as index:
        dropped = {d.key for d in index.duplicates()}
    assert dropped == {f"{base}/{p}" for p in cluster} - {result.kept[0]["url"]}


def test_readme_dropped_pages_extension(readme_crawl: ReadmeCrawl) -> None:
    base, cluster, result = readme_crawl.base, readme_crawl.cluster, readme_crawl.result
    assert result.returncode == 0, result.log[-2000:]
    records = [json.loads(line) for line in (readme_crawl.project / "dropped.jsonl").read_text().splitlines()]
    kept = result.kept[0]["url"]
    assert sorted(r["url"] for r in records) == sorted(f"{base}/{p}" for p in cluster if f"{base}/{p}" != kept)
    assert all(r["duplicate_of"] == kept and (r["similarity"] is None or r["similarity"] >= 0.88) for r in records)


NEVER_OPENED = """
from simhash_index.scrapy.pipeline import SimhashDedupPipeline


class NeverOpened(SimhashDedupPipeline):
    def open_spider(self, spider=None):  # as on a Scrapy that never ran it
        return None
"""


@pytest.mark.parametrize("on_db_error", ["stop", "pass"])
def test_a_pipeline_whose_index_never_opened_does_not_pass_for_a_success(
    tmp_path: Path, sqlite_url: str, on_db_error: str
) -> None:
    root = tmp_path / "site"
    info = build_site(root)
    cluster = info["clusters"][0]
    settings = (
        'ITEM_PIPELINES = {"myproject.pipelines.NeverOpened": 300}\n'
        'COMMANDS_MODULE = "simhash_index.scrapy.commands"\n'
        f'SIMHASH_ON_DB_ERROR = "{on_db_error}"\n'
    )
    with serve(root) as base:
        project = user_project(tmp_path, SPIDER.format(paths=cluster, base=base), settings)
        (project / "myproject" / "pipelines.py").write_text(NEVER_OPENED, encoding="utf-8")
        result = crawl("", sqlite_url, tmp_path / "out", cwd=project, spider="pages")
    errors = [line for line in result.log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1 and "an item came before the index was opened" in errors[0], errors
    if on_db_error == "stop":
        assert result.returncode == 1, result.log[-2000:]
        assert "'finish_reason': 'simhash_index_unavailable'" in result.log
    else:
        assert result.returncode == 0, result.log[-2000:]
        assert "NOTHING IS DEDUPLICATED" in errors[0] and len(result.kept) == len(cluster)


FOLLOWING_SPIDER = """
import scrapy


class Following(scrapy.Spider):
    name = "following"
    start_urls = ["{base}/index.html"]  # requested past the duplicate filter, as Scrapy does

    def parse(self, response):
        yield {{"url": response.url, "html": response.text}}
        if response.url.endswith("/a.html"):  # the page again, changed since: an update
            yield {{"url": response.url, "html": response.text.replace("</article>", {update!r} + "</article>")}}
        yield from response.follow_all(css="a", callback=self.parse)
"""

STORAGE = """
import json


class Received:
    \"\"\"Appends each item it receives to received.jsonl: the URL and the text the pipeline added.\"\"\"

    def process_item(self, item, spider=None):
        with open("received.jsonl", "a", encoding="utf-8") as out:
            out.write(json.dumps({"url": item["url"], "text": item.get("text")}) + "\\n")
        return item
"""


def test_a_url_fetched_again_reaches_the_storage_once_and_again_when_changed(tmp_path: Path) -> None:
    """Issue 51: Scrapy requests a start URL past its duplicate filter, so a link back to it
    fetched it again and the storage pipeline got it twice (the index held it once)."""
    root = tmp_path / "site"
    root.mkdir()
    home = page("Home", english_article(81)).replace("<ul>", '<ul><li><a href="/a.html">a</a></li>', 1)
    (root / "index.html").write_text(home, encoding="utf-8")
    back = page("A", english_article(82)).replace("<ul>", '<ul><li><a href="/index.html">home</a></li>', 1)
    (root / "a.html").write_text(back, encoding="utf-8")
    update = "<p>" + " ".join(english_article(83)[0].split()[:40]) + "</p>"
    settings = docs_block("pipeline-settings") + 'ITEM_PIPELINES = {"myproject.pipelines.Received": 300}\n'
    db_url = f"sqlite:///{tmp_path / 'simhash.db'}"
    with serve(root) as base:
        project = user_project(tmp_path, FOLLOWING_SPIDER.format(base=base, update=update), settings)
        (project / "myproject" / "pipelines.py").write_text(STORAGE, encoding="utf-8")
        result = crawl("", db_url, tmp_path / "out", cwd=project, spider="following")
    assert result.returncode == 0, result.log[-3000:]
    assert result.stat("downloader/response_status_count/200") == 3  # the start URL fetched twice
    received = [json.loads(line) for line in (project / "received.jsonl").read_text().splitlines()]
    assert [r["url"] for r in received].count(f"{base}/index.html") == 1
    # both versions of a.html went on (in either order: the two items are checked side by side)
    first, updated = sorted((r["text"] for r in received if r["url"] == f"{base}/a.html"), key=len)
    assert updated.startswith(first) and len(updated) > len(first)
    assert result.stat("simhash/repeated") == 1 and result.stat("simhash/kept") == 3
    assert f"Dropped: {base}/index.html was passed on earlier in this crawl, with the same text" in result.log
    with SimhashIndex(db_url, scheme=None) as index:
        assert len(index) == 2
