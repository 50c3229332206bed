"""Stop-word designs for the languages beyond English and Chinese, side by side, and over re-drawn hashes.

    python -m benchmarks.stopword_candidates --eval DIR [--scorer ../shared/eval/score.py]
        [--candidate NAME ...] [--distance 3,6] [--salts 10]

A candidate (docs/accuracy.md, "Portuguese's collisions and the default"):
- defaults; language: Fingerprinter(stopwords="language"); union-50 is Fingerprinter(stopwords="common");
- union-N: the built-in lists and the N commonest letter-only words (wordfreq's `small` tables) of
  each of COMMON_LANGUAGES, left out of every page;
- union-N-xW: those words kept at weight W (`word_weights`) instead;
- gated-N: union-N only on pages that are neither CJK nor English by the built-in English
  stop-word share (text.languages' shortcut), so English and Chinese pages keep their features.

Per candidate and language, as benchmarks.selectivity reports them: collision share (collisions)
at each distance, reach, and the offline dedup's worst strict precision and recall over 5 orders.
With --salts N, also the means over N hash functions (each feature hashed with a salt; salt 0 is
the shipped hash) of the collisions within the largest distance and of the recall (worst of corpus
and reversed order): how much of a difference is the design, and how much the draw of 64 hyperplanes.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from benchmarks import selectivity as sel
from benchmarks._common import EVAL
from benchmarks.tools.common_words import LANGUAGES
from benchmarks.tools.common_words import common_words as _common_words
from simhash_index.fingerprinting.fingerprinter import Fingerprinter
from simhash_index.fingerprinting.simhash import simhash
from simhash_index.text import languages, stopwords, tokens

COMMON_LANGUAGES = LANGUAGES
DEFAULT_CANDIDATES = ["defaults", "language", "union-100", "union-50", "union-25", "union-100-x0.1", "gated-50"]


def common_words(count: int) -> frozenset[str]:
    """The `count` commonest letter-only words of each of COMMON_LANGUAGES, normalised."""
    return frozenset(word for words in _common_words(count, COMMON_LANGUAGES).values() for word in words)


def _english_or_cjk(text: str) -> bool:
    return tokens.is_cjk_text(text) or languages.looks_english(text)


def _gated(words: frozenset[str]) -> Callable[[str], list[str]]:
    def tokenize(text: str) -> list[str]:
        found = tokens.auto_words(text, join_numbers=True)
        return found if _english_or_cjk(text) else [t for t in found if t not in words]

    return tokenize


def candidate(name: str) -> Fingerprinter:
    """The Fingerprinter a candidate name stands for (module docstring)."""
    if name == "defaults":
        return Fingerprinter()
    if name == "language":
        return Fingerprinter(stopwords="language")
    kind, _, rest = name.partition("-")
    count, _, weight = rest.partition("-x")
    if kind not in ("union", "gated") or not count.isdigit() or (weight and kind != "union"):
        raise SystemExit(f"--candidate {name!r}: use defaults, language, union-N, union-N-xW or gated-N")
    words = common_words(int(count))
    if kind == "gated":
        return Fingerprinter(tokenizer=_gated(words))
    if weight:
        return Fingerprinter(word_weights=dict.fromkeys(words - stopwords.ALL, float(weight)))
    return Fingerprinter(stopwords=stopwords.ALL | words)


def salted(fingerprinter: Fingerprinter, texts: Sequence[str], pages: Sequence[sel.Page], salt: int) -> list[sel.Page]:
    """The pages with each simhash computed over salted features: another draw of the hyperplanes."""
    result = []
    for text, page in zip(texts, pages):
        if page.simhash is None:
            result.append(page)
            continue
        features = fingerprinter.features(text)
        result.append(dataclasses.replace(page, simhash=simhash({f"{salt}\0{k}": v for k, v in features.items()})))
    return result


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.stopword_candidates", description=__doc__.splitlines()[0])
    p.add_argument("--eval", type=Path, default=EVAL, help="the corpus directory")
    p.add_argument("--scorer", type=Path, help="score.py (default: the corpus's, else ../shared/eval's)")
    p.add_argument("--candidate", action="append", help="a design (module docstring); repeatable")
    p.add_argument("--distance", default="3,6", help="Hamming distances, e.g. 3,6")
    p.add_argument("--salts", type=int, default=0, help="also the means over this many hash functions")
    return p


def main() -> None:
    args = parser().parse_args()
    corpus = sel.load_corpus(args.eval, args.scorer)
    distances = [int(d) for d in args.distance.split(",")]
    print("| candidate | lang | radius | collision share (collisions) | reach | strict precision | recall |")
    print("|---|---|---|---|---|---|---|")
    means = []
    for name in args.candidate or DEFAULT_CANDIDATES:
        fingerprinter = candidate(name)
        pages = sel.fingerprint_pages(fingerprinter, corpus.texts)
        for distance in distances:
            worst = sel.accuracy(corpus, pages, distance, 0.88, 3)
            for lang in corpus.languages:
                s, w = sel.selectivity(corpus, pages, lang, distance), worst[lang]
                print(
                    f"| {name} | {lang} | {distance} | {s['share']:.1e} ({s['collisions']}) | {s['reach']:.3f}"
                    f" | {w['strict']:.4f} | {w['recall']:.4f} |",
                    flush=True,
                )
        if args.salts:
            means.append((name, _over_salts(corpus, fingerprinter, pages, max(distances), args.salts)))
    if means:
        print(f"\nMeans over {args.salts} hash functions, radius {max(distances)}: collisions; recall (lowest)\n")
        print("| candidate | " + " | ".join(corpus.languages) + " |")
        print("|---|" + "---|" * len(corpus.languages))
        for name, figures in means:
            print(f"| {name} | " + " | ".join(figures[lang] for lang in corpus.languages) + " |")


def _over_salts(
    corpus: sel.Corpus, fingerprinter: Fingerprinter, pages: list[sel.Page], distance: int, salts: int
) -> dict[str, str]:
    collisions: dict[str, list[int]] = {lang: [] for lang in corpus.languages}
    recalls: dict[str, list[float]] = {lang: [] for lang in corpus.languages}
    for salt in range(salts):
        drawn = pages if salt == 0 else salted(fingerprinter, corpus.texts, pages, salt)
        worst = sel.accuracy(corpus, drawn, distance, 0.88, 0)
        for lang in corpus.languages:
            collisions[lang].append(int(sel.selectivity(corpus, drawn, lang, distance)["collisions"]))
            recalls[lang].append(worst[lang]["recall"])
    return {
        lang: f"{np.mean(collisions[lang]):.1f}; {np.mean(recalls[lang]):.4f} ({min(recalls[lang]):.4f})"
        for lang in corpus.languages
    }


if __name__ == "__main__":
    main()
