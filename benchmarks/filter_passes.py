"""What `filter` pays for deciding every page before it writes: on a generated archive, `import`
(one pass, deciding) beside `filter` (the same pass, then a second one that reads the archive
again and writes OUT), without a policy and with `--prefer newest`; wall time and the peak RSS of
the process tree.

    python -m benchmarks.filter_passes [--size-mb 1000] [--pages 4000] [--workers 2] [--write]

The archive (gzip per record) holds `--pages` HTML responses, each with its request (a quarter
near copies of another page, a tenth captured twice under the same URL), and binary responses
(incompressible, as images are) up to `--size-mb`.
"""

from __future__ import annotations

import argparse
import io
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from ._common import Timer, add_write, command, machine, stamp, table, write_section
from ._rss import Sampler

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "de", "ba", "po", "gu", "fen", "tor", "lin", "mar"]
BLOB = 256 * 1024  # bytes of each binary response


def words(rng: random.Random, count: int) -> list[str]:
    return ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3))) for _ in range(count)]


def article(seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(words(rng, rng.randint(60, 110))).capitalize() + "." for _ in range(8)]


def html(title: str, paragraphs: list[str], date: str) -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f'<meta property="article:modified_time" content="{date}T12:00:00"></head><body>'
        f"<main><article><h1>{title}</h1>{body}</article></main></body></html>"
    ).encode()


def generate(path: Path, *, size: int, pages: int, seed: int = 7) -> tuple[int, int]:
    """Write the archive; returns (HTML responses, binary responses)."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    rng = random.Random(seed)
    blobs_wanted = max(0, size - pages * 4_000) // BLOB  # a page is about 4 kB gzipped, request included
    blobs = 0
    with path.open("wb") as stream:
        writer = WARCWriter(stream, gzip=True)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "benchmarks.filter_passes"}))

        def response(url: str, payload: bytes, kind: str, day: int) -> None:
            request = writer.create_warc_record(
                url, "request", http_headers=StatusAndHeaders("GET / HTTP/1.1", [], is_http_request=True)
            )
            http = StatusAndHeaders("200 OK", [("Content-Type", kind)], protocol="HTTP/1.1")
            record = writer.create_warc_record(
                url, "response", payload=io.BytesIO(payload), length=len(payload), http_headers=http
            )
            record.rec_headers.replace_header("WARC-Date", f"2024-01-{day:02d}T10:00:00Z")
            record.rec_headers.add_header("WARC-Concurrent-To", request.rec_headers.get_header("WARC-Record-ID"))
            writer.write_record(request)
            writer.write_record(record)

        for n in range(pages):
            day = 1 + n * 27 // pages
            if n % 10 == 9:  # a page captured again, later
                url, text = f"https://site.example/p/{n - 5}", article(n - 5) + article(n)[:1]
            elif n % 4 == 3:  # a near copy of an earlier page
                url, text = f"https://mirror.example/p/{n - 3}", article(n - 3)[:-1]
            else:
                url, text = f"https://site.example/p/{n}", article(n)
            response(url, html(f"Page {n}", text, f"2023-12-{1 + n % 28:02d}"), "text/html; charset=utf-8", day)
            while blobs < blobs_wanted * (n + 1) // pages:  # spread among the pages
                response(f"https://site.example/img/{blobs}.jpg", rng.randbytes(BLOB), "image/jpeg", day)
                blobs += 1
    return pages, blobs


# `simhash-index` with the time at which filter's decisions begin and end, on stderr
TIMED = """
import sys, time
from simhash_index.cli import filtering, main
began, marks = time.perf_counter(), {}
decide, write = filtering.deduplicate_inputs, filtering.write_survivors
def deciding(*args, **options):
    marks["decide"] = time.perf_counter()
    return decide(*args, **options)
def writing(*args, **options):
    marks["write"] = time.perf_counter()
    return write(*args, **options)
filtering.deduplicate_inputs, filtering.write_survivors = deciding, writing
try:
    main()
finally:
    ended = time.perf_counter()
    if marks:
        phases = (marks["decide"] - began, marks["write"] - marks["decide"], ended - marks["write"])
        print("phases", *phases, file=sys.stderr)
"""


def run(args: list[str]) -> tuple[float, float, list[float], str]:
    """(seconds, peak RSS of the process tree in MB, filter's phases in seconds: before its
    first pass, the first pass (deciding), the second (writing); the summary line) of one command."""
    with Timer() as timer:
        process = subprocess.Popen(
            [sys.executable, "-c", TIMED, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        sampler = Sampler(process)
        out, err = process.communicate()
        sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {err}")
    phases = [float(x) for line in err.splitlines() if line.startswith("phases ") for x in line.split()[1:]]
    summary = next(line for line in (out + err).splitlines() if line.startswith(("kept", "read", "dry")))
    return timer.seconds, sampler.peak[1], phases, summary


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.filter_passes", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--size-mb", type=int, default=1000, help="the archive's size")
    p.add_argument("--pages", type=int, default=4000, help="HTML responses in it")
    p.add_argument("--workers", type=int, default=2)
    add_write(p)
    return p


def main() -> None:
    args = parser().parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        archive = folder / "in.warc.gz"
        pages, blobs = generate(archive, size=args.size_mb * 1_000_000, pages=args.pages)
        size = archive.stat().st_size
        runs = [
            ("`import IN`", "import", ()),
            ("`import --prefer newest IN`", "import", ("--prefer", "newest")),
            ("`filter IN OUT`", "filter", ()),
            ("`filter --prefer newest IN OUT`", "filter", ("--prefer", "newest")),
        ]
        rows, shares = [], []
        for n, (name, verb, options) in enumerate(runs):
            db = f"sqlite:///{folder / f'{n}.db'}"
            out = [str(folder / "out.warc.gz")] if verb == "filter" else []
            took, peak, phases, summary = run(
                [verb, "--db", db, "--workers", str(args.workers), *options, str(archive), *out]
            )
            shown = [f"{x:.2f} s" for x in phases[1:]] if phases else ["", ""]
            rows.append([name, *shown, f"{took:.1f} s", f"{peak:,.0f} MB", summary])
            if phases:
                shares.append(f"{phases[2] / took:.1%}")
            (folder / "out.warc.gz").unlink(missing_ok=True)
    body = (
        "## Filter's second pass\n\n"
        f"A generated archive of {size / 1e6:,.0f} MB (gzip per record): {pages:,} HTML responses (a quarter near "
        f"copies, a tenth captured again) and {blobs:,} binary responses of {BLOB // 1024} kB, each with its request; "
        f"`--workers {args.workers}`, SQLite, a new index each run, the archive in the page cache. `filter` "
        "decides every page as `import` does (its first pass, keeping each record's offset), then reads the "
        "archive again record by record to write OUT (its second pass); `import` is the first pass alone. "
        "The total includes starting Python and the workers. Peak RSS is the process tree's (the workers "
        "included). One run each. The second pass copies records without decompressing them: "
        f"{' and '.join(shares)} of filter's time, without a policy and with one.\n\n"
        + table(["command", "first pass", "second pass", "total", "peak RSS", "summary"], rows)
        + f"\n\n`{command()}`, {stamp()}; {machine()}\n"
    )
    print(body)
    if args.write:
        write_section("filter_passes", body)


if __name__ == "__main__":
    main()
