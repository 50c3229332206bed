"""Run `scrapy crawl site` in a subprocess, as a user would, and read back what it did."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent
# One extraction worker unless a test asks for more: a crawl on the default (one per CPU) starts
# a process per CPU, each loading jieba (about a second of CPU), in every one of the suite's
# ~70 crawls. The worker path is the same; tests/test_isolation.py crawls with two on each backend.
CRAWL_DEFAULTS = ("SIMHASH_WORKERS=1",)


@dataclass
class CrawlResult:
    kept: list[dict]
    log: str
    returncode: int

    @property
    def kept_paths(self) -> set[str]:
        return {urlsplit(item["url"]).path.lstrip("/") for item in self.kept}

    def stat(self, name: str) -> int:
        match = re.search(rf"'{re.escape(name)}': (\d+)", self.log)
        return int(match.group(1)) if match else 0


def crawl(
    start_url: str,
    db_url: str | None,
    workdir: Path,
    *settings: str,
    cwd: Path = REPO,
    spider: str = "site",
    feed: bool = True,
    env: dict[str, str] | None = None,
) -> CrawlResult:
    """Crawl from start_url into db_url (None: as the project and `env` say); kept items
    are read from the feed. `env` adds environment variables."""
    workdir.mkdir(parents=True, exist_ok=True)
    feed_path = workdir / f"kept-{len(list(workdir.glob('kept-*')))}.jsonl"
    log = feed_path.with_suffix(".log")
    command = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        spider,
        "-s",
        f"LOG_FILE={log}",
        "-s",
        "ROBOTSTXT_OBEY=False",
    ]
    for setting in CRAWL_DEFAULTS:  # a test's own -s, later, wins
        command += ["-s", setting]
    if db_url is not None:
        command += ["-s", f"SIMHASH_DATABASE_URL={db_url}"]
    if feed:
        command += ["-O", str(feed_path)]
    if spider == "site":
        command += ["-a", f"start_url={start_url}"]
    for setting in settings:
        command += ["-s", setting]
    environment = os.environ | (env or {})
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300, env=environment)
    kept = [json.loads(line) for line in feed_path.read_text().splitlines()] if feed_path.exists() else []
    text = log.read_text() if log.exists() else ""
    return CrawlResult(kept, text + done.stderr, done.returncode)


def user_project(root: Path, spider_source: str, settings: str) -> Path:
    """A new Scrapy project "myproject" under root with one spider module and these settings."""
    project = root / "myproject"
    (project / "myproject" / "spiders").mkdir(parents=True)
    (project / "scrapy.cfg").write_text("[settings]\ndefault = myproject.settings\n")
    (project / "myproject" / "__init__.py").write_text("")
    (project / "myproject" / "spiders" / "__init__.py").write_text("")
    base = 'BOT_NAME = "myproject"\nSPIDER_MODULES = ["myproject.spiders"]\nCONCURRENT_REQUESTS = 1\n'
    (project / "myproject" / "settings.py").write_text(base + settings)
    (project / "myproject" / "spiders" / "spider.py").write_text(spider_source)
    return project
