"""The `site` spider: every HTML page of a site, as {url, title, html, last_modified}
(its HTTP Last-Modified, None when the server sends none).

A site is the host and port of an http(s) start URL, or, for a site saved to disk (say by
`wget --mirror`), a local folder: `-a start_url=PATH` (or `file:///PATH`) crawls every HTML
file under the folder, and a file start URL the files under its folder. A link to a folder
(`guide/`) is the folder's index.html, as a web server serves it. A request that gets no
response (a closed port, a failed DNS lookup) is one error line, the URL and the error, and
counts in `site/fetch_errors`.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

import scrapy
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor
from scrapy.settings import BaseSettings
from twisted.python.failure import Failure

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
INDEX_FILES = ("index.html", "index.htm")  # what a web server serves for a folder
HTTP_ERRORS = "site/http_errors"  # error pages (404s) met, skipped without a log line each; /<status> by status
FETCH_ERRORS = "site/fetch_errors"  # requests that got no response, one log line each
ROBOTS_LOGGER = "scrapy.downloadermiddlewares.robotstxt"  # logs a robots.txt it cannot fetch
ARGUMENTS = ("start_url",)
# Spider attributes Scrapy's own components read, which `-a` may set as well
SCRAPY_ARGUMENTS = (
    "user_agent",
    "download_timeout",
    "download_maxsize",
    "download_warnsize",
    "download_delay",
    "max_concurrent_requests",
    "http_user",
    "http_pass",
    "http_auth_domain",
    "handle_httpstatus_list",
)


def parse_start_urls(start_url: str | None) -> list[str]:
    """The comma-separated start URLs, checked: http(s) URLs with a host, file:// URLs, or
    paths of local files and folders (as file:// URLs)."""
    given = [u.strip() for u in (start_url or "").split(",") if u.strip()]
    if not given:
        raise ValueError(
            "start_url is required: scrapy crawl site -a start_url=https://example.com/[,URL...] "
            "(or a folder holding a saved site)"
        )
    urls = []
    for url in given:
        parts = urlsplit(url)
        if parts.scheme in ("http", "https"):
            if not parts.hostname:
                raise ValueError(f"start_url {url!r} has no host")
            urls.append(url)
        elif parts.scheme == "file" or not parts.scheme or Path(url).exists():
            path = Path(url2pathname(parts.path)) if parts.scheme == "file" else Path(url)
            if not path.exists():
                raise ValueError(f"start_url {url!r} is neither an http(s) URL nor an existing file or folder")
            urls.append(path.resolve().as_uri() + ("/" if path.is_dir() else ""))
        else:
            raise ValueError(f"start_url {url!r} is not an http(s) URL, a file:// URL or a local path")
    return urls


def check_arguments(given: Iterable[str], settings: BaseSettings) -> None:
    """ValueError naming the first argument (`-a NAME=...`) that nothing reads, and the known
    one closest to it: a mistyped `start_url` would otherwise be "start_url is required".
    Scrapy's own spider attributes, the parameters the feed URIs name (`%(site)s`) and names
    starting with "_" (scrapyd's `_job`) are taken."""
    feeds = " ".join(str(uri) for uri in settings.getdict("FEEDS"))
    known = {*ARGUMENTS, *SCRAPY_ARGUMENTS, *re.findall(r"%\((\w+)\)", feeds)}
    for name in given:
        if name in known or name.startswith("_"):
            continue
        closest = difflib.get_close_matches(name, [*ARGUMENTS, *SCRAPY_ARGUMENTS], n=1)
        hint = (
            f"did you mean {closest[0]}?"
            if closest
            else "the site spider takes start_url (settings go with -s NAME=VALUE)"
        )
        raise ValueError(f"unknown argument {name}: {hint}")


def _site(url: str) -> tuple[str, ...]:
    """What a URL must share with a start URL to be crawled: its scheme, host and port; for
    a file, the start's folder (a prefix of the path)."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        return ("file", unquote(parts.path))
    default_port = {"http": 80, "https": 443}.get(parts.scheme)
    return (parts.scheme, str(parts.hostname), str(parts.port or default_port))


def _file_root(url: str) -> tuple[str, ...]:
    """The folder a file start URL stands for: itself when a folder, else its parent."""
    path = unquote(urlsplit(url).path)
    return ("file", path if path.endswith("/") else path.rpartition("/")[0] + "/")


def file_page(url: str) -> str | None:
    """What a link to a file:// URL fetches: a folder's index file (None when it has none),
    as a web server serves it; any other URL as it is."""
    parts = urlsplit(url)
    if parts.scheme != "file":
        return url
    path = Path(url2pathname(parts.path))
    if not path.is_dir():
        return url
    index = next((path / name for name in INDEX_FILES if (path / name).is_file()), None)
    return None if index is None else index.as_uri()


def _html_files(url: str) -> list[str]:
    """file:// URLs of every HTML file under a folder, in path order."""
    folder = Path(url2pathname(urlsplit(url).path))
    return [
        path.as_uri() for path in sorted(folder.rglob("*")) if path.suffix.lower() in HTML_SUFFIXES and path.is_file()
    ]


def _header(response: Response, name: str) -> str | None:
    value = response.headers.get(name)
    return None if value is None else value.decode("latin-1")


class _WithoutTraceback(logging.Filter):
    """Drops the traceback of a log record whose message names the request and the error already
    (Scrapy's robots.txt middleware logs one for a robots.txt it cannot fetch)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info, record.exc_text = None, None
        return True


class SiteSpider(scrapy.Spider):
    """Follows links within the start URLs' sites and yields one item per HTML page."""

    name = "site"

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SiteSpider:
        check_arguments(kwargs, crawler.settings)
        return super().from_crawler(crawler, *args, **kwargs)

    def __init__(self, start_url: str | None = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.start_urls = parse_start_urls(start_url)
        web = [u for u in self.start_urls if not u.startswith("file:")]
        if len(web) == len(self.start_urls):  # the offsite filter cannot tell file URLs apart
            self.allowed_domains = sorted({str(urlsplit(u).hostname) for u in web})
        # A site is a host and port (a link to another port of the same host is another
        # site), or a folder on disk.
        self.sites = {_site(u) for u in web}
        self.folders = {_file_root(u) for u in self.start_urls if u.startswith("file:")}
        self.links = LinkExtractor()
        robots = logging.getLogger(ROBOTS_LOGGER)
        if not any(isinstance(f, _WithoutTraceback) for f in robots.filters):
            robots.addFilter(_WithoutTraceback())

    async def start(self) -> AsyncIterator[Any]:
        """The start URLs, through the duplicate filter (Scrapy's default skips it), so a
        link back to a start page does not crawl it a second time."""
        for request in self.start_requests():
            yield request

    def start_requests(self) -> Iterator[scrapy.Request]:  # Scrapy before 2.13 calls this instead of start()
        for url in self.start_urls:
            for page in _html_files(url) if url.startswith("file:") and url.endswith("/") else [url]:
                yield scrapy.Request(page, callback=self.parse, errback=self.failed)

    def _within(self, url: str) -> bool:
        site = _site(url)
        if site[0] == "file":
            return any(site[1].startswith(folder[1]) for folder in self.folders)
        return site in self.sites

    def parse(self, response: Response) -> Iterator[Any]:
        if response.status >= 400:  # HTTPERROR_ALLOW_ALL sends error pages here: counted, not pages
            if self.crawler.stats is not None:
                self.crawler.stats.inc_value(HTTP_ERRORS)
                self.crawler.stats.inc_value(f"{HTTP_ERRORS}/{response.status}")
            return
        if not isinstance(response, HtmlResponse):
            return  # PDFs, images, archives: not pages
        yield {
            "url": response.url,
            "title": (response.css("title::text").get() or "").strip(),
            "html": response.text,
            "last_modified": _header(response, "Last-Modified"),
        }
        for link in self.links.extract_links(response):
            url = file_page(link.url) if self._within(link.url) else None
            if url is not None:
                yield response.follow(url, callback=self.parse, errback=self.failed)

    def failed(self, failure: Failure) -> None:
        """A request that got no response: one line, the URL and the error, and counted (a
        request a middleware refused, robots.txt say, is Scrapy's to log)."""
        if failure.check(IgnoreRequest):
            return
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(FETCH_ERRORS)
        self.logger.error("cannot fetch %s: %s", failure.request.url, failure.getErrorMessage())

    def closed(self, reason: str) -> None:
        """One line: the error pages skipped, by status. Counted here, as they reached the spider:
        Scrapy's downloader/response_status_count/* counts robots.txt too, and each retry."""
        stats = self.crawler.stats.get_stats() if self.crawler.stats is not None else {}
        errors = stats.get(HTTP_ERRORS)
        if errors:
            prefix = HTTP_ERRORS + "/"
            statuses = sorted((name[len(prefix) :], count) for name, count in stats.items() if name.startswith(prefix))
            self.logger.info(
                "skipped %d error page%s (%s); their URLs are in the log with -s LOG_LEVEL=DEBUG",
                errors,
                "" if errors == 1 else "s",
                ", ".join(f"{count} HTTP {status}" for status, count in statuses),
            )
