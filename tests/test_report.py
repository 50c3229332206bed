"""`simhash-index report --html`: the page's counts match the index on every backend, hostile
URLs stay text, and in headless Chromium (Debian's chromium package) the page renders
offline to the same DOM counts, with a screenshot."""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from test_cli import ok
from test_cli_explain import KEPT, NEAR_TEXT, OTHER, TEXT, signature

from simhash_index import SimhashIndex

BROWSER_ENV = "SIMHASH_REQUIRE_BROWSER"  # set by .ci/run: the browser test must run
HOSTILE = [
    'https://evil.example/"><script>alert(1)</script>',
    "https://evil.example/<img src=x onerror=alert(2)>",
    "javascript:alert(3)//copy",
]


class Counts(HTMLParser):
    """What the report's DOM holds: clusters, drops, totals, and anything active."""

    def __init__(self) -> None:
        super().__init__()
        self.clusters: list[int] = []
        self.drops = 0
        self.totals: dict[str, int] = {}
        self.scripts = 0
        self.handlers = 0
        self.links: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        if tag == "section" and "cluster" in classes:
            self.clusters.append(int(found["data-size"] or 0))
        if tag == "tr" and "drop" in classes:
            self.drops += 1
        if "data-count" in found and found.get("id"):
            self.totals[found["id"]] = int(found["data-count"] or 0)
        self.scripts += tag in ("script", "iframe", "object", "embed", "img")
        self.handlers += sum(name.startswith("on") for name in found)
        if tag == "a":
            self.links.append(found.get("href") or "")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def counted(page: str) -> Counts:
    parser = Counts()
    parser.feed(page)
    return parser


def fill(db_url: str) -> None:
    with SimhashIndex(db_url) as index:
        assert index.check_and_add(KEPT, signature(TEXT)) is None
        assert index.check_and_add("https://example.com/near", signature(NEAR_TEXT)) is not None
        assert index.check_and_add("https://example.com/exact", signature(TEXT)) is not None
        assert index.check_and_add("https://example.com/other", signature(OTHER)) is None
        for url in HOSTILE:
            assert index.check_and_add(url, signature(OTHER)) is not None


def expected(db_url: str) -> tuple[dict[str, int], list[int]]:
    """The totals and cluster sizes, read from the index."""
    with SimhashIndex(db_url) as index:
        logged = index.duplicates()
        exact = sum(d.exact for d in logged)
        totals = {"documents": len(index), "duplicates": len(logged), "exact": exact, "near": len(logged) - exact}
        return totals, [len(c.duplicates) for c in index.clusters()]


def test_report_counts_and_escaping(db_url: str, tmp_path: Path) -> None:
    fill(db_url)
    target = tmp_path / "report.html"
    said = ok("report", "--db", db_url, "--html", str(target))
    page = counted(target.read_text(encoding="utf-8"))
    totals, sizes = expected(db_url)
    counts = f"{totals['documents']} pages stored, {totals['duplicates']} duplicates ({totals['exact']} exact, "
    assert said == f"wrote {target}: {counts}{totals['near']} near), {len(sizes)} clusters\n"
    assert (page.totals, page.clusters, page.drops) == (totals, sizes, sum(sizes))
    assert sizes == [3, 2]  # OTHER's copies, then TEXT's
    assert page.scripts == 0 and page.handlers == 0
    assert all(link.startswith(("http://", "https://")) for link in page.links)
    shown = "".join(page.text)
    assert all(url in shown for url in HOSTILE)  # as text
    limited = ok("report", "--db", db_url, "--html", "-", "--limit", "1")
    assert counted(limited).clusters == sizes[:1]


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        if os.environ.get(BROWSER_ENV):
            pytest.fail(f"{BROWSER_ENV} is set but chromium is not installed: apt-get install chromium")
        pytest.skip(f"chromium is not installed (apt-get install chromium; {BROWSER_ENV}=1 requires it)")
    return found


def browse(browser: str, page: Path, *options: str) -> subprocess.CompletedProcess[str]:
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", *options, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def test_report_in_a_browser(sqlite_url: str, tmp_path: Path) -> None:
    browser = chromium()
    fill(sqlite_url)
    target = tmp_path / "report.html"
    ok("report", "--db", sqlite_url, "--html", str(target))
    dom = counted(browse(browser, target, "--dump-dom").stdout)  # the DOM the browser built
    totals, sizes = expected(sqlite_url)
    assert (dom.totals, dom.clusters, dom.drops) == (totals, sizes, sum(sizes))
    assert dom.scripts == 0 and dom.handlers == 0
    shot = Path(os.environ.get("SIMHASH_SCREENSHOT", tmp_path / "report.png"))
    browse(browser, target, f"--screenshot={shot}", "--window-size=1200,1400", "--hide-scrollbars")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000  # a rendered page, not a blank one
