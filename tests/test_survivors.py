"""`--prefer` on `import` and `filter`: three weekly captures of the same pages in three archives,
with distinct dates, decided together; OUT read back with warcio holds one response per page,
the one the policy prefers, and with --keep-revisits a revisit for every other capture, pointing
at a response that is in OUT."""

from __future__ import annotations

import io
import json
import random
import resource
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from archives import html_response, request_record
from commands import ok, run
from sites import dated_page, english_article, page
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from simhash_index import SimhashIndex
from simhash_index.fingerprinting.fingerprinter import DEFAULT
from simhash_index.index.records import Match
from simhash_index.runs import Dropped, Fates, Kept, Page, Skipped
from simhash_index.runs.survivors import SameUrl, copy_match

WEEKS = {"w1": "2024-01-01T10:00:00Z", "w2": "2024-01-08T10:00:00Z", "w3": "2024-01-15T10:00:00Z"}
A, B, C = "https://news.example/a", "https://news.example/b", "https://news.example/c"
D, MIRROR, E = "https://news.example/d", "https://mirror.example/d", "https://news.example/e"
ORDER = ("w2", "w3", "w1")  # the inputs as given: not in date order
# each page's surviving capture (URL, week) by policy
EXPECTED = {
    "first": {A: "w2", B: "w2", C: "w2", D: "w3", E: "w2"},  # first read (w2 is given first; D before MIRROR)
    "longest": {A: "w1", B: "w3", C: "w1", MIRROR: "w1", E: "w2"},  # most words; MIRROR supersedes D
    # A: WARC-Date; B: its own date (w1 says the latest); C: own dates tie, so WARC-Date
    "newest": {A: "w3", B: "w1", C: "w3", D: "w3", E: "w2"},
}


def extra(week: str, count: int) -> list[str]:
    """A line of the week's: `count` short notes, fewer new words than make a capture a page of
    its own (SIMHASH_ADDED_WORDS), so that the captures are copies of each other."""
    return [" ".join(f"Note {week} {n}." for n in range(count))]


def captures() -> dict[str, dict[str, str]]:
    """{week: {url: html}}: A, B and C in every week, D in w3, its longer copy MIRROR in w1, E in w2."""
    a, b, c, d = (english_article(seed, paragraphs=8, sentences=8) for seed in (40, 41, 42, 43))
    own_b = {"w1": "2024-03-01", "w2": "2024-02-01", "w3": "2024-01-01"}  # against the capture dates
    longer = {A: {"w1": 3, "w2": 1, "w3": 2}, B: {"w1": 1, "w2": 2, "w3": 3}, C: {"w1": 3, "w2": 2, "w3": 1}}
    weeks: dict[str, dict[str, str]] = {}
    for week in WEEKS:
        weeks[week] = {
            A: page("A", a + extra(week, longer[A][week]), nav=0),
            B: dated_page("B", b + extra(week, longer[B][week]), own_b[week], nav=0),
            C: dated_page("C", c + extra(week, longer[C][week]), "2023-12-01", nav=0),
        }
    weeks["w3"][D] = page("D", d, nav=0)
    weeks["w1"][MIRROR] = page("D", [*d, "The mirror's own short note, a line longer."], nav=0)
    weeks["w2"][E] = page("E", english_article(44, paragraphs=8, sentences=8), nav=0)
    return weeks


def write_week(path: Path, week: str, pages: dict[str, str], *, padding: int = 0) -> None:
    """An archive of one week's captures: a warcinfo, then a request and a response for each page
    (WARC-Date the week's), and with `padding` a resource record that many bytes long."""
    with path.open("wb") as stream:
        writer = WARCWriter(stream, gzip=True)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "test"}))
        for url, html in pages.items():
            request = request_record(writer, url)
            request.rec_headers.replace_header("WARC-Date", WEEKS[week])
            response = html_response(writer, url, html)
            response.rec_headers.replace_header("WARC-Date", WEEKS[week])
            response.rec_headers.add_header("WARC-Concurrent-To", request.rec_headers.get_header("WARC-Record-ID"))
            writer.write_record(request)
            writer.write_record(response)
        if padding:
            blob = random.Random(padding).randbytes(padding)  # incompressible
            writer.write_record(
                writer.create_warc_record(
                    "https://news.example/video", "resource", payload=io.BytesIO(blob), length=len(blob)
                )
            )


@pytest.fixture
def weeks(tmp_path: Path) -> list[Path]:
    """The three archives, in ORDER."""
    paths = {}
    for week, pages in captures().items():
        paths[week] = tmp_path / f"{week}.warc.gz"
        write_week(paths[week], week, pages)
    return [paths[week] for week in ORDER]


def read(path: Path) -> list[object]:
    found = []
    with path.open("rb") as stream:
        for record in ArchiveIterator(stream):
            record.content_stream().read()
            found.append(record)
    return found


def header(record: object, name: str) -> str | None:
    return record.rec_headers.get_header(name)  # type: ignore[attr-defined]


def week_of(record: object) -> str:
    return next(week for week, date in WEEKS.items() if date == header(record, "WARC-Date"))


@pytest.mark.parametrize("prefer", list(EXPECTED))
def test_filter_keeps_the_preferred_capture_of_each_page(weeks: list[Path], tmp_path: Path, prefer: str) -> None:
    out = tmp_path / "out.warc.gz"
    db = f"sqlite:///{tmp_path / 'f.db'}"
    ok("filter", "--db", db, "--workers", "0", "--prefer", prefer, *map(str, weeks), str(out))
    written = read(out)
    responses = [r for r in written if r.rec_type == "response"]
    assert {header(r, "WARC-Target-URI"): week_of(r) for r in responses} == EXPECTED[prefer]
    assert len(responses) == len(EXPECTED[prefer])  # one response a page
    kept_ids = {header(r, "WARC-Record-ID") for r in responses}
    requests = [r for r in written if r.rec_type == "request"]
    assert {header(r, "WARC-Record-ID") for r in requests} == {header(r, "WARC-Concurrent-To") for r in responses}
    assert [r.rec_type for r in written].count("warcinfo") == 3
    # in input order: the archives one after another
    assert [week_of(r) for r in written if r.rec_type != "warcinfo"] == sorted(
        (week_of(r) for r in written if r.rec_type != "warcinfo"), key=ORDER.index
    )
    assert kept_ids


@pytest.mark.parametrize("prefer", list(EXPECTED))
def test_revisits_point_at_the_surviving_capture(weeks: list[Path], tmp_path: Path, prefer: str) -> None:
    out = tmp_path / "out.warc.gz"
    db = f"sqlite:///{tmp_path / 'r.db'}"
    summary = ok(
        "filter", "--db", db, "--workers", "0", "--prefer", prefer, "--keep-revisits", *map(str, weeks), str(out)
    )
    written = read(out)
    responses = {header(r, "WARC-Record-ID"): r for r in written if r.rec_type == "response"}
    revisits = [r for r in written if r.rec_type == "revisit"]
    captured = sum(len(pages) for pages in captures().values())
    assert len(responses) + len(revisits) == captured and f"({len(revisits)} revisits)" in summary
    assert {header(r, "WARC-Target-URI"): week_of(r) for r in responses.values()} == EXPECTED[prefer]
    for record in revisits:
        kept = responses[header(record, "WARC-Refers-To")]  # a response in OUT
        assert header(record, "WARC-Refers-To-Target-URI") == header(kept, "WARC-Target-URI")
        assert header(record, "WARC-Refers-To-Date") == header(kept, "WARC-Date")
        url = header(record, "WARC-Target-URI")
        assert header(kept, "WARC-Target-URI") == ({D: MIRROR} if prefer == "longest" else {MIRROR: D}).get(url, url)


def test_import_several_files_decides_as_filter(weeks: list[Path], tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'i.db'}"
    listing = run("import", "--db", db, "--workers", "0", "--prefer", "newest", "--dry-run", *map(str, weeks))
    assert listing.exit_code == 0, listing.output
    summary = ok("import", "--db", db, "--workers", "0", "--prefer", "newest", *map(str, weeks))
    assert listing.stderr == f"dry run, nothing written: {summary}"
    rows = [json.loads(line) for line in listing.stdout.splitlines()]
    superseding = [(row["url"], row["supersedes"]) for row in rows if row["supersedes"] is not None]
    assert superseding == [(A, A), (C, C), (B, B)]  # w3's A and C, then w1's B (its own date the latest)
    assert [row["outcome"] for row in rows if row["url"] == MIRROR] == ["dropped"]  # older than D
    assert "superseded a stored copy (--prefer newest)" in summary
    with SimhashIndex(db) as index:
        assert sorted(p for p in (A, B, C, D, MIRROR, E) if index.get(p) is not None) == sorted([A, B, C, D, E])
        assert index.duplicate(MIRROR).duplicate_of == D  # type: ignore[union-attr]


def test_a_dry_run_supersedes_as_the_import_would(weeks: list[Path], tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'd.db'}"
    _, w3, w1 = weeks
    ok("import", "--db", db, "--workers", "0", str(w1))  # MIRROR (w1) stored, with its capture date
    dry = run("import", "--db", db, "--workers", "0", "--prefer", "newest", "--dry-run", str(w3))
    rows = {row["url"]: row for row in map(json.loads, dry.stdout.splitlines())}
    assert rows[D]["outcome"] == "kept" and rows[D]["supersedes"] == MIRROR  # D (w3) is newer
    assert rows[A]["outcome"] == "kept" and rows[A]["supersedes"] is None  # its own row, stored before the run
    summary = ok("import", "--db", db, "--workers", "0", "--prefer", "newest", str(w3))
    assert dry.stderr == f"dry run, nothing written: {summary}"
    with SimhashIndex(db) as index:
        assert index.duplicate(MIRROR).superseded == "newer"  # type: ignore[union-attr]
    older = run("import", "--db", db, "--workers", "0", "--prefer", "newest", "--dry-run", str(w1))
    rows = {row["url"]: row for row in map(json.loads, older.stdout.splitlines())}
    assert rows[MIRROR]["outcome"] == "dropped" and rows[MIRROR]["duplicate_of"] == D  # older than D's capture
    longest = run("import", "--db", db, "--workers", "0", "--prefer", "longest", "--dry-run", str(w1))
    rows = {row["url"]: row for row in map(json.loads, longest.stdout.splitlines())}
    assert rows[MIRROR]["outcome"] == "kept" and rows[MIRROR]["supersedes"] == D  # longer than D


@pytest.mark.parametrize("prefer", list(EXPECTED))
def test_a_dry_run_lists_what_the_real_run_does(weeks: list[Path], tmp_path: Path, prefer: str) -> None:
    """Issue 51, item 1: the dry run's counts are the real run's, and each row's outcome is what the
    index holds after the real run: a page kept then superseded (a later capture of its URL, or a
    preferred copy read after it) is listed as superseded, a page dropped as a copy of the page that
    survived it."""
    db = f"sqlite:///{tmp_path / 'same.db'}"
    options = ("--db", db, "--workers", "0", "--prefer", prefer, *map(str, weeks))
    dry = run("import", "--dry-run", *options)
    assert dry.exit_code == 0, dry.output
    summary = ok("import", *options)
    assert dry.stderr == f"dry run, nothing written: {summary}"
    rows = [json.loads(line) for line in dry.stdout.splitlines()]
    outcomes = Counter(row["outcome"] for row in rows)
    assert summary.startswith(f"kept {outcomes['kept']}, dropped {outcomes['dropped']}")
    assert (
        f"superseded {outcomes['superseded']}," in summary if outcomes["superseded"] else "superseded " not in summary
    )
    assert (outcomes["superseded"] > 0) is (prefer != "first") and outcomes["kept"] == len(EXPECTED[prefer])
    kept = [row["url"] for row in rows if row["outcome"] == "kept"]
    last = {row["url"]: row for row in rows}
    with SimhashIndex(db) as index:
        assert sorted(kept) == sorted(url for url in last if index.get(url) is not None)  # one kept row a page stored
        for url, row in last.items():
            if url not in kept:
                assert index.duplicate(url).duplicate_of == row["duplicate_of"], row  # type: ignore[union-attr]


def test_archives_of_different_kinds_are_refused(weeks: list[Path], tmp_path: Path) -> None:
    plain = tmp_path / "plain.warc"
    with plain.open("wb") as stream:
        writer = WARCWriter(stream, gzip=False)
        writer.write_record(writer.create_warcinfo_record("plain.warc", {"software": "test"}))
    result = run("filter", "--db", f"sqlite:///{tmp_path / 'k.db'}", str(weeks[0]), str(plain), str(tmp_path / "o"))
    assert result.exit_code == 2 and "give archives of one kind" in result.output


def test_a_failure_while_writing_leaves_no_out(tmp_path: Path) -> None:
    """OUT grows past the file size limit half way: the write fails (EFBIG), and neither OUT nor
    its temporary file is left behind."""
    week = tmp_path / "w1.warc.gz"
    write_week(week, "w1", captures()["w1"], padding=4 << 20)
    out = tmp_path / "out.warc.gz"
    limit = 2 << 20

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        [sys.executable, "-c", "from simhash_index.cli import main; main()", "filter", "--db",
         f"sqlite:///{tmp_path / 'c.db'}", "--workers", "0", "--prefer", "newest", str(week), str(out)],
        preexec_fn=limited, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "File too large" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if "out" in p.name) == []


def test_same_url_copies_follow_the_policy() -> None:
    """SameUrl against a stand-in for the index's batch call, which records what reached it."""
    first, second = (
        DEFAULT.signature(" ".join(english_article(50))),
        DEFAULT.signature(" ".join(english_article(50) + english_article(51, paragraphs=1))),
    )
    assert first is not None and second is not None
    reached: list[list[str]] = []

    def index(batch: object) -> list[Match | None]:
        reached.append([key for key, _, _ in batch])  # type: ignore[attr-defined]
        return [None] * len(reached[-1])

    same = SameUrl("longest")
    answers = same.decide([("u", first, None), ("v", first, None), ("u", second, None), ("u", first, None)], index)
    assert answers[0] is None and answers[1] is None
    assert answers[2] is not None and answers[2].superseded == "longer"  # replaces its copy, in place
    assert answers[3] == copy_match("u", first, second)  # shorter than the copy kept: dropped
    assert reached == [["u", "v"], ["u"]]  # the longer copy reached the index, the shorter did not
    assert SameUrl("first").decide([("u", first, None), ("u", second, None)], index)[1] is not None


def test_fates_follow_supersession_to_the_end() -> None:
    pages = [Page(f"line {n}", url, 0) for n, url in enumerate(["a", "b", "c", "a", "x", "d", "c"])]
    outcomes = [
        Kept(pages[0]),
        Dropped(pages[1], Match("a", None, 2)),
        Kept(pages[2], Match("a", None, 1, superseded="longer")),
        Kept(pages[3]),  # stored again, apart
        Dropped(pages[4], Match("old", None, 0, exact=True)),
        Skipped(pages[5]),
        Kept(pages[6], Match("c", None, 0, superseded="longer")),
    ]
    fates = Fates()
    for outcome in outcomes:
        if isinstance(outcome, (Kept, Dropped)):
            fates.add(outcome)
    copies = fates.copies()
    assert set(copies) == {pages[0], pages[1], pages[2], pages[4]}
    assert (copies[pages[0]].duplicate_of, copies[pages[0]].survivor, copies[pages[0]].evidence.distance) == (
        "c",
        pages[6],
        1,
    )
    assert (copies[pages[1]].duplicate_of, copies[pages[1]].survivor, copies[pages[1]].evidence.distance) == (
        "c",
        pages[6],
        2,
    )
    assert (copies[pages[2]].duplicate_of, copies[pages[2]].survivor) == ("c", pages[6])
    assert (copies[pages[4]].duplicate_of, copies[pages[4]].survivor, copies[pages[4]].evidence.exact) == (
        "old",
        None,
        True,
    )


def test_a_corpus_lines_last_modified_decides_newest(tmp_path: Path) -> None:
    text = " ".join(english_article(52))
    corpus = tmp_path / "corpus.jsonl"
    lines = [
        {"url": "https://example.com/new", "text": text, "last_modified": "Mon, 08 Jan 2024 10:00:00 GMT"},
        {"url": "https://example.com/old", "text": text, "last_modified": "Mon, 01 Jan 2024 10:00:00 GMT"},
        {"url": "https://example.com/newer", "text": text, "last_modified": "Mon, 15 Jan 2024 10:00:00 GMT"},
    ]
    corpus.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    result = run("import", "--db", f"sqlite:///{tmp_path / 'j.db'}", "--prefer", "newest", "--dry-run", str(corpus))
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(row["outcome"], row["duplicate_of"], row["supersedes"]) for row in rows] == [
        ("superseded", "https://example.com/newer", None),  # kept, until the newer copy came
        ("dropped", "https://example.com/newer", None),  # older than the copy stored; its log follows it
        ("kept", None, "https://example.com/new"),
    ]


def test_an_archive_given_twice_is_written_once(weeks: list[Path], tmp_path: Path) -> None:
    w2 = weeks[0]
    out = tmp_path / "twice.warc.gz"
    ok("filter", "--db", f"sqlite:///{tmp_path / 't.db'}", "--workers", "0", str(w2), str(w2), str(out))
    written = [r for r in read(out) if r.rec_type != "warcinfo"]
    assert [header(r, "WARC-Record-ID") for r in written] == [
        header(r, "WARC-Record-ID") for r in read(w2) if r.rec_type != "warcinfo"
    ]  # the second reading's captures are copies of the first's
