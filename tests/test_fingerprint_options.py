"""Fingerprinter options: numbers, stop-word names, top-K, weight files, HTML, and the recorded scheme."""

from __future__ import annotations

import doctest
import random
from pathlib import Path

import pytest

from simhash_index import Fingerprinter, bit_similarity, hamming, load_word_weights
from simhash_index.fingerprinting.sketch import estimate_jaccard
from simhash_index.text.extract import ExtractOptions
from simhash_index.text.stopwords import CHINESE, ENGLISH
from simhash_index.text.stopwords import COMMON as STOP_COMMON

DEFAULT = Fingerprinter()
# the settings of 0.1's defaults, and the scheme string an index built by 0.1 recorded
PREVIOUS = Fingerprinter(stopwords=False, tf_power=1.33, numbers="split")
PREVIOUS_SCHEME = (
    "xxh64/64 norm=NFKC+casefold tokens=auto stop=none ngram=1 weighting=tf^1.33 idf=none weights=none"
    " min_length=100 sketch=minhash256x8/w3c5"
)


# -- numbers ------------------------------------------------------------------------------


def test_numbers_settings():
    text = "Release 1.7.0 of v2.1, 3,000 users, e.g. 2023"
    assert DEFAULT.tokens(DEFAULT.normalize(text)) == ["release", "0.0.0", "v0.0", "0,000", "users", "e", "g", "0000"]
    keep = Fingerprinter(numbers="keep")
    assert keep.tokens(keep.normalize(text)) == ["release", "1.7.0", "v2.1", "3,000", "users", "e", "g", "2023"]
    split = Fingerprinter(numbers="split")
    assert split.tokens(split.normalize(text)) == [
        "release",
        "1",
        "7",
        "0",
        "v2",
        "1",
        "3",
        "000",
        "users",
        "e",
        "g",
        "2023",
    ]
    drop = Fingerprinter(numbers="drop")
    assert drop.tokens(drop.normalize(text)) == ["release", "v2.1", "users", "e", "g"]
    # digits of other scripts count by shape too
    assert DEFAULT.tokens("٢٠٢٣ 2023") == ["0000", "0000"]
    with pytest.raises(ValueError, match="numbers must be one of"):
        Fingerprinter(numbers="round")


def test_numbers_with_a_custom_tokenizer():
    split = Fingerprinter(tokenizer=str.split, numbers="shape", stopwords=False)
    assert split.tokens("v1.7 is 2023") == ["v0.0", "is", "0000"]
    assert Fingerprinter(tokenizer=str.split, numbers="drop", stopwords=False).tokens("v1.7 is 2023") == ["v1.7", "is"]


def docs_page(rng: random.Random, version: str) -> str:
    """A made-up release page: prose with its version string repeated through it."""
    vocabulary = [f"{rng.choice('bcdfgklmnprst')}{rng.choice('aeiou')}{rng.choice('lmnrst')}{i}x" for i in range(400)]
    sentences = []
    for _ in range(60):
        words = rng.choices(vocabulary, k=rng.randint(6, 14))
        if rng.random() < 0.4:
            words.insert(rng.randrange(len(words)), f"version {version}")
        sentences.append(" ".join(words) + ".")
    return " ".join(sentences)


@pytest.mark.parametrize("seed", range(10))
def test_a_version_bump_keeps_a_page_a_near_duplicate(seed):
    before, after = docs_page(random.Random(seed), "1.7.0"), docs_page(random.Random(seed), "1.7.4")
    assert before.count("1.7.0") >= 10
    # numbers count by their shape: the features, and so the fingerprint, do not change
    assert DEFAULT.features(before) == DEFAULT.features(after)
    assert hamming(DEFAULT.fingerprint(before), DEFAULT.fingerprint(after)) == 0
    # the sketch still reads the digits: the texts are not identical
    a, b = DEFAULT.signature(before), DEFAULT.signature(after)
    assert a.text_hash != b.text_hash and a.sketch is not None and b.sketch is not None
    assert 0.5 < estimate_jaccard(a.sketch, b.sketch) < 1.0


# -- stop words ---------------------------------------------------------------------------


def test_stop_words_by_name():
    assert Fingerprinter(stopwords="english").features("the cat 的 猫") == Fingerprinter(stopwords=ENGLISH).features(
        "the cat 的 猫"
    )
    assert "的" in Fingerprinter(stopwords="english").features("the cat 的 猫")
    assert "the" in Fingerprinter(stopwords="Chinese").features("the cat 的 猫")
    assert Fingerprinter(stopwords="chinese").scheme == Fingerprinter(stopwords=CHINESE).scheme
    assert " stop=english " in Fingerprinter(stopwords="english").scheme


def test_common_words_leave_out_the_function_words_of_seven_languages():
    common = Fingerprinter(stopwords="common")
    text = "O servidor guarda cada página em uma base de dados antes de compará-la com as outras."
    content = {"servidor", "guarda", "cada", "página", "base", "dados", "antes", "compará", "outras"}
    assert set(common.features(text)) == content
    assert set(DEFAULT.features(text)) == content | {"o", "em", "uma", "de", "la", "com"}
    for text in ("Der Server speichert jede Seite in der Datenbank.", "Сервер сохраняет каждую страницу в базе."):
        assert len(common.features(text)) < len(DEFAULT.features(text))
    # English and Chinese function words go as with the defaults; no language is identified
    assert not {"the", "的"} & set(common.features("the cat 的 猫"))
    assert common.scheme != DEFAULT.scheme and " stop=builtin+common:" in common.scheme


def test_the_common_words_file_is_what_its_script_writes():
    pytest.importorskip("wordfreq")
    from benchmarks.tools import common_words

    assert common_words.OUT.read_text(encoding="utf-8") == common_words.render()
    words = {word for words in common_words.common_words().values() for word in words}
    assert words | ENGLISH | CHINESE == STOP_COMMON


@pytest.mark.parametrize("name", ["englsh", "en", "", "the"])
def test_a_bare_string_is_not_taken_as_letters(name):
    # a string is a collection of one-letter strings: "english" would have been {e, n, g, l, i, s, h}
    with pytest.raises(ValueError, match="is not a built-in list; use True"):
        Fingerprinter(stopwords=name)


# -- top-K --------------------------------------------------------------------------------


def test_top_k_keeps_the_heaviest_features():
    fp = Fingerprinter(top_k=2, stopwords=False, tf_power=1.0)
    # equal weights (b and d): the smallest features win, in every process
    assert fp.features("a a a b b c d d e") == {"a": 3.0, "b": 2.0}
    assert Fingerprinter(top_k=50, stopwords=False, tf_power=1.0).features("x y y") == {"x": 1.0, "y": 2.0}
    assert fp.fingerprint("a a a b b c d d e") == Fingerprinter(stopwords=False, tf_power=1.0).fingerprint("a a a b b")
    for bad in (0, -1, 2.5, "10"):
        with pytest.raises(ValueError, match="top_k must be a positive integer"):
            Fingerprinter(top_k=bad)  # type: ignore[arg-type]


def test_top_k_ranks_tfidf_weights():
    fp = Fingerprinter(weighting="tfidf", top_k=1, stopwords=False)
    # "the" is the more frequent in the text, the rarer word weighs more
    assert list(fp.features("the the the the photosynthesis")) == ["photosynthesis"]


# -- word weights -------------------------------------------------------------------------


def test_word_weights_from_a_file(tmp_path: Path):
    path = tmp_path / "finance.txt"
    path.write_text("# weights for finance pages\n\nEquity 2.5\ninterest rate\t3\nthe 0\n", encoding="utf-8")
    assert load_word_weights(path) == {"Equity": 2.5, "interest rate": 3.0, "the": 0.0}
    fp = Fingerprinter(word_weights=path, stopwords=False, tf_power=1.0)
    # words are normalised like the text; weight 0 ignores a word
    assert fp.word_weights == {"equity": 2.5, "interest rate": 3.0, "the": 0.0}
    assert fp.features("the equity market") == {"the": 0.0, "equity": 2.5, "market": 1.0}
    same = Fingerprinter(word_weights={"equity": 2.5, "interest rate": 3, "the": 0}, stopwords=False, tf_power=1.0)
    assert fp == same and fp.scheme == same.scheme
    assert Fingerprinter(word_weights=str(path)).scheme == Fingerprinter(word_weights=path).scheme


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("equity\n", "weights.txt:1: expected a word and a weight"),
        ("# c\nequity two\n", "weights.txt:2: the weight of 'equity' must be a number; got 'two'"),
        ("equity -1\n", "weights.txt:1: the weight of 'equity' must be a finite number >= 0"),
        ("equity nan\n", "weights.txt:1: the weight of 'equity' must be a finite number >= 0"),
        ("equity 1\nbond 2\nequity 3\n", "weights.txt:3: 'equity' is listed twice with different weights"),
    ],
)
def test_word_weight_file_errors_name_the_file_and_line(tmp_path: Path, content: str, message: str):
    path = tmp_path / "weights.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_word_weights(path)
    with pytest.raises(ValueError, match=message):
        Fingerprinter(word_weights=path)


def test_word_weights_that_normalise_alike_must_agree():
    assert Fingerprinter(word_weights={"Cat": 2, "cat": 2}).word_weights == {"cat": 2.0}
    with pytest.raises(ValueError, match="word_weights: 'cat' normalises to 'cat'"):
        Fingerprinter(word_weights={"Cat": 2, "cat": 3})


def test_weights_doctest():
    from simhash_index.fingerprinting import weights

    assert doctest.testmod(weights).failed == 0


def test_a_missing_weight_file(tmp_path: Path):
    with pytest.raises(FileNotFoundError):
        Fingerprinter(word_weights=tmp_path / "missing.txt")


# -- HTML ---------------------------------------------------------------------------------

ARTICLE = """<html><head><title>Tides</title></head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<article><h1>How tides work</h1>
<p>Tides are the rise and fall of sea levels caused by the combined effects of the gravitational
forces exerted by the Moon and the Sun and the rotation of the Earth.</p>
<p>Tide tables can be used for any given locale to find the predicted times and amplitude.</p>
</article><footer>Copyright 2024 Example Corp</footer></body></html>"""


def test_signature_of_html_fingerprints_the_main_text():
    signature = DEFAULT.signature_of_html(ARTICLE)
    assert signature is not None
    from simhash_index.text.extract import extract_text

    text = extract_text(ARTICLE)
    assert text is not None and "Moon and the Sun" in text and "Home" not in text
    assert signature == DEFAULT.signature(text)
    assert DEFAULT.signature_of_html(ARTICLE.encode("utf-8")) == signature
    assert DEFAULT.signature_of_html(ARTICLE, ExtractOptions(favor="precision")) is not None
    assert signature != DEFAULT.signature(ARTICLE)  # the markup itself is not the text
    assert DEFAULT.signature_of_html("<html><body></body></html>") is None


@pytest.mark.parametrize(
    "fragment",
    [
        "<p>Die Gezeiten sind das periodische Steigen und Fallen des Meeresspiegels.</p>",
        "<p>潮汐是海平面周期性的升降，由月球和太阳的引力引起。</p><p>潮汐表可以预测时间。</p>",
        "<div><p>Tides are the rise and fall of sea levels.</p><script>track()</script></div>",
    ],
)
def test_an_html_fragment_falls_back_to_its_plain_text(fragment: str):
    """trafilatura finds no main text in a few bare paragraphs (an article body a spider
    extracted): their plain text is the page's text, scripts left out, not no_text."""
    from simhash_index.text.extract import extract_text, fragment_text

    text = extract_text(fragment)
    assert text == fragment_text(fragment) and text and "<" not in text and "track" not in text
    assert DEFAULT.signature_of_html(fragment) == DEFAULT.signature(text)
    assert extract_text("<p>   </p><!-- nothing -->") is None


def test_fragment_text_doctest():
    from simhash_index.text import extract

    assert doctest.testmod(extract).failed == 0


# -- the recorded scheme ------------------------------------------------------------------


def test_previous_defaults_keep_their_scheme():
    # an index built with 0.1's defaults opens with these settings and gets the same fingerprints
    assert PREVIOUS.scheme == PREVIOUS_SCHEME
    assert PREVIOUS.tokens("version 1.7.0") == ["version", "1", "7", "0"]


def test_the_defaults_changed_the_scheme():
    assert DEFAULT.scheme != PREVIOUS_SCHEME
    assert DEFAULT.scheme == (
        "xxh64/64 norm=NFKC+casefold tokens=auto stop=builtin ngram=1 weighting=tf^0.5 idf=none weights=none"
        " min_length=100 sketch=minhash256x8/w3c5 numbers=shape"
    )
    # tfidf's default tables are named, so a change of tables changes the scheme
    assert " idf=jieba+wordfreq-small:en " in Fingerprinter(weighting="tfidf").scheme


@pytest.mark.parametrize(
    "settings",
    [
        {"numbers": "keep"},
        {"numbers": "drop"},
        {"top_k": 64},
        {"stopwords": "english"},
        {"stopwords": "common"},
        {"tf_power": 1.0},
    ],
)
def test_every_option_is_in_the_scheme(settings):
    assert Fingerprinter(**settings).scheme != DEFAULT.scheme


def test_bit_similarity_is_exported():
    assert bit_similarity(0, 0) == 1.0
    assert bit_similarity(0, 2**64 - 1) == 0.0
