"""`filter`'s OUT (issue 40, items 1-4): streamed when it is not a regular file, followed when a
symlink, replaced only whole and on disk, keeping what the file was. Real files, FIFOs and
processes; in-process runs where no process boundary is at stake."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from archives import write_archive
from click.testing import CliRunner

from simhash_index.cli import cli

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="FIFOs, /proc, xattrs")

CLI = [sys.executable, "-c", "from simhash_index.cli import main; main()"]


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """A small archive with duplicates, and the bytes `filter` writes for it into a fresh index."""
    folder = tmp_path_factory.mktemp("archive")
    path = folder / "in.warc.gz"
    write_archive(path, compress=True)
    reference = folder / "reference.warc.gz"
    result = filter_into(folder, path, str(reference))
    assert result.exit_code == 0, result.output
    return path, reference.read_bytes()


def filter_into(folder: Path, archive: Path, out: str) -> object:
    """`simhash-index filter ARCHIVE OUT` in this process, into a new index in `folder`."""
    db = folder / f"index-{len(list(folder.glob('index-*')))}.db"
    return CliRunner().invoke(cli, ["filter", "--db", f"sqlite:///{db}", "--workers", "0", str(archive), out])


def filter_process(folder: Path, archive: Path, out: str, **options: object) -> subprocess.CompletedProcess[bytes]:
    db = folder / f"index-{len(list(folder.glob('index-*')))}.db"
    command = [*CLI, "filter", "--db", f"sqlite:///{db}", "--workers", "0", str(archive), out]
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **options}
    return subprocess.run(command, cwd=folder, timeout=120, check=False, **streams)  # type: ignore[call-overload]


def partials(out: Path) -> list[Path]:
    return sorted(out.parent.glob(out.name + ".partial-*"))


# -- item 1: not a regular file ------------------------------------------------------


def test_dash_is_stdout_and_the_summary_goes_to_stderr(archive: tuple[Path, bytes], tmp_path: Path) -> None:
    path, expected = archive
    done = filter_process(tmp_path, path, "-")
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
    assert done.stderr.decode().startswith("read 15 records")
    assert not (tmp_path / "-").exists()


def test_stdout_appending_to_an_archive_read_is_refused(archive: tuple[Path, bytes], tmp_path: Path) -> None:
    """`filter IN - >> IN` (issue 50, item 9), refused as `filter IN /dev/fd/1 >> IN` is."""
    path, _ = archive
    copy = tmp_path / "in.warc.gz"
    copy.write_bytes(path.read_bytes())
    for out in ("-", "/dev/fd/1"):
        with copy.open("ab") as appended:
            done = filter_process(tmp_path, copy, out, stdout=appended)
        assert done.returncode == 2 and b"is an archive read: write to another file" in done.stderr
        assert copy.read_bytes() == path.read_bytes()


def test_a_file_descriptors_name_is_written_through_not_replaced(archive: tuple[Path, bytes], tmp_path: Path) -> None:
    """/dev/stdout is a symlink to /proc/self/fd/1; one of our own stands in for it (run as root,
    replacing /dev/stdout would break it for the whole machine)."""
    path, expected = archive
    stdout = tmp_path / "stdout"
    stdout.symlink_to("/proc/self/fd/1")
    done = filter_process(tmp_path, path, str(stdout))
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected  # through the pipe
    assert stdout.is_symlink() and os.readlink(stdout) == "/proc/self/fd/1"
    assert done.stderr.decode().startswith("read 15 records")  # stdout holds the archive alone
    with (tmp_path / "redirected").open("wb") as redirected:  # `filter IN /dev/stdout > FILE`
        done = filter_process(tmp_path, path, str(stdout), stdout=redirected)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "redirected").read_bytes() == expected


def test_a_fifo_is_written_into_not_replaced(archive: tuple[Path, bytes], tmp_path: Path) -> None:
    path, expected = archive
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = filter_into(tmp_path, path, str(fifo))
    assert result.exit_code == 0, result.output
    reader.join(timeout=60)
    assert received == [expected]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_symlink_is_followed_and_a_dangling_one_refused(archive: tuple[Path, bytes], tmp_path: Path) -> None:
    path, expected = archive
    (tmp_path / "target").write_bytes(b"old")
    link = tmp_path / "link"
    link.symlink_to("target")
    assert filter_into(tmp_path, path, str(link)).exit_code == 0
    assert link.is_symlink() and (tmp_path / "target").read_bytes() == expected
    dangling = tmp_path / "dangling"
    dangling.symlink_to("nowhere")
    result = filter_into(tmp_path, path, str(dangling))
    assert result.exit_code == 2
    assert f"dangling is a symlink to {tmp_path / 'nowhere'}, which does not exist" in result.output
    assert not (tmp_path / "nowhere").exists() and not partials(tmp_path / "nowhere")


# -- item 2: what the file was -------------------------------------------------------


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def test_an_existing_out_keeps_its_mode_links_and_attributes(archive: tuple[Path, bytes], tmp_path: Path) -> None:
    path, expected = archive
    out = tmp_path / "out.warc.gz"
    out.write_bytes(b"old")
    out.chmod(0o600)
    try:
        os.setxattr(out, "user.origin", b"kept")  # an ACL is such an attribute (system.posix_acl_access)
        attributes = True
    except OSError as exc:
        if exc.errno not in (errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
        attributes = False
    with umask(0o022):
        assert filter_into(tmp_path, path, str(out)).exit_code == 0
    assert out.read_bytes() == expected
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    if attributes:
        assert os.getxattr(out, "user.origin") == b"kept"
    linked = tmp_path / "linked.warc.gz"
    os.link(out, linked)
    out.write_bytes(b"old")
    assert filter_into(tmp_path, path, str(out)).exit_code == 0
    assert linked.read_bytes() == expected and os.path.samefile(out, linked)  # rewritten in place, as cp does
    assert not partials(out)


def test_a_new_out_is_made_with_the_umask(archive: tuple[Path, bytes], tmp_path: Path) -> None:
    path, _ = archive
    out = tmp_path / "new.warc.gz"
    with umask(0o027):
        assert filter_into(tmp_path, path, str(out)).exit_code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_an_existing_out_keeps_its_owner(archive: tuple[Path, bytes], tmp_path: Path) -> None:
    path, expected = archive
    out = tmp_path / "theirs.warc.gz"
    out.write_bytes(b"old")
    os.chown(out, 65534, 65534)
    assert filter_into(tmp_path, path, str(out)).exit_code == 0
    assert out.read_bytes() == expected
    assert (out.stat().st_uid, out.stat().st_gid) == (65534, 65534)


# -- item 3: on disk before the rename ------------------------------------------------


def test_out_and_its_folder_are_flushed_around_the_rename(
    archive: tuple[Path, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real fsync and rename, watched: the file written is synced before it is renamed
    over OUT, and OUT's folder after."""
    path, _ = archive
    out = tmp_path / "out.warc.gz"
    out.write_bytes(b"old")
    calls: list[tuple[str, tuple[int, int]]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(descriptor: int) -> None:
        found = os.fstat(descriptor)
        calls.append(("fsync", (found.st_dev, found.st_ino)))
        real_fsync(descriptor)

    def replace(source: str, target: str) -> None:
        found = os.stat(source)
        calls.append(("replace", (found.st_dev, found.st_ino)))
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    assert filter_into(tmp_path, path, str(out)).exit_code == 0
    written = (out.stat().st_dev, out.stat().st_ino)
    folder = (tmp_path.stat().st_dev, tmp_path.stat().st_ino)
    ours = [call for call in calls if call[1] in (written, folder)]
    assert ours == [("fsync", written), ("replace", written), ("fsync", folder)]


# -- item 4: a killed run's partial file ----------------------------------------------


def test_a_killed_runs_partial_file_is_named_and_removed_by_the_next_run(
    archive: tuple[Path, bytes], tmp_path: Path
) -> None:
    """What SIGKILL leaves (a partial file no process holds), removed by the next run; one a
    running filter holds (its lock) is left alone."""
    path, expected = archive
    out = tmp_path / "out.warc.gz"
    left = tmp_path / "out.warc.gz.partial-0badf00d"
    left.write_bytes(b"half an archive")
    held = tmp_path / "out.warc.gz.partial-feedf00d"
    with held.open("wb") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        result = filter_into(tmp_path, path, str(out))
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == expected
    assert partials(out) == [held]
    assert f"removed {left}, left by an earlier run that did not finish" in result.stderr
