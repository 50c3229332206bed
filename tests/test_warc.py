"""`import` and `filter` on web archives: one `wget --warc-file` made of a crawl of the local
test site, and one written with warcio (gzip per record, and plain). Every record filter
keeps is the input's bytes; the ones it leaves out are the duplicate responses the index
dropped and their request and metadata records."""

from __future__ import annotations

import gzip
import io
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from archives import html_response, write_archive
from commands import ok, run
from sites import build_site, english_article, page, serve
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simhash_index import SimhashIndex
from simhash_index.archives.copying import companions
from simhash_index.archives.records import Record


def records(path: Path) -> list[tuple[int, bytes, object]]:
    """(offset, raw bytes, parsed record) of each record."""
    data = path.read_bytes()
    found, stream = [], ArchiveIterator(io.BytesIO(data))
    for record in stream:
        record.content_stream().read()
        found.append((stream.get_record_offset(), record))
    ends = [offset for offset, _ in found[1:]] + [len(data)]
    return [(offset, data[offset:end], record) for (offset, record), end in zip(found, ends)]


def header(record: object, name: str) -> str | None:
    return record.rec_headers.get_header(name)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def wget_archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    if shutil.which("wget") is None:
        pytest.skip("wget is not installed (apt-get install wget)")
    root = tmp_path_factory.mktemp("wget")
    site = build_site(root / "site")
    with serve(root / "site") as base:
        subprocess.run(
            [
                "wget",
                "-q",
                "-r",
                "-l",
                "2",
                "-P",
                str(root / "mirror"),
                "--warc-file",
                str(root / "crawl"),
                f"{base}/index.html",
            ],
            check=False,  # 8: the site has no robots.txt
        )
    return root / "crawl.warc.gz", site


def test_import_reads_a_wget_archive(wget_archive: tuple[Path, dict], tmp_path: Path) -> None:
    archive, site = wget_archive
    db = f"sqlite:///{tmp_path / 'a.db'}"
    summary = ok("import", "--db", db, "--workers", "0", str(archive))
    pages = sum(len(c) for c in site["clusters"]) + len(site["singles"])
    with SimhashIndex(db) as index:
        stored, dropped = len(index), len(index.duplicates())
    assert stored + dropped == pages  # the PDF, the PNG and the 404s are not pages
    assert summary.startswith(f"kept {stored}, dropped {dropped}, skipped 0 (no text); records not pages: ")
    kinds = [r.rec_type for _, _, r in records(archive)]
    failed = sum(r.rec_type == "response" and r.http_headers.get_statuscode() != "200" for _, _, r in records(archive))
    assert f"{kinds.count('request')} request, {failed} response not 2xx, 2 response not HTML" in summary  # PDF, PNG
    assert "1 warcinfo" in summary and failed > 0


def test_filter_a_wget_archive(wget_archive: tuple[Path, dict], tmp_path: Path) -> None:
    archive, _ = wget_archive
    db = f"sqlite:///{tmp_path / 'f.db'}"
    out = tmp_path / "out.warc.gz"
    summary = ok("filter", "--db", db, "--workers", "0", str(archive), str(out))
    with SimhashIndex(db) as index:
        gone = {d.key for d in index.duplicates()}
    before, after = records(archive), records(out)
    assert gone and summary == (
        f"read {len(before)} records ({archive.stat().st_size} bytes), {len(gone)} duplicate pages; "
        f"wrote {len(after)} records ({out.stat().st_size} bytes)\n"
    )
    dropped_ids = {header(r, "WARC-Record-ID") for _, _, r in before if header(r, "WARC-Target-URI") in gone}
    expected = [raw for _, raw, r in before if header(r, "WARC-Record-ID") not in dropped_ids]
    assert [raw for _, raw, _ in after] == expected  # byte for byte, one gzip member each
    assert all(raw.startswith(b"\x1f\x8b") for raw in expected)
    # each page's response and its request: wget sends a request again when a try fails (seen under load)
    removed = Counter(
        (header(r, "WARC-Target-URI"), r.rec_type) for _, _, r in before if header(r, "WARC-Record-ID") in dropped_ids
    )
    assert {url for url, _ in removed} == gone and {kind for _, kind in removed} == {"request", "response"}
    assert all(removed[url, "response"] == 1 and removed[url, "request"] >= 1 for url in gone)
    assert b"".join(expected) == out.read_bytes()


def test_filter_keeps_revisits(wget_archive: tuple[Path, dict], tmp_path: Path) -> None:
    archive, _ = wget_archive
    db = f"sqlite:///{tmp_path / 'r.db'}"
    out = tmp_path / "out.warc.gz"
    ok("filter", "--db", db, "--workers", "0", "--keep-revisits", str(archive), str(out))
    with SimhashIndex(db) as index:
        of = {d.key: d.duplicate_of for d in index.duplicates()}
    before, after = records(archive), records(out)
    assert len(before) == len(after)
    responses = {header(r, "WARC-Target-URI"): r for _, _, r in before if r.rec_type == "response"}
    for (_, old, was), (_, new, now) in zip(before, after):
        if was.rec_type == "response" and header(was, "WARC-Target-URI") in of:
            url = header(was, "WARC-Target-URI")
            kept = responses[of[url]]
            assert now.rec_type == "revisit" and new.startswith(b"\x1f\x8b")
            assert header(now, "WARC-Target-URI") == url
            assert header(now, "WARC-Refers-To-Target-URI") == of[url]
            assert header(now, "WARC-Refers-To") == header(kept, "WARC-Record-ID")
            assert header(now, "WARC-Refers-To-Date") == header(kept, "WARC-Date")
            assert header(now, "WARC-Concurrent-To") == header(was, "WARC-Concurrent-To")
            assert now.http_headers.get_statuscode() == "200"
        else:
            assert new == old


@pytest.mark.parametrize("compress", [True, False], ids=["gzip", "plain"])
def test_filter_a_warcio_archive(tmp_path: Path, compress: bool) -> None:
    archive = tmp_path / ("in.warc.gz" if compress else "in.warc")
    dropped = write_archive(archive, compress=compress)
    db = f"sqlite:///{tmp_path / 'w.db'}"
    out = tmp_path / "out.warc"
    summary = ok("filter", "--db", db, "--workers", "0", str(archive), str(out))
    with SimhashIndex(db) as index:
        assert {d.key for d in index.duplicates()} == set(dropped)
    before, after = records(archive), records(out)
    left_out = [r for _, _, r in before if header(r, "WARC-Target-URI") in dropped]
    assert sorted(r.rec_type for r in left_out) == sorted(["metadata", "request", "response"] * 2)
    assert [raw for _, raw, _ in after] == [raw for _, raw, r in before if r not in left_out]
    assert f"read {len(before)} records" in summary and f"wrote {len(before) - 6} records" in summary
    revisited = tmp_path / "revisits.warc"
    db = f"sqlite:///{tmp_path / 'v.db'}"
    ok("filter", "--db", db, "--workers", "0", "--keep-revisits", str(archive), str(revisited))
    kinds = [r.rec_type for _, _, r in records(revisited)]
    assert len(kinds) == len(before) and kinds.count("revisit") == 2
    assert revisited.read_bytes().startswith(b"\x1f\x8b") == compress  # compressed as the input is


def test_companions_by_link_or_by_target() -> None:
    def record(offset: int, kind: str, target: str, ident: str = "", links: tuple[str, ...] = ()) -> Record:
        page = None if kind == "response" else kind
        return Record(offset, 1, kind, ident or None, target, None, links, page)

    archive = [
        record(0, "request", "https://a/1", "<r0>"),
        record(1, "response", "https://a/1", "<r1>", ("<r0>",)),  # dropped; names its request
        record(2, "metadata", "https://a/1", "<r2>", ("<r1>",)),  # names the dropped response
        record(3, "request", "https://a/2"),  # unlinked, the target of a dropped response
        record(4, "response", "https://a/2", "<r4>"),  # dropped
        record(5, "request", "https://a/3"),  # unlinked, the target of a dropped and of a kept response
        record(6, "response", "https://a/3", "<r6>"),  # dropped
        record(7, "response", "https://a/3", "<r7>"),  # kept
        record(8, "request", "https://a/4", "<r8>"),  # the kept page's
        record(9, "response", "https://a/4", "<r9>", ("<r8>",)),
    ]
    assert companions(archive, {1: {}, 4: {}, 6: {}}) == {0, 2, 3}


def test_import_counts_what_is_not_a_page(tmp_path: Path) -> None:
    archive = tmp_path / "in.warc.gz"
    write_archive(archive, compress=True)
    summary = ok("import", "--db", f"sqlite:///{tmp_path / 'i.db'}", "--workers", "0", str(archive))
    assert summary == (
        "kept 2, dropped 2, skipped 0 (no text); records not pages: 4 request, 4 metadata, "
        "1 warcinfo, 1 response not HTML, 1 response not 2xx\n"
    )


def test_a_whole_stream_gzip_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "in.warc"
    write_archive(plain, compress=False)
    whole = tmp_path / "whole.warc.gz"
    whole.write_bytes(gzip.compress(plain.read_bytes()))
    result = run("filter", "--db", f"sqlite:///{tmp_path / 'z.db'}", "--workers", "0", str(whole), str(tmp_path / "o"))
    assert result.exit_code == 1 and "gzipped as one stream" in result.stderr
    assert not (tmp_path / "o").exists() and list(tmp_path.glob(".o.*")) == []


def test_revisits_need_a_warc(tmp_path: Path) -> None:
    arc = tmp_path / "in.arc"
    arc.write_bytes(b"filedesc://in.arc 0.0.0.0 20240101000000 text/plain 9\n1 0 test\n\n")
    result = run("filter", "--keep-revisits", str(arc), str(tmp_path / "o"))
    assert result.exit_code == 2 and "ARC archive cannot hold" in result.stderr


def test_without_warcio_the_error_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "in.warc.gz"
    write_archive(archive, compress=True)
    monkeypatch.setitem(sys.modules, "warcio.archiveiterator", None)
    result = run("import", "--db", f"sqlite:///{tmp_path / 'm.db'}", "--workers", "0", str(archive))
    assert result.exit_code == 1
    assert "needs warcio: pip install '/path/to/simhash-index[warc]'" in result.stderr


def arc_record(url: str, body: str, kind: str = "text/html") -> bytes:
    block = f"HTTP/1.0 200 OK\r\nContent-Type: {kind}\r\n\r\n".encode() + body.encode()
    return f"{url} 127.0.0.1 20240101000000 {kind} {len(block)}\n".encode() + block + b"\n"


def test_an_arc_archive(tmp_path: Path) -> None:
    fields = b"1 0 test\nURL IP-address Archive-date Content-type Archive-length\n"
    article = english_article(11)
    kept = arc_record("http://a.example/1", page("Story", article))
    copy = arc_record("http://b.example/2", page("Story", article, nav=3))
    image = arc_record("http://a.example/x.png", "PNG", "image/png")
    head = f"filedesc://in.arc 0.0.0.0 20240101000000 text/plain {len(fields)}\n".encode() + fields + b"\n"
    archive, out = tmp_path / "in.arc", tmp_path / "out.arc"
    archive.write_bytes(head + kept + copy + image)
    summary = ok("import", "--db", f"sqlite:///{tmp_path / 'i.db'}", "--workers", "0", str(archive))
    assert summary == "kept 1, dropped 1, skipped 0 (no text); records not pages: 1 warcinfo, 1 response not HTML\n"
    ok("filter", "--db", f"sqlite:///{tmp_path / 'f.db'}", "--workers", "0", str(archive), str(out))
    assert out.read_bytes() == head + kept + image


def write_revisited(path: Path) -> dict[str, str]:
    """/a, and its near copy /b with a crawler's two revisits of it: one naming /b's response by
    record id (with a request of its own), one by target URI and date only. The record ids."""
    article = english_article(21)
    ids = {}
    with path.open("wb") as stream:
        writer = WARCWriter(stream, gzip=True)
        for url, body in (
            ("https://a.example/a", page("A", article)),
            ("https://a.example/b", page("A", article, nav=7)),
        ):
            response = html_response(writer, url, body)
            writer.write_record(response)
            ids[url] = response.rec_headers.get_header("WARC-Record-ID")
            date = response.rec_headers.get_header("WARC-Date")
        request = writer.create_warc_record(
            "https://a.example/b", "request", http_headers=StatusAndHeaders("GET /b HTTP/1.1", [], is_http_request=True)
        )
        for number, refers in enumerate(({"WARC-Refers-To": ids["https://a.example/b"]}, {})):
            http = StatusAndHeaders("304 Not Modified", [], protocol="HTTP/1.1")
            headers = {
                "WARC-Profile": "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
                "WARC-Refers-To-Target-URI": "https://a.example/b",
                "WARC-Refers-To-Date": date,
                **refers,
            }
            revisit = writer.create_warc_record(
                "https://a.example/b", "revisit", http_headers=http, warc_headers_dict=headers
            )
            if number == 0:
                revisit.rec_headers.add_header("WARC-Concurrent-To", request.rec_headers.get_header("WARC-Record-ID"))
                writer.write_record(request)
            writer.write_record(revisit)
            ids[f"revisit {number}"] = revisit.rec_headers.get_header("WARC-Record-ID")
    return ids


def test_a_crawlers_revisit_of_a_dropped_response_goes_with_it(tmp_path: Path) -> None:
    """Issue 50, item 8: the revisits of /b, whose response is dropped as a copy of /a, are left out
    with it (and the request of one), or with --keep-revisits point at /a as its revisit does."""
    archive = tmp_path / "in.warc.gz"
    ids = write_revisited(archive)
    out = tmp_path / "out.warc.gz"
    summary = ok("filter", "--db", f"sqlite:///{tmp_path / 'f.db'}", "--workers", "0", str(archive), str(out))
    assert [header(r, "WARC-Record-ID") for _, _, r in records(out)] == [ids["https://a.example/a"]]
    size = archive.stat().st_size
    assert summary.startswith(
        f"read 5 records ({size} bytes), 1 duplicate pages and 2 revisit records of them; wrote 1"
    )
    revisited = tmp_path / "revisits.warc.gz"
    db = f"sqlite:///{tmp_path / 'r.db'}"
    summary = ok("filter", "--db", db, "--workers", "0", "--keep-revisits", str(archive), str(revisited))
    after = [r for _, _, r in records(revisited)]
    assert [r.rec_type for r in after] == ["response", "revisit", "request", "revisit", "revisit"]
    for revisit in (after[1], after[3], after[4]):
        assert header(revisit, "WARC-Profile") == "urn:simhash-index:revisit:near-duplicate"
        assert header(revisit, "WARC-Refers-To") == ids["https://a.example/a"]
        assert header(revisit, "WARC-Refers-To-Target-URI") == "https://a.example/a"
    assert header(after[3], "WARC-Concurrent-To") == header(after[2], "WARC-Record-ID")  # its request, kept
    assert "wrote 5 records (3 revisits)" in summary
