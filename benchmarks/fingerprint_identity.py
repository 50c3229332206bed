"""Identity check: Fingerprinter.signature against the code it replaced, on every text of real corpora.

    python -m benchmarks.fingerprint_identity [--texts PATH ...] [--config 'LABEL;key=value;...' ...]

The reference is tests/fingerprint_reference.py (the text -> Signature path before it was vectorised;
tests/test_fingerprint_reference.py holds the two together on generated texts). Here every text of
each --texts file (JSON lines, gzip, a "text" field; default: the evaluation corpus's
extracted_text.jsonl.gz; the multilingual corpus's once built, benchmarks/corpus/README.md) is
fingerprinted by both under each configuration (settings as in benchmarks/selectivity.py's --config;
default: the defaults and five others that between them set every option), and the simhash, text
hash, sketch, word count and features are compared. Prints the texts that differ per corpus and
configuration; exits 1 when any does.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks._common import EVAL, Timer, table
from benchmarks.fingerprint_speed import corpus_texts
from benchmarks.selectivity import parse_config
from simhash_index import Fingerprinter
from tests import fingerprint_reference as reference

CONFIGS = [
    "defaults",
    "language;stopwords='language'",
    "tfidf;weighting='tfidf';idf_languages='en,de';top_k=64",
    "bigrams;tokenizer='bigrams';normalization=None;casefold=False;numbers='drop';min_length=0;sketch_size=64",
    "ngrams;ngram=2;weighting='sublinear';numbers='keep';stopwords='common';word_weights={'the': 0.0, 'react': 2.5}",
    "words;tokenizer='words';numbers='split';stopwords=False;tf_power=1.0;normalization='NFC'",
]


def differences(fingerprinter: Fingerprinter, text: str) -> list[str]:
    """What differs between the library's answer for a text and the reference's."""
    ours, theirs = fingerprinter.signature(text), reference.signature(fingerprinter, text)
    found = []
    if ours != theirs:
        found.append(f"signature {ours} != {theirs}")
    elif ours is not None and theirs is not None and ours.words != theirs.words:
        found.append(f"words {ours.words} != {theirs.words}")
    if fingerprinter.features(text) != reference.features(fingerprinter, text):
        found.append("features")
    return found


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fingerprint_identity", description=__doc__.splitlines()[0])
    p.add_argument(
        "--texts",
        type=Path,
        action="append",
        help="JSON lines (gzip) with a 'text' field (repeatable; default: the evaluation corpus's texts)",
    )
    p.add_argument("--config", action="append", help="'LABEL;key=value;...' (repeatable; default: six of them)")
    return p


def main() -> None:
    args = parser().parse_args()
    configs = dict(parse_config(spec) for spec in args.config or CONFIGS)
    rows, failed = [], 0
    for path in args.texts or [EVAL / "extracted_text.jsonl.gz"]:
        if not path.is_file():
            raise SystemExit(f"--texts {path}: not found")
        texts, _ = corpus_texts(path)
        for label, kwargs in configs.items():
            fingerprinter = Fingerprinter(**kwargs)
            with Timer() as timer:
                differ = [(i, found) for i, text in enumerate(texts) if (found := differences(fingerprinter, text))]
            for i, found in differ[:5]:
                print(f"{path.name} text {i}, {label}: {'; '.join(found)}")
            failed += len(differ)
            rows.append([path.name, label, f"{len(texts):,}", f"{len(differ):,}", f"{timer.seconds:.0f}"])
            print(f"{path.name}, {label}: {len(differ)} of {len(texts)} texts differ", flush=True)
    print("\n" + table(["texts", "configuration", "texts checked", "differ", "seconds"], rows))
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
