"""The `site` spider: every HTML page within the start URLs' hosts, as {url, title, html}."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor


def parse_start_urls(start_url: str | None) -> list[str]:
    """The comma-separated start URLs, checked: each needs http(s) and a host."""
    urls = [u.strip() for u in (start_url or "").split(",") if u.strip()]
    if not urls:
        raise ValueError("start_url is required: scrapy crawl site -a start_url=https://example.com/[,URL...]")
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"start_url {url!r} is not an http(s) URL with a host")
    return urls


def _site(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    default_port = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, parts.hostname, parts.port or default_port


class SiteSpider(scrapy.Spider):
    """Follows links within the hosts of the start URLs and yields one item per HTML page."""

    name = "site"

    def __init__(self, start_url: str | None = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.start_urls = parse_start_urls(start_url)
        self.allowed_domains = sorted({urlsplit(u).hostname for u in self.start_urls})
        # A site is a host and port: a link to another port of the same host is another site.
        self.sites = {_site(u) for u in self.start_urls}
        self.links = LinkExtractor()

    async def start(self) -> AsyncIterator[Any]:
        """The start URLs, through the duplicate filter (Scrapy's default skips it), so a
        link back to a start page does not crawl it a second time."""
        for request in self.start_requests():
            yield request

    def start_requests(self) -> Iterator[scrapy.Request]:  # Scrapy before 2.13 calls this instead of start()
        for url in self.start_urls:
            yield scrapy.Request(url, callback=self.parse)

    def parse(self, response: Response) -> Iterator[Any]:
        if not isinstance(response, HtmlResponse):
            return  # PDFs, images, archives: not pages
        yield {
            "url": response.url,
            "title": (response.css("title::text").get() or "").strip(),
            "html": response.text,
        }
        for link in self.links.extract_links(response):
            if _site(link.url) in self.sites:
                yield response.follow(link.url, callback=self.parse)
