"""Every SIMHASH_* setting: a bad value stops the start with one line naming it, a good one
takes effect, and one that changes an existing index's scheme or layout says so before the
crawl fetches anything. docs/scrapy.md's settings table lists every setting."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from conftest import open_stats
from crawling import REPO, crawl
from driving import process, start, stop
from scrapy.exceptions import DropItem
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler
from sites import edit_words, english_article, page, serve

from simhash_index import Fingerprinter, SimhashIndex
from simhash_index.scrapy.failures import StartupError, layout_hint, scheme_difference
from simhash_index.scrapy.middleware import SimhashSkipDuplicatesMiddleware
from simhash_index.scrapy.pipeline import SimhashDedupPipeline
from simhash_index.scrapy.settings import KNOWN, PipelineSettings, SkipSettings
from simhash_index.scrapy.stats import SimhashLogStats

ARTICLE = english_article(21, paragraphs=8, sentences=8)
ARTICLE_HTML = page("Story", ARTICLE)
EDITED_HTML = page("Story", edit_words(ARTICLE, 3, 12))  # a near-duplicate: similarity about 0.9


def started(db_url: str, **settings: object) -> SimhashDedupPipeline:
    crawler = get_crawler(settings_dict={"SIMHASH_DATABASE_URL": db_url, "SIMHASH_WORKERS": 0, **settings})
    open_stats(crawler)
    pipeline = SimhashDedupPipeline.from_crawler(crawler)
    start(pipeline)
    return pipeline


def outcome(pipeline: SimhashDedupPipeline, item: dict) -> str:
    try:
        process(pipeline, item)
    except DropItem as drop:
        return f"dropped: {drop}"
    return "kept"


def custom_fingerprinter() -> Fingerprinter:
    """For SIMHASH_FINGERPRINTER given as the import path of a function."""
    return Fingerprinter(min_length=30)


CUSTOM = Fingerprinter(weighting="tfidf")
TFIDF = '{"weighting": "tfidf"}'


def key_of(item: dict) -> str:
    """For SIMHASH_KEY: the item's own identifier."""
    return f"doc:{item['id']}"


# -- a bad value: one line naming the setting ---------------------------------------

BAD = [
    ("SIMHASH_FINGERPRINTER", {"no_such_option": 1}, "SIMHASH_FINGERPRINTER: "),
    ("SIMHASH_FINGERPRINTER", {"weighting": "loud"}, "SIMHASH_FINGERPRINTER: "),
    ("SIMHASH_FINGERPRINTER", "no.such.module.maker", "SIMHASH_FINGERPRINTER: cannot import"),
    ("SIMHASH_FINGERPRINTER", "test_settings.key_of", "SIMHASH_FINGERPRINTER: "),
    ("SIMHASH_FINGERPRINTER", 7, "SIMHASH_FINGERPRINTER must be a dict"),
    ("SIMHASH_FINGERPRINTER", "{weighting: 'tfidf'}", "SIMHASH_FINGERPRINTER is not a JSON object ("),
    ("SIMHASH_ENABLED", "maybe", "SIMHASH_ENABLED must be True or False; got 'maybe'"),
    ("SIMHASH_MIN_SIMILARITY", 1.5, "SIMHASH_MIN_SIMILARITY must be from 0 to 1; got 1.5"),
    ("SIMHASH_MIN_SIMILARITY", "high", "SIMHASH_MIN_SIMILARITY must be a number"),
    ("SIMHASH_WORD_WEIGHTS", "/no/such/weights.txt", "SIMHASH_WORD_WEIGHTS: "),
    ("SIMHASH_MIN_TEXT_LENGTH", "long", "SIMHASH_MIN_TEXT_LENGTH must be an integer"),
    ("SIMHASH_INDEX_LAYOUT", "quarters", "SIMHASH_INDEX_LAYOUT must be one of blocks, halves"),
    ("SIMHASH_BLOCK_ASSIGNMENT", "random", "SIMHASH_BLOCK_ASSIGNMENT must be one of contiguous, interleaved"),
    ("SIMHASH_KEY", "no.such.function", "SIMHASH_KEY: cannot import"),
    ("SIMHASH_KEY", 42, "SIMHASH_KEY must be a function"),
    ("SIMHASH_CANONICALIZE_URL", "sometimes", "SIMHASH_CANONICALIZE_URL must be True or False"),
    ("SIMHASH_EXTRACT_FAST", "quickly", "SIMHASH_EXTRACT_FAST must be True or False"),
    ("SIMHASH_WORKERS", -1, "SIMHASH_WORKERS must be at least 0"),
    ("SIMHASH_WORKERS", 1.5, "SIMHASH_WORKERS must be an integer"),
    ("SIMHASH_WORKER_TIMEOUT", 0, "SIMHASH_WORKER_TIMEOUT must be at least"),
    ("SIMHASH_BATCH_SIZE", 0, "SIMHASH_BATCH_SIZE must be from 1 to 10000"),
    ("SIMHASH_BATCH_SIZE", 10_001, "SIMHASH_BATCH_SIZE must be from 1 to 10000"),
    ("SIMHASH_DATABASE_URL", 5, "SIMHASH_DATABASE_URL must be a string"),
]


@pytest.mark.parametrize(("setting", "value", "message"), BAD, ids=[f"{s}={v!r}" for s, v, _ in BAD])
def test_a_bad_value_stops_the_start_naming_the_setting(
    sqlite_url: str, setting: str, value: object, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    crawler = get_crawler(settings_dict={"SIMHASH_DATABASE_URL": sqlite_url, setting: value})
    with pytest.raises(StartupError) as stopped:
        SimhashDedupPipeline.from_crawler(crawler)
    assert str(stopped.value).startswith(message), stopped.value
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors == [f"simhash: {stopped.value}"] and "\n" not in errors[0]


SWITCHES = [  # (component, a True/False setting it reads)
    (SimhashDedupPipeline, "SIMHASH_ENABLED"),
    (SimhashLogStats, "SIMHASH_ENABLED"),
    (SimhashSkipDuplicatesMiddleware, "SIMHASH_ENABLED"),
    (SimhashSkipDuplicatesMiddleware, "SIMHASH_SKIP_DUPLICATES"),
    (SimhashSkipDuplicatesMiddleware, "SIMHASH_CANONICALIZE_URL"),
]


@pytest.mark.parametrize(("component", "setting"), SWITCHES, ids=[f"{c.__name__}-{s}" for c, s in SWITCHES])
def test_every_component_refuses_a_bad_switch_naming_it(
    sqlite_url: str, component: type, setting: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = {"SIMHASH_DATABASE_URL": sqlite_url, "SIMHASH_SKIP_DUPLICATES": True, setting: "yes please"}
    with pytest.raises(StartupError) as stopped:
        component.from_crawler(get_crawler(settings_dict=settings))
    assert str(stopped.value) == f"{setting} must be True or False; got 'yes please'"
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [f"simhash: {stopped.value}"]


def test_tfidf_without_wordfreq_is_one_line_naming_the_setting(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "wordfreq", None)  # as if not installed: importing it fails
    crawler = get_crawler(settings_dict={"SIMHASH_DATABASE_URL": sqlite_url, "SIMHASH_FINGERPRINTER": TFIDF})
    with pytest.raises(StartupError, match=r"^SIMHASH_FINGERPRINTER: .*needs wordfreq"):
        SimhashDedupPipeline.from_crawler(crawler)


def test_layout_settings_are_refused_for_redis(redis_url: str) -> None:
    crawler = get_crawler(settings_dict={"SIMHASH_DATABASE_URL": redis_url, "SIMHASH_INDEX_LAYOUT": "halves"})
    with pytest.raises(StartupError, match="SIMHASH_INDEX_LAYOUT and SIMHASH_BLOCK_ASSIGNMENT apply to SQL"):
        SimhashDedupPipeline.from_crawler(crawler)


@pytest.mark.parametrize(
    "setting",
    [
        'SIMHASH_FINGERPRINTER={"top_k": -3}',
        "SIMHASH_KEY=no.such.function",
        "SIMHASH_WORKERS=many",
        "SIMHASH_SKIP_DUPLICATES=yes please",  # read by the skip middleware, before the pipeline
        f"SIMHASH_FINGERPRINTER={TFIDF}",  # without wordfreq
    ],
)
def test_a_bad_value_in_a_crawl_is_one_error_line_and_exit_1(tmp_path: Path, sqlite_url: str, setting: str) -> None:
    no_wordfreq = tmp_path / "no_wordfreq"  # shadows the installed wordfreq: importing it fails
    no_wordfreq.mkdir()
    (no_wordfreq / "wordfreq.py").write_text('raise ImportError("No module named wordfreq")\n')
    env = {"PYTHONPATH": str(no_wordfreq)} if setting.endswith(TFIDF) else None
    result = crawl("http://127.0.0.1:9/index.html", sqlite_url, tmp_path / "run", setting, env=env)
    assert result.returncode == 1
    assert "Traceback" not in result.log
    errors = [line for line in result.log.splitlines() if " ERROR: " in line or " CRITICAL: " in line]
    assert len(errors) == 1 and setting.partition("=")[0] in errors[0], errors


# -- a good value takes effect --------------------------------------------------------


def test_fingerprinter_from_a_dict_a_json_string_and_import_paths(tmp_path: Path) -> None:
    cases = {
        "dict": ({"weighting": "tfidf", "top_k": 64}, Fingerprinter(weighting="tfidf", top_k=64)),
        "json": ('{"weighting": "tfidf", "top_k": 64}', Fingerprinter(weighting="tfidf", top_k=64)),
        "function": ("test_settings.custom_fingerprinter", custom_fingerprinter()),
        "object": ("test_settings.CUSTOM", CUSTOM),
    }
    for name, (value, expected) in cases.items():
        db = f"sqlite:///{tmp_path / name}.db"
        pipeline = started(db, SIMHASH_FINGERPRINTER=value)
        kept = process(pipeline, {"url": "http://f/1", "html": ARTICLE_HTML})
        stop(pipeline)
        assert pipeline.fingerprinter.scheme == expected.scheme != Fingerprinter().scheme, name
        text = kept["text"]
        assert kept["simhash"] == f"{expected.fingerprint(text):016x}", name
        with SimhashIndex(db, scheme=None) as index:
            assert index.scheme == expected.scheme, name


def test_min_similarity_decides_near_duplicates(tmp_path: Path) -> None:
    decided = {}
    for threshold in (0.5, 0.99):
        pipeline = started(f"sqlite:///{tmp_path}/{threshold}.db", SIMHASH_MIN_SIMILARITY=threshold)
        process(pipeline, {"url": "http://s/1", "html": ARTICLE_HTML})
        decided[threshold] = outcome(pipeline, {"url": "http://s/2", "html": EDITED_HTML})
        stop(pipeline)
    assert decided[0.5].startswith("dropped: http://s/2 is a near-duplicate of http://s/1 (distance ")
    assert decided[0.99] == "kept"


def test_word_weights_and_min_text_length(tmp_path: Path) -> None:
    weights = tmp_path / "weights.txt"
    weights.write_text("harbour 5\nstory 0\n", encoding="utf-8")
    pipeline = started(f"sqlite:///{tmp_path}/w.db", SIMHASH_WORD_WEIGHTS=str(weights), SIMHASH_MIN_TEXT_LENGTH=20)
    short = "The harbour reopened on Monday morning."  # 39 characters: exact-only under the default 100
    kept = process(pipeline, {"url": "http://w/1", "text": short})
    stop(pipeline)
    expected = Fingerprinter(word_weights=str(weights), min_length=20)
    assert pipeline.fingerprinter.scheme == expected.scheme
    assert kept["simhash"] == f"{expected.fingerprint(short):016x}"
    assert f"{Fingerprinter().fingerprint(short):016x}" != kept["simhash"]  # the weights count
    default = started(f"sqlite:///{tmp_path}/d.db")
    process(default, {"url": "http://w/1", "text": short})
    stop(default)
    for db, near in (("w", ["http://w/1"]), ("d", [])):  # a short text is stored for exact matches only
        with SimhashIndex(f"sqlite:///{tmp_path}/{db}.db", scheme=None) as index:
            stored = index.get("http://w/1")
            assert [match.key for match in index.query(stored.fingerprint)] == near, db


@pytest.mark.parametrize(("layout", "assignment"), [("halves", None), ("blocks", "interleaved")])
def test_index_layout_of_a_new_sql_index(tmp_path: Path, layout: str, assignment: str | None) -> None:
    settings = {"SIMHASH_INDEX_LAYOUT": layout} | ({"SIMHASH_BLOCK_ASSIGNMENT": assignment} if assignment else {})
    db = f"sqlite:///{tmp_path}/layout.db"
    stop(started(db, **settings))
    with SimhashIndex(db, scheme=None) as index:
        described = index.describe()
    assert described.layout == layout
    assert described.block_assignment == (assignment or "contiguous")


def test_key_function_and_url_canonicalisation(tmp_path: Path) -> None:
    by_id = started(f"sqlite:///{tmp_path}/key.db", SIMHASH_KEY="test_settings.key_of")
    process(by_id, {"id": 7, "html": ARTICLE_HTML})  # no URL field: the key function gives one
    dropped = outcome(by_id, {"id": 8, "url": "http://k/8", "html": ARTICLE_HTML})
    stop(by_id)
    assert dropped == "dropped: doc:8 is a near-duplicate of doc:7 (distance 0, exact text)"

    canonical = started(f"sqlite:///{tmp_path}/canonical.db", SIMHASH_CANONICALIZE_URL=True)
    process(canonical, {"url": "http://k/page?b=2&a=1#top", "html": ARTICLE_HTML})
    again = outcome(canonical, {"url": "http://k/page?a=1&b=2", "html": ARTICLE_HTML})
    stop(canonical)
    assert again == "dropped: http://k/page?a=1&b=2 was passed on earlier in this crawl, with the same text"
    with SimhashIndex(f"sqlite:///{tmp_path}/canonical.db", scheme=None) as index:
        assert index.get("http://k/page?a=1&b=2") is not None and len(index) == 1


# trafilatura's fallback extractors give this page another text than its fast mode does
SPANS_HTML = (
    "<html><body><main><span>"
    + "</span><span>".join(f"Word group {i} about gardens and rain." for i in range(60))
    + "</span></main></body></html>"
)


def test_extract_fast_skips_trafilaturas_fallbacks(tmp_path: Path) -> None:
    import trafilatura

    named = "fast" if int(trafilatura.__version__.split(".")[0]) >= 2 else "no_fallback"  # trafilatura 1.x's name
    wanted = {fast: trafilatura.extract(SPANS_HTML, **{named: fast}) for fast in (False, True)}
    assert wanted[False] != wanted[True]
    kept = {}
    for fast in (False, True):
        url = f"sqlite:///{tmp_path}/{fast}.db"
        pipeline = started(url, SIMHASH_EXTRACT_FAST=fast, SIMHASH_KEEP_TEXTS=True)
        assert outcome(pipeline, {"url": "http://t/spans", "html": SPANS_HTML}) == "kept"
        stop(pipeline)
        with SimhashIndex(url) as index:
            kept[fast] = index.text("http://t/spans")
    assert kept == wanted


def test_workers_timeout_and_batch_size(tmp_path: Path) -> None:
    threads = started(f"sqlite:///{tmp_path}/0.db", SIMHASH_WORKERS=0, SIMHASH_BATCH_SIZE=5)
    assert threads.core.pool is None and threads.core.writer is not None and threads.core.writer.batch_size == 5
    stop(threads)
    hurried = started(f"sqlite:///{tmp_path}/1.db", SIMHASH_WORKERS=1, SIMHASH_WORKER_TIMEOUT=0.001)
    assert hurried.core.pool is not None and hurried.core.pool.size == 1 and hurried.core.pool.timeout == 0.001
    big = page("Big", english_article(5, paragraphs=400))  # far more than a millisecond to extract
    assert process(hurried, {"url": "http://t/1", "html": big})["url"] == "http://t/1"
    stats = hurried.stats.get_stats()
    stop(hurried)
    assert stats.get("simhash/errors/worker_timeout") == 1


def test_database_url_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from_env = f"sqlite:///{tmp_path}/env.db"
    monkeypatch.setenv("SIMHASH_DATABASE_URL", from_env)
    crawler = get_crawler(settings_dict={"SIMHASH_WORKERS": 0})
    assert SimhashDedupPipeline.from_crawler(crawler).settings.database_url == from_env
    given = get_crawler(settings_dict={"SIMHASH_WORKERS": 0, "SIMHASH_DATABASE_URL": "sqlite:///given.db"})
    assert SimhashDedupPipeline.from_crawler(given).settings.database_url == "sqlite:///given.db"  # the setting wins


# -- settings that change an existing index: refused before the crawl starts --------


@pytest.fixture
def existing(tmp_path: Path) -> str:
    db = f"sqlite:///{tmp_path}/existing.db"
    stop(started(db))
    return db


@pytest.mark.parametrize(
    ("setting", "named", "differs"),
    [
        ("SIMHASH_MIN_TEXT_LENGTH=50", "SIMHASH_MIN_TEXT_LENGTH", "min_length=100, the settings give min_length=50"),
        ('SIMHASH_FINGERPRINTER={"weighting": "tfidf"}', "SIMHASH_FINGERPRINTER", "weighting=tf^0.5"),
        ("SIMHASH_INDEX_LAYOUT=halves", "SIMHASH_INDEX_LAYOUT", "cannot be opened as a halves"),
    ],
)
def test_a_setting_that_changes_an_existing_index_stops_before_the_crawl(
    existing: str, tmp_path: Path, setting: str, named: str, differs: str
) -> None:
    result = crawl("http://127.0.0.1:9/index.html", existing, tmp_path / "run", setting)
    assert result.returncode == 1
    assert "'finish_reason': 'simhash_index_unavailable'" in result.log
    assert result.stat("downloader/request_count") == 0
    errors = [line for line in result.log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1 and "cannot open the index, stopping the crawl" in errors[0], errors
    assert named in errors[0] and differs in errors[0] and "\\n" not in errors[0]


def test_scheme_difference_names_each_part_and_its_setting() -> None:
    there = Fingerprinter().scheme
    here = Fingerprinter(min_length=40, word_weights={"a": 2.0}).scheme
    message = scheme_difference("db holds fingerprints of another scheme, which are not comparable:\n...", there, here)
    assert message.startswith("db holds fingerprints of another scheme, which are not comparable: its ")
    assert "min_length=100" in message and "min_length=40" in message
    assert "SIMHASH_MIN_TEXT_LENGTH and SIMHASH_WORD_WEIGHTS" in message and "SIMHASH_FINGERPRINTER" not in message
    unknown = scheme_difference("db holds another scheme:\n  database: x\n  asked: y", None, here)
    assert "SIMHASH_FINGERPRINTER, SIMHASH_MIN_TEXT_LENGTH and SIMHASH_WORD_WEIGHTS" in unknown
    assert "\n" not in unknown and "\n" not in layout_hint("a\nb")


# -- docs/scrapy.md documents every setting ------------------------------------------------

SETTINGS_PAGE = REPO / "docs" / "scrapy.md"  # its "Settings" table


def documented_settings_table() -> dict[str, str]:
    """Each row of docs/scrapy.md's settings table: setting -> the rest of its row."""
    page = SETTINGS_PAGE.read_text(encoding="utf-8")
    return dict(re.findall(r"^\| `(SIMHASH_[A-Z_]+)` \|(.*)\|$", page, re.MULTILINE))


class Recording(Settings):
    """Settings that note the name of every SIMHASH_* setting read."""

    def __init__(self, values: dict[str, object]) -> None:
        super().__init__(values)
        self.read: set[str] = set()

    def __getitem__(self, name: object) -> object:
        if isinstance(name, str) and name.startswith("SIMHASH_"):
            self.read.add(name)
        return super().__getitem__(name)


def test_every_setting_read_is_known_and_documented() -> None:
    settings = Recording({})
    PipelineSettings.from_settings(settings)
    SkipSettings.from_settings(settings)
    assert settings.read == set(KNOWN), sorted(settings.read ^ set(KNOWN))
    assert set(documented_settings_table()) == set(KNOWN)


def test_an_unknown_setting_is_a_warning_naming_the_closest_known_one(tmp_path: Path, sqlite_url: str) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text(ARTICLE_HTML)
    with serve(tmp_path / "site") as base:
        result = crawl(f"{base}/index.html", sqlite_url, tmp_path / "run", "SIMHASH_MAX_DISTNCE=3", "SIMHASH_COLOUR=1")
    assert result.returncode == 0 and result.stat("simhash/kept") == 1, result.log[-3000:]
    warnings = [line.partition(" WARNING: ")[2] for line in result.log.splitlines() if "unknown setting" in line]
    assert warnings == [
        "simhash: unknown setting SIMHASH_COLOUR, ignored: docs/scrapy.md's Settings list the known ones",
        "simhash: unknown setting SIMHASH_MAX_DISTNCE, ignored: did you mean SIMHASH_MAX_DISTANCE?",
    ]


def test_the_docs_say_which_settings_need_a_new_database() -> None:
    documented = documented_settings_table()
    for setting in ("SIMHASH_FINGERPRINTER", "SIMHASH_MIN_TEXT_LENGTH", "SIMHASH_WORD_WEIGHTS"):
        assert "new database" in documented[setting], setting
    for setting in ("SIMHASH_INDEX_LAYOUT", "SIMHASH_BLOCK_ASSIGNMENT"):
        assert "new database" in documented[setting] or "new index" in documented[setting], setting
    for setting in ("SIMHASH_MAX_DISTANCE", "SIMHASH_MIN_SIMILARITY", "SIMHASH_KEY", "SIMHASH_WORKERS"):
        assert "new database" not in documented[setting], setting
