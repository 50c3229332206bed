"""Commands that only read open the index read-only: they never create or change a file."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from simhash_index import SimhashIndex, SimhashIndexError
from simhash_index.cli import cli


def run(*args: str) -> object:
    return CliRunner().invoke(cli, list(args))


def files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def test_stats_on_an_empty_file_leaves_it_empty(tmp_path: Path) -> None:
    (tmp_path / "empty.db").write_bytes(b"")
    result = run("stats", "--db", f"sqlite:///{tmp_path / 'empty.db'}")
    assert result.exit_code == 2 and "has no simhash tables" in result.output
    assert files(tmp_path) == {"empty.db": b""}


def test_report_commands_leave_another_applications_database_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('keep me')")
    conn.close()
    before = files(tmp_path)
    for command in (["stats"], ["duplicates"], ["clusters"], ["query", "--simhash", "1"]):
        assert run(*command, "--db", f"sqlite:///{path}").exit_code == 2
    assert files(tmp_path) == before  # no -wal or -shm file, and the journal mode is still "delete"
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    conn.close()


@pytest.fixture
def read_only_copy(tmp_path: Path) -> Iterator[Path]:
    """A folder holding a real index, bind-mounted read-only (needs root and mount)."""
    source, mounted = tmp_path / "source", tmp_path / "mounted"
    source.mkdir()
    mounted.mkdir()
    with SimhashIndex(f"sqlite:///{source / 'simhash.db'}") as index:
        index.check_and_add("https://example.com/a", 0x0123456789ABCDEF)
        index.check_and_add("https://example.com/a-copy", 0x0123456789ABCDEE)
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("needs root to bind-mount a folder read-only")
    done = subprocess.run(["mount", "--bind", str(source), str(mounted)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {done.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(mounted)], check=True, capture_output=True)
        yield mounted
    finally:
        subprocess.run(["umount", str(mounted)], capture_output=True)


def test_an_index_on_a_read_only_mount_is_readable(read_only_copy: Path) -> None:
    db = f"sqlite:///{read_only_copy / 'simhash.db'}"
    before = files(read_only_copy)
    result = run("stats", "--db", db, "--format", "json")
    assert result.exit_code == 0, result.output
    assert '"documents": 1' in result.output and '"duplicates": 1' in result.output
    listed = run("duplicates", "--db", db, "--format", "jsonl")
    assert listed.exit_code == 0 and "https://example.com/a-copy" in listed.output
    assert files(read_only_copy) == before


def test_a_read_only_index_refuses_writes(db_url: str) -> None:
    SimhashIndex(db_url).close()
    with SimhashIndex(db_url, read_only=True) as index:
        assert len(index) == 0 and index.query(1) == []
        with pytest.raises(SimhashIndexError, match="read-only"):
            index.check_and_add("https://example.com/a", 1)
        with pytest.raises(SimhashIndexError, match="read-only"):
            index.add_many([("https://example.com/a", 1)])
    with SimhashIndex(db_url) as index:
        assert len(index) == 0


def test_sqlite_uri_options_need_uri_true_and_say_so(tmp_path: Path) -> None:
    result = run("stats", "--db", f"sqlite:///{tmp_path / 'x.db'}?mode=ro")
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "uri=true" in result.output and "Warning" not in result.output
    assert list(tmp_path.iterdir()) == []


REPORTS = (
    ["stats", "--format", "json"],
    ["duplicates", "--format", "jsonl"],
    ["clusters"],
    ["query", "--simhash", "1"],
)


def test_report_commands_on_a_cleanly_closed_index_create_no_file(tmp_path: Path) -> None:
    """A WAL-mode file with no -wal beside it (its last writer closed it) is read as it is;
    opened plainly, even read-only, SQLite would create a -wal and a -shm."""
    db = f"sqlite:///{tmp_path / 'simhash.db'}"
    with SimhashIndex(db) as index:
        index.check_and_add("https://example.com/a", 0x0123456789ABCDEF)
        index.check_and_add("https://example.com/a-copy", 0x0123456789ABCDEE)
    before = files(tmp_path)
    assert list(before) == ["simhash.db"]
    for command in REPORTS:
        assert run(*command, "--db", db).exit_code == 0
    assert '"documents": 1' in run("stats", "--db", db, "--format", "json").output
    assert files(tmp_path) == before


_WRITER = """
import sys
from simhash_index import SimhashIndex
with SimhashIndex(sys.argv[1]) as index:
    for line in sys.stdin:  # each line: how many pages to add, then "written"
        start = len(index)
        index.add_many((f"https://example.com/{n}", n << 20) for n in range(start, start + int(line)))
        print("written", flush=True)
"""


def test_report_commands_beside_a_writer_read_its_pages_and_change_no_file(tmp_path: Path) -> None:
    """Beside a crawl's open connection (its -wal and -shm there), a report reads what it
    committed, and does not write to the -shm (it reads it read-only)."""
    db = f"sqlite:///{tmp_path / 'simhash.db'}"
    SimhashIndex(db).close()
    with subprocess.Popen(
        [sys.executable, "-c", _WRITER, db], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as writer:
        for added, total in ((10, 10), (15, 25)):
            writer.stdin.write(f"{added}\n")
            writer.stdin.flush()
            assert writer.stdout.readline() == "written\n"
            before = files(tmp_path)
            assert set(before) == {"simhash.db", "simhash.db-wal", "simhash.db-shm"}
            result = run("stats", "--db", db, "--format", "json")
            assert result.exit_code == 0 and f'"documents": {total}' in result.output
            assert files(tmp_path) == before
        writer.stdin.close()
