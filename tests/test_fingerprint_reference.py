"""The vectorised text -> Signature path equals the reference (tests/fingerprint_reference.py, the code
it replaced): same simhash, text hash, sketch and word count, for texts of many scripts and every
Fingerprinter setting, so that existing indexes stay valid; and for real texts (the eval corpus's: a
sample in the suite, every one under `pytest -m slow`)."""

from __future__ import annotations

import gzip
import json
import os
import unicodedata
from functools import cache
from pathlib import Path
from typing import Any

import fingerprint_reference as reference
import pytest
from conftest import examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from simhash_index import Fingerprinter
from simhash_index.fingerprinting.fingerprinter import NORMALIZATIONS, NUMBERS, WEIGHTINGS
from simhash_index.fingerprinting.sketch import minhash
from simhash_index.text import chars, tokens

# letters of many scripts, and the characters the code treats apart: Han (common, extension A,
# compatibility, astral), kana, hangul, decimal digits of other scripts, full-width and compatibility
# forms NFKC changes, case-folding oddities, combining marks, every kind of white space
LETTERS = "abcxyz_ZÉéßøİΣσςжЖعבक٣४७ー中文字的是一个我们㐀豈𠀀あアカ한국어ＡＢ１２ｶﾞﬁﬀ，：（！…①Å\u1100\u1161\u0301😀"
SPACES = [" ", "  ", "\n", "\t", "\xa0", "\u3000", "\x1c", "\x85", "\u2028"]
PUNCTUATION = [".", ",", "!", "-", "。", "、", "（", "'"]
WORDS = [
    "the",
    "and",
    "python",
    "Python",
    "STRASSE",
    "straße",
    "1.7.4",
    "3,000",
    "2023",
    "v2.1",
    "٣٤.٥",
    "自然语言处理",
    "人工智能的一个重要方向",
    "我们使用",
    "日本語のテキスト",
    "한국어 텍스트",
    "Привет",
    "und",
    "de",
]

piece = st.one_of(
    st.sampled_from(WORDS),
    st.text(alphabet=LETTERS, min_size=1, max_size=8),
    st.sampled_from(SPACES),
    st.sampled_from(PUNCTUATION),
)
texts = st.lists(piece, max_size=80).map("".join)
# a page: sentences drawn from one small pool, so shingles and words repeat as on real pages
sentences = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
pages = st.lists(sentences, min_size=1, max_size=6).flatmap(
    lambda pool: st.lists(st.sampled_from(pool), max_size=40).map(". ".join)
)


def split_tokenizer(text: str) -> list[str]:
    return text.split()


fingerprinters = st.builds(
    Fingerprinter,
    normalization=st.sampled_from(NORMALIZATIONS),
    casefold=st.booleans(),
    tokenizer=st.sampled_from(["auto", "jieba", "words", "bigrams", split_tokenizer]),
    stopwords=st.sampled_from([True, False, "english", "chinese", "common", "language", {"the", "de", "的"}]),
    weighting=st.sampled_from(WEIGHTINGS),
    tf_power=st.sampled_from([0.5, 1.0, 1.5, 0.3]),
    idf=st.one_of(st.none(), st.just({"python": 2.0, "the": 0.1, "自然语言": 5.0})),
    word_weights=st.one_of(st.none(), st.just({"the": 0.0, "python": 2.5, "人工智能": 3.0})),
    ngram=st.integers(1, 3),
    min_length=st.sampled_from([0, 20, 100]),
    sketch_size=st.sampled_from([0, 8, 256]),
    numbers=st.sampled_from(NUMBERS),
    idf_languages=st.sampled_from(["en", "en,de"]),
    top_k=st.one_of(st.none(), st.integers(1, 6)),
)

RELAXED = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_same(fingerprinter: Fingerprinter, text: str) -> None:
    ours, theirs = fingerprinter.signature(text), reference.signature(fingerprinter, text)
    assert ours == theirs
    assert (ours and ours.words) == (theirs and theirs.words)  # not part of equality
    assert fingerprinter.features(text) == reference.features(fingerprinter, text)


@RELAXED
@given(fingerprinters, st.one_of(texts, pages))
@example(Fingerprinter(min_length=0), "")
@example(Fingerprinter(min_length=0), "a")
@example(Fingerprinter(min_length=0), "中文")
@example(Fingerprinter(min_length=0, stopwords=False), "ab cd")
@example(Fingerprinter(min_length=0, stopwords=False), "ab cd ef")
@example(Fingerprinter(min_length=0, stopwords="language"), "日本語のテキストです")
def test_signature_equals_the_reference(fingerprinter: Fingerprinter, text: str) -> None:
    assert_same(fingerprinter, text)


@RELAXED
@given(st.one_of(texts, pages))
def test_default_signature_equals_the_reference(text: str) -> None:
    assert_same(Fingerprinter(min_length=0), text)


@RELAXED
@given(texts, st.sampled_from(NORMALIZATIONS), st.booleans())
def test_normalize_shingles_and_sketch_equal_the_reference(text: str, form: str | None, casefold: bool) -> None:
    normalized = tokens.normalize(text, form=form, casefold=casefold)
    assert normalized == reference.normalize(text, form=form, casefold=casefold)
    assert tokens.word_count(normalized) == len(normalized.split())
    assert tokens.is_cjk_text(normalized) == reference.is_cjk_text(normalized)
    assert tokens.number_shapes(normalized) == reference.number_shapes(normalized)
    shingles = tokens.shingles(normalized)
    assert shingles == reference.shingles(normalized)
    assert minhash(shingles, 64) == reference.minhash(shingles, 64)
    for join_numbers in (False, True):
        for name, tokenize in tokens.TOKENIZERS.items():
            assert tokenize(normalized, join_numbers=join_numbers) == reference.TOKENIZERS[name](
                normalized, join_numbers=join_numbers
            )


@pytest.mark.parametrize("weighting", WEIGHTINGS)
@pytest.mark.parametrize("repeats", [1023, 1024, 1500])
def test_counts_past_the_weight_table(weighting: str, repeats: int) -> None:
    """Term weights of counts the look-up table does not hold are computed like the others."""
    text = "alpha " * repeats + "beta gamma " * 3
    assert_same(Fingerprinter(weighting=weighting, idf={"alpha": 1.5}, tf_power=0.7), text)


def test_a_sketch_of_more_shingles_than_a_block() -> None:
    """Pages with more shingles than one block of the permutations (sketch._CHUNK) take several."""
    text = " ".join(f"w{i}" for i in range(3000))
    assert_same(Fingerprinter(), text)


@RELAXED
@given(st.lists(st.one_of(piece, st.just("\ud800")), max_size=30).map("".join))
def test_tokenizers_take_lone_surrogates_as_the_regexes_do(text: str) -> None:
    """A lone surrogate (not a word character) cannot be encoded as UTF-8, but it can be tokenised."""
    assert tokens.number_shapes(text) == reference.number_shapes(text)
    for join_numbers in (False, True):
        for name in ("words", "bigrams"):
            ours = tokens.TOKENIZERS[name](text, join_numbers=join_numbers)
            assert ours == reference.TOKENIZERS[name](text, join_numbers=join_numbers)


# every BMP character NFKC changes, combining marks, and the Hangul jamo that compose
UNSTABLE = [chr(c) for c in range(0x10000) if unicodedata.normalize("NFKC", chr(c)) != chr(c)]
COMPOSING = [*"aeoAEO가ᄀ\u0300\u0301\u0308\u0327\u0345\u1161\u11a8\u3099\u309a", "ｶ", "ﾞ", " "]


@RELAXED
@given(st.lists(st.sampled_from(UNSTABLE + COMPOSING), max_size=16).map("".join))
def test_nfkc_equals_unicodedata(text: str) -> None:
    """Compatibility characters replaced before NFKC leave its result as it was."""
    assert chars.nfkc(text) == unicodedata.normalize("NFKC", text)


# -- real texts: the eval corpus ($SIMHASH_BENCH_EVAL, else shared/eval beside the clone) --------------

EVAL_TEXTS = (
    Path(os.environ.get("SIMHASH_BENCH_EVAL") or Path(__file__).resolve().parents[2] / "shared" / "eval")
    / "extracted_text.jsonl.gz"
)
# the defaults and five configurations that between them set every option
CONFIGURATIONS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "language": {"stopwords": "language"},
    "tfidf": {"weighting": "tfidf", "idf_languages": "en,de", "top_k": 64},
    "bigrams": {
        "tokenizer": "bigrams", "normalization": None, "casefold": False, "numbers": "drop", "min_length": 0,
        "sketch_size": 64,
    },
    "ngrams": {
        "ngram": 2, "weighting": "sublinear", "numbers": "keep", "stopwords": "common",
        "word_weights": {"the": 0.0, "react": 2.5},
    },
    "words": {"tokenizer": "words", "numbers": "split", "stopwords": False, "tf_power": 1.0, "normalization": "NFC"},
}  # fmt: skip
SAMPLE = 6  # texts of the corpus, evenly spaced, in the suite


@cache
def eval_texts() -> list[str]:
    if not EVAL_TEXTS.is_file():
        pytest.skip(f"{EVAL_TEXTS} not found: set SIMHASH_BENCH_EVAL to the eval corpus's folder")
    with gzip.open(EVAL_TEXTS, "rt", encoding="utf-8") as lines:
        return [json.loads(line).get("text") or "" for line in lines if line.strip()]


@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_real_texts_equal_the_reference(configuration: str) -> None:
    texts = eval_texts()
    fingerprinter = Fingerprinter(**CONFIGURATIONS[configuration])
    for text in texts[:: len(texts) // SAMPLE][:SAMPLE]:
        assert_same(fingerprinter, text)


@pytest.mark.slow
@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_every_eval_corpus_text_equals_the_reference(configuration: str) -> None:
    fingerprinter = Fingerprinter(**CONFIGURATIONS[configuration])
    differ = [i for i, text in enumerate(eval_texts()) if not _same(fingerprinter, text)]
    assert not differ, f"{len(differ)} texts differ under {configuration}, the first: {differ[:10]}"


def _same(fingerprinter: Fingerprinter, text: str) -> bool:
    try:
        assert_same(fingerprinter, text)
    except AssertionError:
        return False
    return True
