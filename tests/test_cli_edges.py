"""The command line's rough edges: narrow terminals, hosts with ports, many files with a bad
one, what a dry run shows. Through CliRunner on real databases."""

from __future__ import annotations

import errno
import io
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from simhash_index import SimhashIndex
from simhash_index.cli import cli, formats
from simhash_index.fingerprinting.fingerprinter import DEFAULT
from simhash_index.fingerprinting.simhash import to_hex
from simhash_index.index.base import Index

LONG = "https://news.example.com/2024/05/01/the-harbour-reopened-after-a-week-of-repairs-to-the-old-sea-wall"


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as a user's shell is."""

    def isatty(self) -> bool:
        return True


def on_terminal(columns: int, monkeypatch: pytest.MonkeyPatch, write, *, raw: bool = False) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    out = Terminal()
    write(out)
    return out.getvalue() if raw else re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())  # rich's colours


ROWS = [
    {"url": LONG + "?utm=1", "duplicate_of": LONG, "distance": 1},
    {"url": LONG + "/print", "duplicate_of": LONG, "distance": 0},
]
COLUMNS = ("url", "duplicate_of", "distance")


def test_a_table_too_wide_for_the_terminal_keeps_each_url_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    shown = on_terminal(80, monkeypatch, lambda out: formats.write_rows(ROWS, COLUMNS, "table", out))
    lines = shown.splitlines()
    for row in ROWS:  # each URL on one line, whole, once per record
        assert f"url           {row['url']}" in lines
        assert lines.count(f"duplicate_of  {LONG}") == 2
    assert "distance      1" in lines and "distance      0" in lines
    assert lines.count("") == 1  # records a blank line apart


def test_a_table_that_fits_stays_a_table(monkeypatch: pytest.MonkeyPatch) -> None:
    short = [{"url": "https://a.example/1", "duplicate_of": "https://a.example/0", "distance": 2}]
    shown = on_terminal(80, monkeypatch, lambda out: formats.write_rows(short, COLUMNS, "table", out))
    header = shown.splitlines()[0]
    assert header.split() == list(COLUMNS)
    wide = on_terminal(400, monkeypatch, lambda out: formats.write_rows(ROWS, COLUMNS, "table", out))
    assert wide.splitlines()[0].split() == list(COLUMNS) and LONG + "?utm=1" in wide


def test_escaping_holds_in_records(monkeypatch: pytest.MonkeyPatch) -> None:
    hostile = [{"url": LONG + "/\x1b[31mred\u202e\nline", "duplicate_of": LONG, "distance": 1}]
    shown = on_terminal(60, monkeypatch, lambda out: formats.write_rows(hostile, COLUMNS, "table", out), raw=True)
    assert "\x1b" not in shown and "\u202e" not in shown
    assert f"url           {LONG}/\\x1b[31mred\\u202e\\nline" in shown.splitlines()


# -- duplicates --host with a port -----------------------------------------------------


@pytest.fixture
def ports(sqlite_url: str) -> str:
    with SimhashIndex(sqlite_url) as index:
        for port, fingerprint in ((8765, 0x0123456789ABCDEF), (9000, 0xFEDCBA9876543210)):
            index.check_and_add(f"http://127.0.0.1:{port}/a", fingerprint)
            index.check_and_add(f"http://127.0.0.1:{port}/b", fingerprint ^ 1)
        index.check_and_add("https://example.com/a", 0x00FF00FF00FF00FF)
        index.check_and_add("https://www.example.com/b", 0x00FF00FF00FF00FE)
        index.check_and_add("http://example.com:8080/c", 0x00FF00FF00FF00FC)
    return sqlite_url


def urls_listed(db: str, host: str) -> list[str]:
    result = CliRunner().invoke(cli, ["duplicates", "--db", db, "--host", host, "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    return [json.loads(line)["url"] for line in result.stdout.splitlines()]


def test_duplicates_host_with_a_port(ports: str) -> None:
    assert urls_listed(ports, "127.0.0.1:8765") == ["http://127.0.0.1:8765/b"]
    assert urls_listed(ports, "127.0.0.1") == ["http://127.0.0.1:8765/b", "http://127.0.0.1:9000/b"]
    assert urls_listed(ports, "example.com:443") == ["https://www.example.com/b"]  # https's own port
    assert urls_listed(ports, "example.com:8080") == ["http://example.com:8080/c"]
    assert urls_listed(ports, "http://127.0.0.1:9000/") == ["http://127.0.0.1:9000/b"]  # a URL: its host and port


@pytest.mark.parametrize(("host", "why"), [("127.0.0.1:port", "port that is not a number"), ("a b", "not a host")])
def test_a_bad_host_is_a_usage_error_naming_the_option(ports: str, host: str, why: str) -> None:
    result = CliRunner().invoke(cli, ["duplicates", "--db", ports, "--host", host])
    assert result.exit_code == 2
    assert "--host" in result.stderr and why in result.stderr


# -- fingerprint: every file, even after a bad one ---------------------------------------


def test_fingerprint_goes_on_past_a_bad_file(tmp_path: Path) -> None:
    text = " ".join(f"word{i}" for i in range(60))
    (tmp_path / "a.txt").write_text(text, encoding="utf-8")
    (tmp_path / "empty.html").write_text("<html><body></body></html>", encoding="utf-8")
    (tmp_path / "stop.txt").write_text("... !!!", encoding="utf-8")
    (tmp_path / "b.txt").write_text(text + " more", encoding="utf-8")
    names = ["a.txt", "empty.html", "stop.txt", "b.txt"]
    result = CliRunner().invoke(cli, ["fingerprint", "--format", "jsonl", *(str(tmp_path / n) for n in names)])
    assert result.exit_code == 1
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["file"] for row in rows] == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    assert rows[1]["simhash"] == to_hex(DEFAULT.fingerprint(text + " more"))
    assert result.stderr.splitlines() == [
        f"Error: {tmp_path / 'empty.html'}: no main text found in the HTML",
        f"Error: {tmp_path / 'stop.txt'}: no words to fingerprint (empty, or only punctuation and stop words)",
    ]


def test_fingerprint_refuses_a_binary_file(tmp_path: Path) -> None:
    import random
    import struct
    import zlib

    pixels = zlib.compress(bytes(random.Random(3).randrange(256) for _ in range(3000)))
    png = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">IIBBBBB", 30, 30, 8, 2, 0, 0, 0)
    image = tmp_path / "logo.png"
    image.write_bytes(png + b"\x00\x00\x00\x00" + struct.pack(">I", len(pixels)) + b"IDAT" + pixels)
    result = CliRunner().invoke(cli, ["fingerprint", "--format", "jsonl", str(image)])
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == f"Error: {image}: a binary file (an image, an archive?), not text or HTML: left out\n"


# -- import --dry-run shows what it would do ---------------------------------------------------


def test_import_dry_run_lists_each_page(tmp_path: Path, sqlite_url: str) -> None:
    text = " ".join(f"word{i}" for i in range(60))
    lines = [
        {"url": "https://example.com/1", "text": text},
        {"url": "https://example.com/2", "text": text},
        {"url": "https://example.com/3", "text": "... !!!"},
    ]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    result = CliRunner().invoke(cli, ["import", "--db", sqlite_url, str(corpus), "--dry-run", "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "url,outcome,duplicate_of,distance,exact,similarity,supersedes",
        "https://example.com/1,kept,,,,,",
        "https://example.com/2,dropped,https://example.com/1,0,true,,",
        "https://example.com/3,skipped,,,,,",
    ]
    assert result.stderr == "dry run, nothing written: kept 1, dropped 1, skipped 1 (no text)\n"
    refused = CliRunner().invoke(cli, ["import", "--db", sqlite_url, str(corpus), "--format", "csv"])
    assert refused.exit_code == 2 and "--format chooses the listing of --dry-run" in refused.stderr


@pytest.fixture(scope="module")
def many_duplicates(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An index whose listings fill more than a pipe's 64 KiB buffer."""
    db = f"sqlite:///{tmp_path_factory.mktemp('piped') / 'simhash.db'}"
    with SimhashIndex(db) as index:
        index.add_many((f"https://kept.example/{n}", n << 20) for n in range(1500))
        index.check_and_add_many((f"https://h{n}.example/copy", (n << 20) ^ 1) for n in range(1500))
    return db


@pytest.mark.skipif(sys.platform == "win32", reason="no SIGPIPE")
@pytest.mark.parametrize(
    "command",
    [["duplicates", "--format", "csv"], ["duplicates", "--format", "jsonl"], ["clusters", "--format", "jsonl"]],
)
def test_a_reader_that_goes_away_ends_the_command_quietly(many_duplicates: str, command: list[str]) -> None:
    """`simhash-index duplicates --format csv | head -c 10`: no traceback, as with `cat`."""
    script = "from simhash_index.cli import main; main()"
    with subprocess.Popen(
        [sys.executable, "-c", script, *command, "--db", many_duplicates],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert len(process.stdout.read(10)) == 10
        process.stdout.close()  # what `head -c 10` does once it has its bytes
        stderr = process.stderr.read().decode()
        process.wait(timeout=60)
    assert stderr == ""
    assert process.returncode in (0, -signal.SIGPIPE)


# -- errors: one line for the user's, a traceback for a bug --------------------------------


@pytest.mark.parametrize("bug", [ValueError("a bug"), TypeError("a bug"), OSError(errno.EBADF, "a bug")])
def test_a_bug_inside_a_command_keeps_its_traceback(
    monkeypatch: pytest.MonkeyPatch, sqlite_url: str, bug: Exception
) -> None:
    """A library call that fails with a plain ValueError, TypeError, or an OSError the system
    gives no file, is a bug: it leaves the command with its traceback, not as an "Error:" line."""
    SimhashIndex(sqlite_url).close()

    def failing(self: object, key: str, signature: object) -> None:
        raise bug

    monkeypatch.setattr(Index, "neighbourhood", failing)
    result = CliRunner().invoke(cli, ["query", "--db", sqlite_url, "--simhash", "0"])
    assert result.exception is bug
    assert "Error:" not in result.output


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["stats", "--db", "{url}?layout=diagonal"], "layout must be one of ('blocks', 'halves')"),
        (["stats", "--db", "{url}?texts=2"], "?texts= must be 1 or 0; got '2'"),
        (["query", "--db", "{url}", "--max-distance", "7", "--simhash", "0"], "at most 5 bits; got 7"),
        (["explain", "--db", "{url}", "https://a.example/\udcff"], "holds a lone surrogate"),  # argv's invalid UTF-8
        (["report", "--db", "{url}", "--html", "/dev/full"], "No space left on device"),
    ],
)
def test_a_user_error_inside_a_command_is_one_line(tmp_path: Path, given: list[str], said: str) -> None:
    """What the library refuses of the user's arguments (InvalidArgumentError), and what the
    system refuses a file (a full disk), end the command with one line, exit status 1."""
    url = f"sqlite:///{tmp_path / 'halves.db'}"
    SimhashIndex(url, layout="halves").close()
    if given[-1] == "/dev/full" and not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    result = CliRunner().invoke(cli, [arg.format(url=url) for arg in given])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("Error: ")
    assert said in result.stderr
