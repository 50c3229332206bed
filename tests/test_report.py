"""`simhash-index report --html`: the page's counts match the index on every backend, the
near-duplicates come first, least similar first, with their diffs; hostile URLs stay text and
the only script is the page's own, allowed by its hash. In headless Chromium (Debian's
chromium package) the page filters by the URL fragment, and a user's clicks and typing sort
and filter it; a screenshot is kept (SIMHASH_SCREENSHOT names where)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from browser import Browser
from commands import ok
from samples import KEPT, NEAR_TEXT, OTHER, TEXT, signature
from sites import edit_words, english_article

from simhash_index import SimhashIndex
from simhash_index.cli.reports import host_of

BROWSER_ENV = "SIMHASH_REQUIRE_BROWSER"  # set by .ci/run: the browser test must run
HOSTILE = [
    'https://evil.example/"><script>alert(1)</script>',
    "https://evil.example/<img src=x onerror=alert(2)>",
    "javascript:alert(3)//copy",
]
HOSTILE_NEAR = "https://evil.example/</script><script>alert(4)</script>"


class Counts(HTMLParser):
    """What the report's DOM holds: near-duplicates, clusters, drops, totals, hosts, and
    anything active."""

    def __init__(self) -> None:
        super().__init__()
        self.near: list[dict[str, str | None]] = []  # each near-duplicate's attributes, in page order
        self.clusters: list[int] = []
        self.open_clusters = 0
        self.hidden_clusters = 0
        self.drops = 0
        self.diffs = 0
        self.totals: dict[str, int] = {}
        self.hosts: list[str] = []
        self.scripts: list[str] = []
        self.csp = ""
        self.active = 0  # elements that load or run something, but the one script
        self.handlers = 0
        self.links: list[str] = []
        self.text: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        if tag == "tbody" and "near" in classes:
            self.near.append(found)
        if tag == "details" and "cluster" in classes:
            self.clusters.append(int(found["data-size"] or 0))
            self.open_clusters += "open" in found
            self.hidden_clusters += "hidden" in found
        self.drops += tag == "tr" and "drop" in classes
        self.diffs += tag == "tr" and "diff" in classes
        if "data-count" in found and found.get("id"):
            self.totals[found["id"]] = int(found["data-count"] or 0)
        if tag == "meta" and found.get("http-equiv") == "Content-Security-Policy":
            self.csp = found.get("content") or ""
        if tag == "script":
            self._in = "script"
            self.scripts.append("")
        self.active += tag in ("iframe", "object", "embed", "img", "link", "base")
        self.handlers += sum(name.startswith("on") for name in found)
        if tag == "a":
            self.links.append(found.get("href") or "")
            self._in = "host" if self.links[-1].startswith("#host=") else None

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" or (tag == "a" and self._in == "host"):
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.scripts[-1] += data
        elif self._in == "host":
            self.hosts.append(data)
        else:
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
        assert index.check_and_add(HOSTILE_NEAR, signature(NEAR_TEXT)) is not None


def expected(db_url: str) -> tuple[dict[str, int], list[int], list[str]]:
    """The totals, the cluster sizes and the near-duplicates least similar first, from the index."""
    with SimhashIndex(db_url) as index:
        logged = index.duplicates()
        exact = sum(d.exact for d in logged)
        totals = {"documents": len(index), "duplicates": len(logged), "exact": exact, "near": len(logged) - exact}
        near = sorted((d for d in logged if not d.exact), key=lambda d: d.similarity or 0)
        return totals, [len(c.duplicates) for c in index.clusters()], [d.key for d in near]


def allowed_by_hash(page: Counts) -> bool:
    """Whether the page's one script is the one its Content-Security-Policy allows."""
    digest = base64.b64encode(hashlib.sha256(page.scripts[0].encode("utf-8")).digest()).decode("ascii")
    return len(page.scripts) == 1 and f"script-src 'sha256-{digest}'" in page.csp


def test_report_counts_and_escaping(db_url: str, tmp_path: Path) -> None:
    fill(db_url)
    target = tmp_path / "report.html"
    said = ok("report", "--db", db_url, "--html", str(target))
    page = counted(target.read_text(encoding="utf-8"))
    totals, sizes, near = expected(db_url)
    counts = f"{totals['documents']} pages stored, {totals['duplicates']} duplicates ({totals['exact']} exact, "
    assert said == f"wrote {target}: {counts}{totals['near']} near), {len(sizes)} clusters\n"
    assert (page.totals, page.clusters, page.drops) == (totals, sizes, sum(sizes))
    assert [row["data-url"] for row in page.near] == near and len(near) == 2
    assert sizes == [3, 3] and page.open_clusters == 0  # collapsed
    assert allowed_by_hash(page) and "default-src 'none'" in page.csp
    assert page.active == 0 and page.handlers == 0
    assert all(link.startswith(("http://", "https://", "#host=")) for link in page.links)
    assert page.hosts == ["evil.example", "example.com"]  # most dropped first
    assert "SIMHASH_KEEP_TEXTS = True" in shown_note(target.read_text(encoding="utf-8"))  # no texts kept
    shown = "".join(page.text)
    assert all(url in shown for url in [*HOSTILE, HOSTILE_NEAR])  # as text
    limited = counted(ok("report", "--db", db_url, "--html", "-", "--limit", "1"))
    assert (limited.clusters, [row["data-url"] for row in limited.near]) == (sizes[:1], near[:1])


def review_corpus(path: Path) -> None:
    """Articles on several hosts with near copies (a few words edited) and exact ones."""
    lines = []
    for seed, host, edits, copies in [
        (21, "news.example", [2, 6], ["mirror.example"]),
        (22, "blog.example", [4, 9], ["mirror.example", "blog.example"]),
        (23, "docs.example", [], ["docs.example"] * 4),
        (24, "shop.example", [3], []),
    ]:
        text = english_article(seed)
        base = f"https://{host}/story-{seed}"
        lines.append({"url": base, "text": "\n".join(text)})
        lines += [{"url": f"{base}?edit={n}", "text": "\n".join(edit_words(text, seed * 10 + n, n))} for n in edits]
        lines += [{"url": f"https://{c}/copy-{seed}-{i}", "text": "\n".join(text)} for i, c in enumerate(copies)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


@pytest.fixture
def review(sqlite_url: str, tmp_path: Path) -> tuple[str, Path]:
    """An index of the review corpus, texts kept, and its report."""
    corpus = tmp_path / "corpus.jsonl"
    review_corpus(corpus)
    ok("import", "--db", sqlite_url, "--keep-texts", "--workers", "0", str(corpus))
    target = tmp_path / "review.html"
    ok("report", "--db", sqlite_url, "--html", str(target))
    return sqlite_url, target


def test_report_for_review(review: tuple[str, Path]) -> None:
    db, target = review
    html = target.read_text(encoding="utf-8")
    assert 'id="no-texts"' not in html and 'id="origin"' not in html  # texts kept; pages on several hosts
    page = counted(html)
    _, sizes, near = expected(db)
    assert [row["data-url"] for row in page.near] == near and len(near) == 5
    similarities = [float(row["data-similarity"] or 0) for row in page.near]
    assert similarities == sorted(similarities) and similarities[0] < similarities[-1]
    assert page.diffs == len(near)  # each near-duplicate's diff
    assert page.hosts == ["docs.example", "blog.example", "mirror.example", "news.example", "shop.example"]
    assert (page.clusters, page.open_clusters) == (sizes, 0)


def shown_note(html: str) -> str:
    """The text of the page's note on kept texts ("" when it has none)."""
    found = re.search(r'<p class="note" id="no-texts">(.*?)</p>', html)
    return re.sub(r"<[^>]+>", "", found.group(1)) if found else ""


SITE = "https://community.example-project.org"


def snapshots_corpus(path: Path) -> None:
    """A site's posts, each in two snapshots and a translation: long URLs, all on one origin."""
    lines = []
    for seed in range(6):
        text = english_article(100 + seed)
        slug = f"/news/2023/0{seed + 1}/1{seed}/release-notes-for-version-{seed}-with-many-improvements/index.html"
        for prefix, edits in (("", 0), ("/snapshots/2024-06", 3), ("/snapshots/2024-11", 6), ("/ja", 0)):
            lines.append({"url": SITE + prefix + slug, "text": "\n".join(edit_words(text, seed, edits))})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


@pytest.mark.parametrize("width", [1400, 800])
def test_the_report_uses_the_width_and_shows_urls_by_their_paths(sqlite_url: str, tmp_path: Path, width: int) -> None:
    """In Chromium at 1400 and 800 pixels: the near-duplicates table takes the page's width, the
    origin every page shares is said once and the links show paths (one line each at 1400), and
    a note says that no texts are kept and which setting keeps them."""
    binary = chromium()
    corpus = tmp_path / "corpus.jsonl"
    snapshots_corpus(corpus)
    ok("import", "--db", sqlite_url, "--workers", "0", str(corpus))
    target = tmp_path / "report.html"
    ok("report", "--db", sqlite_url, "--html", str(target))
    browser = Browser(binary, width=width, height=1000)
    try:
        browser.open(target.as_uri())
        measure = """(() => {
          const table = document.getElementById("near-duplicates").getBoundingClientRect();
          const body = document.body.getBoundingClientRect();
          const links = [...document.querySelectorAll("tbody.near a")];
          return {table: table.width, body: body.width, scroll: document.documentElement.scrollWidth,
                  lines: Math.max(...links.map(a => new Set([...a.getClientRects()].map(r => Math.round(r.top))).size)),
                  links: links.length,
                  texts: links.map(a => a.textContent), origin: document.getElementById("origin")?.textContent,
                  note: document.getElementById("no-texts")?.textContent ?? ""};
        })()"""
        found = browser.evaluate(measure)
        shot = tmp_path / f"report-{width}.png"
        browser.screenshot(shot)
    finally:
        browser.close()
    assert found["table"] >= 0.98 * found["body"] and found["body"] >= 0.9 * width and found["scroll"] <= width
    assert found["links"] == 2 * 12  # 12 near-duplicates, each with the page kept
    assert found["lines"] <= (1 if width == 1400 else 3), found
    assert all(text.startswith("/news/") or text.startswith("/snapshots/") for text in found["texts"]), found
    assert found["origin"] == f"Every page is on {SITE}: the tables show their paths."
    assert "SIMHASH_KEEP_TEXTS = True" in found["note"] and "--keep-texts" in found["note"]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        if os.environ.get(BROWSER_ENV):
            pytest.fail(f"{BROWSER_ENV} is set but chromium is not installed: apt-get install chromium")
        pytest.skip(f"chromium is not installed (apt-get install chromium; {BROWSER_ENV}=1 requires it)")
    return found


def browse(browser: str, page: str, *options: str) -> subprocess.CompletedProcess[str]:
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", *options, page]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def visible(page: Counts) -> list[str]:
    return [row["data-url"] or "" for row in page.near if "hidden" not in row]


def test_report_in_a_browser(sqlite_url: str, tmp_path: Path) -> None:
    browser = chromium()
    fill(sqlite_url)
    target = tmp_path / "report.html"
    ok("report", "--db", sqlite_url, "--html", str(target))
    dom = counted(browse(browser, target.as_uri(), "--dump-dom").stdout)  # the DOM the browser built
    totals, sizes, near = expected(sqlite_url)
    assert (dom.totals, dom.clusters, dom.drops, visible(dom)) == (totals, sizes, sum(sizes), near)
    assert dom.active == 0 and dom.handlers == 0 and len(dom.scripts) == 1
    filtered = counted(browse(browser, target.as_uri() + "#host=evil.example", "--dump-dom").stdout)
    assert visible(filtered) == [HOSTILE_NEAR]  # the script ran: CSP allowed it
    assert filtered.hidden_clusters == 0  # each cluster holds a page of evil.example
    exact_only = counted(browse(browser, target.as_uri() + "#rule=exact&host=example.com", "--dump-dom").stdout)
    assert visible(exact_only) == [] and exact_only.hidden_clusters == 1


def test_review_by_clicking(review: tuple[str, Path]) -> None:
    binary = chromium()
    db, target = review
    with SimhashIndex(db) as index:
        near = sorted((d for d in index.duplicates() if not d.exact), key=lambda d: d.similarity or 0)
    browser = Browser(binary)
    try:
        browser.open(target.as_uri())
        shown = "[...document.querySelectorAll('tbody.near:not([hidden])')].map(e => e.dataset.url)"
        assert browser.evaluate(shown) == [d.key for d in near]
        browser.click('#hosts a[href="#host=blog.example"]')  # the host table's link
        browser.wait_for("document.querySelector('select[name=host]').value === 'blog.example'")  # applied
        assert browser.evaluate("location.hash") == "#host=blog.example"
        on_blog = [d for d in near if host_of(d.key) == "blog.example"]
        assert browser.evaluate(shown) == [d.key for d in on_blog] and len(on_blog) == 2
        browser.click("th[data-sort=similarity] button")  # sorted by it already: the other way
        browser.wait_for("document.querySelector('th[data-sort=similarity]').ariaSort === 'descending'")
        assert browser.evaluate(shown) == [d.key for d in reversed(on_blog)]
        low = round((on_blog[0].similarity + on_blog[1].similarity) / 2, 3)  # type: ignore[operator]
        browser.type("input[name=min]", str(low))
        browser.wait_for("document.body.dataset.near === '1'")
        assert browser.evaluate(shown) == [on_blog[1].key]
        assert browser.evaluate("location.hash") == f"#host=blog.example&sort=similarity&order=desc&min={low}"
        shown_text = browser.evaluate("document.getElementById('shown').textContent")
        assert re.fullmatch(rf"shown: 1 of {len(near)} near-duplicates, 1 of \d+ clusters", shown_text)
        shot = Path(os.environ.get("SIMHASH_SCREENSHOT", target.with_suffix(".png")))
        browser.screenshot(shot)
    finally:
        browser.close()
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000  # a rendered page, not a blank one


class Links(HTMLParser):
    """Each link of a page: its target and its text."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[list[str]] = []
        self._open: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._open = [dict(attrs).get("href") or "", ""]
            self.links.append(self._open)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open[1] += data


def test_a_bidi_override_in_a_url_shows_as_an_escape(sqlite_url: str) -> None:
    """`https://evil.example/<U+202E>gnp.exe` would read `.../exe.png`: the link text shows
    `\\u202e`, as the listings do; the link still goes to the URL as it is."""
    spoof = "https://evil.example/\u202egnp.exe"
    with SimhashIndex(sqlite_url) as index:
        assert index.check_and_add("https://example.com/a", 0x0123456789ABCDEF) is None
        assert index.check_and_add(spoof, 0x0123456789ABCDEE) is not None
    parser = Links()
    parser.feed(ok("report", "--db", sqlite_url, "--html", "-"))
    assert [spoof, "https://evil.example/\\u202egnp.exe"] in parser.links
    assert not any("\u202e" in text for _, text in parser.links)
