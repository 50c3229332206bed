"""Fingerprint speed: our simhash against the `simhash` package and trafilatura's Simhash, same tokens.

    python -m benchmarks.fingerprint_speed [--texts PATH] [--rounds 7] [--no-write]
                                           [--fingerprinter 'LABEL;key=value;...' ...]

The texts are the evaluation corpus's extracted texts (../shared/eval/extracted_text.jsonl.gz),
or generated Zipf-distributed text when that file is absent. Each text is normalised and
tokenised once with simhash_index.text.tokens.words; every implementation then fingerprints the
same token lists:

- ours: simhash_index.simhash(tokens)  (xxHash64, per-token hash cache)
- simhash package: simhash.Simhash(tokens).value  (md5 per token, no cache)
- trafilatura: trafilatura.deduplication.Simhash(" ".join(tokens)).hash. Its constructor takes a
  text and tokenises it itself (whitespace split, punctuation strip, and only the tokens longer
  than 4 characters when there are enough), so it is fed the same tokens joined by spaces and
  its own tokenising and sampling count in its time.

With --fingerprinter (repeatable; settings as in benchmarks/selectivity.py's --config), the whole
text -> Signature path is timed too (normalising, tokenising, weighting, simhash, sketch), per
Fingerprinter configuration, in texts/s and input tokens/s; its first-call cost (loading word lists
and IDF tables) is timed apart. That section is printed only.

Tokens/s are input tokens over wall time. The implementations run in interleaved rounds (a shared
machine's load hits them alike); the first round is "cold" (our cache and trafilatura's emptied),
the others "warm"; figures are medians. Writes its section of docs/performance.md.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trafilatura import deduplication as trafilatura_dedup

from benchmarks._common import EVAL, Timer, command, machine, median, stamp, table, write_section
from simhash_index import simhash
from simhash_index.text.tokens import normalize, words

simhash_module = importlib.import_module(
    "simhash_index.fingerprinting.simhash"
)  # the package exports a function of that name

DEFAULT_TEXTS = EVAL / "extracted_text.jsonl.gz"
TARGET_VS_PACKAGE = 10.0


def corpus_texts(path: Path) -> tuple[list[str], str]:
    """The corpus's texts, or generated ones (and a note saying which)."""
    if path.is_file():
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            texts = [json.loads(line).get("text") or "" for line in lines if line.strip()]
        return texts, f"{len(texts)} extracted texts from {path.name}"
    return generated_texts(), f"generated text ({path} not found)"


def generated_texts(count: int = 1500, seed: int = 7) -> list[str]:
    """Zipf-distributed words from a made-up vocabulary, about 900 words a text."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = ["".join(rng.choices(letters, k=rng.randint(2, 11))) for _ in range(30_000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    return [" ".join(rng.choices(vocabulary, weights, k=int(rng.lognormvariate(6.5, 0.6)))) for _ in range(count)]


def clear_caches() -> None:
    simhash_module._DIGESTS.clear()
    trafilatura_dedup._vector_to_add.cache_clear()


def one_pass(fingerprint: Callable[[Any], object], inputs: list[Any]) -> float:
    with Timer() as timer:
        for item in inputs:
            fingerprint(item)
    return timer.seconds


def fingerprinter_rounds(specs: list[str], texts: list[str], total: int, rounds: int) -> str:
    """Time Fingerprinter.signature over the texts for each configuration, interleaved."""
    from benchmarks.selectivity import parse_config
    from simhash_index import Fingerprinter
    from simhash_index.text.tokens import _SEGMENTED

    configs = dict(parse_config(spec) for spec in specs)
    setup: dict[str, float] = {}
    subjects = {}
    for label, kwargs in configs.items():
        with Timer() as timer:
            fingerprinter = Fingerprinter(**kwargs)
            fingerprinter.signature("warm up the word lists and tables")
        setup[label], subjects[label] = timer.seconds, fingerprinter
    seconds: dict[str, list[float]] = {label: [] for label in subjects}
    order = list(subjects)
    for round_ in range(rounds):
        random.Random(round_).shuffle(order)
        for label in order:
            if round_ == 0:
                clear_caches()
                _SEGMENTED.clear()
            seconds[label].append(one_pass(subjects[label].signature, texts))
    rows = [
        [
            label,
            f"{len(texts) / median(s[1:]):,.0f}",
            f"{total / median(s[1:]):,.0f}",
            f"{total / s[0]:,.0f}",
            f"{setup[label]:.2f}",
        ]
        for label, s in seconds.items()
    ]
    return table(["Fingerprinter", "texts/s (warm)", "tokens/s (warm)", "tokens/s (cold)", "first call (s)"], rows)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fingerprint_speed", description=__doc__.splitlines()[0])
    p.add_argument("--texts", type=Path, default=DEFAULT_TEXTS, help="JSON lines (gzip) with a 'text' field")
    p.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds (the first is cold)")
    p.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md alone")
    p.add_argument(
        "--fingerprinter",
        action="append",
        default=[],
        help="also time Fingerprinter.signature with these settings: 'LABEL;key=value;...' (repeatable)",
    )
    p.add_argument("--only-fingerprinter", action="store_true", help="skip the simhash comparison")
    return p


def main() -> None:
    p = parser()
    args = p.parse_args()
    if args.rounds < 2:
        p.error("--rounds must be at least 2: one cold round and one warm")

    texts, source = corpus_texts(args.texts)
    token_lists = [tokens for tokens in (words(normalize(text)) for text in texts) if tokens]
    joined = [" ".join(tokens) for tokens in token_lists]
    total = sum(map(len, token_lists))
    print(f"{source}: {len(token_lists)} token lists, {total:,} tokens", flush=True)
    if args.fingerprinter:
        print("\n" + fingerprinter_rounds(args.fingerprinter, texts, total, args.rounds) + "\n", flush=True)
    if args.only_fingerprinter:
        return

    import simhash as simhash_package  # type: ignore[import-untyped]  # the `simhash` package from PyPI ([bench] extra)

    subjects: dict[str, tuple[Callable[[Any], object], list[Any]]] = {
        "simhash_index.simhash": (simhash, token_lists),
        "simhash.Simhash (PyPI simhash)": (lambda tokens: simhash_package.Simhash(tokens).value, token_lists),
        "trafilatura Simhash (joined tokens)": (lambda text: trafilatura_dedup.Simhash(text).hash, joined),
    }
    seconds: dict[str, list[float]] = {name: [] for name in subjects}
    order = list(subjects)
    for round_ in range(args.rounds):
        random.Random(round_).shuffle(order)
        for name in order:
            if round_ == 0:
                clear_caches()
            fingerprint, inputs = subjects[name]
            seconds[name].append(one_pass(fingerprint, inputs))
        print(
            f"round {round_ + 1}/{args.rounds}: "
            + ", ".join(f"{n.split()[0]} {seconds[n][-1]:.2f} s" for n in subjects),
            flush=True,
        )

    cold = {name: total / s[0] for name, s in seconds.items()}
    warm = {name: total / median(s[1:]) for name, s in seconds.items()}
    ours, package, trafilatura = subjects
    rows = [
        [
            name,
            f"{warm[name]:,.0f}",
            f"{cold[name]:,.0f}",
            f"{warm[ours] / warm[name]:.1f}x",
            f"{cold[ours] / cold[name]:.1f}x",
        ]
        for name in subjects
    ]
    result = table(["implementation", "tokens/s (warm)", "tokens/s (cold)", "ours is (warm)", "ours is (cold)"], rows)
    vs_package, vs_trafilatura = warm[ours] / warm[package], warm[ours] / warm[trafilatura]
    verdict = (
        f"ours vs simhash package: {vs_package:.1f}x (target >= {TARGET_VS_PACKAGE:.0f}x: "
        f"{'met' if vs_package >= TARGET_VS_PACKAGE else 'MISSED'}); "
        f"vs trafilatura: {vs_trafilatura:.1f}x (target > 1x: {'met' if vs_trafilatura > 1 else 'MISSED'})"
    )
    print("\n" + result + "\n\n" + verdict)
    if not args.no_write:
        write_section(
            "fingerprint_speed",
            f"""
## Fingerprint speed

`{command()}` — {stamp()}; {machine()}.

Input: {source}, normalised and tokenised once with `simhash_index.text.tokens.words`:
{len(token_lists)} token lists, {total:,} tokens. Every implementation fingerprints the same token
lists; trafilatura's `Simhash` takes a text and tokenises it itself, so it gets the tokens joined by
spaces, and its own tokenising (and its sampling of tokens longer than 4 characters) is in its time.
Tokens/s count input tokens. {args.rounds} interleaved rounds: cold = the first (hash caches
emptied), warm = the median of the rest.

{result}

{verdict}
""",
        )
        print(f"\nwrote {Path('docs/performance.md')}")


if __name__ == "__main__":
    main()
