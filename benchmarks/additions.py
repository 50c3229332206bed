"""How well the rule tells what a page adds (fingerprinting/additions.py), on real texts.

Takes real extracted texts (the evaluation corpus's, `--texts`), makes edits of known size to
each (a passage of another page inserted, words renamed, a passage removed, a passage swapped
for a shorter one of another page) and compares, per edit, the words the rule estimates the
edited page adds to the original (from the original's bitmap) with the words it truly adds (its
words none of whose shingles the original holds, from the shingles themselves), and how often
the rule keeps the edited page (`Added.reaches`: may it add SIMHASH_ADDED_WORDS?).

    python -m benchmarks.additions [--texts PATH] [--pages 200] [--threshold 25]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics
from collections.abc import Callable
from pathlib import Path

import numpy as np

from simhash_index import defaults
from simhash_index.fingerprinting.additions import added
from simhash_index.fingerprinting.fingerprinter import DEFAULT
from simhash_index.text.tokens import shingle_list

from ._common import EVAL

Edit = Callable[[list[str], list[str], random.Random], list[str]]


def inserted(count: int) -> Edit:
    def edit(words: list[str], other: list[str], rng: random.Random) -> list[str]:
        start, at = rng.randrange(len(other) - count), rng.randrange(len(words))
        return [*words[:at], *other[start : start + count], *words[at:]]

    return edit


def renamed(count: int) -> Edit:
    def edit(words: list[str], other: list[str], rng: random.Random) -> list[str]:
        changed = list(words)
        for at in rng.sample(range(len(words)), count):
            changed[at] = f"renamed{at}"
        return changed

    return edit


def removed(count: int) -> Edit:
    def edit(words: list[str], other: list[str], rng: random.Random) -> list[str]:
        at = rng.randrange(len(words) - count)
        return [*words[:at], *words[at + count :]]

    return edit


def swapped(count: int, out: int) -> Edit:
    def edit(words: list[str], other: list[str], rng: random.Random) -> list[str]:
        start, at = rng.randrange(len(other) - count), rng.randrange(len(words) - out)
        return [*words[:at], *other[start : start + count], *words[at + out :]]

    return edit


EDITS: dict[str, Edit] = {
    "nothing": inserted(0),
    "10 words inserted": inserted(10),
    "25 words inserted": inserted(25),
    "40 words inserted": inserted(40),
    "200 words inserted": inserted(200),
    "5 words renamed": renamed(5),
    "15 words renamed": renamed(15),
    "30 words renamed": renamed(30),
    "100 words removed": removed(100),
    "30 words for 45": swapped(30, 45),
}


def truly_new(page: str, original: str) -> int:
    """The words of `page` none of whose shingles `original` has: what the rule estimates."""
    from simhash_index.fingerprinting.additions import _new_tokens

    held = set(shingle_list(DEFAULT.normalize(original)))
    shingles = list(shingle_list(DEFAULT.normalize(page)))
    return _new_tokens(np.array([shingle not in held for shingle in shingles]), 3)


def texts(path: Path, pages: int, rng: random.Random) -> list[str]:
    """Extracted texts of at least 300 words (not Chinese: the edits are of words)."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        found = [row["text"] for row in map(json.loads, lines) if row.get("text")]
    found = [text for text in found if len(text.split()) >= 300 and not any("\u4e00" <= c <= "\u9fff" for c in text)]
    rng.shuffle(found)
    return found[:pages]


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    found.add_argument("--texts", type=Path, default=EVAL / "extracted_text.jsonl.gz")
    found.add_argument("--pages", type=int, default=200)
    found.add_argument("--threshold", type=int, default=defaults.ADDED_WORDS)
    return found


def main() -> None:
    args = parser().parse_args()
    rng = random.Random(1)
    corpus = texts(args.texts, args.pages, rng)
    print(f"{len(corpus)} texts of {args.texts}; threshold {args.threshold} words")
    threshold = args.threshold
    print(
        "| edit | truly new (median) | estimated (median) | estimate - truth (p5, p95) "
        f"| kept: new >= {threshold} | kept: new <= 3 |"
    )
    print("|---|---|---|---|---|---|")
    for name, edit in EDITS.items():
        truths, estimates, kept = [], [], []
        for text in corpus:
            words, other = text.split(), rng.choice(corpus).split()
            page = " ".join(edit(words, other, rng))
            stored, checked = DEFAULT.signature(text), DEFAULT.signature(page)
            assert stored is not None and checked is not None and checked.shingled and stored.bloom
            found = added(checked.shingled, stored.bloom)
            truths.append(truly_new(page, text))
            estimates.append(found.estimate)
            kept.append(found.reaches(args.threshold))
        errors = sorted(e - t for e, t in zip(estimates, truths))
        p5, p95 = errors[len(errors) // 20], errors[-1 - len(errors) // 20]
        adding = [k for k, t in zip(kept, truths) if t >= args.threshold]
        nothing = [k for k, t in zip(kept, truths) if t <= 3]
        print(
            f"| {name} | {statistics.median(truths):g} | {statistics.median(estimates):g} | {p5}, {p95} "
            f"| {share(adding)} | {share(nothing)} |"
        )


def share(kept: list[bool]) -> str:
    return f"{sum(kept)} of {len(kept)}" if kept else "-"


if __name__ == "__main__":
    main()
