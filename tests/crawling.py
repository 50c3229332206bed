"""Run `scrapy crawl site` in a subprocess, as a user would, and read back what it did."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent


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


def crawl(start_url: str, db_url: str, workdir: Path, *settings: str, cwd: Path = REPO, spider: str = "site") -> CrawlResult:
    """Crawl from start_url into db_url; kept items are read from the feed."""
    workdir.mkdir(parents=True, exist_ok=True)
    feed = workdir / f"kept-{len(list(workdir.glob('kept-*')))}.jsonl"
    log = feed.with_suffix(".log")
    command = [sys.executable, "-m", "scrapy", "crawl", spider, "-O", str(feed), "-s", f"LOG_FILE={log}",
               "-s", f"SIMHASH_DATABASE_URL={db_url}", "-s", "ROBOTSTXT_OBEY=False"]
    if spider == "site":
        command += ["-a", f"start_url={start_url}"]
    for setting in settings:
        command += ["-s", setting]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)
    kept = [json.loads(line) for line in feed.read_text().splitlines()] if feed.exists() else []
    text = log.read_text() if log.exists() else ""
    return CrawlResult(kept, text + done.stderr, done.returncode)
