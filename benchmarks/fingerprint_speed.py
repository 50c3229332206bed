"""Fingerprint speed: our simhash against the `simhash` package and trafilatura's Simhash, same tokens.

    python -m benchmarks.fingerprint_speed [--texts PATH] [--rounds 7] [--write]
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

from benchmarks._common import DOCS, EVAL, REPO, Timer, add_write, command, machine, median, stamp, table, write_section
from simhash_index import simhash
from simhash_index.text.tokens import normalize, words

simhash_module = importlib.import_module(
    "simhash_index.fingerprinting.simhash"
)  # the package exports a function of that name

DEFAULT_TEXTS = EVAL / "extracted_text.jsonl.gz"
TARGET_VS_PACKAGE = 10.0
TARGET_VS_DATASKETCH = 1.5


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


def datasketch_peers() -> dict[str, Callable[[str], object]]:
    """What a datasketch user writes for near-duplicates, for English text (word 3-shingles of the
    case-folded text) and for Chinese (character 5-shingles of the text without white space)."""
    from datasketch import MinHash  # the [bench] extra

    def words(text: str) -> object:
        found = text.casefold().split()
        sketch = MinHash(num_perm=128)
        sketch.update_batch([" ".join(found[i : i + 3]).encode() for i in range(max(1, len(found) - 2))])
        return sketch

    def chars(text: str) -> object:
        found = "".join(text.split())
        sketch = MinHash(num_perm=128)
        sketch.update_batch([found[i : i + 5].encode() for i in range(max(1, len(found) - 4))])
        return sketch

    return {"English": words, "Chinese": chars}


def versus_datasketch(texts: list[str], rounds: int) -> tuple[str, list[str]]:
    """Fingerprinter.signature (the defaults) against datasketch's MinHash(128).update_batch on the same
    texts, the English (word-shingled) and Chinese (character-shingled) ones apart: a table and a verdict
    a group. Every pass starts with our caches emptied: one pass over a corpus, as an import makes."""
    from simhash_index import Fingerprinter
    from simhash_index.text.tokens import _SEGMENTED, is_cjk_text

    fingerprinter = Fingerprinter()
    groups = {"English": [t for t in texts if not is_cjk_text(normalize(t))]}
    groups["Chinese"] = [t for t in texts if is_cjk_text(normalize(t))]
    peers = datasketch_peers()
    for name, group in groups.items():  # first calls: jieba's dictionary, tables, datasketch's imports
        for text in group[:20]:
            fingerprinter.signature(text)
            peers[name](text)
    rows, verdicts = [], []
    for name, group in groups.items():
        ours: list[float] = []
        theirs: list[float] = []
        for round_ in range(rounds):
            order = [("ours", fingerprinter.signature), ("datasketch", peers[name])]
            random.Random(round_).shuffle(order)
            for who, fingerprint in order:
                if who == "ours":
                    clear_caches()
                    _SEGMENTED.clear()
                (ours if who == "ours" else theirs).append(one_pass(fingerprint, group))
        ratios = sorted(d / o for o, d in zip(ours, theirs))
        chars = sum(map(len, group))
        rows.append(
            [
                name,
                f"{len(group):,} ({chars / len(group):,.0f} chars)",
                f"{len(group) / median(ours):,.0f} ({len(group) / max(ours):,.0f}-{len(group) / min(ours):,.0f})",
                f"{len(group) / median(theirs):,.0f} ({len(group) / max(theirs):,.0f}-{len(group) / min(theirs):,.0f})",
                f"**{median(ratios):.2f}x** ({ratios[0]:.2f}-{ratios[-1]:.2f})",
            ]
        )
        met = "met" if median(ratios) >= TARGET_VS_DATASKETCH else "MISSED"
        target = f"target >= {TARGET_VS_DATASKETCH}x: {met}"
        verdicts.append(f"{name}: signature {median(ratios):.2f}x datasketch's texts/s ({target})")
    header = ["texts", "count (mean size)", "signature texts/s (range)", "datasketch texts/s (range)", "ratio (range)"]
    return table(header, rows), verdicts


def jieba_share(chinese: list[str]) -> str:
    """The Han segmenter's share of a pass over the Chinese texts (segmentation cache emptied first),
    and on the same runs jieba's own lcut and the segmenters that promise its words (rjieba,
    jieba-fast-dat, when installed)."""
    from simhash_index import Fingerprinter
    from simhash_index.text import tokens

    fingerprinter = Fingerprinter()
    cut, runs = tokens._SEGMENTED.cut, []

    def timed(run: str) -> tuple[str, ...]:
        runs.append(run)
        return cut(run)

    clear_caches()
    tokens._SEGMENTED.clear()
    tokens._SEGMENTED.cut = timed
    try:
        whole = one_pass(fingerprinter.signature, chinese)
    finally:
        tokens._SEGMENTED.cut = cut
    han = [run for run in runs if tokens.has_han(run)]
    ours = tokens._han_cut()
    segmented = one_pass(ours, han)
    jieba = importlib.import_module("jieba")
    words = [jieba.lcut(run, HMM=True) for run in han]
    lines = [
        f"segmenter: {segmented:.2f} s of the {whole:.2f} s pass over the Chinese texts ({segmented / whole:.0%}), "
        f"{len(han):,} Han runs not yet cut ({sum(map(len, han)):,} characters)"
    ]
    peers = {"jieba.lcut": ("jieba", lambda m: lambda run: m.lcut(run, HMM=True))}
    peers["rjieba"] = ("rjieba", lambda m: lambda run: m.cut(run, hmm=True))
    peers["jieba-fast-dat"] = ("jieba_fast_dat", lambda m: lambda run: m.lcut(run, HMM=True))
    for name, (module, cutter) in peers.items():
        try:
            peer = cutter(importlib.import_module(module))
        except ImportError:
            lines.append(f"{name}: not installed")
            continue
        peer(han[0])  # its dictionary loads on the first call
        seconds = one_pass(peer, han)
        differ = sum(peer(run) != expected for run, expected in zip(han, words))
        speed = f"{segmented / seconds:.2f}x the segmenter's speed"
        lines.append(f"{name}: {seconds:.2f} s ({speed}); {differ:,} runs cut otherwise")
    return "\n".join(lines)


def signature_section(source: str, rounds: int, versus: str, verdicts: list[str]) -> str:
    return f"""
## Signature speed against datasketch

`{command()}` — {stamp()}; {machine()}.

Input: {source}. `Fingerprinter.signature` with the defaults (normalising, jieba for Chinese, stop
words, the simhash, and the 256-slot MinHash sketch over word 3-shingles, character 5-shingles for
Chinese text) against what a datasketch user writes for near-duplicates: word 3-shingles of the
case-folded text (character 5-shingles of the text without white space for the Chinese texts),
encoded, into `MinHash(num_perm=128).update_batch`. One process; English and Chinese (told by
`tokens.is_cjk_text`) apart. {rounds} rounds, the two in a shuffled order in each; each of our passes
starts with the hash and segmentation caches emptied (one pass over a corpus). Medians, the range
over the rounds, and the ratio paired within each round.

{versus}

{chr(10).join("- " + verdict for verdict in verdicts)}
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fingerprint_speed", description=__doc__.splitlines()[0])
    p.add_argument("--texts", type=Path, default=DEFAULT_TEXTS, help="JSON lines (gzip) with a 'text' field")
    p.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds (the first is cold)")
    add_write(p)
    p.add_argument(
        "--fingerprinter",
        action="append",
        default=[],
        help="also time Fingerprinter.signature with these settings: 'LABEL;key=value;...' (repeatable)",
    )
    p.add_argument("--only-fingerprinter", action="store_true", help="skip the simhash comparison")
    p.add_argument(
        "--datasketch",
        action="store_true",
        help="only Fingerprinter.signature against datasketch's MinHash(128), English and Chinese apart",
    )
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
    if args.datasketch:
        versus, verdicts = versus_datasketch(texts, args.rounds)
        print("\n" + versus + "\n\n" + "\n".join(verdicts))
        from simhash_index.text.tokens import is_cjk_text

        print("\n" + jieba_share([text for text in texts if is_cjk_text(normalize(text))]))
        if args.write:
            write_section("signature_speed", signature_section(source, args.rounds, versus, verdicts))
            print(f"\nwrote {DOCS.relative_to(REPO)}")
        return
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
    if args.write:
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
