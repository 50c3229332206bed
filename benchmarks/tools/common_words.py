"""Writes simhash_index/text/common_words.txt, the word list of `Fingerprinter(stopwords="common")`.

    python -m benchmarks.tools.common_words [--top 50] [--out simhash_index/text/common_words.txt]

Per language of LANGUAGES, the TOP commonest words of wordfreq's `small` table that are letters
only (no digits, no CJK), normalised like a page's text (text.tokens.normalize). The package reads
the file, so an install needs no wordfreq; rerun this after a wordfreq upgrade and the scheme
changes with the list (docs/accuracy.md, "Portuguese's collisions and the default").
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from simhash_index.text import tokens

LANGUAGES = ("de", "es", "fr", "pl", "pt", "ru", "uk")
TOP = 50
OUT = Path(__file__).resolve().parent.parent.parent / "simhash_index" / "text" / "common_words.txt"


def common_words(top: int = TOP, languages: Sequence[str] = LANGUAGES) -> dict[str, list[str]]:
    """Language -> its `top` commonest letter-only words, normalised, in wordfreq's order."""
    import wordfreq

    table = {}
    for language in languages:
        words = (tokens.normalize(word) for word in wordfreq.top_n_list(language, top, "small"))
        table[language] = list(dict.fromkeys(w for w in words if w.isalpha() and not tokens.is_cjk_text(w)))
    return table


def render(top: int = TOP, languages: Sequence[str] = LANGUAGES) -> str:
    """The file's text: a header naming its source, then one language a line: its code, its words."""
    header = (
        f"# wordfreq {metadata.version('wordfreq')} 'small': the {top} commonest words of each language,"
        " letters only, normalised\n# written by `python -m benchmarks.tools.common_words`; do not edit\n"
    )
    return header + "".join(f"{lang} {' '.join(words)}\n" for lang, words in common_words(top, languages).items())


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.tools.common_words", description=__doc__.splitlines()[0])
    p.add_argument("--top", type=int, default=TOP, help="words a language")
    p.add_argument("--out", type=Path, default=OUT, help="the file to write")
    return p


def main() -> None:
    args = parser().parse_args()
    args.out.write_text(render(args.top), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
