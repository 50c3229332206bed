"""The pipeline in a separate Scrapy project, set up exactly as the README says."""

from __future__ import annotations

import re
from pathlib import Path

from crawling import REPO, crawl, user_project
from sites import build_site, serve

from simhash_index import SimhashIndex

SPIDER = """
import scrapy


class PagesSpider(scrapy.Spider):
    name = "pages"

    async def start(self):
        for path in {paths!r}:
            yield scrapy.Request("{base}/" + path)

    def parse(self, response):
        yield {{"url": response.url, "html": response.text}}
"""


def readme_settings() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- pipeline-settings:.*?-->\s*```python\n(.*?)```", readme, re.S)
    assert block, "README has no pipeline-settings block"
    return block.group(1)


def test_readme_settings_work_in_a_new_project(tmp_path: Path, sqlite_url: str) -> None:
    root = tmp_path / "site"
    info = build_site(root)
    cluster = info["clusters"][0]
    with serve(root) as base:
        project = user_project(tmp_path, SPIDER.format(paths=cluster, base=base), readme_settings())
        result = crawl("", sqlite_url, tmp_path / "out", cwd=project, spider="pages")
    assert result.returncode == 0, result.log[-2000:]
    assert "Traceback" not in result.log
    assert "SimhashDedupPipeline" in result.log
    assert len(result.kept) == 1
    with SimhashIndex(sqlite_url, scheme=None) as index:
        dropped = {d.key for d in index.duplicates()}
    assert dropped == {f"{base}/{p}" for p in cluster} - {result.kept[0]["url"]}
