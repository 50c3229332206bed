"""Selectivity and accuracy of fingerprint settings on the evaluation corpus's extracted texts, side by side.

    python -m benchmarks.selectivity [--eval ../shared/eval] [--config 'LABEL;key=value;...' ...]
                                     [--distance 3[,4,...]] [--min-similarity 0.88] [--shuffles 3]
                                     [--scorer ../shared/eval/score.py]

--eval may be any corpus in ../shared/eval's format (the multilingual one that
benchmarks/tools/multilingual_corpus.py builds, say); every language of its pages.jsonl is reported,
and its score.py, or --scorer, scores it.

Each --config is a label and Fingerprinter keyword arguments (values as Python literals, else
strings), e.g. --config 'tf+stop;stopwords=True;tf_power=1.0'. Without --config: the defaults
beside the previous defaults.

Selectivity, per language, over distinct texts (distinct normalised texts with a fingerprint,
long enough for near matching; --raw-texts: distinct as extracted):
- pairs <= d: pairs of distinct texts whose simhashes are within the distance;
- collisions: of those, pairs that are not near-duplicates (below 0.8 Jaccard: in neither
  truth.jsonl nor truth_gray.jsonl); collision share = collisions / all pairs of distinct texts;
- candidates/lookup: stored texts within the distance of a text, on average over the corpus's
  distinct texts (what a lookup fetches and verifies here); per 1M: the pair shares times 10^6, what
  a lookup would fetch from an index of a million pages from sites like these;
- reach: the share of the >= 0.9 near-duplicate pairs (distinct texts) within the distance.

Accuracy: an offline dedup of the corpus pages in several orders (corpus order, reversed, seeded
shuffles) with the index's rule: the exact text hash first; else the nearest stored near-matchable
page within the distance whose sketch estimate is >= min_similarity (verification on) or the
nearest one (off); texts under min_length are matched exactly only; pages without features are
kept. Scored with the corpus's score.py; the worst order is reported.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import gzip
import importlib.util
import json
import random
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import xxhash

from benchmarks._common import EVAL
from simhash_index.fingerprinting.fingerprinter import Fingerprinter
from simhash_index.fingerprinting.sketch import minhash
from simhash_index.fingerprinting.sketch import similarity as sketch_similarity
from simhash_index.text.tokens import shingles

SCORER = EVAL / "score.py"
UNRELATED = 0.5  # a collision of texts sharing less than half their shingles: not a version of the same page
PREVIOUS = "previous defaults;stopwords=False;tf_power=1.33;numbers='split'"
DEFAULT_CONFIGS = [PREVIOUS, "defaults"]


@dataclasses.dataclass(frozen=True)
class Corpus:
    paths: list[str]
    langs: list[str]
    texts: list[str]
    truth: list[dict[str, Any]]
    gray: list[dict[str, Any]]
    scorer: ModuleType

    @property
    def languages(self) -> list[str]:
        return sorted(set(self.langs))


@dataclasses.dataclass(frozen=True)
class Page:
    """What the simulated index knows of one page under one configuration."""

    simhash: int | None
    text_hash: int | None
    exact_only: bool
    sketch: bytes | None


def load_corpus(directory: Path, scorer: Path | None = None) -> Corpus:
    """The corpus's pages, extracted texts, truth and scorer (its own score.py unless given)."""
    pages = _jsonl(directory / "pages.jsonl")
    with gzip.open(directory / "extracted_text.jsonl.gz", "rt", encoding="utf-8") as lines:
        texts = {row["path"]: row.get("text") or "" for row in map(json.loads, lines)}
    scorer = scorer or (directory / "score.py" if (directory / "score.py").is_file() else SCORER)
    spec = importlib.util.spec_from_file_location("eval_score", scorer)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--scorer {scorer}: cannot load it")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return Corpus(
        [p["path"] for p in pages],
        [p["lang"] for p in pages],
        [texts.get(p["path"], "") for p in pages],
        _jsonl(directory / "truth.jsonl"),
        _jsonl(directory / "truth_gray.jsonl"),
        module,
    )


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def parse_config(spec: str) -> tuple[str, dict[str, Any]]:
    """'label;key=value;...' as a label and Fingerprinter keyword arguments."""
    label, *settings = spec.split(";")
    kwargs: dict[str, Any] = {}
    for setting in filter(None, (s.strip() for s in settings)):
        key, sep, raw = setting.partition("=")
        if not sep:
            raise SystemExit(f"--config {spec!r}: {setting!r} is not key=value")
        try:
            kwargs[key.strip()] = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError):
            kwargs[key.strip()] = raw.strip()
    return label.strip() or "defaults", kwargs


_SKETCHES: dict[int, bytes] = {}
_SHINGLES: dict[int, frozenset[str]] = {}


def fingerprint_pages(fingerprinter: Fingerprinter, texts: Sequence[str]) -> list[Page]:
    """Each text's simhash, text hash and sketch (sketches shared between configurations)."""
    bare = dataclasses.replace(fingerprinter, sketch_size=0)
    pages = []
    for text in texts:
        signature = bare.signature(text)
        if signature is None:
            pages.append(Page(None, None, False, None))
            continue
        sketch = None
        if not signature.exact_only and fingerprinter.sketch_size and signature.text_hash is not None:
            key = hash(
                (signature.text_hash, fingerprinter.sketch_size, fingerprinter.normalization, fingerprinter.casefold)
            )
            if key not in _SKETCHES:
                _SHINGLES[signature.text_hash] = frozenset(shingles(fingerprinter.normalize(text)))
                _SKETCHES[key] = minhash(_SHINGLES[signature.text_hash], fingerprinter.sketch_size)
            sketch = _SKETCHES[key]
        pages.append(Page(signature.simhash, signature.text_hash, signature.exact_only, sketch))
    return pages


def similar_text_pairs(corpus: Corpus, keys: Sequence[int | None], floor: float) -> set[frozenset[int]]:
    """Pairs of text keys whose pages are at least `floor` similar in the truth files."""
    index = dict(zip(corpus.paths, keys))
    pairs = set()
    for row in (*corpus.truth, *corpus.gray):
        a, b = index.get(row["a"]), index.get(row["b"])
        if row["jaccard"] >= floor and a is not None and b is not None and a != b:
            pairs.add(frozenset((a, b)))
    return pairs


def text_keys(corpus: Corpus, pages: Sequence[Page], raw: bool) -> list[int | None]:
    """What makes two texts distinct: the normalised text (its hash), or with `raw` the text as extracted."""
    if not raw:
        return [page.text_hash for page in pages]
    return [
        None if page.text_hash is None else xxhash.xxh64_intdigest(text.encode())
        for page, text in zip(pages, corpus.texts)
    ]


def selectivity(corpus: Corpus, pages: Sequence[Page], lang: str, distance: int, raw: bool = False) -> dict[str, float]:
    """Pairs within the distance among the distinct near-matchable texts of one language."""
    keys = text_keys(corpus, pages, raw)
    distinct: dict[int, Page] = {}
    for page, key, page_lang in zip(pages, keys, corpus.langs):
        if page_lang == lang and page.simhash is not None and not page.exact_only and key is not None:
            distinct.setdefault(key, page)
    order = list(distinct)
    values = np.array([distinct[k].simhash for k in order], dtype=np.uint64)
    n = len(order)
    within = np.bitwise_count(values[:, None] ^ values[None, :]) <= distance
    np.fill_diagonal(within, False)
    close = [(order[i], order[j]) for i, j in zip(*(side.tolist() for side in np.nonzero(np.triu(within))))]
    similar = similar_text_pairs(corpus, keys, 0.8)
    colliding = [(a, b) for a, b in close if frozenset((a, b)) not in similar]
    unrelated = sum(_jaccard(distinct[a].text_hash, distinct[b].text_hash) < UNRELATED for a, b in colliding)
    near = {pair for pair in similar_text_pairs(corpus, keys, 0.9) if all(k in distinct for k in pair)}
    reached = near & {frozenset(pair) for pair in close}
    total = n * (n - 1) / 2
    return {
        "texts": n,
        "pairs": len(close),
        "collisions": len(colliding),
        "share": len(colliding) / total if total else 0.0,
        "unrelated": unrelated,
        "unrelated_share": unrelated / total if total else 0.0,
        "pair_share": len(close) / total if total else 0.0,
        "per_lookup": 2 * len(close) / n if n else 0.0,
        "reach": len(reached) / len(near) if near else float("nan"),
    }


def _jaccard(a: int | None, b: int | None) -> float:
    """Jaccard similarity of two texts' shingle sets (the truth files' measure), by text hash."""
    x, y = _SHINGLES.get(a or 0), _SHINGLES.get(b or 0)
    if x is None or y is None:
        return float("nan")
    return len(x & y) / len(x | y)


def dedup(pages: Sequence[Page], order: Iterable[int], distance: int, min_similarity: float | None) -> set[int]:
    """The pages an index keeps when they arrive in `order` (the rule of SimhashIndex.check_and_add)."""
    kept: set[int] = set()
    texts: set[int] = set()
    stored: list[int] = []
    fingerprints: list[int] = []
    for i in order:
        page = pages[i]
        if page.simhash is None or page.text_hash is None:
            kept.add(i)
            continue
        if page.text_hash in texts:
            continue
        if not page.exact_only and _near_match(pages, page, stored, fingerprints, distance, min_similarity):
            continue
        kept.add(i)
        texts.add(page.text_hash)
        if not page.exact_only:
            stored.append(i)
            fingerprints.append(page.simhash)
    return kept


def _near_match(
    pages: Sequence[Page],
    page: Page,
    stored: list[int],
    fingerprints: list[int],
    distance: int,
    min_similarity: float | None,
) -> bool:
    if not stored or page.simhash is None:
        return False
    distances = np.bitwise_count(np.array(fingerprints, dtype=np.uint64) ^ np.uint64(page.simhash))
    for position in np.argsort(distances, kind="stable").tolist():  # nearest first, oldest on a tie
        if distances[position] > distance:
            break
        other = pages[stored[position]]
        if min_similarity is None or page.sketch is None or other.sketch is None:
            return True
        if sketch_similarity(page.sketch, other.sketch) >= min_similarity:
            return True
    return False


def orders(count: int, shuffles: int) -> dict[str, list[int]]:
    """Corpus order, reversed, and seeded shuffles."""
    result = {"corpus": list(range(count)), "reversed": list(range(count - 1, -1, -1))}
    for seed in range(shuffles):
        shuffled = list(range(count))
        random.Random(seed).shuffle(shuffled)
        result[f"shuffle{seed}"] = shuffled
    return result


def accuracy(
    corpus: Corpus, pages: Sequence[Page], distance: int, min_similarity: float | None, shuffles: int
) -> dict[str, dict[str, float]]:
    """Per language: the worst recall, strict precision and precision over the orders, and harmful drops."""
    worst: dict[str, dict[str, float]] = {
        lang: {"recall": 1.0, "strict": 1.0, "precision": 1.0, "harmful": 0} for lang in corpus.languages
    }
    all_paths = set(corpus.paths)
    for order in orders(len(pages), shuffles).values():
        kept = {corpus.paths[i] for i in dedup(pages, order, distance, min_similarity)}
        pages_json = [{"path": p, "lang": lang} for p, lang in zip(corpus.paths, corpus.langs)]
        result = corpus.scorer.score(pages_json, corpus.truth, corpus.gray, kept, all_paths, 0.9)
        for lang in corpus.languages:
            r, w = result[lang], worst[lang]
            w["recall"] = min(w["recall"], r["recall"])
            w["strict"] = min(w["strict"], r["precision_strict"])
            w["precision"] = min(w["precision"], r["precision"])
            w["harmful"] = max(w["harmful"], r["harmful_drops"])
    return worst


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.selectivity", description=__doc__.splitlines()[0])
    p.add_argument("--eval", type=Path, default=EVAL, help="the corpus directory")
    p.add_argument("--config", action="append", help="'LABEL;key=value;...' Fingerprinter settings (repeatable)")
    p.add_argument("--distance", default="3", help="Hamming distance of a lookup; several: 3,4,5")
    p.add_argument("--scorer", type=Path, help="score.py to score with (default: the corpus's, else ../shared/eval's)")
    p.add_argument("--min-similarity", type=float, default=0.88, help="sketch estimate needed to drop")
    p.add_argument("--shuffles", type=int, default=3, help="seeded shuffled orders beside corpus and reversed order")
    p.add_argument("--no-accuracy", action="store_true", help="selectivity only: skip the simulated dedup")
    p.add_argument(
        "--raw-texts",
        action="store_true",
        help="count texts as distinct as extracted, not once normalised (as issue 20's figures did)",
    )
    return p


def main() -> None:
    p = parser()
    args = p.parse_args()
    if not (args.eval / "truth.jsonl").is_file():
        sys.exit(f"--eval {args.eval}: no truth.jsonl there; point it at the evaluation corpus")
    corpus = load_corpus(args.eval, args.scorer)
    distances = [int(d) for d in args.distance.split(",")]
    configs = [parse_config(spec) for spec in (args.config or DEFAULT_CONFIGS)]

    select_rows, accuracy_rows = [], []
    for label, kwargs in configs:
        fingerprinter = Fingerprinter(**kwargs)
        pages = fingerprint_pages(fingerprinter, corpus.texts)
        for distance, lang in ((d, lang) for d in distances for lang in corpus.languages):
            s = selectivity(corpus, pages, lang, distance, args.raw_texts)
            select_rows.append(
                [
                    label,
                    lang,
                    f"{distance}",
                    f"{s['texts']}",
                    f"{s['pairs']}",
                    f"{s['collisions']}",
                    f"{s['share']:.1e}",
                    f"{s['unrelated']}",
                    f"{s['unrelated_share']:.1e}",
                    f"{s['per_lookup']:.2f}",
                    f"{s['pair_share'] * 1e6:,.0f}",
                    f"{s['share'] * 1e6:,.0f}",
                    f"{s['reach']:.3f}",
                ]
            )
        if not args.no_accuracy:
            for distance, (verify, threshold) in (
                (d, v) for d in distances for v in (("on", args.min_similarity), ("off", None))
            ):
                worst = accuracy(corpus, pages, distance, threshold, args.shuffles)
                for lang in corpus.languages:
                    w = worst[lang]
                    accuracy_rows.append(
                        [
                            label,
                            lang,
                            f"{distance}",
                            verify,
                            f"{w['strict']:.4f}",
                            f"{w['precision']:.4f}",
                            f"{w['recall']:.4f}",
                            f"{w['harmful']:.0f}",
                        ]
                    )
        print(f"{label}: {fingerprinter.scheme}", file=sys.stderr, flush=True)

    print("\nSelectivity (distinct texts):\n")
    print(
        _table(
            [
                "config",
                "lang",
                "distance",
                "texts",
                "pairs within",
                "collisions (< 0.8)",
                "collision share",
                f"unrelated (< {UNRELATED})",
                "unrelated share",
                "candidates/lookup",
                "candidates per 1M",
                "collisions per 1M",
                "reach of >= 0.9 pairs",
            ],
            select_rows,
        )
    )
    if accuracy_rows:
        print(f"\nOffline dedup, worst of {2 + args.shuffles} orders (min_similarity {args.min_similarity}):\n")
        print(
            _table(
                [
                    "config",
                    "lang",
                    "distance",
                    "verification",
                    "strict precision",
                    "precision",
                    "recall",
                    "harmful (max)",
                ],
                accuracy_rows,
            )
        )


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


if __name__ == "__main__":
    main()
