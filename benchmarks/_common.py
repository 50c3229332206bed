"""What the benchmarks share: timing rounds, the machine line, tables and docs/performance.md sections."""

from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs" / "performance.md"
# The evaluation corpus: $SIMHASH_BENCH_EVAL, else shared/eval beside the clone.
EVAL = Path(os.environ.get("SIMHASH_BENCH_EVAL") or REPO.parent / "shared" / "eval")


def machine() -> str:
    """One line on where a run happened: a shared machine's load explains its noise."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{cpu}, {os.cpu_count()} CPUs, load average {load}; Python {platform.python_version()}"


def load_of(machine_line: str) -> str:
    """The load average part of a machine() line."""
    return machine_line.split("load average ")[1].split(";")[0]


def command() -> str:
    """The command line of this run, as `python -m benchmarks.NAME ...`."""
    main = sys.modules["__main__"]
    name = main.__spec__.name if main.__spec__ else os.path.relpath(sys.argv[0], REPO)
    return "python -m " + " ".join(shlex.quote(a) for a in [name, *sys.argv[1:]])


def stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def median(values: list[float]) -> float:
    return statistics.median(values)


class Timer:
    """Seconds of a `with` block."""

    def __enter__(self) -> Timer:
        self.began = time.perf_counter()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.seconds = time.perf_counter() - self.began


def table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table; it reads fine in a terminal too."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def add_write(parser: argparse.ArgumentParser, where: Path = DOCS) -> None:
    """The one flag that lets a benchmark edit the docs: --write, off by default."""
    parser.add_argument(
        "--write", action="store_true", help=f"replace this benchmark's section of {where.relative_to(REPO)}"
    )


def write_section(name: str, body: str, path: Path = DOCS) -> None:
    """Replace this benchmark's section of the page (between its `<!-- NAME: start -->` and
    `<!-- NAME: end -->` markers), keeping the rest; a page without the markers is left alone:
    where a new section goes is the writer's choice, not the benchmark's."""
    start, end = f"<!-- {name}: start -->", f"<!-- {name}: end -->"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end) + r"\n?", re.DOTALL)
    if not pattern.search(text):
        shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
        raise SystemExit(
            f"{shown} has no {start} ... {end} section: add the two markers where the section belongs, "
            "then run again with --write"
        )
    path.write_text(pattern.sub(lambda _: f"{start}\n{body.strip()}\n{end}\n", text), encoding="utf-8")
