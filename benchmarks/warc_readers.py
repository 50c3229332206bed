"""fastwarc against warcio on a real archive: `wget --warc-file` crawls the evaluation
corpus's site served on 127.0.0.1, then each library reads every record and every HTML
payload, and `simhash-index import` reads the archive end to end (with warcio, its reader).

    python -m benchmarks.warc_readers [--eval ../shared/eval] [--rounds 3] [--write]

Needs wget, and the [bench] extra (fastwarc, warcio).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from ._common import EVAL, Timer, add_write, command, machine, median, stamp, table, write_section
from .crawl_eval import serve


def crawl(site: Path, workdir: Path) -> Path:
    """A WARC of the site, as `wget --warc-file` writes it (gzip per record)."""
    server, start = serve(site)
    try:
        subprocess.run(
            [
                "wget",
                "-q",
                "-r",
                "-l",
                "2",
                "-P",
                str(workdir / "mirror"),
                "--warc-file",
                str(workdir / "crawl"),
                start,
            ],
            check=False,  # wget exits 8 when some links are missing, as the corpus's often are
        )
    finally:
        server.shutdown()
    return workdir / "crawl.warc.gz"


def with_fastwarc(path: Path) -> tuple[int, int]:
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    records = payload = 0
    with path.open("rb") as stream:
        for record in ArchiveIterator(stream, record_types=WarcRecordType.any_type, parse_http=True):
            records += 1
            if record.record_type == WarcRecordType.response and "html" in (record.http_content_type or ""):
                payload += len(record.reader.read())
    return records, payload


def with_warcio(path: Path) -> tuple[int, int]:
    from warcio.archiveiterator import ArchiveIterator

    records = payload = 0
    with path.open("rb") as stream:
        for record in ArchiveIterator(stream, arc2warc=True):
            records += 1
            if record.rec_type == "response" and "html" in (record.http_headers.get_header("Content-Type") or ""):
                payload += len(record.content_stream().read())
    return records, payload


def timed(read: Callable[[Path], tuple[int, int]], path: Path, rounds: int) -> tuple[float, tuple[int, int]]:
    seconds, found = [], (0, 0)
    for _ in range(rounds):
        with Timer() as timer:
            found = read(path)
        seconds.append(timer.seconds)
    return median(seconds), found


def import_seconds(archive: Path, workdir: Path) -> float:
    db = workdir / "import.db"
    with Timer() as timer:
        subprocess.run(
            [
                shutil.which("simhash-index") or str(Path(sys.executable).with_name("simhash-index")),
                "import",
                "--db",
                f"sqlite:///{db}",
                "--workers",
                "0",
                str(archive),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return timer.seconds


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.warc_readers", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--eval", type=Path, default=EVAL, help="the evaluation corpus (its site/ is crawled)")
    p.add_argument("--rounds", type=int, default=3)
    add_write(p)
    return p


def main() -> None:
    p = parser()
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        archive = crawl(args.eval / "site", Path(tmp))
        size = archive.stat().st_size
        rows, found = [], set()
        for name, read in (("fastwarc", with_fastwarc), ("warcio", with_warcio)):
            seconds, counted = timed(read, archive, args.rounds)
            found.add(counted)
            rows.append([name, f"{seconds:.2f} s", f"{counted[0] / seconds:,.0f}"])
        if len(found) != 1:
            raise SystemExit(f"the libraries disagree on the archive: {found}")
        ((records, payload),) = found
        whole = import_seconds(archive, Path(tmp))
    rows.append(["`simhash-index import --workers 0` (warcio)", f"{whole:.1f} s", f"{records / whole:,.0f}"])
    body = (
        "## WARC readers\n\n"
        f"`wget --warc-file` crawling the evaluation corpus's site: {records:,} records in {size / 1e6:.1f} MB "
        f"(gzip per record), {payload / 1e6:.1f} MB of HTML payloads. Each library reads every record and every "
        f"HTML payload (decoded); median of {args.rounds} rounds. The import extracts and fingerprints each page "
        "in this process.\n\n"
        + table(["reader", "time", "records/s"], rows)
        + f"\n\n`{command()}`, {stamp()}; {machine()}\n"
    )
    print(body)
    if args.write:
        write_section("warc_readers", body)


if __name__ == "__main__":
    main()
