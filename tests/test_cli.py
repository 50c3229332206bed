"""The command line, through click's CliRunner, on real SQLite and PostgreSQL databases.

Every database is filled through the library; expected outputs are built from
the data put in, never pasted from the tool's output.
"""

from __future__ import annotations

import csv
import doctest
import io
import itertools
import json
import os
import sqlite3
import subprocess
import sys
import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy
from commands import ok, run
from conftest import without_layout

from simhash_index import IndexNotFoundError, SimhashIndex, urls
from simhash_index.cli import formats, reports
from simhash_index.fingerprinting.fingerprinter import DEFAULT, Fingerprinter
from simhash_index.fingerprinting.simhash import to_hex
from simhash_index.fingerprinting.sketch import estimate_jaccard
from simhash_index.index import records
from simhash_index.index.sql.schema import SCHEMA_VERSION

A = 0x0123456789ABCDEF
B = 0xFEDCBA9876543210
C = 0x00FF00FF00FF00FF
A_COPY = A ^ (0b11 << 20)  # stored without a check, 2 bits from A in another block
SHORT_TEXT_HASH = 12345

# (url, stored fingerprint) in the order stored; /short has only a text hash
STORED = [
    ("https://example.com/a", A),
    ("https://news.example.org/b", B),
    ("https://example.com/c", C),
    ("https://example.com/short", None),
    ("https://example.com/a-copy", A_COPY),
]
# (url, fingerprint, duplicate_of, distance, exact) in the order dropped
DROPPED = [
    ("https://www.example.com/a?utm=1", A ^ 0b1, "https://example.com/a", 1, False),
    ("https://mirror.example.net/a", A ^ 0b111, "https://example.com/a", 3, False),
    ("https://news.example.org/b/print", B, "https://news.example.org/b", 0, False),
    ("https://example.com/short2", None, "https://example.com/short", 0, True),
]
DUPLICATE_COLUMNS = ("url", "duplicate_of", "distance", "similarity", "added", "exact", "radius", "seen_at")


def _check_and_add(index: SimhashIndex, url: str, fingerprint: int | None):
    if fingerprint is None:
        return index.check_and_add(url, None, text_hash=SHORT_TEXT_HASH)
    return index.check_and_add(url, fingerprint)


FILLED_RADIUS = 3  # the search radius the filled index decides at


@pytest.fixture
def filled(db_url: str) -> tuple[str, dict[str, datetime]]:
    """A database holding STORED and DROPPED; returns its URL and each dropped page's seen_at."""
    with SimhashIndex(db_url, max_distance=FILLED_RADIUS) as index:
        for url, fingerprint in STORED[:-1]:
            assert _check_and_add(index, url, fingerprint) is None
        index.add(*STORED[-1])
        for url, fingerprint, duplicate_of, distance, exact in DROPPED:
            match = _check_and_add(index, url, fingerprint)
            assert (match.key, match.distance, match.exact) == (duplicate_of, distance, exact)
        seen = {d.key: d.seen_at for d in index.duplicates()}
    return db_url, seen


# -- expected outputs, built from data --------------------------------------------


def table(columns: tuple[str, ...], rows: list[tuple], right: tuple[str, ...] = ()) -> str:
    """A table as the CLI prints it off a terminal: a header, a rule, columns three spaces apart."""
    cells = [[str(value) for value in row] for row in rows]
    widths = [max([len(name)] + [len(row[i]) for row in cells]) for i, name in enumerate(columns)]

    def line(values: list[str] | tuple[str, ...]) -> str:
        padded = (v.rjust(w) if c in right else v.ljust(w) for v, w, c in zip(values, widths, columns))
        return "   ".join(padded).rstrip() + "\n"

    return line(columns) + "─" * (sum(widths) + 3 * (len(widths) - 1)) + "\n" + "".join(line(row) for row in cells)


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat()


def second(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(sep=" ", timespec="seconds")


def as_json(rows: list[dict]) -> str:
    return "[\n" + ",\n".join("  " + json.dumps(row) for row in rows) + "\n]\n" if rows else "[]\n"


def as_jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def as_csv(columns: tuple[str, ...], rows: list[tuple]) -> str:
    return "\r\n".join([",".join(columns)] + [",".join(str(v) for v in row) for row in rows]) + "\r\n"


def dropped_rows(seen: dict[str, datetime], keep=lambda row: True) -> list[tuple]:
    return [(url, of, d, exact, seen[url]) for url, _, of, d, exact in DROPPED if keep((url, of, d, exact, seen[url]))]


def expected_duplicates(fmt: str, rows: list[tuple]) -> str:
    r = FILLED_RADIUS
    if fmt == "table":
        shown = [(u, of, d, "", 0 if e else "", "yes" if e else "no", r, second(s)) for u, of, d, e, s in rows]
        return table(DUPLICATE_COLUMNS, shown, right=("distance", "similarity", "added", "radius"))
    if fmt == "csv":
        csv_rows = [(u, of, d, "", 0 if e else "", str(e).lower(), r, iso(s)) for u, of, d, e, s in rows]
        return as_csv(DUPLICATE_COLUMNS, csv_rows)
    # these pages have no sketches: no similarity, and what a near copy adds is not known (an exact copy adds 0)
    objects = [
        dict(zip(DUPLICATE_COLUMNS, (u, of, d, None, 0 if e else None, e, r, iso(s)))) for u, of, d, e, s in rows
    ]
    return as_json(objects) if fmt == "json" else as_jsonl(objects)


# -- listings ---------------------------------------------------------------------


@pytest.mark.parametrize("fmt", formats.FORMATS)
def test_duplicates(filled, fmt: str) -> None:
    db, seen = filled
    assert ok("duplicates", "--db", db, "--format", fmt) == expected_duplicates(fmt, dropped_rows(seen))


def test_duplicates_filters(filled) -> None:
    db, seen = filled
    times = sorted(seen.values())

    def listed(*options: str) -> str:
        return ok("duplicates", "--db", db, "--format", "jsonl", *options)

    def expect(keep) -> str:
        return expected_duplicates("jsonl", dropped_rows(seen, keep))

    assert listed("--host", "example.com") == expect(
        lambda r: r[0].startswith(("https://example.com/", "https://www.example.com/"))
    )
    assert listed("--host", "WWW.Example.COM.") == expect(lambda r: r[0].startswith("https://www.example.com/"))
    assert listed("--host", "ample.com") == ""
    assert listed("--max-distance", "0") == expect(lambda r: r[2] == 0)
    assert listed("--since", iso(times[2])) == expect(lambda r: r[4] >= times[2])
    assert listed("--since", "2000-01-01") == expect(lambda r: True)
    tomorrow = (datetime.now(timezone.utc) + timedelta(days=1)).date().isoformat()
    assert listed("--since", tomorrow) == ""
    assert listed("--limit", "2") == expected_duplicates("jsonl", dropped_rows(seen)[:2])
    assert listed("--host", "example.com", "--limit", "1", "--max-distance", "2") == expect(
        lambda r: r[0] == "https://www.example.com/a?utm=1"
    )


def test_duplicates_piped_default_is_jsonl(filled) -> None:
    db, seen = filled
    assert ok("duplicates", "--db", db) == expected_duplicates("jsonl", dropped_rows(seen))


def test_database_from_environment(filled) -> None:
    db, seen = filled
    assert ok("duplicates", env={"SIMHASH_DATABASE_URL": db}) == expected_duplicates("jsonl", dropped_rows(seen))


SQL_INDEX = {"schema_version": SCHEMA_VERSION, "layout": "blocks", "block_assignment": "contiguous"}
INDEX_OF = {  # what stats says of a new index on each backend
    "sqlite": {"backend": "sqlite"} | SQL_INDEX,
    "postgresql": {"backend": "postgresql"} | SQL_INDEX,
    "redis": {"backend": "redis", "schema_version": "3"},
}


def backend_of(url: str) -> str:
    return url.split(":")[0].split("+")[0]


def test_stats(filled) -> None:
    db, _ = filled
    hosts = ["example.com", "mirror.example.net", "news.example.org", "www.example.com"]  # one dropped page each
    distances = {0: 2, 1: 1, 2: 0, 3: 1}
    expected = {
        "documents": len(STORED),
        "duplicates": len(DROPPED),
        "exact_duplicates": 1,
        "near_duplicates": 3,
        "distances": [{"distance": d, "duplicates": n} for d, n in distances.items()],
        "top_hosts": [{"host": h, "duplicates": 1} for h in hosts],
        "scheme": DEFAULT.scheme,
        "index": INDEX_OF[backend_of(db)],
    }
    assert ok("stats", "--db", db, "--format", "json") == json.dumps(expected, indent=2) + "\n"
    assert ok("stats", "--db", db) == json.dumps(expected, indent=2) + "\n"  # json when piped
    assert ok("--db", db, "stats") == json.dumps(expected, indent=2) + "\n"  # --db before the command
    top2 = json.loads(ok("stats", "--db", db, "--format", "json", "--top", "2"))["top_hosts"]
    assert top2 == expected["top_hosts"][:2]

    bars = {0: "█" * 40, 1: "█" * 20, 2: "", 3: "█" * 20}  # 40 for the largest count
    summary = "pages stored  5\nduplicates    4\nexact         1\nnear          3\n"
    index_line = {
        "sqlite": f"sqlite, schema {SCHEMA_VERSION}, blocks layout (contiguous bits)",
        "redis": "redis, schema 3",
    }
    index_line["postgresql"] = index_line["sqlite"].replace("sqlite", "postgresql")
    expected_table = (
        f"index: {index_line[backend_of(db)]}\n\n"
        + summary
        + "\n"
        + table(
            ("distance", "duplicates", "histogram"),
            [(d, n, bars[d]) for d, n in distances.items()],
            ("distance", "duplicates"),
        )
        + "\n"
        + table(("host", "duplicates"), [(h, 1) for h in hosts], ("duplicates",))
    )
    assert ok("stats", "--db", db, "--format", "table") == expected_table


@pytest.mark.parametrize("fmt", formats.FORMATS)
def test_clusters(filled, fmt: str) -> None:
    db, seen = filled
    # largest first; equal sizes in the order the pages were stored
    clusters = [
        ("https://example.com/a", [DROPPED[0], DROPPED[1]]),
        ("https://news.example.org/b", [DROPPED[2]]),
        ("https://example.com/short", [DROPPED[3]]),
    ]
    if fmt in ("json", "jsonl"):
        objects = [
            {
                "url": url,
                "count": len(members),
                "duplicates": [
                    {"url": m[0], "distance": m[3], "similarity": None, "exact": m[4], "seen_at": iso(seen[m[0]])}
                    for m in members
                ],
            }
            for url, members in clusters
        ]
        expected = as_json(objects) if fmt == "json" else as_jsonl(objects)
    elif fmt == "csv":
        rows = [
            (url, len(members), m[0], m[3], "", str(m[4]).lower(), iso(seen[m[0]]))
            for url, members in clusters
            for m in members
        ]
        expected = as_csv(("url", "count", "duplicate", "distance", "similarity", "exact", "seen_at"), rows)
    else:
        rows = [
            (url if i == 0 else "", len(members) if i == 0 else "", m[0], m[3], "")
            for url, members in clusters
            for i, m in enumerate(members)
        ]
        columns = ("url", "count", "duplicate", "distance", "similarity")
        expected = table(columns, rows, ("count", "distance", "similarity"))
    assert ok("clusters", "--db", db, "--format", fmt) == expected
    assert json.loads(ok("clusters", "--db", db, "--format", "json", "--limit", "1"))[0]["url"] == clusters[0][0]


@pytest.mark.parametrize("fmt", formats.FORMATS)
def test_query_by_simhash(filled, fmt: str) -> None:
    db, _ = filled
    near = [
        ("https://example.com/a", to_hex(A), 1, 0.984, ""),  # 63 of 64 bits alike
        ("https://example.com/a-copy", to_hex(A_COPY), 3, 0.953, ""),
    ]
    columns = ("url", "simhash", "distance", "bit_similarity", "similarity")
    objects = [dict(zip(columns, (*row[:4], None))) for row in near]  # a --simhash has no sketch
    expected = {
        "table": table(columns, near, ("distance", "bit_similarity", "similarity")),
        "json": as_json(objects),
        "jsonl": as_jsonl(objects),
        "csv": as_csv(columns, near),
    }[fmt]
    assert ok("query", "--db", db, "--simhash", to_hex(A ^ 1), "--format", fmt) == expected
    assert ok("query", "--db", db, "--simhash", "0x" + to_hex(A ^ 1), "--format", fmt) == expected


ALIKE = {d: {"bit_similarity": round(1 - d / 64, 3)} for d in range(4)}  # 1 - distance / 64, shown to 3 places


def test_query_by_url(filled) -> None:
    db, _ = filled
    # the page itself is left out
    assert ok("query", "--db", db, "--url", "https://example.com/a") == as_jsonl(
        [
            {
                "url": "https://example.com/a-copy",
                "simhash": to_hex(A_COPY),
                "distance": 2,
                **ALIKE[2],
                "similarity": None,
            }
        ]
    )
    nothing = run("query", "--db", db, "--url", "https://example.com/a", "--max-distance", "1")
    assert (nothing.exit_code, nothing.stdout) == (0, "")
    assert nothing.stderr == "no other stored page within 1 bits of https://example.com/a\n"
    # a dropped page: its logged fingerprint
    assert ok("query", "--db", db, "--url", "https://www.example.com/a?utm=1") == as_jsonl(
        [
            {"url": "https://example.com/a", "simhash": to_hex(A), "distance": 1, **ALIKE[1], "similarity": None},
            {
                "url": "https://example.com/a-copy",
                "simhash": to_hex(A_COPY),
                "distance": 3,
                **ALIKE[3],
                "similarity": None,
            },
        ]
    )
    result = run("query", "--db", db, "--url", "https://example.com/never-seen")
    assert result.exit_code == 1
    assert "is neither stored nor logged as a duplicate" in result.stderr


# -- files: fingerprint, compare, query --text/--html -----------------------------

WORDS = [f"word{i:03d}" for i in range(41)]
# 41 words of weight 3: every bit's vote is odd, so one more word of weight 1 cannot flip it
TEXT = " ".join(word for word in WORDS for _ in range(3))
TEXT_PLUS = TEXT + " extra"
HTML = f"<!DOCTYPE html><html><head><title>t</title></head><body><article><p>{TEXT}</p></article></body></html>"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text(TEXT, encoding="utf-8")
    (tmp_path / "b.txt").write_text(TEXT_PLUS, encoding="utf-8")
    (tmp_path / "page.html").write_text(HTML, encoding="utf-8")
    (tmp_path / "page.dat").write_text(HTML, encoding="utf-8")  # HTML found by its content
    (tmp_path / "empty.txt").write_text("... !!! ---\n", encoding="utf-8")
    return tmp_path


def test_fingerprint(files: Path) -> None:
    names = ["a.txt", "b.txt", "page.html", "page.dat"]
    texts = [TEXT, TEXT_PLUS, TEXT, TEXT]
    rows = [
        (str(files / n), to_hex(DEFAULT.fingerprint(t)), to_hex(DEFAULT.signature(t).text_hash))
        for n, t in zip(names, texts)
    ]
    columns = ("file", "simhash", "text_hash")
    paths = [str(files / n) for n in names]
    assert ok("fingerprint", *paths, "--format", "csv") == as_csv(columns, rows)
    assert ok("fingerprint", *paths, "--format", "table") == table(columns, rows)
    assert ok("fingerprint", *paths) == as_jsonl([dict(zip(columns, row)) for row in rows])
    assert ok("fingerprint", "-", input=TEXT) == as_jsonl([dict(zip(columns, ("-", *rows[0][1:])))])
    result = run("fingerprint", str(files / "a.txt"), str(files / "empty.txt"))
    assert result.exit_code == 1
    assert (
        result.stderr
        == f"Error: {files / 'empty.txt'}: no words to fingerprint (empty, or only punctuation and stop words)\n"
    )


def test_compare_files(files: Path) -> None:
    a, b = str(files / "a.txt"), str(files / "page.html")
    fp = to_hex(DEFAULT.fingerprint(TEXT))
    assert ok("compare", a, b, "--format", "json") == as_json(
        [{"a": a, "a_simhash": fp, "b": b, "b_simhash": fp, "distance": 0, "bit_similarity": 1.0, "similarity": 1.0}]
    )
    result = run("compare", a, str(files / "missing.txt"))
    assert result.exit_code == 2
    assert "is neither a file nor a URL" in result.stderr


def test_compare_urls(filled) -> None:
    db, _ = filled
    a, b = "https://example.com/a", "https://example.com/a-copy"
    assert ok("compare", "--db", db, a, b, "--format", "csv") == as_csv(
        ("a", "a_simhash", "b", "b_simhash", "distance", "bit_similarity", "similarity"),
        [(a, to_hex(A), b, to_hex(A_COPY), 2, 0.969, "")],
    )
    dropped = "https://mirror.example.net/a"  # dropped pages are compared by their logged fingerprints
    assert (
        json.loads(ok("compare", "--db", db, dropped, b, "--format", "json"))[0]["distance"]
        == (A ^ 0b111 ^ A_COPY).bit_count()
    )


def test_query_by_text_and_html(db_url: str, files: Path) -> None:
    with SimhashIndex(db_url) as index:
        index.check_and_add("https://example.com/text", DEFAULT.signature(TEXT))
    row = {
        "url": "https://example.com/text",
        "simhash": to_hex(DEFAULT.fingerprint(TEXT)),
        "distance": 0,
        "bit_similarity": 1.0,
    }
    plus = round(estimate_jaccard(DEFAULT.signature(TEXT_PLUS).sketch, DEFAULT.signature(TEXT).sketch), 3)
    assert plus < 1.0  # one more word: fewer shingles in common
    assert ok("query", "--db", db_url, "--text", str(files / "b.txt")) == as_jsonl([row | {"similarity": plus}])
    expected = as_jsonl([row | {"similarity": 1.0}])
    assert ok("query", "--db", db_url, "--html", str(files / "page.html")) == expected
    assert ok("query", "--db", db_url, "--html", "-", input=HTML) == expected
    assert ok("query", "--db", db_url, "--text", "-", input=TEXT) == expected


# -- import -----------------------------------------------------------------------

CORPUS = [
    {"url": "https://example.com/1", "text": TEXT},  # kept
    {"url": "https://example.com/2", "text": TEXT_PLUS},  # near-duplicate of 1 (distance 0)
    {"url": "https://example.com/3", "html": HTML},  # same main text as 1: exact duplicate
    {"url": "https://example.com/4", "text": "A short page."},  # kept, matched only exactly
    {"url": "https://example.com/5", "text": " ", "html": "<html><body></body></html>"},  # no text: skipped
    {"url": "https://example.com/6", "text": " ".join(f"other{i}" for i in range(100))},  # kept
]


def write_corpus(path: Path, pages: list[dict]) -> str:
    path.write_text("".join(json.dumps(page) + "\n" for page in pages) + "\n", encoding="utf-8")
    return str(path)


def dry_run(*args: str) -> tuple[list[dict], str]:
    """An import --dry-run: its listing (jsonl) and its counts (stderr)."""
    result = run("import", *args, "--dry-run")
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()], result.stderr


def test_import(db_url: str, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", CORPUS)
    listing, counts = dry_run("--db", db_url, corpus)
    assert counts == "dry run, nothing written: kept 3, dropped 2, skipped 1 (no text)\n"
    assert [(row["url"], row["outcome"], row.get("duplicate_of")) for row in listing] == [
        ("https://example.com/1", "kept", None),
        ("https://example.com/2", "dropped", "https://example.com/1"),
        ("https://example.com/3", "dropped", "https://example.com/1"),
        ("https://example.com/4", "kept", None),
        ("https://example.com/5", "skipped", None),
        ("https://example.com/6", "kept", None),
    ]
    assert [row["exact"] for row in listing[1:3]] == [False, True]
    assert 0.88 <= listing[1]["similarity"] <= 1.0 and listing[1]["distance"] <= 3
    with pytest.raises(IndexNotFoundError):
        SimhashIndex(db_url, create=False)
    assert ok("import", "--db", db_url, corpus) == "kept 3, dropped 2, skipped 1 (no text)\n"
    with SimhashIndex(db_url) as index:
        assert len(index) == 3
        assert [(d.key, d.duplicate_of, d.exact) for d in index.duplicates()] == [
            ("https://example.com/2", "https://example.com/1", False),
            ("https://example.com/3", "https://example.com/1", True),
        ]
    # again: stored pages are never duplicates of themselves, dropped ones are dropped again
    assert dry_run("--db", db_url, corpus) == (listing, counts)


@pytest.mark.parametrize(
    ("options", "layout", "block_columns"),
    [
        ((), {"layout": "blocks", "block_assignment": "contiguous"}, True),
        (("--block-assignment", "interleaved"), {"layout": "blocks", "block_assignment": "interleaved"}, True),
        (("--layout", "halves"), {"layout": "halves", "block_assignment": "contiguous"}, False),
    ],
)
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_import_chooses_a_new_indexs_layout(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    backend: str,
    options: tuple[str, ...],
    layout: dict[str, str],
    block_columns: bool,
) -> None:
    db = request.getfixturevalue(f"{backend}_url")
    corpus = write_corpus(tmp_path / "corpus.jsonl", CORPUS)
    assert ok("import", "--db", db, *options, corpus) == "kept 3, dropped 2, skipped 1 (no text)\n"
    shown = json.loads(ok("stats", "--db", db))["index"]
    assert {name: shown[name] for name in ("layout", "block_assignment")} == layout
    engine = sqlalchemy.create_engine(without_layout(db))
    try:
        columns = {column["name"] for column in sqlalchemy.inspect(engine).get_columns("simhash_documents")}
        with warnings.catch_warnings():  # the halves layout's expression indexes are not reflected
            warnings.simplefilter("ignore", sqlalchemy.exc.SAWarning)
            indexes = sqlalchemy.inspect(engine).get_indexes("simhash_documents")
        indexed = {index["column_names"][0] for index in indexes}
    finally:
        engine.dispose()
    blocks = {"block0", "block1", "block2", "block3"}
    if block_columns:
        assert blocks <= columns and blocks <= indexed  # each block column leads an index of its own
    else:
        assert blocks.isdisjoint(columns)
    other = "blocks" if layout["layout"] == "halves" else "halves"
    refused = run("import", "--db", db, "--layout", other, corpus)
    assert_one_line_error(refused, 2, f"is a {layout['layout']}", f"opened as a {other}", "open it without a layout")
    assert ok("import", "--db", db, corpus) == "kept 3, dropped 2, skipped 1 (no text)\n"  # opens as it is


SYLLABLES = ["".join(letters) for letters in itertools.product("bdfgk", "aeiou", "lmnr")]
PLAIN = " ".join(word for word in SYLLABLES for _ in range(2))  # words without digits, none a stop word


def test_word_weights_from_a_file(db_url: str, tmp_path: Path) -> None:
    weights = tmp_path / "weights.txt"
    weights.write_text("# heavier words\nbal 40\nden 25\n", encoding="utf-8")
    weighted = Fingerprinter(word_weights=weights)
    assert weighted.fingerprint(PLAIN) != DEFAULT.fingerprint(PLAIN)  # else the test shows nothing
    text, near_copy = tmp_path / "a.txt", tmp_path / "b.txt"
    text.write_text(PLAIN, encoding="utf-8")
    near_copy.write_text(PLAIN + " extra", encoding="utf-8")
    printed = json.loads(ok("fingerprint", "--word-weights", str(weights), str(text)))
    assert printed["simhash"] == to_hex(weighted.fingerprint(PLAIN))
    corpus = write_corpus(tmp_path / "corpus.jsonl", [{"url": "https://example.com/1", "text": PLAIN}])
    assert ok("import", "--db", db_url, "--word-weights", str(weights), corpus) == IMPORTED_ONE
    with SimhashIndex(db_url, scheme=weighted.scheme) as index:  # refused unless the import recorded it
        assert index.get("https://example.com/1").fingerprint == weighted.fingerprint(PLAIN)
    near = ok("query", "--db", db_url, "--text", str(near_copy), "--word-weights", str(weights))
    assert json.loads(near)["url"] == "https://example.com/1"
    for command in (
        ["import", corpus],
        ["query", "--text", str(text)],
        ["compare", str(text), "https://example.com/1"],
    ):
        refused = run(*command, "--db", db_url)  # without the index's weights: refused, not wrong answers
        assert_one_line_error(refused, 1, "other word weights", "--word-weights")


IMPORTED_ONE = "kept 1, dropped 0, skipped 0 (no text)\n"


@pytest.mark.parametrize(
    ("content", "phrase"), [("word001 heavy\n", "weights.txt:1"), (None, "No such file")], ids=["bad", "missing"]
)
def test_a_weights_file_that_cannot_be_read_is_named(
    files: Path, tmp_path: Path, content: str | None, phrase: str
) -> None:
    weights = tmp_path / "weights.txt"
    if content is not None:
        weights.write_text(content, encoding="utf-8")
    result = run("fingerprint", "--word-weights", str(weights), str(files / "a.txt"))
    assert result.exit_code == 2 and "--word-weights" in result.stderr and phrase in result.stderr, result.output
    assert "Traceback" not in result.output


def test_import_dry_run_reads_the_database(db_url: str, tmp_path: Path) -> None:
    with SimhashIndex(db_url) as index:
        index.check_and_add("https://seed.example/x", DEFAULT.signature(TEXT))
        index.check_and_add("https://seed.example/short", DEFAULT.signature("A short page."))
    corpus = write_corpus(tmp_path / "corpus.jsonl", CORPUS)
    listing, predicted = dry_run("--db", db_url, corpus)
    assert predicted == "dry run, nothing written: kept 1, dropped 4, skipped 1 (no text)\n"
    assert [row["duplicate_of"] for row in listing if row["outcome"] == "dropped"] == [
        "https://seed.example/x",
        "https://seed.example/x",
        "https://seed.example/x",
        "https://seed.example/short",
    ]
    with SimhashIndex(db_url) as index:
        assert (len(index), index.duplicates()) == (2, [])
    assert ok("import", "--db", db_url, corpus) == predicted.removeprefix("dry run, nothing written: ")


def test_import_from_stdin_and_bad_lines(sqlite_url: str, tmp_path: Path) -> None:
    lines = json.dumps(CORPUS[0]) + "\n"
    assert ok("import", "--db", sqlite_url, "-", input=lines) == "kept 1, dropped 0, skipped 0 (no text)\n"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(CORPUS[5]) + '\n{"url": 1\n' + json.dumps(CORPUS[3]) + "\n", encoding="utf-8")
    result = run("import", "--db", sqlite_url, str(bad), "--strict")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {bad} line 2: not JSON (")
    assert result.stderr.endswith("; the lines before it were imported\n")
    bad.write_text('{"url": "https://example.com/x"}\n', encoding="utf-8")
    result = run("import", "--db", sqlite_url, str(bad), "--dry-run", "--strict")
    assert (result.exit_code, result.stderr) == (1, f'Error: {bad} line 1: needs a "text" or "html" string\n')


def test_import_reports_each_bad_line_goes_on_and_exits_1(sqlite_url: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = [json.dumps(CORPUS[0]), '{"url": 1', "[1, 2]", json.dumps(CORPUS[5]), '{"url": "https://x.example/"}']
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run("import", "--db", sqlite_url, str(bad))
    assert result.exit_code == 1
    errors = result.stderr.splitlines()
    assert [e.partition(":")[2].split(":")[0].strip() for e in errors] == [f"{bad} line {n}" for n in (2, 3, 5)]
    assert all(e.startswith("Error: ") and e.endswith("; skipped") for e in errors), errors
    assert result.stdout == "kept 2, dropped 0, skipped 0 (no text), 3 bad lines skipped\n"
    with SimhashIndex(sqlite_url) as index:
        assert len(index) == 2 and index.get(CORPUS[5]["url"]) is not None  # the line after the bad ones


def test_import_skips_urls_no_database_stores(db_url: str, tmp_path: Path) -> None:
    lines = [
        CORPUS[0],
        {"url": "https://example.com/a\x00b", "text": TEXT},
        {"url": "https://example.com/\ud800", "text": TEXT},
    ]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    result = run("import", "--db", db_url, str(corpus))
    assert result.exit_code == 0, result.output
    assert result.stdout == "kept 1, dropped 0, skipped 0 (no text), refused 2 (unusable url)\n"
    assert f"Warning: {corpus} line 2: key" in result.stderr and "NUL character" in result.stderr
    assert f"{corpus} line 3" in result.stderr and "Traceback" not in result.output
    with SimhashIndex(db_url) as index:
        assert len(index) == 1


# -- errors -----------------------------------------------------------------------


def assert_one_line_error(result, exit_code: int, *phrases: str) -> None:
    assert result.exit_code == exit_code, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    for phrase in phrases:
        assert phrase in result.stderr


@pytest.mark.parametrize("command", [["stats"], ["duplicates"], ["clusters"], ["query", "--simhash", "1"]])
def test_missing_sqlite_file(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "nope.db"
    assert_one_line_error(run(*command, "--db", f"sqlite:///{path}"), 2, "no such database file")
    assert not path.exists()


def test_database_without_simhash_tables(tmp_path: Path, postgres_url: str) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE other (x)")
    conn.close()
    for db in (f"sqlite:///{path}", postgres_url):
        assert_one_line_error(run("stats", "--db", db), 2, "has no simhash tables")


def test_database_unavailable() -> None:
    result = run("duplicates", "--db", "postgresql://someone:s3cret@127.0.0.1:1/nodb")
    assert_one_line_error(result, 2, "is unavailable", "someone:***@127.0.0.1:1")
    assert "s3cret" not in result.stderr
    assert_one_line_error(run("stats", "--db", "mysql://x@localhost/db"), 2, "only sqlite:// and postgresql://")
    assert_one_line_error(run("stats", "--db", "not a url"), 2, "is not a database URL")


@pytest.mark.parametrize(
    ("db", "phrase"),
    [
        ("redis://127.0.0.1:6379/5?foo=1", "unknown option 'foo'"),  # an option Redis does not know
        ("redis://127.0.0.1:6379/99", "DB index is out of range"),
        ("postgresql+asyncpg://u@127.0.0.1/db", "the driver 'asyncpg' is not supported"),
        ("postgresql://bob:x@127.0.0.1:notaport/x", "the port 'notaport' is not a number"),
    ],
)
def test_unusable_urls_exit_2_with_one_line(db: str, phrase: str) -> None:
    assert_one_line_error(run("stats", "--db", db), 2, phrase)


def test_a_file_that_is_not_a_database_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.db"
    path.write_bytes(b"this is not an SQLite file" * 100)
    assert_one_line_error(run("stats", "--db", f"sqlite:///{path}"), 2, "file is not a database")


def test_read_only_commands_create_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for db in ("sqlite:///x.db?mode=ro&uri=true", "sqlite:///file:x.db?mode=ro&uri=true", "sqlite:///x.db"):
        assert_one_line_error(run("stats", "--db", db), 2, "no such database file", str(tmp_path / "x.db"))
    assert list(tmp_path.iterdir()) == []


def test_usage_errors(filled) -> None:
    db, _ = filled
    result = run("query", "--db", db)
    assert result.exit_code == 2 and "give exactly one of --url, --text, --html, --simhash" in result.stderr
    result = run("query", "--db", db, "--simhash", "xyz")
    assert result.exit_code == 2 and "a simhash is 1 to 16 hex digits" in result.stderr
    result = run("duplicates", "--db", db, "--since", "yesterday")
    assert result.exit_code == 2 and "is not an ISO date or datetime" in result.stderr


# -- escaping of page-controlled strings ------------------------------------------

D = 0x5555AAAA5555AAAA
HOSTILE_STORED = "https://example.com/[bold red]x[/bold red]"
HOSTILE = [
    ("@SUM(1+1)", D ^ 1),
    ('=HYPERLINK("http://evil.example/","x")', D ^ 2),
    ("https://example.com/\x1b[31mred\u202eevil\nline", D ^ 4),
]


@pytest.fixture
def hostile(sqlite_url: str) -> str:
    with SimhashIndex(sqlite_url) as index:
        index.check_and_add(HOSTILE_STORED, D)
        for url, fingerprint in HOSTILE:
            assert index.check_and_add(url, fingerprint) is not None
    return sqlite_url


def test_escaping(hostile: str) -> None:
    listed = run("duplicates", "--db", hostile, "--format", "jsonl").stdout.splitlines()
    assert [json.loads(line)["url"] for line in listed] == [url for url, _ in HOSTILE]
    assert "\\u202e" in listed[2] and "\u202e" not in listed[2]  # bidi override escaped in JSON

    rows = list(csv.reader(io.StringIO(run("duplicates", "--db", hostile, "--format", "csv").stdout)))
    assert [row[0] for row in rows[1:]] == [
        "'@SUM(1+1)",
        '\'=HYPERLINK("http://evil.example/","x")',
        "https://example.com/\\x1b[31mred\\u202eevil\\nline",
    ]
    assert {row[1] for row in rows[1:]} == {HOSTILE_STORED}

    shown = run("clusters", "--db", hostile, "--format", "table").stdout
    assert HOSTILE_STORED in shown  # rich markup printed as it is, not interpreted
    assert "https://example.com/\\x1b[31mred\\u202eevil\\nline" in shown
    assert "\x1b" not in shown and "\u202e" not in shown
    assert shown.count("\n") == 2 + 3  # header, rule, one line per row


@pytest.mark.parametrize("hidden", ["\ufeff", "\xa0", "\u3000", "\u200b", " \u200b\t", "\u2028"])
@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\uff1d", "\uff0b"])
def test_csv_neutralises_formulas_behind_invisible_characters(hidden: str, start: str) -> None:
    cell = formats.csv_cell(f"{hidden}{start}HYPERLINK(1)")
    assert cell.startswith("'")
    assert "\x1b" not in formats.csv_cell("a\x1b[31m") and "\u202e" not in formats.csv_cell("a\u202eb")
    assert not formats.csv_cell(f"{hidden}plain").startswith("'")


@pytest.mark.parametrize("module", [formats, reports, urls, records])
def test_doctests(module: object) -> None:
    assert doctest.testmod(module).failed == 0


# -- progress bars ----------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_progress_bar_only_on_a_terminal(tmp_path: Path) -> None:
    import pty

    corpus = write_corpus(tmp_path / "corpus.jsonl", CORPUS[:1])
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    command = [sys.executable, "-c", "from simhash_index.cli import main; main()", "import", "--db", db, corpus]
    leader, follower = pty.openpty()
    try:
        env = {**os.environ, "TERM": "xterm", "COLUMNS": "80"}
        process = subprocess.run(command, stdout=subprocess.PIPE, stderr=follower, env=env, timeout=60, check=True)
        os.close(follower)
        follower = -1
        on_terminal = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed
                break
            if not chunk:
                break
            on_terminal += chunk
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert process.stdout == b"kept 1, dropped 0, skipped 0 (no text)\n"
    assert b"importing" in on_terminal


def test_fingerprint_settings_of_the_database(sqlite_url: str, files: Path) -> None:
    from simhash_index import Fingerprinter

    other_length = Fingerprinter(min_length=DEFAULT.min_length + 50)  # SIMHASH_MIN_TEXT_LENGTH: read back
    with SimhashIndex(sqlite_url, scheme=other_length.scheme) as index:
        index.check_and_add("https://example.com/text", other_length.signature(TEXT))
    expected = as_jsonl(
        [
            {
                "url": "https://example.com/text",
                "simhash": to_hex(other_length.fingerprint(TEXT)),
                "distance": 0,
                "bit_similarity": 1.0,
                "similarity": 1.0,
            }
        ]
    )
    assert ok("query", "--db", sqlite_url, "--text", str(files / "a.txt")) == expected

    bigrams = Fingerprinter(ngram=2)  # not reproducible from the command line
    other = sqlite_url.replace("simhash.db", "bigrams.db")
    SimhashIndex(other, scheme=bigrams.scheme).close()
    result = run("query", "--db", other, "--text", str(files / "a.txt"))
    assert_one_line_error(result, 1, "settings the command line cannot reproduce")


def test_db_before_the_command_comes_before_the_environment(sqlite_url: str, tmp_path: Path) -> None:
    """`simhash-index --db URL COMMAND`: the URL given before the command wins over
    $SIMHASH_DATABASE_URL and the default; given before and after, it must be the same."""
    with SimhashIndex(sqlite_url) as index:
        index.add("https://example.com/a", A)
    elsewhere = {"SIMHASH_DATABASE_URL": f"sqlite:///{tmp_path / 'elsewhere.db'}"}
    assert json.loads(ok("--db", sqlite_url, "stats", env=elsewhere))["documents"] == 1
    assert json.loads(ok("--db", sqlite_url, "stats", "--db", sqlite_url))["documents"] == 1
    both = run("--db", sqlite_url, "stats", "--db", elsewhere["SIMHASH_DATABASE_URL"])
    assert both.exit_code == 2 and "--db is given before and after the command, with different URLs" in both.stderr
    assert "--db URL" in ok("--help") and "--db URL" in ok("stats", "--help")
