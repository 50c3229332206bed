"""Import speed: `simhash-index import` of pre-extracted texts against fingerprinting them in one process.

    python -m benchmarks.import_speed [--texts PATH] [--copies 3] [--pages N [--chars N]] [--rounds 3]
                                      [--backend sqlite postgres] [--postgres-url URL] [--workers N]

The texts are the evaluation corpus's extracted texts (extracted_text.jsonl.gz in _common.EVAL), each
`--copies` times under distinct URLs (the later copies are exact duplicates), or with `--pages N`
N pages made from them: page i is text i mod the corpus size (its first `--chars` characters, when
given) with one word in twenty replaced by a word of its own, so that most pages are new
(near-duplicates of their source at most).

For each backend the corpus is written as a JSON lines file (url, text); then, side by side:
- fingerprint: the same texts fingerprinted in this process, one after the other
  (Fingerprinter.signature, the import's default scheme; first-call loading excluded);
- import: `simhash-index import --db URL FILE` run as a new process into a new index (SQLite
  in a temporary folder; PostgreSQL in a throwaway schema), start-up included.
The ratio import / fingerprint (wall time) is what the import's worker processes and batched
decisions buy: under 1 when fingerprinting on every core outruns the decisions' cost. The CPU
ratio (the import's process and its workers against the fingerprinting, a database server not
counted) is its overhead; on a busy machine the wall ratio follows the share of the cores it gets.
Beside them, datasketch as its users deduplicate texts: MinHash(128) of word 3-shingles (character
5-shingles for CJK text) and MinHashLSH(threshold=0.8), one process, in memory (datasketch_seconds);
the import's rate against its pages/s. "CPUs busy" is the import's CPU seconds over its wall time.
The machine's own parallel speedup is printed first: a pure-Python loop run by one process, then by
one process per CPU at once (the throughput of all of them against one's). Two virtual CPUs that
share a core give about 1.3x, not 2x, and then no import can reach half the fingerprinting's time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from simhash_index.cli.inputs import fingerprinter_for
from simhash_index.text.tokens import is_cjk_text, normalize
from simhash_index.workers import default_size

from ._common import EVAL, Timer, machine, table
from ._stores import DEFAULT_POSTGRES, postgres_schema

BACKENDS = ("sqlite", "postgres")


def corpus_texts(path: Path) -> list[str]:
    """The non-empty texts of an extracted_text.jsonl.gz file, in file order."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        texts = [json.loads(line).get("text") for line in lines]
    return [text for text in texts if isinstance(text, str) and text.strip()]


def pages(texts: list[str], *, copies: int, count: int | None, chars: int | None) -> list[tuple[str, str]]:
    """(url, text) pages: each text `copies` times, or `count` pages perturbed from the texts
    (cut to `chars` characters)."""
    if count is None:
        return [(f"https://eval.example/{copy}/{i}", text) for copy in range(copies) for i, text in enumerate(texts)]
    rng = random.Random(31)
    made = []
    for i in range(count):
        words = texts[i % len(texts)][:chars].split(" ")
        for position in rng.sample(range(len(words)), max(1, len(words) // 20)):
            words[position] = f"w{i}x{position}"
        made.append((f"https://synthetic.example/{i}", " ".join(words)))
    return made


SPIN = "import time; t = time.perf_counter(); sum(i * i for i in range(10_000_000)); print(time.perf_counter() - t)"


def parallel_speedup(processes: int) -> float:
    """The throughput of `processes` CPU-bound processes at once against one alone's."""
    alone = _spin(1)[0]
    together = _spin(processes)
    return processes * alone / max(together)


def _spin(processes: int) -> list[float]:
    running = [
        subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE, text=True) for _ in range(processes)
    ]
    return [float(process.communicate()[0]) for process in running]


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def fingerprint_seconds(texts: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of fingerprinting the texts here, one after the other."""
    fingerprinter = fingerprinter_for(None, None)
    fingerprinter.signature(texts[0])  # word lists and tables load on the first call
    cpu = cpu_seconds(resource.RUSAGE_SELF)
    with Timer() as timer:
        for text in texts:
            fingerprinter.signature(text)
    return timer.seconds, cpu_seconds(resource.RUSAGE_SELF) - cpu


def import_seconds(db: str, corpus: Path, workers: int | None) -> tuple[float, float, str]:
    """Wall and CPU seconds (its worker processes' included; a database server's not) of one
    `simhash-index import` into `db`, and the counts it printed."""
    command = [sys.executable, "-c", "from simhash_index.cli import main; main()", "import", "--db", db, str(corpus)]
    if workers is not None:
        command += ["--workers", str(workers)]
    cpu = cpu_seconds(resource.RUSAGE_CHILDREN)
    with Timer() as timer:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the import failed ({done.returncode}): {done.stderr[-2000:]}")
    return timer.seconds, cpu_seconds(resource.RUSAGE_CHILDREN) - cpu, done.stdout.strip()


def datasketch_seconds(pages: list[tuple[str, str]]) -> tuple[float, int]:
    """Wall seconds of deduplicating the pages with datasketch in this process, as its users do:
    MinHash(128) of word 3-shingles of the case-folded text (character 5-shingles of the text without
    white space for CJK text), MinHashLSH(threshold=0.8) queried, the page inserted when it has no
    match; and the pages kept."""
    from datasketch import MinHash, MinHashLSH  # the [bench] extra

    cjk = [is_cjk_text(normalize(text)) for _, text in pages]
    with Timer() as timer:
        lsh = MinHashLSH(threshold=0.8, num_perm=128)
        kept = 0
        for (url, text), chinese in zip(pages, cjk):
            if chinese:
                chars = "".join(text.split())
                shingles = [chars[i : i + 5] for i in range(max(1, len(chars) - 4))]
            else:
                words = text.casefold().split()
                shingles = [" ".join(words[i : i + 3]) for i in range(max(1, len(words) - 2))]
            sketch = MinHash(num_perm=128)
            sketch.update_batch([shingle.encode() for shingle in shingles])
            if not lsh.query(sketch):
                lsh.insert(url, sketch)
                kept += 1
    return timer.seconds, kept


@contextmanager
def new_index(backend: str, folder: Path, postgres: str) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{folder / 'import.db'}"
    else:
        with postgres_schema(postgres) as url:
            yield url


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=Path, default=EVAL / "extracted_text.jsonl.gz", help="the texts (jsonl.gz)")
    parser.add_argument("--copies", type=int, default=3, help="times each text is imported (default 3)")
    parser.add_argument("--pages", type=int, help="import this many pages perturbed from the texts instead")
    parser.add_argument("--chars", type=int, help="with --pages: cut each text to this many characters")
    parser.add_argument("--backend", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument("--postgres-url", default=os.environ.get("SIMHASH_BENCH_POSTGRES_URL", DEFAULT_POSTGRES))
    parser.add_argument("--workers", type=int, help="the import's --workers (default: one per CPU)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each backend in turn; medians (default 3)")
    return parser


def main() -> None:
    args = parser().parse_args()
    if not args.texts.exists():
        raise SystemExit(f"{args.texts} not found: give the evaluation corpus's extracted texts with --texts")
    corpus_pages = pages(corpus_texts(args.texts), copies=args.copies, count=args.pages, chars=args.chars)
    print(machine())
    cpus = default_size()
    print(f"parallel speedup of {cpus} processes at once: {parallel_speedup(cpus):.2f}x one process's throughput")
    print(f"{len(corpus_pages):,} pages, {sum(len(text) for _, text in corpus_pages) / 1e6:.1f} M characters")
    runs: dict[str, list[tuple[float, float, float, float, float]]] = {backend: [] for backend in args.backend}
    said: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="simhash-import-speed-") as folder:
        corpus = Path(folder) / "pages.jsonl"
        with corpus.open("w", encoding="utf-8") as out:
            for url, text in corpus_pages:
                out.write(json.dumps({"url": url, "text": text}) + "\n")
        for round_ in range(1, args.rounds + 1):
            for backend in args.backend:
                fingerprint, fingerprint_cpu = fingerprint_seconds([text for _, text in corpus_pages])
                peer, peer_kept = datasketch_seconds(corpus_pages)
                with new_index(backend, Path(folder), args.postgres_url) as db:
                    imported, imported_cpu, said[backend] = import_seconds(db, corpus, args.workers)
                runs[backend].append((fingerprint, fingerprint_cpu, imported, imported_cpu, peer))
                print(
                    f"round {round_}, {backend}: fingerprint {fingerprint:.1f} s, import {imported:.1f} s "
                    f"(ratio {imported / fingerprint:.2f}; {said[backend]}), datasketch {peer:.1f} s "
                    f"({peer_kept:,} kept)",
                    flush=True,
                )
    print()
    rows = []
    for backend, measured in runs.items():
        ratios = sorted(imported / fingerprint for fingerprint, _, imported, _, _ in measured)
        versus = sorted(peer / imported for _, _, imported, _, peer in measured)
        fingerprint, fingerprint_cpu, imported, imported_cpu, peer = (
            statistics.median(column) for column in zip(*measured)
        )
        rows.append(
            [
                backend,
                f"{fingerprint:.1f} ({fingerprint_cpu:.1f})",
                f"{imported:.1f} ({imported_cpu:.1f})",
                f"**{statistics.median(ratios):.2f}** ({ratios[0]:.2f}-{ratios[-1]:.2f})",
                f"{imported_cpu / fingerprint_cpu:.2f}",
                f"{imported_cpu / imported:.2f}",
                f"{len(corpus_pages) / imported:,.0f}",
                f"{len(corpus_pages) / peer:,.0f}",
                f"**{statistics.median(versus):.2f}x** ({versus[0]:.2f}-{versus[-1]:.2f})",
                said[backend],
            ]
        )
    header = ["backend", "fingerprint s (CPU)", "import s (CPU)", "import / fingerprint (range)", "CPU ratio"]
    header += ["CPUs busy", "pages/s", "datasketch pages/s", "import vs datasketch (range)", "import says"]
    print(f"Medians of {args.rounds} rounds, each backend's fingerprinting, datasketch and import one after the other:")
    print(table(header, rows))


if __name__ == "__main__":
    main()
