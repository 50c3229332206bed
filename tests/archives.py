"""Web archives written for tests with warcio: pages as HTML responses, with the records a crawler
writes around them."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sites import english_article, page
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter


def html_response(
    writer: WARCWriter,
    url: str,
    body: str,
    *,
    status: str = "200 OK",
    kind: str = "text/html",
    headers: Sequence[tuple[str, str]] = (),
) -> Any:
    """A response record of `body` (UTF-8) with this status, media type and other HTTP headers."""
    http = StatusAndHeaders(status, [("Content-Type", f"{kind}; charset=utf-8"), *headers], protocol="HTTP/1.1")
    data = body.encode("utf-8")
    return writer.create_warc_record(url, "response", payload=io.BytesIO(data), length=len(data), http_headers=http)


def request_record(writer: WARCWriter, url: str) -> Any:
    """A request record of `url`."""
    return writer.create_warc_record(
        url, "request", http_headers=StatusAndHeaders("GET / HTTP/1.1", [], is_http_request=True)
    )


def write_archive(path: Path, *, compress: bool) -> dict[str, str]:
    """An archive with three copies of one article, another article, an image, a 404,
    a request, a metadata record and a warcinfo; returns the response URLs' expected fate."""
    article = english_article(11)
    pages = {
        "https://a.example/story": page("Story", article),
        "https://b.example/copy": page("Story", article, nav=9, ad="Subscribe"),
        "https://a.example/other": page("Other", english_article(12)),
        "https://c.example/copy": page("Story (print)", article, nav=0),
    }
    with path.open("wb") as stream:
        writer = WARCWriter(stream, gzip=compress)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "test"}))
        for url, body in pages.items():
            request = request_record(writer, url)
            response = html_response(writer, url, body)
            response.rec_headers.add_header("WARC-Concurrent-To", request.rec_headers.get_header("WARC-Record-ID"))
            writer.write_record(request)
            writer.write_record(response)
            meta = writer.create_warc_record(url, "metadata", payload=io.BytesIO(b"outlinks: none\r\n"), length=16)
            meta.rec_headers.add_header("WARC-Refers-To", response.rec_headers.get_header("WARC-Record-ID"))
            writer.write_record(meta)
        writer.write_record(html_response(writer, "https://a.example/logo.png", "PNG", kind="image/png"))
        writer.write_record(html_response(writer, "https://a.example/gone", page("Gone", ["Not found."]), status="404"))
    return {"https://b.example/copy": "dropped", "https://c.example/copy": "dropped"}
