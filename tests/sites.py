"""A small generated web site with known near-duplicates, served on 127.0.0.1."""

from __future__ import annotations

import functools
import http.server
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

WORDS = [
    "river",
    "market",
    "winter",
    "policy",
    "garden",
    "engine",
    "signal",
    "harbor",
    "theory",
    "library",
    "village",
    "council",
    "budget",
    "station",
    "museum",
    "forest",
    "network",
    "climate",
    "report",
    "doctor",
    "teacher",
    "student",
    "season",
    "journey",
    "window",
    "system",
    "energy",
    "factory",
    "bridge",
    "capital",
    "history",
    "science",
    "culture",
    "program",
    "project",
    "method",
    "result",
    "evidence",
    "question",
    "answer",
    "problem",
    "solution",
    "design",
    "model",
    "process",
    "service",
    "product",
    "customer",
    "company",
    "industry",
    "economy",
    "region",
    "country",
    "nation",
    "citizen",
    "government",
    "election",
    "campaign",
    "debate",
    "minister",
    "official",
    "agency",
    "court",
    "judge",
    "lawyer",
    "witness",
    "police",
    "officer",
    "soldier",
    "army",
    "battle",
    "peace",
    "treaty",
    "border",
    "island",
    "ocean",
    "mountain",
    "valley",
    "desert",
    "weather",
    "storm",
    "flood",
    "drought",
    "harvest",
    "farmer",
    "crop",
    "soil",
    "water",
    "supply",
    "demand",
    "price",
    "wage",
    "worker",
    "union",
    "strike",
    "protest",
    "rally",
    "speech",
    "letter",
    "article",
    "journal",
    "editor",
    "author",
    "reader",
    "story",
    "novel",
    "poem",
    "painting",
    "music",
    "concert",
    "theatre",
    "film",
    "camera",
    "screen",
    "phone",
    "computer",
    "software",
    "hardware",
    "database",
    "server",
    "browser",
    "website",
    "search",
    "engine",
]

HAN_SUBJECTS = [
    "城市交通部门",
    "研究人员",
    "地方政府",
    "许多市民",
    "学校老师",
    "农民朋友",
    "经济专家",
    "图书馆员",
    "建筑工人",
    "医院医生",
    "气象专家",
    "科技公司",
    "社区志愿者",
    "旅游部门",
    "大学学生",
    "环保组织",
    "体育协会",
    "音乐团体",
    "工厂技术员",
    "新闻记者",
]
HAN_VERBS = [
    "正在研究",
    "计划推出",
    "公开讨论",
    "积极支持",
    "认真检查",
    "重新设计",
    "继续改进",
    "开始建设",
    "详细介绍",
    "共同完成",
]
HAN_OBJECTS = [
    "新的出行指南",
    "先进的医疗设备",
    "公园的改造方案",
    "农村的灌溉系统",
    "城市的公共交通",
    "古老寺庙的修复工程",
    "全新的充电设施",
    "河流的治理计划",
    "学生的课外活动",
    "老人的健康服务",
    "工厂的节能改造",
    "博物馆的展览内容",
    "图书馆的开放时间",
    "水稻的收割进度",
    "天气的预报系统",
    "市场的价格监测",
    "桥梁的安全评估",
    "网络的安全防护",
]


def chinese_sentence(rng: random.Random) -> str:
    return f"{rng.choice(HAN_SUBJECTS)}{rng.choice(HAN_VERBS)}{rng.choice(HAN_OBJECTS)}。"


def english_article(seed: int, paragraphs: int = 6, sentences: int = 6) -> list[str]:
    """Paragraphs of plausible English-like prose, the same for the same seed."""
    rng = random.Random(seed)
    out = []
    for _ in range(paragraphs):
        body = []
        for _ in range(sentences):
            words = [rng.choice(WORDS) for _ in range(rng.randint(9, 16))]
            body.append(" ".join(words).capitalize() + ".")
        out.append(" ".join(body))
    return out


def chinese_article(seed: int, paragraphs: int = 5, sentences: int = 6) -> list[str]:
    rng = random.Random(seed)
    return ["".join(chinese_sentence(rng) for _ in range(sentences)) for _ in range(paragraphs)]


def edit_words(paragraphs: list[str], seed: int, count: int) -> list[str]:
    """The same paragraphs with `count` words replaced."""
    rng = random.Random(seed)
    words = [p.split(" ") for p in paragraphs]
    for _ in range(count):
        p = rng.randrange(len(words))
        words[p][rng.randrange(len(words[p]))] = rng.choice(WORDS)
    return [" ".join(w) for w in words]


def page(title: str, paragraphs: list[str], *, nav: int = 5, ad: str = "", lang: str = "en", footer: str = "") -> str:
    links = "".join(f'<li><a href="/nav/{i}.html">Section {i}</a></li>' for i in range(nav))
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    aside = f'<aside class="ad"><p>{ad}</p></aside>' if ad else ""
    return (
        f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8"><title>{title}</title></head><body>'
        f"<header><nav><ul>{links}</ul></nav></header>{aside}"
        f"<main><article><h1>{title}</h1>{body}</article></main>"
        f"<footer><p>{footer or 'Copyright the publisher. All rights reserved.'}</p></footer></body></html>"
    )


def related(seed: int) -> list[str]:
    """A "related articles" block: two short headlines that change from copy to copy (fewer
    words than a page must add to be kept beside its copy)."""
    rng = random.Random(seed)
    titles = [" ".join(rng.choice(WORDS) for _ in range(3)).capitalize() for _ in range(2)]
    return ["Related articles: " + "; ".join(titles) + "."]


TEMPLATE_FOOTER = " ".join(english_article(999, paragraphs=3, sentences=5))


def build_site(root: Path) -> dict:
    """Write the site under root; return its clusters (lists of paths, one page to keep each) and singles."""
    article = english_article(1)
    story = english_article(6, paragraphs=8, sentences=8)
    zh = chinese_article(2, paragraphs=6, sentences=8)
    zh_edited = list(zh)  # two sentences rewritten
    zh_edited[1] = zh_edited[1].replace("。", "，据本报记者报道。", 1)
    zh_edited[4] = "据悉，有关部门将于下周召开新闻发布会。" + zh_edited[4].split("。", 1)[1]
    pages = {
        # one article under several URLs, with different navigation and ads
        "news/a.html": page("Harbor report", article, nav=5, ad="Buy our newspaper today"),
        "mirror/a.html": page("Harbor report", article, nav=12, ad="Subscribe for one dollar a week"),
        "print/a.html": page("Harbor report (print)", article, nav=0),
        "copy/a.html": page("Harbor report", article, nav=5, ad="Buy our newspaper today"),
        "news/a-edited.html": page("Harbor report", edit_words(article, 5, 2), nav=7),
        # Chinese article and its copies
        "zh/c.html": page("城市新闻", zh, lang="zh"),
        "zh/c-mirror.html": page("城市新闻", zh, nav=9, ad="广告：欢迎订阅", lang="zh"),
        "zh/c-edited.html": page("城市新闻", zh_edited, lang="zh"),
        # the same story with a changed date, byline and related-links block
        "blog/f.html": page("Council vote", ["Published 3 May 2024 by Ann Lee.", *story, *related(1)]),
        "blog/f-updated.html": page(
            "Council vote", ["Updated 9 June 2024 by Ann Lee and Bo Chen.", *story, *related(2)]
        ),
        # distinct articles
        "news/b.html": page("Budget debate", english_article(3)),
        "news/d.html": page("Forest policy", english_article(4)),
        "zh/e.html": page("科技新闻", chinese_article(5), lang="zh"),
    }
    # distinct pages that share one heavy template and have little content
    for i in range(4):
        short = " ".join(english_article(100 + i, paragraphs=1, sentences=2))
        pages[f"tpl/{i}.html"] = page(f"Notice {i}", [short], nav=40, footer=TEMPLATE_FOOTER)
    links = "".join(f'<li><a href="/{path}">{path}</a></li>' for path in pages)
    links += '<li><a href="/files/report.pdf">PDF</a></li><li><a href="/img/logo.png">logo</a></li>'
    links += '<li><a href="http://127.0.0.2:1/elsewhere.html">another site</a></li>'
    pages["index.html"] = f"<html><head><title>Index</title></head><body><ul>{links}</ul></body></html>"
    for path, html in pages.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
    (root / "files").mkdir()
    (root / "files/report.pdf").write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * 40)
    (root / "img").mkdir()
    (root / "img/logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))
    clusters = [
        ["news/a.html", "mirror/a.html", "print/a.html", "copy/a.html", "news/a-edited.html"],
        ["zh/c.html", "zh/c-mirror.html", "zh/c-edited.html"],
        ["blog/f.html", "blog/f-updated.html"],
    ]
    singles = ["index.html", "news/b.html", "news/d.html", "zh/e.html"] + [f"tpl/{i}.html" for i in range(4)]
    return {"clusters": clusters, "singles": singles}


class Delay:
    """Seconds before each response, so a crawl can be interrupted mid-way; a test may change
    them while the site is served (to finish quickly once the interruption is over)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


class Fetched:
    """The requests a served site answered, by path. With `together`, each request waits (at
    most `timeout` seconds) until every one of those paths was asked for: crawlers started apart,
    each from one of them, begin together."""

    def __init__(self, together: Iterable[str] = (), timeout: float = 30.0) -> None:
        self.counts: Counter[str] = Counter()
        self._waiting = {"/" + path.lstrip("/") for path in together}
        self._all_asked = threading.Event()
        self._lock = threading.Lock()
        self._timeout = timeout
        if not self._waiting:
            self._all_asked.set()

    def asked(self, path: str) -> None:
        with self._lock:
            self.counts[path.lstrip("/")] += 1
            self._waiting.discard(path)
            if not self._waiting:
                self._all_asked.set()
        self._all_asked.wait(self._timeout)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    delay = Delay(0.0)
    headers_by_path: Mapping[str, Mapping[str, str]] = {}
    fetched = Fetched()

    def do_GET(self) -> None:
        self.fetched.asked(self.path)
        if self.delay.seconds:
            time.sleep(self.delay.seconds)
        super().do_GET()

    def send_header(self, keyword: str, value: str) -> None:
        """A header of the path's own (`serve(headers=...)`) in place of the one the server sends."""
        super().send_header(keyword, self.headers_by_path.get(self.path, {}).get(keyword, value))

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a crawler killed mid-download is expected here, not an error to print


@contextmanager
def serve(
    root: Path,
    delay: float | Delay = 0.0,
    headers: Mapping[str, Mapping[str, str]] | None = None,
    fetched: Fetched | None = None,
) -> Iterator[str]:
    """Serve root on 127.0.0.1 on a free port, each response after `delay` s, the requests
    recorded in `fetched`; yields the base URL. `headers`: {path: {header: value}}, values sent
    for these paths in place of the server's own (Last-Modified, Content-Type)."""
    pace = delay if isinstance(delay, Delay) else Delay(delay)
    attributes = {"delay": pace, "headers_by_path": headers or {}, "fetched": fetched or Fetched()}
    handler = functools.partial(type("Handler", (_QuietHandler,), attributes), directory=str(root))
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def build_cluster_site(root: Path, clusters: int = 12, members: int = 4, indexes: int = 4) -> dict:
    """Clusters of near-duplicates (exact copies, other templates, small edits) and
    `indexes` index pages listing every page in a different order."""
    paths: list[list[str]] = []
    pages: dict[str, str] = {}
    for c in range(clusters):
        text = english_article(
            1000 + c, paragraphs=8, sentences=8
        )  # long enough that a one-word edit stays within 3 bits
        cluster = []
        for m in range(members):
            body = edit_words(text, c * 100 + m, 1) if m % 2 else text
            path = f"c{c}/m{m}.html"
            pages[path] = page(f"Story {c}", body, nav=3 + m, ad="Advert" * m)
            cluster.append(path)
        paths.append(cluster)
    everything = [p for cluster in paths for p in cluster]
    for i in range(indexes):
        order = list(everything)
        random.Random(i).shuffle(order)
        links = "".join(f'<li><a href="/{p}">{p}</a></li>' for p in order)
        pages[f"index-{i}.html"] = f"<html><head><title>Index {i}</title></head><body><ul>{links}</ul></body></html>"
    for path, html in pages.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
    return {"clusters": paths, "indexes": [f"index-{i}.html" for i in range(indexes)]}


VERSIONS = {  # a documentation site's versions, oldest first, and the date each was built
    "0.18": "2021-03-01",
    "0.19": "2021-09-01",
    "0.22": "2022-06-01",
    "0.34": "2024-02-01",
    "latest": "2024-11-01",
}


def dated_page(title: str, paragraphs: list[str], date: str, nav: int = 5) -> str:
    """A page whose metadata says when it was last changed (htmldate reads it)."""
    html = page(title, paragraphs, nav=nav)
    meta = f'<meta property="article:modified_time" content="{date}T12:00:00">'
    return html.replace("</title>", "</title>" + meta, 1)


def build_versioned_docs(root: Path) -> dict[str, list[str]]:
    """A versioned documentation site: under each version, a home page (the same text but its
    version line), a guide (a word edited a version) and a changelog (each version's notes
    above the older ones: longer each version, `latest` with an unreleased section). Returns
    each page kind's paths, oldest version first."""
    intro = english_article(20, paragraphs=5, sentences=7)
    guide = english_article(21, paragraphs=8, sentences=8)
    notes = {version: english_article(30 + n, paragraphs=1, sentences=2) for n, version in enumerate(VERSIONS)}
    base_notes = english_article(29, paragraphs=10, sentences=8)
    kinds: dict[str, list[str]] = {"index": [], "guide": [], "changelog": []}
    for n, (version, date) in enumerate(VERSIONS.items()):
        released = [v for v in VERSIONS if list(VERSIONS).index(v) <= n]
        changelog = [p for v in reversed(released) for p in [f"Release {v}."] + notes[v]] + base_notes
        pages = {
            "index": dated_page(f"Docs {version}", [f"Documentation for version {version}.", *intro], date),
            "guide": dated_page(f"Guide {version}", edit_words(guide, n, n), date),
            "changelog": dated_page(f"Changelog {version}", changelog, date),
        }
        for kind, html in pages.items():
            path = f"{version}/{kind}.html"
            (root / version).mkdir(parents=True, exist_ok=True)
            (root / path).write_text(html, encoding="utf-8")
            kinds[kind].append(path)
    links = "".join(f'<li><a href="/{v}/{k}.html">{v} {k}</a></li>' for v in VERSIONS for k in kinds)
    (root / "index.html").write_text(f"<html><head><title>Versions</title></head><body><ul>{links}</ul></body></html>")
    return kinds


SNAPSHOTS = {  # a news site's snapshots, oldest first, and when each was taken
    "2024-01": "2024-01-15",
    "2024-06": "2024-06-15",
    "2024-11": "2024-11-15",
}
POSTS = {"launch": "2023-03-02", "release": "2023-05-20", "meetup": "2023-08-11", "notice": "2023-10-01"}


def build_snapshots(root: Path, *, same_modified: bool = False) -> None:
    """Snapshots of a news site side by side, as a site's history serves them, each under its
    own folder with a home page (`SNAPSHOT/index.html`) linking to its posts: every snapshot of a
    post says the same publication date (its metadata), its text a few words further edited in
    each (`notice` the same in all). Files are last modified when their snapshot was taken
    (HTTP Last-Modified), or all at the first snapshot's time with `same_modified`."""
    for n, snapshot in enumerate(SNAPSHOTS):
        taken = datetime.fromisoformat(
            SNAPSHOTS[next(iter(SNAPSHOTS)) if same_modified else snapshot] + "T12:00:00+00:00"
        ).timestamp()
        files = {}
        for p, (post, date) in enumerate(POSTS.items()):
            text = english_article(60 + p, paragraphs=8, sentences=8)
            files[f"{snapshot}/{post}.html"] = dated_page(
                post.title(), edit_words(text, p, 2 * n * (post != "notice")), date, nav=0
            )
        links = "".join(f'<li><a href="/{path}">{path}</a></li>' for path in files)
        files[f"{snapshot}/index.html"] = (
            f"<html><head><title>News {snapshot}</title></head><body><ul>{links}</ul></body></html>"
        )
        for path, html in files.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(html, encoding="utf-8")
            os.utime(target, (taken, taken))
