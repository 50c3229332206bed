"""Run `scrapy crawl site` in a process of its own, as a user would, and read back what it did.

The process is forked by crawl_forks.py, which has imported Scrapy once (about a second of CPU a
crawl, in a suite of ~50); the crawl imports simhash_index and the project itself.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import select
import signal
import subprocess
import sys
from collections.abc import Mapping
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
    start_url: str | None,
    db_url: str | None,
    workdir: Path,
    *settings: str,
    cwd: Path = REPO,
    spider: str = "site",
    feed: bool = True,
    env: dict[str, str] | None = None,
    arguments: Mapping[str, str] | None = None,
) -> CrawlResult:
    """Crawl from start_url (None: no start_url argument) into db_url (None: as the project and
    `env` say); kept items are read from the feed. `env` adds environment variables, `arguments`
    spider arguments (`-a NAME=VALUE`)."""
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
    if spider == "site" and start_url is not None:
        command += ["-a", f"start_url={start_url}"]
    for name, value in (arguments or {}).items():
        command += ["-a", f"{name}={value}"]
    for setting in settings:
        command += ["-s", setting]
    environment = os.environ | (env or {})
    stderr = log.with_suffix(".stderr")
    if _startup(environment) != _startup(os.environ):
        with stderr.open("wb") as errors:  # read as the interpreter starts: a process of its own
            returncode = subprocess.run(
                command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=errors, timeout=300, env=environment
            ).returncode
    else:
        returncode = _forked(command[3:], cwd, environment, stderr)
    kept = [json.loads(line) for line in feed_path.read_text().splitlines()] if feed_path.exists() else []
    text = log.read_text() if log.exists() else ""
    return CrawlResult(kept, text + stderr.read_text(), returncode)


def _startup(environment: Mapping[str, str]) -> dict[str, str]:
    """The variables an interpreter reads as it starts (PYTHONPATH...): a forked crawl keeps its parent's."""
    return {name: value for name, value in environment.items() if name.startswith("PYTHON")}


_forks: list[subprocess.Popen[str]] = []  # this process's crawl_forks.py, once started


def _forked(arguments: list[str], cwd: Path, environment: dict[str, str], stderr: Path) -> int:
    """`scrapy ARGUMENTS` forked by crawl_forks.py, which has Scrapy imported: its exit status."""
    if not _forks or _forks[0].poll() is not None:
        _forks[:] = [
            subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name("crawl_forks.py"))],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                start_new_session=True,  # a crawl that hangs is killed with it
            )
        ]
        atexit.register(_end_forks, _forks[0])
    forks = _forks[0]
    assert forks.stdin is not None and forks.stdout is not None
    request = {"argv": ["scrapy", *arguments], "cwd": str(cwd), "env": environment}
    forks.stdin.write(json.dumps(request | {"stdout": os.devnull, "stderr": str(stderr)}) + "\n")
    forks.stdin.flush()
    if not select.select([forks.stdout], [], [], 300)[0]:
        os.killpg(forks.pid, signal.SIGKILL)
        raise subprocess.TimeoutExpired(arguments, 300)
    return int(json.loads(forks.stdout.readline())["status"])


def _end_forks(forks: subprocess.Popen[str]) -> None:
    """End crawl_forks.py with this process, and wait for it: its crawls' CPU time is counted then."""
    if forks.stdin is not None:
        forks.stdin.close()
    forks.wait(timeout=60)


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


DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def docs_block(marker: str) -> str:
    """The ```python block after the <!-- marker: ... --> comment, in the one document that holds it
    (the README or a page of docs/)."""
    found = [
        block.group(1)
        for document in DOCUMENTS
        for block in re.finditer(
            rf"<!-- {marker}:.*?-->\s*```python\n(.*?)```", document.read_text(encoding="utf-8"), re.S
        )
    ]
    assert len(found) == 1, f"{len(found)} {marker} blocks in the README and docs/, not one"
    return found[0]
