"""Where a command writes its output file OUT (`filter`'s archive), as `cp` and `gzip` users expect.

- `-` is standard output, written as it goes.
- A name that is not a regular file (a FIFO, a device such as /dev/null or a terminal) or that
  names a file descriptor (/dev/stdout, /dev/fd/N) is opened and written as it goes, never
  replaced: a FIFO's reader gets the archive, /dev/stdout stays the symlink it is.
- A symlink is followed: its target is written. One that points nowhere is refused, as `cp`
  refuses it.
- A regular file is written whole beside it first, as `OUT.partial-XXXXXXXX`, flushed to disk
  (fsync), renamed over OUT, and OUT's folder flushed: after a crash or a power cut OUT is
  the old file or the new one, never a part. An existing OUT keeps its mode, owner, group and
  extended attributes (ACLs); one with other hard links, or whose owner or attributes cannot
  be given to a new file, is rewritten in place from the complete copy instead, as `cp` does,
  once its disk is seen to have room for the whole of it (else an error, OUT as it was), with
  Ctrl-C and SIGTERM held until it is done: only a power cut or SIGKILL during that rewrite
  leaves it part-written.
  A new OUT is created as any program creates a file: 0666 less the umask (and the folder's
  default ACL).
- The partial file is removed on an error or an interrupt. One left by a killed run (SIGKILL,
  a power cut) is removed by the next run writing the same OUT: a run holds a lock on its
  partial file while it writes, so one that nobody holds is a leftover.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import os
import secrets
import shutil
import signal
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

import click

PARTIAL = ".partial-"  # between OUT's name and a random part: the file a run writes before renaming it


class Output:
    """OUT, checked when made (before a long import), written with `open()`."""

    def __init__(self, given: str) -> None:
        self.given = given
        self.path = given  # the file written: the symlink's target
        self.streamed = True  # written as it goes, never replaced
        self.appending = False  # a file descriptor's name: write after what is there
        if given == "-":
            return
        path, linked, descriptor = _follow(given)
        if descriptor:
            self.appending = True
            return
        try:
            found = os.stat(path)
        except FileNotFoundError:
            if linked:
                raise click.BadParameter(
                    f"{given} is a symlink to {path}, which does not exist: create it, or give {path}",
                    param_hint="OUT",
                ) from None
            if not os.path.isdir(os.path.dirname(path)):
                raise click.BadParameter(f"{given}: its folder does not exist", param_hint="OUT") from None
            found = None
        if found is not None and stat.S_ISSOCK(found.st_mode):
            raise click.BadParameter(f"{given} is a socket: give a file, a FIFO or - (stdout)", param_hint="OUT")
        if found is not None and not stat.S_ISREG(found.st_mode):
            return  # a FIFO or a device
        self.path = path
        self.streamed = False

    def is_stdout(self) -> bool:
        """Whether OUT is where standard output goes (`-`, /dev/stdout): the summary then goes to stderr."""
        if self.given == "-":
            return True
        try:
            return os.path.samestat(os.stat(self.given), os.fstat(sys.stdout.fileno()))
        except (OSError, ValueError):
            return False

    def same_as(self, path: str) -> bool:
        """Whether OUT is the file at `path` (`-`: whether stdout is)."""
        try:
            if self.given == "-":
                return os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(path))
            return os.path.exists(self.path) and os.path.samefile(self.path, path)
        except (OSError, ValueError):  # stdout closed, or not a file (a test's capture)
            return False

    @contextmanager
    def open(self) -> Iterator[IO[bytes]]:
        """The file to write OUT's bytes into; on an error or an interrupt in the block, a
        regular OUT is left as it was."""
        if self.given == "-":
            yield sys.stdout.buffer
            sys.stdout.buffer.flush()
        elif self.streamed:
            with open(self.given, "ab" if self.appending else "wb") as stream:
                yield stream
        else:
            with _replacing(self.path) as file:
                yield file


def _follow(given: str) -> tuple[str, bool, bool]:
    """The file `given` names once its symlinks are followed; whether it is a symlink; whether
    one of its links is a file descriptor's (/dev/stdout and /dev/fd/N lead to /proc/self/fd/N),
    which is written through, whatever file it has open."""
    current = os.path.abspath(given)
    for _ in range(40):  # the kernel's own limit
        folder = os.path.realpath(os.path.dirname(current))
        if not os.path.islink(current):
            return os.path.join(folder, os.path.basename(current)), current != os.path.abspath(given), False
        if (folder + "/").startswith("/proc/"):
            return current, True, True
        current = os.path.join(folder, os.readlink(current))
    raise click.BadParameter(f"{given}: too many levels of symbolic links", param_hint="OUT")


@contextmanager
def _replacing(path: str) -> Iterator[IO[bytes]]:
    """A partial file beside `path` that becomes `path` when the block ends without error."""
    folder, name = os.path.split(path)
    _remove_leftovers(folder, name)
    try:
        old: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        old = None
    descriptor, partial = _create_partial(folder, name, private=old is not None)
    try:
        with os.fdopen(descriptor, "w+b") as file:
            in_place = None if old is None else _why_in_place(file.fileno(), path, old)
            yield file
            file.flush()
            os.fsync(file.fileno())
            if in_place is not None:
                _copy_into(file, path, in_place)
            else:
                os.replace(partial, path)
                _flush_folder(folder)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
        raise
    if in_place is not None:
        os.unlink(partial)


def _create_partial(folder: str, name: str, *, private: bool) -> tuple[int, str]:
    """A new partial file for OUT `name`, locked: (descriptor, path). Created 0600 when it will
    take an existing file's mode (so that another user never reads what OUT's mode hides),
    else 0666 less the umask."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    for _ in range(100):
        partial = os.path.join(folder, f"{name}{PARTIAL}{secrets.token_hex(4)}")
        try:
            descriptor = os.open(partial, flags, 0o600 if private else 0o666)
        except FileExistsError:
            continue
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        try:
            if os.path.samestat(os.fstat(descriptor), os.stat(partial)):
                return descriptor, partial
        except FileNotFoundError:  # another run took it for a leftover before the lock: make another
            pass
        os.close(descriptor)
    raise click.ClickException(f"cannot create a partial file beside {os.path.join(folder, name)}")


def _remove_leftovers(folder: str, name: str) -> None:
    """Remove the partial files of OUT `name` that no run holds (their run was killed)."""
    for partial in glob.glob(os.path.join(glob.escape(folder), glob.escape(name) + PARTIAL + "*")):
        try:
            descriptor = os.open(partial, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a run writing OUT right now
            os.close(descriptor)
            continue
        try:
            if stat.S_ISREG(os.fstat(descriptor).st_mode):
                os.unlink(partial)
                click.echo(f"removed {partial}, left by an earlier run that did not finish", err=True)
        except FileNotFoundError:
            pass
        finally:
            os.close(descriptor)


def _why_in_place(descriptor: int, path: str, old: os.stat_result) -> str | None:
    """Give the partial file OUT's owner, group, mode and extended attributes; when it cannot take
    OUT's place without losing one of them, or OUT's other hard links, why (OUT is then rewritten
    in place)."""
    if old.st_nlink > 1:
        return f"it has {old.st_nlink - 1} other hard links"
    try:
        new = os.fstat(descriptor)
        if (new.st_uid, new.st_gid) != (old.st_uid, old.st_gid):
            os.fchown(descriptor, old.st_uid, old.st_gid)
        for attribute in _attributes(path):
            os.setxattr(descriptor, attribute, os.getxattr(path, attribute))
        os.fchmod(descriptor, stat.S_IMODE(old.st_mode))  # after chown, which clears setuid bits
    except OSError:
        return "its owner or attributes cannot be given to a new file"
    return None


def _attributes(path: str) -> list[str]:
    """The extended attributes of `path` (an ACL is one), where the platform has them."""
    if not hasattr(os, "listxattr"):
        return []
    try:
        return os.listxattr(path)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return []
        raise


def _copy_into(file: IO[bytes], path: str, why: str) -> None:
    """Rewrite the file at `path` with the content of `file` (complete and on disk), once its disk
    is seen to hold it; SIGINT and SIGTERM wait until it is done."""
    size = file.seek(0, os.SEEK_END)
    file.seek(0)
    with open(path, "r+b") as target:
        _make_room(target.fileno(), size, f"{path} is rewritten in place ({why})")
        with signals_held():
            shutil.copyfileobj(file, target, 1 << 20)
            target.truncate()
            target.flush()
            os.fsync(target.fileno())


def _make_room(descriptor: int, size: int, what: str) -> None:
    """Raise a ClickException, the file left as it was, unless its disk has `size` bytes free: a
    copy-on-write file system writes every block of a rewrite anew. The blocks past the file's
    end are reserved first where the file system can (posix_fallocate), so that a disk filling
    meanwhile, or a quota, cannot stop the rewrite half-way."""
    found = os.fstatvfs(descriptor)
    free = found.f_bavail * found.f_frsize
    hint = ": left as it was. Free some space, or write to another file"
    if free < size:
        raise click.ClickException(f"{what}, which needs {size:,} bytes free on its disk; {free:,} are{hint}")
    before = os.fstat(descriptor).st_size
    try:
        os.posix_fallocate(descriptor, 0, size)
    except OSError as exc:
        if os.fstat(descriptor).st_size != before:
            os.ftruncate(descriptor, before)
        if exc.errno in (errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL, errno.ENOSYS):
            return  # the file system reserves no blocks: the free space seen is what there is
        raise click.ClickException(f"{what}, and its disk cannot hold {size:,} bytes ({exc.strerror}){hint}") from None


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block ends, then act as they would have (in the main
    thread; elsewhere Python cannot catch them, and the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM)
    handlers = {signum: signal.signal(signum, lambda signum, frame: caught.append(signum)) for signum in held}
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        if caught:
            signal.raise_signal(caught[0])


def _flush_folder(folder: str) -> None:
    """fsync the folder, so that the rename itself survives a power cut."""
    descriptor = os.open(folder or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(descriptor)
    except OSError as exc:
        if exc.errno != errno.EINVAL:  # a filesystem that cannot sync a folder
            raise
    finally:
        os.close(descriptor)
