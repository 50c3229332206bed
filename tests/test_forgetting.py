"""Forgetting on every backend: forget, prune, reset, and the duplicates logged against a
forgotten page (they go with it; the page comes back as new)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from simhash_index import SimhashIndex
from simhash_index.index.base import Forgotten

A = 0x0123456789ABCDEF
B = 0xFEDCBA9876543210
C = 0x00FF00FF00FF00FF


def fill(index) -> None:
    assert index.check_and_add("https://a/1", A) is None
    assert index.check_and_add("https://b/1", B) is None
    assert index.check_and_add("https://a/2", A ^ 1).key == "https://a/1"
    assert index.check_and_add("https://a/3", A ^ 3).key == "https://a/1"
    assert index.check_and_add("https://b/2", B ^ 1).key == "https://b/1"


def logged(index) -> dict[str, str]:
    return {d.key: d.duplicate_of for d in index.duplicates()}


def test_forget_takes_the_pages_duplicates_with_it(any_url: str) -> None:
    with SimhashIndex(any_url) as index:
        fill(index)
        assert index.forget(["https://a/1", "https://b/2", "https://never/seen"]) == Forgotten(1, 3)
        assert index.get("https://a/1") is None and len(index) == 1
        assert logged(index) == {}
        # a page dropped as a copy of a forgotten one is new when it comes back
        assert index.check_and_add("https://a/2", A ^ 1) is None
        assert index.forget([]) == Forgotten()


def test_prune_forgets_what_is_older_than_the_cutoff(any_url: str) -> None:
    with SimhashIndex(any_url) as index:
        fill(index)
        time.sleep(1.1)  # SQLite stores whole seconds
        cutoff = datetime.now(timezone.utc)
        time.sleep(1.1)
        assert index.check_and_add("https://c/1", C) is None
        assert index.check_and_add("https://c/2", C ^ 1).key == "https://c/1"
        assert index.prune(before=cutoff - timedelta(days=1)) == Forgotten()
        assert index.prune(before=cutoff) == Forgotten(2, 3)
        assert len(index) == 1 and index.get("https://c/1") is not None
        assert logged(index) == {"https://c/2": "https://c/1"}


def test_reset_empties_the_index(any_url: str) -> None:
    with SimhashIndex(any_url) as index:
        fill(index)
        assert index.reset() == Forgotten(2, 3)
        assert len(index) == 0 and index.duplicates() == []
        assert index.check_and_add("https://a/2", A ^ 1) is None  # the index still works
    with SimhashIndex(any_url) as index:
        assert any_url == "memory://" or len(index) == 1


# -- the command line ----------------------------------------------------------------


def test_forget_prune_reset_commands(db_url: str) -> None:
    from test_cli import ok, run

    with SimhashIndex(db_url) as index:
        fill(index)
    assert ok("forget", "--db", db_url, "https://b/1") == "forgot 1 pages stored and 1 duplicates logged\n"
    assert json_urls(ok("duplicates", "--db", db_url)) == ["https://a/2", "https://a/3"]
    said = "forgot 0 pages stored and 0 duplicates logged\n"
    assert ok("prune", "--db", db_url, "--older-than", "30d", "--yes") == said
    tomorrow = (datetime.now(timezone.utc) + timedelta(days=1)).date().isoformat()
    said = "forgot 1 pages stored and 2 duplicates logged\n"
    assert ok("prune", "--db", db_url, "--before", tomorrow, "--yes") == said
    with SimhashIndex(db_url) as index:
        assert len(index) == 0
        fill(index)
    result = run("reset", "--db", db_url, input="n\n")  # refused: nothing happens
    assert result.exit_code == 1 and "Empty" in result.stderr and "2 pages" in result.stderr
    with SimhashIndex(db_url) as index:
        assert len(index) == 2
    result = run("reset", "--db", db_url, input="y\n")
    assert result.exit_code == 0 and result.stdout == "forgot 2 pages stored and 3 duplicates logged\n"
    assert ok("reset", "--db", db_url, "--yes") == "forgot 0 pages stored and 0 duplicates logged\n"


def test_stored_before_counts_what_prune_would_forget(any_url: str) -> None:
    with SimhashIndex(any_url) as index:
        fill(index)
        assert index.stored_before(datetime.now(timezone.utc) - timedelta(days=1)) == 0
        assert index.stored_before(datetime.now(timezone.utc) + timedelta(days=1)) == 2


def test_prune_asks_first_naming_how_many_pages_and_has_a_dry_run(db_url: str) -> None:
    from test_cli import ok, run

    with SimhashIndex(db_url) as index:
        fill(index)
    tomorrow = (datetime.now(timezone.utc) + timedelta(days=1)).date().isoformat()
    for refusal in ("n\n", ""):  # refused, or no answer (not a terminal): nothing happens
        result = run("prune", "--db", db_url, "--before", tomorrow, input=refusal)
        assert result.exit_code == 1 and "Forget 2 of the 2 pages" in result.stderr, result.output
    dry = ok("prune", "--db", db_url, "--before", tomorrow, "--dry-run")
    assert dry.startswith("dry run, nothing forgotten: prune would forget 2 of the 2 pages"), dry
    with SimhashIndex(db_url) as index:
        assert len(index) == 2
    result = run("prune", "--db", db_url, "--before", tomorrow, input="y\n")
    assert result.exit_code == 0 and result.stdout.endswith("forgot 2 pages stored and 3 duplicates logged\n")


def test_forget_of_a_url_the_index_does_not_hold_exits_1(db_url: str) -> None:
    from test_cli import run

    with SimhashIndex(db_url) as index:
        fill(index)
    result = run("forget", "--db", db_url, "https://never/seen")
    assert result.exit_code == 1
    assert result.stdout == "forgot 0 pages stored and 0 duplicates logged\n"
    assert "the index does not hold https://never/seen" in result.stderr, result.stderr
    assert "holds none of the 2 URLs" in run("forget", "--db", db_url, "https://x/1", "https://x/2").stderr
    assert run("forget", "--db", db_url, "https://never/seen", "https://a/2").exit_code == 0


def test_prune_usage_errors(sqlite_url: str) -> None:
    from test_cli import run

    with SimhashIndex(sqlite_url) as index:
        fill(index)
    for args in ([], ["--older-than", "30d", "--before", "2024-01-01"], ["--older-than", "soon"]):
        result = run("prune", "--db", sqlite_url, *args)
        assert result.exit_code == 2, args
    assert "is not a duration" in run("prune", "--db", sqlite_url, "--older-than", "soon").stderr


def json_urls(output: str) -> list[str]:
    import json

    return [json.loads(line)["url"] for line in output.splitlines()]


# -- the window ------------------------------------------------------------------------


def test_a_page_is_a_duplicate_only_of_pages_stored_within_the_window(any_url: str) -> None:
    url = any_url + ("&" if "?" in any_url else "?") + "window=2s"
    with SimhashIndex(url) as index:
        assert index.policy.window == timedelta(seconds=2)
        assert index.check_and_add("https://a/1", A) is None
        assert index.check_and_add("https://a/1-text", None, text_hash=99) is None
        assert index.check_and_add("https://a/2", A ^ 1).key == "https://a/1"  # within the window
        time.sleep(3.1)
        assert index.check_and_add("https://a/3", A ^ 1) is None  # a/1 is out of it: a/3 is new
        assert index.check_and_add("https://a/3-text", None, text_hash=99) is None
        # 1 bit from a/1, 2 from a/3: only a/3 is in the window
        assert index.check_and_add("https://a/4", A ^ 2).key == "https://a/3"
    if any_url != "memory://":
        import json

        from test_cli import ok

        # explain: a/3 was kept because a/1 was stored more than the window before it
        explained = json.loads(ok("explain", "--db", any_url, "https://a/3", "--window", "2s", "--format", "json"))
        assert [(c["url"], c["distance"], c["reason"]) for c in explained["candidates"]] == [
            ("https://a/1", 1, "outside the window")
        ]
        with SimhashIndex(any_url) as index:  # without a window, every stored page counts
            assert index.check_and_add("https://a/5", A ^ 2).key == "https://a/1"


def test_window_arguments() -> None:
    from simhash_index.index.records import Policy, as_window

    assert SimhashIndex("memory://", window="12h").policy.window == timedelta(hours=12)
    assert SimhashIndex("memory://?window=90m").policy.window == timedelta(minutes=90)
    assert SimhashIndex("memory://", window=60).policy.window == timedelta(minutes=1)
    for bad in ("soon", "-1d", 0, timedelta(0)):
        with pytest.raises(ValueError, match="duration"):
            Policy(window=as_window(bad))
    with pytest.raises(ValueError, match="two different windows"):
        SimhashIndex("memory://?window=1d", window="2d")


def test_the_window_setting() -> None:
    from scrapy.settings import Settings

    from simhash_index.scrapy.settings import PipelineSettings

    assert PipelineSettings.from_settings(Settings({"SIMHASH_WINDOW": "30d"})).window == timedelta(days=30)
    assert PipelineSettings.from_settings(Settings({})).window is None
    with pytest.raises(ValueError, match="SIMHASH_WINDOW"):
        PipelineSettings.from_settings(Settings({"SIMHASH_WINDOW": "a month"}))


# -- forgetting beside a crawl -------------------------------------------------------


@pytest.mark.parametrize("forgetting", ["prune", "forget"])
def test_forgetting_beside_writers_on_postgres(postgres_url: str, forgetting: str) -> None:
    """prune and forget take the locks check-and-add takes: writers beside them never fail,
    and no logged duplicate points at a page gone (the issue: ForeignKeyViolation)."""
    import random
    import threading

    from simhash_index import Signature

    SimhashIndex(postgres_url).close()
    errors: list[BaseException] = []
    stop = threading.Event()
    bases = [random.Random(n).getrandbits(64) for n in range(6)]

    def write(writer: int) -> None:
        rng = random.Random(writer)
        try:
            with SimhashIndex(postgres_url, create=False) as index:
                for round_ in range(10_000):
                    if stop.is_set():
                        return
                    batch = [
                        (f"https://w{writer}.example/{round_}/{n}", Signature(base ^ (1 << rng.randrange(64)), None))
                        for n, base in enumerate(bases)
                    ]
                    index.check_and_add_many(batch)
        except BaseException as exc:
            errors.append(exc)

    def forget_loop() -> None:
        try:
            with SimhashIndex(postgres_url, create=False) as index:
                while not stop.is_set():
                    if forgetting == "prune":
                        index.prune(before=datetime.now(timezone.utc) + timedelta(days=1))
                    else:
                        index.forget([match.key for base in bases for match in index.query(base)])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(3)]
    threads.append(threading.Thread(target=forget_loop))
    for thread in threads:
        thread.start()
    time.sleep(2)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, [f"{type(e).__name__}: {e}" for e in errors]
    with SimhashIndex(postgres_url, create=False) as index:
        for duplicate in index.duplicates():
            assert index.get(duplicate.duplicate_of) is not None, duplicate
