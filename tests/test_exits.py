"""How `import` and `filter` end when something ends them: a full disk, Ctrl-C, SIGTERM,
SIGKILL. Real `simhash-index` processes with worker processes, real signals, real files."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from archives import write_archive
from sites import english_article, page
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simhash_index.cli.outputs import signals_held

pytestmark = [pytest.mark.early, pytest.mark.skipif(sys.platform != "linux", reason="reads /proc, sends signals")]

CLI = [sys.executable, "-c", "from simhash_index.cli import main; main()"]
PAGES = 2000  # far more than the import gets through before the test stops it
HANG = 60  # seconds after which a command that has not ended counts as hung
SMALL_DISK = 400 * 1024  # fills after a few hundred pages


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """PAGES different HTML pages as a JSON lines corpus: extraction keeps the workers busy."""
    path = tmp_path_factory.mktemp("corpus") / "pages.jsonl"
    with path.open("w") as out:
        for number in range(PAGES):
            html = page(f"Story {number}", english_article(number))
            out.write(json.dumps({"url": f"https://e.example/{number}", "html": html}) + "\n")
    return path


@pytest.fixture(scope="module")
def archive(corpus: Path) -> Path:
    """The corpus as a gzipped WARC, for `filter`."""
    path = corpus.with_name("pages.warc.gz")
    with corpus.open() as lines, path.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        for line in lines:
            row = json.loads(line)
            data = row["html"].encode()
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            record = writer.create_warc_record(
                row["url"], "response", payload=io.BytesIO(data), length=len(data), http_headers=http
            )
            writer.write_record(record)
    return path


def workers_of(pid: int) -> list[int]:
    """The child processes of `pid` (its worker processes)."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            children += [int(child) for child in (task / "children").read_text().split()]
    return children


def gone(pids: list[int]) -> bool:
    """Wait until none of `pids` runs any more (a zombie has ended); False after HANG seconds."""
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        running = []
        for pid in pids:
            with contextlib.suppress(OSError):
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    running.append(pid)
        if not running:
            return True
        time.sleep(0.05)
    return False


def stored(db: Path) -> int:
    """The pages the SQLite index holds (0 before its first commit)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            return int(conn.execute("SELECT count(*) FROM simhash_documents").fetchone()[0])
    except sqlite3.Error:
        return 0


def started(process: subprocess.Popen[bytes], db: Path) -> list[int]:
    """Wait until the import has committed pages (its workers busy on the next ones); its workers."""
    deadline = time.monotonic() + HANG
    while stored(db) == 0:
        assert process.poll() is None, "the import ended before the test could stop it"
        assert time.monotonic() < deadline, "the import stored nothing"
        time.sleep(0.05)
    workers = workers_of(process.pid)
    assert len(workers) == 2
    return workers


def busy(workers: list[int]) -> None:
    """Wait until every worker is running (extracting pages), not waiting for a job."""
    deadline = time.monotonic() + HANG
    while not all(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "R" for pid in workers):
        assert time.monotonic() < deadline, "the workers never ran at once"
        time.sleep(0.01)


def ended(process: subprocess.Popen[bytes]) -> int:
    """The exit status; a process that has not ended after HANG seconds is killed, and the test fails."""
    try:
        return process.wait(timeout=HANG)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        pytest.fail(f"hung: still running {HANG} s later")


# Ctrl-C as at a terminal: a test run started in the background by a non-interactive shell (`&`,
# nohup) hands its processes SIGINT ignored, which Python, and so the command, would keep.
SIGINT_RAISES = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)"
AT_A_TERMINAL = [sys.executable, "-c", f"{SIGINT_RAISES}; {CLI[2]}"]


def start(arguments: list[str], stderr: Path, **options: object) -> subprocess.Popen[bytes]:
    """`simhash-index ARGUMENTS` in a process group of its own (a terminal's job), stderr to a file."""
    with stderr.open("wb") as errors:
        return subprocess.Popen(
            [*AT_A_TERMINAL, *arguments],
            stdout=subprocess.DEVNULL,
            stderr=errors,
            start_new_session=True,
            **options,  # type: ignore[arg-type]
        )


def integrity(db: Path) -> str:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


# -- item 12: Ctrl-C, and SIGTERM taken as it ----------------------------------------


@pytest.mark.parametrize(
    ("signal_", "to", "status"),
    [
        (signal.SIGINT, "group", 130),  # Ctrl-C at a terminal: the whole foreground job gets it
        (signal.SIGINT, "process", 130),
        (signal.SIGTERM, "process", 143),
    ],
    ids=["ctrl-c", "sigint", "sigterm"],
)
def test_an_interrupted_import_stops_at_once_on_one_line(
    corpus: Path, tmp_path: Path, signal_: signal.Signals, to: str, status: int
) -> None:
    db, errors = tmp_path / "index.db", tmp_path / "stderr"
    process = start(["import", "--db", f"sqlite:///{db}", "--workers", "2", str(corpus)], errors)
    workers = started(process, db)
    (os.killpg if to == "group" else os.kill)(process.pid, signal_)
    assert ended(process) == status
    assert gone(workers)
    assert errors.read_text().splitlines() == [f"Interrupted ({signal_.name}): stopped"]
    assert integrity(db) == "ok"
    assert 0 < stored(db) < PAGES


@pytest.mark.parametrize("ignored", [False, True], ids=["ctrl-c", "ignored by the caller"])
def test_ctrl_c_while_the_command_line_loads_stops_it_on_one_line(tmp_path: Path, ignored: bool) -> None:
    # The console script's own entry point, interrupted as it begins importing the commands:
    # the signal is sent by an import hook at that moment, so the test does not race the start-up.
    # A caller that ignores SIGINT (a job started with `&`) has the command ignore it too.
    script = (
        "import builtins, os, signal\n"
        f"signal.signal(signal.SIGINT, {'signal.SIG_IGN' if ignored else 'signal.default_int_handler'})\n"
        "real = builtins.__import__\n"
        "def hooked(name, *args, **kwargs):\n"
        "    if name == 'cli':\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    return real(name, *args, **kwargs)\n"
        "builtins.__import__ = hooked\n"
        "from simhash_index.console import main\n"
        "main()\n"
    )
    db = tmp_path / "index.db"
    done = subprocess.run(
        [sys.executable, "-c", script, "stats", "--db", f"sqlite:///{db}"],
        capture_output=True,
        text=True,
        timeout=HANG,
        check=False,
    )
    if ignored:  # the command ran: `stats` of an index that is not there
        assert done.returncode == 2 and "no such database file" in done.stderr and "Interrupted" not in done.stderr
    else:
        assert (done.returncode, done.stderr.splitlines(), done.stdout) == (130, ["Interrupted (SIGINT): stopped"], "")
    assert not db.exists()


# -- item 13: the caller killed, its workers orphaned -----------------------------------


def test_workers_of_a_killed_import_exit_quietly(corpus: Path, tmp_path: Path) -> None:
    db, errors = tmp_path / "index.db", tmp_path / "stderr"
    process = start(["import", "--db", f"sqlite:///{db}", "--workers", "2", str(corpus)], errors)
    workers = started(process, db)
    dumps = {Path(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[-2].decode()).parent for pid in workers}
    busy(workers)  # each has pages in hand: one idle would see its pipe close, and stop quietly anyway
    process.kill()
    assert ended(process) == -signal.SIGKILL
    assert gone(workers)  # each was extracting pages: it notices its caller is gone
    assert errors.read_text() == ""  # their stderr is the import's: no BrokenPipeError there
    assert len(dumps) == 1 and not dumps.pop().exists()  # their crash dumps' folder, empty, removed
    assert integrity(db) == "ok"


def test_a_pool_worker_whose_caller_is_killed_mid_job_exits_quietly(tmp_path: Path) -> None:
    """As a crawl's workers do when the crawl is killed: the job need not end first."""
    script = (
        "import sys; from simhash_index.workers import WorkerPool; import worker_jobs\n"
        "pool = WorkerPool(worker_jobs.misbehave, size=1, timeout=None)\n"
        "print(pool.pids()[0], flush=True)\n"
        "pool.run('hang')\n"
    )
    tests = str(Path(__file__).parent)
    errors = tmp_path / "stderr"
    with (
        errors.open("wb") as stderr,
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=stderr,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])},
        ) as caller,
    ):
        assert caller.stdout is not None
        worker = int(caller.stdout.readline())
        caller.kill()
    assert gone([worker])  # its job sleeps a minute
    assert errors.read_text() == ""


def test_a_killed_filter_leaves_a_partial_file_by_name_that_the_next_run_removes(archive: Path, tmp_path: Path) -> None:
    """Item 4: SIGKILL leaves OUT as it was and the partial file beside it, named for OUT; the
    next run writing OUT removes it."""
    db, errors, out = tmp_path / "index.db", tmp_path / "stderr", tmp_path / "out.warc.gz"
    out.write_bytes(b"the previous run's archive")
    process = start(["filter", "--db", f"sqlite:///{db}", "--workers", "2", str(archive), str(out)], errors)
    workers = started(process, db)
    left = sorted(tmp_path.glob("out.warc.gz.partial-*"))
    process.kill()
    assert ended(process) == -signal.SIGKILL
    assert gone(workers)
    assert len(left) == 1 and left[0].exists()
    assert out.read_bytes() == b"the previous run's archive"
    small = tmp_path / "small.warc.gz"
    write_archive(small, compress=True)
    rerun = subprocess.run(
        [*CLI, "filter", "--db", f"sqlite:///{tmp_path / 'again.db'}", "--workers", "0", str(small), str(out)],
        capture_output=True,
        timeout=HANG,
        check=False,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stderr.decode().splitlines() == [f"removed {left[0]}, left by an earlier run that did not finish"]
    assert not list(tmp_path.glob("out.warc.gz.partial-*"))
    assert out.read_bytes().startswith(b"\x1f\x8b")


# -- item 11: a full disk --------------------------------------------------------------


def _namespace_mount(folder: Path, size: int = SMALL_DISK) -> list[str] | None:
    """A command prefix that runs a command with a tmpfs of `size` bytes mounted on `folder`, in a
    mount namespace of its own (root is not needed where user namespaces are allowed); None
    where it cannot."""
    if shutil.which("unshare") is None:
        return None
    prefix = [
        "unshare",
        "--user",
        "--map-root-user",
        "--mount",
        "sh",
        "-c",
        f'mount -t tmpfs -o size={size} tmpfs "$0" && exec "$@"',
        str(folder),
    ]
    probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
    return prefix if probe.returncode == 0 else None


@pytest.fixture
def small_disk(tmp_path: Path) -> list[str]:
    """A command prefix that runs a command with a real tmpfs of SMALL_DISK bytes mounted on
    tmp_path / "small" (ENOSPC: "database or disk is full"). A file size limit (RLIMIT_FSIZE)
    is no stand-in: its EFBIG reached the same error line but not the hang."""
    folder = tmp_path / "small"
    folder.mkdir()
    prefix = _namespace_mount(folder)
    if prefix is None:
        pytest.skip("cannot mount a tmpfs here: needs unshare and user namespaces")
    return prefix


@pytest.mark.parametrize("command", ["import", "filter"])
def test_a_disk_filling_up_ends_the_command_with_its_error(
    corpus: Path, archive: Path, tmp_path: Path, small_disk: list[str], command: str
) -> None:
    db = f"sqlite:///{tmp_path / 'small' / 'index.db'}"
    given = [str(corpus)] if command == "import" else [str(archive), str(tmp_path / "out.warc.gz")]
    errors = tmp_path / "stderr"
    with errors.open("wb") as stderr:
        process = subprocess.Popen(
            [*small_disk, *CLI, command, "--db", db, "--workers", "2", *given],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    status = ended(process)
    assert errors.read_text().splitlines() == [f"Error: database {db} is unavailable: database or disk is full"]
    assert status == 2  # as with --workers 0: the index cannot be written
    assert not (tmp_path / "out.warc.gz").exists()


PAGE = 4096  # a tmpfs counts its size in pages


def test_a_disk_too_small_to_rewrite_a_linked_out_leaves_it_as_it_was(tmp_path: Path) -> None:
    """OUT with a second hard link is rewritten in place: on a disk that holds the finished copy
    but not OUT's growth, the rewrite is refused before OUT's first byte changes (issue 50, item 4)."""
    archive = tmp_path / "in.warc.gz"
    write_archive(archive, compress=True)
    with archive.open("ab") as grow:  # incompressible bytes, so that OUT outgrows the disk's free pages
        blob = os.urandom(40 * PAGE)
        writer = WARCWriter(grow, gzip=True)
        writer.write_record(
            writer.create_warc_record("https://a.example/v", "resource", payload=io.BytesIO(blob), length=len(blob))
        )
    old = os.urandom(3 * PAGE)
    disk = tmp_path / "disk"
    disk.mkdir()
    pages = -(-archive.stat().st_size // PAGE)
    prefix = _namespace_mount(disk, (pages + 3 + 2) * PAGE)  # the copy, the old OUT, and two pages more
    if prefix is None:
        pytest.skip("cannot mount a tmpfs here: needs unshare and user namespaces")
    (tmp_path / "old").write_bytes(old)
    script = (  # in the namespace ($0 the small disk, $1 tmp_path): OUT linked, filtered, then looked at
        'cp "$1/old" "$0/out" && ln "$0/out" "$0/linked" && { '
        '"$2" -c "$3" filter --db "sqlite:///$1/i.db" --workers 0 "$1/in.warc.gz" "$0/out"; echo $? > "$1/status"; '
        'cp "$0/out" "$0/linked" "$1/"; ls "$0" > "$1/listing"; }'
    )
    result = subprocess.run(
        [*prefix, "sh", "-c", script, str(disk), str(tmp_path), sys.executable, CLI[2]],
        capture_output=True,
        timeout=HANG,
        check=False,
    )
    assert (tmp_path / "status").read_text() == "1\n", result.stderr
    error = result.stderr.decode()
    assert error.startswith(f"Error: {disk}/out is rewritten in place (it has 1 other hard links), which needs ")
    assert error.endswith(": left as it was. Free some space, or write to another file\n")
    assert (tmp_path / "out").read_bytes() == old and (tmp_path / "linked").read_bytes() == old
    assert (tmp_path / "listing").read_text().split() == ["linked", "out"]  # no partial file left


def test_ctrl_c_waits_for_the_block_that_holds_it() -> None:
    done = False
    with pytest.raises(KeyboardInterrupt), signals_held():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)  # where Python would have raised KeyboardInterrupt
        done = True
    assert done and signal.getsignal(signal.SIGINT) is signal.default_int_handler
