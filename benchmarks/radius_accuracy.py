"""Strict precision and recall of each search radius, per language, by `simhash-index import`.

    python -m benchmarks.radius_accuracy --corpus ../shared/eval --corpus /work/corpora/multilingual
                                         [--radii 6,7,8] [--shuffles 3]

Each corpus (in ../shared/eval's format) is deduplicated by the library itself: its extracted
texts (extracted_text.jsonl.gz, the texts its truth is computed on) are written as JSON lines
({"url": path, "text": text}) in an order and imported (`simhash-index import --max-distance R`)
into a new SQLite index, every other setting at its default; the pages kept are the corpus's
pages less those the duplicates log names. No crawl and no extraction: the rule, the
fingerprints and the sketches are the ones a crawl uses, on the same texts. Orders: the
corpus's, reversed, and --shuffles seeded shuffles; score.py (the corpus's own, else
../shared/eval's) scores each; the table gives per language the worst strict precision,
the worst precision (gray-band drops counted wrong), the worst and the mean recall over the
orders, and the most harmful drops.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._common import EVAL, table
from benchmarks.selectivity import Corpus, load_corpus, orders

COMMAND = Path(sys.executable).with_name("simhash-index")  # the console script beside this Python


def imported(corpus: Corpus, order: list[int], radius: int, workdir: Path) -> set[str]:
    """The pages an import in this order keeps at this radius."""
    from simhash_index import open_index

    lines = workdir / "pages.jsonl"
    with lines.open("w", encoding="utf-8") as out:
        for i in order:
            out.write(json.dumps({"url": corpus.paths[i], "text": corpus.texts[i]}, ensure_ascii=False) + "\n")
    database = workdir / f"r{radius}.db"
    database.unlink(missing_ok=True)
    url = f"sqlite:///{database}"
    subprocess.run(
        [str(COMMAND), "import", "--db", url, "--max-distance", str(radius), str(lines)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    index = open_index(url, read_only=True, scheme=None)
    try:
        dropped = {duplicate.key for duplicate in index.duplicates()}
    finally:
        index.close()
    return set(corpus.paths) - dropped


def accuracy(corpus: Corpus, radius: int, shuffles: int, workdir: Path) -> dict[str, dict[str, float]]:
    """Per language over the orders: worst strict precision, worst and mean recall, most harmful drops."""
    pages = [{"path": p, "lang": lang} for p, lang in zip(corpus.paths, corpus.langs)]
    every = set(corpus.paths)
    results = []
    for order in orders(len(corpus.paths), shuffles).values():
        kept = imported(corpus, order, radius, workdir)
        results.append(corpus.scorer.score(pages, corpus.truth, corpus.gray, kept, every, 0.9))
    summary = {}
    for lang in [*corpus.languages, "all"]:
        rows = [r[lang] for r in results]
        summary[lang] = {
            "strict": min(r["precision_strict"] for r in rows),
            "precision": min(r["precision"] for r in rows),
            "recall": min(r["recall"] for r in rows),
            "mean_recall": sum(r["recall"] for r in rows) / len(rows),
            "harmful": max(r["harmful_drops"] for r in rows),
            "pages": rows[0]["pages"],
        }
    return summary


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.radius_accuracy", description=__doc__.splitlines()[0])
    p.add_argument("--corpus", type=Path, action="append", help="a corpus directory (repeatable); default the eval")
    p.add_argument("--radii", default="6,7,8", help="search radii, comma-separated")
    p.add_argument("--shuffles", type=int, default=3, help="seeded shuffled orders beside corpus and reversed order")
    p.add_argument("--json", type=Path, help="write the figures as JSON here")
    return p


def main() -> None:
    args = parser().parse_args()
    radii = [int(r) for r in args.radii.split(",")]
    rows: list[list[str]] = []
    figures: dict[str, Any] = {}
    for directory in args.corpus or [EVAL]:
        corpus = load_corpus(directory)
        for radius in radii:
            with tempfile.TemporaryDirectory(prefix="radius-accuracy-") as tmp:
                summary = accuracy(corpus, radius, args.shuffles, Path(tmp))
            figures[f"{directory} r{radius}"] = summary
            for lang, s in summary.items():
                rows.append(
                    [
                        directory.name,
                        lang,
                        str(s["pages"]),
                        str(radius),
                        f"{s['strict']:.4f}",
                        f"{s['precision']:.4f}",
                        f"{s['recall']:.4f}",
                        f"{s['mean_recall']:.4f}",
                        str(s["harmful"]),
                    ]
                )
            print(f"{directory.name} radius {radius}: done", file=sys.stderr, flush=True)
    header = [
        "corpus",
        "lang",
        "pages",
        "radius",
        "strict precision (worst)",
        "precision (worst)",
        "recall (worst)",
        "recall (mean)",
        "harmful drops (most)",
    ]
    print(table(header, rows))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
