"""What only the Redis backend has: URLs and key prefixes, its key layout, and agreement with SQL.

The shared index, CLI and crawl suites run on Redis too, through conftest's `db_url`.
"""

from __future__ import annotations

import dataclasses
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import redis_keys
from click.testing import CliRunner
from conftest import REQUIRE_ENV, driver, redis_prefix_url, redis_server

from simhash_index import IndexNotFoundError, IndexUnavailableError, Match, Signature, SimhashIndex, SimhashIndexError
from simhash_index.cli import cli
from simhash_index.fingerprinting.fingerprinter import DEFAULT
from simhash_index.fingerprinting.sketch import minhash
from simhash_index.urls import masked as masked_url

redis = driver("redis", "redis")

from simhash_index.index.redis.backend import RedisIndex, split_url  # noqa: E402 - needs the redis package
from simhash_index.index.redis.codec import FIELDS, key_hash, micros  # noqa: E402
from simhash_index.index.redis.server import Server  # noqa: E402


@pytest.fixture
def client(redis_url: str) -> redis.Redis:
    connect_to, _ = split_url(redis_url)
    with redis.Redis.from_url(connect_to) as connection:
        yield connection


def test_a_redis_url_gives_a_redis_index(redis_url: str) -> None:
    with SimhashIndex(redis_url) as index:
        assert isinstance(index, RedisIndex)
        assert index.url == redis_url and index.prefix == split_url(redis_url)[1]
        assert repr(index).startswith("RedisIndex(")


def test_prefixes_keep_indexes_apart(redis_url: str) -> None:
    _, prefix = split_url(redis_url)
    other = redis_prefix_url(prefix + "other:")
    try:
        with SimhashIndex(redis_url) as first, SimhashIndex(other, scheme="another scheme") as second:
            assert first.check_and_add("page", 1) is None
            assert second.check_and_add("copy", 1) is None  # not a duplicate: another index
            assert (len(first), len(second)) == (1, 1)
            assert second.duplicates() == [] and second.get("page") is None
        url = redis_url.split("?")[0]
        with RedisIndex(url, prefix=prefix, create=False) as same:  # the keyword is the URL's ?prefix=
            assert same.get("page") is not None
    finally:
        client = redis_server()
        for key in client.scan_iter(match=f"{prefix}other:*"):
            client.delete(key)
        client.close()


def test_prefix_arguments() -> None:
    assert split_url("redis://h:1/2")[1] == "simhash:"
    assert split_url("redis://h:1/2?prefix=a:&db=3") == ("redis://h:1/2?db=3", "a:")
    with pytest.raises(ValueError, match="two different key prefixes"):
        split_url("redis://h/0?prefix=a:", "b:")
    with pytest.raises(ValueError, match="non-empty"):
        split_url("redis://h/0?prefix=")


def test_create_false_finds_nothing_under_a_new_prefix(redis_url: str, client: redis.Redis) -> None:
    with pytest.raises(IndexNotFoundError, match="prefix"):
        SimhashIndex(redis_url, create=False)
    assert client.keys(f"{split_url(redis_url)[1]}*") == []  # looking wrote nothing


def test_the_documented_key_layout(redis_url: str, client: redis.Redis) -> None:
    fp, text_hash = 0x0123456789ABCDEF, 0xFEDCBA9876543210
    sketch = minhash({"a b c", "b c d"})
    dated = datetime(2024, 5, 1, tzinfo=timezone.utc)
    with SimhashIndex(redis_url) as index:
        index.check_and_add("https://a/", Signature(fp, text_hash, sketch, words=120, dated=dated))
        index.check_and_add("https://b/", fp ^ 1)
        index.check_and_add("https://short/", Signature(fp ^ 0xF0F0, 7, exact_only=True))
    p = split_url(redis_url)[1]
    meta = client.hgetall(f"{p}meta")
    assert meta.keys() == {b"schema_version", b"scheme", b"epoch", b"floor"}
    assert (meta[b"schema_version"], meta[b"floor"]) == (b"3", b"0-0") and meta[b"epoch"]
    assert client.hgetall(f"{p}ids") == {b"https://a/": b"1", b"https://short/": b"2"}
    assert client.hgetall(f"{p}doc:1") | {b"stored_at": b""} == {
        b"key": b"https://a/",
        b"fingerprint": b"0123456789abcdef",
        b"text_hash": b"fedcba9876543210",
        b"words": b"120",
        b"dated": str(micros(dated)).encode(),
        b"stored_at": b"",
    }
    assert client.get(f"{p}sketch:1") == sketch and client.get(f"{p}sketch:2") is None
    assert client.hget(f"{p}doc:2", "exact_only") == b"1"
    # page 1's slot in bucket 0 (page 0's, never given, is zeros); short texts have none
    assert client.get(f"{p}fp:0") == bytes(9) + b"\x01" + fp.to_bytes(8, "big")
    assert client.zrange(f"{p}text:fedcba9876543210", 0, -1) == [b"1"]
    assert client.zrange(f"{p}text:0000000000000007", 0, -1) == [b"2"]
    assert client.zrange(f"{p}dup_log", 0, -1) == [b"1"]
    assert client.hgetall(f"{p}dup_ids") == {b"https://b/": b"1"}
    assert client.smembers(f"{p}against:1") == {b"1"}
    entry = client.hgetall(f"{p}dup:1")
    assert {k: entry[k] for k in (b"key", b"duplicate_of", b"duplicate_of_id", b"distance", b"exact")} == {
        b"key": b"https://b/",
        b"duplicate_of": b"https://a/",
        b"duplicate_of_id": b"1",
        b"distance": b"1",
        b"exact": b"0",
    }
    a, short = key_hash("https://a/"), key_hash("https://short/")
    assert redis_keys.entries(client, p) == [
        ("1", 1, "0123456789abcdef", a, "fedcba9876543210"),
        ("1", 2, "", short, "0000000000000007"),
    ]
    with SimhashIndex(redis_url) as index:
        index.add("https://a/", fp)  # replaced: without a sketch or a text hash now
    assert client.get(f"{p}sketch:1") is None and client.zrange(f"{p}text:fedcba9876543210", 0, -1) == []
    assert redis_keys.entries(client, p)[2:] == [
        ("0", 1, "0123456789abcdef", a, "fedcba9876543210"),
        ("1", 1, "0123456789abcdef", a, ""),
    ]
    assert redis_keys.problems(client, p) == []


@pytest.mark.parametrize("exact_only", [False, True])
def test_every_signature_field_is_stored_and_read_back(redis_url: str, exact_only: bool) -> None:
    """The codec stores each field a Signature has (a field added to Signature and not to
    codec.FIELDS fails here), and reads each back as it was, those that take no part in equality too."""
    kept = [field for field in dataclasses.fields(Signature) if field.metadata.get("stored", True)]
    assert {field.attribute for field in FIELDS} == {field.name for field in kept}
    when = datetime(2024, 5, 1, 12, 30, 15, 250, tzinfo=timezone.utc)
    given = Signature(
        0xFEDCBA9876543210,
        0x0123456789ABCDEF,
        minhash({"a b c", "b c d"}),
        exact_only=exact_only,
        words=321,
        dated=when,
        modified=when + timedelta(days=3),
        shingles=2,
        bloom=bytes(range(32)),
    )
    with SimhashIndex(redis_url) as index:
        index.add("https://a/", given)
        stored = index.page("https://a/")
    assert stored is not None
    assert {f.name: getattr(stored.signature, f.name) for f in kept} == {f.name: getattr(given, f.name) for f in kept}


def test_unreachable_server_hides_the_password() -> None:
    with pytest.raises(IndexUnavailableError) as info:
        SimhashIndex("redis://someone:s3cret@127.0.0.1:1/0")
    assert "someone:***@127.0.0.1:1" in str(info.value) and "s3cret" not in str(info.value)
    with pytest.raises(IndexUnavailableError, match="not a usable Redis URL"):
        SimhashIndex("redis://:s3cret@127.0.0.1:notaport/0")
    assert masked_url("rediss://:pw@h:1/0?prefix=a:") == "rediss://:***@h:1/0?prefix=a:"


def test_the_command_line_on_redis(redis_url: str) -> None:
    def run(*args: str):
        return CliRunner().invoke(cli, list(args))

    missing = run("stats", "--db", redis_url)
    assert missing.exit_code == 2 and "holds no simhash index" in missing.stderr
    down = run("duplicates", "--db", "redis://someone:s3cret@127.0.0.1:1/0")
    assert down.exit_code == 2 and "is unavailable" in down.stderr and "s3cret" not in down.stderr


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[tuple[int, Callable[[], None], Callable[[], None]]]:
    """A throwaway redis-server with a password on a port of its own; yields a function that restarts it."""
    binary = shutil.which("redis-server")
    if binary is None:
        message = "needs the redis-server program"
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(message)
        pytest.skip(message)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(tmp_path),
        "--requirepass",
        PASSWORD,
    ]
    process: list[subprocess.Popen] = []

    def start() -> None:
        process.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with redis.Redis(port=port, password=PASSWORD) as client:
            for _ in range(100):
                try:
                    client.ping()
                    return
                except redis.ConnectionError:
                    time.sleep(0.05)
        pytest.fail("the throwaway redis-server did not start")

    def stop() -> None:
        process[-1].terminate()
        process[-1].wait(timeout=30)

    start()
    try:
        yield port, start, stop
    finally:
        stop()


PASSWORD = "s3cret-Zq9"


def test_a_server_lost_and_back(own_server) -> None:
    port, start, stop = own_server
    with pytest.raises(IndexUnavailableError) as info:  # a wrong password is "unavailable" too
        SimhashIndex(f"redis://:wrong-Xk2@127.0.0.1:{port}/0")
    assert "wrong-Xk2" not in str(info.value)
    with SimhashIndex(f"redis://:{PASSWORD}@127.0.0.1:{port}/0?prefix=lost:") as index:
        assert index.check_and_add("a", 1) is None
        stop()
        with pytest.raises(IndexUnavailableError) as info:
            index.check_and_add("b", 1)
        message = str(info.value)
        assert f"127.0.0.1:{port}" in message and PASSWORD not in message
        start()  # it reconnects by itself; but without persistence the server came back empty,
        with pytest.raises(IndexNotFoundError, match="any more"):  # which it says rather than start over
            index.check_and_add("b", 1)
    with SimhashIndex(f"redis://:{PASSWORD}@127.0.0.1:{port}/0?prefix=lost:") as index:  # a new one
        assert index.check_and_add("b", 1) is None
        assert index.check_and_add("c", 1) == Match("b", 1, 0)


def test_reset_forget_and_prune_leave_an_index_under_a_longer_prefix(redis_url: str, client: redis.Redis) -> None:
    """`site:` and `site:news:`: the first one's reset deleted every key matching `site:*`."""
    _, prefix = split_url(redis_url)
    neighbour = redis_prefix_url(prefix + "news:")
    try:
        with SimhashIndex(redis_url + "&texts=1") as site, SimhashIndex(neighbour + "&texts=1") as news:
            for index in (site, news):
                assert index.check_and_add_many([("a", Signature(1, 2)), ("b", Signature(1, 3))])[1] is not None
                index.store_texts([("a", "a text"), ("b", "b text")])
            site.forget(["a"])
            site.prune(before=datetime.now(timezone.utc) + timedelta(days=1))
            site.reset()
            assert (len(site), site.duplicates()) == (0, [])
            assert len(news) == 1 and [d.key for d in news.duplicates()] == ["b"]
            assert (news.text("a"), news.text("b")) == ("a text", "b text")
        assert [
            key for key in client.scan_iter(match=f"{prefix}*") if not key.startswith(f"{prefix}news:".encode())
        ] == [f"{prefix}meta".encode()]
    finally:
        for key in client.scan_iter(match=f"{prefix}news:*"):
            client.delete(key)


KILLED_PAGES = 3000  # three script calls of prune: killed after the first

_KILLED_PRUNE = """
import os, signal, sys
from datetime import datetime, timedelta, timezone
from simhash_index import SimhashIndex
from simhash_index.index.redis.server import Server

run = Server.run

def run_then_die(self, command, *args):
    answer = run(self, command, *args)
    if command == "prune":
        os.kill(os.getpid(), signal.SIGKILL)
    return answer

Server.run = run_then_die
SimhashIndex(sys.argv[1]).prune(before=datetime.now(timezone.utc) + timedelta(days=1))
"""


def test_a_killed_prune_leaves_no_duplicate_against_a_gone_page(redis_url: str) -> None:
    """A page and the duplicates logged against it go in one script call: a prune SIGKILLed
    after its first call leaves no logged duplicate pointing at a page no longer stored."""
    rng = random.Random(3)
    fingerprints = [rng.getrandbits(64) for _ in range(KILLED_PAGES)]
    with SimhashIndex(redis_url) as index:
        index.add_many((f"https://p/{n}", fp) for n, fp in enumerate(fingerprints))
        copies = [(f"https://copy/{n}", Signature(fp ^ 1, None)) for n, fp in enumerate(fingerprints[::10])]
        assert all(index.check_and_add_many(copies))
    killed = subprocess.run([sys.executable, "-c", _KILLED_PRUNE, redis_url], timeout=120)
    assert killed.returncode == -signal.SIGKILL
    with SimhashIndex(redis_url, create=False) as index:
        assert 0 < len(index) < KILLED_PAGES
        logged = index.duplicates()
        assert [d.key for d in logged if index.get(d.duplicate_of) is None] == []
        assert 0 < len(logged) < len(copies)


def test_the_pipeline_starts_a_new_index_when_the_server_comes_back_empty(own_server, caplog) -> None:
    """Redis restarted without persistence mid-crawl: deduplication resumes on a new, empty index
    (the issue: every item after "the index answers again" passed through with errors/db)."""
    import driving
    from driving import make_pipeline
    from driving import simhash_stats as stats
    from scrapy.exceptions import DropItem
    from sites import english_article, page

    port, start, stop = own_server
    url = f"redis://:{PASSWORD}@127.0.0.1:{port}/0?prefix=crawl:"
    pipeline = make_pipeline(url, SIMHASH_ON_DB_ERROR="pass", SIMHASH_BATCH_SIZE=1)
    try:
        driving.process(pipeline, {"url": "http://a/0", "html": page("First", english_article(0))})
        stop()
        start()
        deadline = time.monotonic() + 10
        for n in range(1, 1000):  # items pass through while the client notices and reconnects
            html = page(f"Page {n}", english_article(n))
            driving.process(pipeline, {"url": f"http://a/{n}", "html": html})
            if stats(pipeline).get("simhash/kept", 0) == 2:
                break
            assert time.monotonic() < deadline, f"deduplication did not resume: {stats(pipeline)}"
            time.sleep(0.1)
        with pytest.raises(DropItem):
            driving.process(pipeline, {"url": "http://copy/", "html": html})
        assert stats(pipeline)["simhash/index_lost"] == 1
        assert "starting a new, empty index" in caplog.text
    finally:
        driving.stop(pipeline)


def _decide_in_calls(
    url: str, stored: list[tuple[str, Signature]], batch: list[tuple[str, Signature]], monkeypatch: pytest.MonkeyPatch
) -> tuple[list[Match | None], int, tuple]:
    """The batch decided by one check_and_add_many on a new index holding `stored`: the answers, the
    number of `write` calls, and what the index holds after."""
    calls = []
    run = Server.run

    def counted(self: Server, command: str, *args: object) -> object:
        calls.append(command)
        return run(self, command, *args)

    with SimhashIndex(url, prefer="longest") as index:
        index.add_many(stored)
        monkeypatch.setattr(Server, "run", counted)
        answers = index.check_and_add_many(batch)
        monkeypatch.setattr(Server, "run", run)
        log = [(d.key, d.duplicate_of, d.distance, d.exact, d.superseded) for d in index.duplicates()]
        held = (len(index), log, [index.query(signature.simhash) for _, signature in stored[:5]])
        assert redis_keys.problems(index._server.client, index.prefix) == []
    return answers, calls.count("write"), held


def test_a_big_batch_is_written_in_chunks_decided_as_one_chunk_would(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch is decided and written CHECK_PAGES pages at a time (a `write` call each, bounded
    whatever the batch): the decisions, the survivors and the log are those of the batch written
    in one call, or a page a call."""
    import simhash_index.index.redis.backend as backend

    rng = random.Random(39)
    base = [f"w{i} w{i + 1} w{i + 2}" for i in range(400)]
    centres = [rng.getrandbits(64) for _ in range(5)]

    def page(n: int) -> Signature:
        fp = centres[n % 5] ^ sum(1 << bit for bit in rng.sample(range(64), rng.randint(0, 7)))
        sketch = minhash(shingles(rng, base, rng.randint(340, 400), rng.randint(0, 30)))
        text_hash = rng.choice([None, None, None, 1])
        return Signature(fp, text_hash, sketch, words=rng.randint(10, 500))

    stored = [(f"s{n}", page(n)) for n in range(40)]
    batch = [(f"k{rng.randrange(250)}", page(n)) for n in range(300)]  # some keys come twice
    decided = {}
    for n, chunk in enumerate([10_000, backend.CHECK_PAGES, 1]):
        prefix = f"simhash-test-split-{os.getpid()}-{n}:"
        monkeypatch.setattr(backend, "CHECK_PAGES", chunk)
        try:
            decided[chunk] = _decide_in_calls(redis_prefix_url(prefix), stored, batch, monkeypatch)
        finally:
            for key in client.scan_iter(match=f"{prefix}*"):
                client.delete(key)
    one, calls_one, held_one = decided[10_000]
    assert calls_one == 1
    assert sum(a is not None for a in one) > 50 and any(a is not None and a.superseded for a in one)
    default, calls_default, held_default = decided[backend.CHECK_PAGES]
    assert calls_default == -(-300 // backend.CHECK_PAGES)
    paged, calls_paged, held_paged = decided[1]
    assert calls_paged == 300
    assert default == one and paged == one
    assert held_default == held_one and held_paged == held_one


def shingles(rng: random.Random, base: list[str], keep: int, extra: int) -> set[str]:
    return set(rng.sample(base, keep)) | {f"x{rng.getrandbits(40)}" for _ in range(extra)}


_KILLED_WRITER = """
import os, random, signal, sys, threading
from simhash_index import Signature, SimhashIndex
from simhash_index.index.redis.server import Server

url, seed, pages = sys.argv[1], int(sys.argv[2]), eval(sys.argv[3])
rng = random.Random(seed)
run = Server.run

def run_then_die(self, command, *args):
    if command == "write" and rng.random() < 0.3:  # killed while the call is sent, run or answered
        threading.Timer(rng.random() / 500, os.kill, (os.getpid(), signal.SIGKILL)).start()
    return run(self, command, *args)

Server.run = run_then_die
rng.shuffle(pages)
with SimhashIndex(url, create=False) as index:
    for start in range(0, len(pages), 6):
        index.check_and_add_many([(key, Signature(fp, text)) for key, fp, text in pages[start : start + 6]])
"""


def test_writers_killed_mid_call_leave_a_consistent_index_that_others_follow(redis_url: str, client) -> None:
    """Writers SIGKILLed while a `write` call is sent, run or answered: every call happened whole
    or not at all (the keys agree with one another and with the change stream), and a writer
    started after them stores one page of each group of near copies, logging the others."""
    rng = random.Random(17)
    bases = []
    while len(bases) < 30:
        candidate = rng.getrandbits(64)
        if all(bin(candidate ^ other).count("1") >= 14 for other in bases):
            bases.append(candidate)
    groups = {
        f"https://g{g}.example/{m}": (g, base ^ (1 << rng.randrange(64)) * (m > 0))
        for g, base in enumerate(bases)
        for m in range(4)
    }
    pages = [(key, fp, rng.getrandbits(64)) for key, (_, fp) in groups.items()]
    SimhashIndex(redis_url).close()
    prefix = split_url(redis_url)[1]
    killed = 0
    for seed in range(4):
        ran = subprocess.run([sys.executable, "-c", _KILLED_WRITER, redis_url, str(seed), repr(pages)], timeout=120)
        killed += ran.returncode == -signal.SIGKILL
        assert ran.returncode in (0, -signal.SIGKILL)
        assert redis_keys.problems(client, prefix) == []
    assert killed >= 2
    with SimhashIndex(redis_url, create=False) as index:
        index.check_and_add_many([(key, Signature(fp, text)) for key, fp, text in pages])
        stored = [key for key in groups if index.get(key) is not None]
        logged = {d.key: d.duplicate_of for d in index.duplicates()}
    assert sorted(groups[key][0] for key in stored) == list(range(len(bases)))
    assert logged.keys() == groups.keys() - set(stored)
    assert all(groups[logged[key]][0] == groups[key][0] for key in logged)
    assert redis_keys.problems(client, prefix) == []


def layout_2(client: redis.Redis, prefix: str, pages: list[tuple[str, int, int]], dropped: tuple[str, str]) -> None:
    """An index as key layout version 2 kept it (docs/schema.md before 2026-12): pages (key,
    fingerprint, text hash) in block sets, and one of them logged as a duplicate of another."""
    p, writes = prefix, client
    client = writes.pipeline(transaction=False)
    client.hset(f"{p}meta", mapping={"schema_version": "2", "scheme": DEFAULT.scheme})
    for page_id, (key, fp, text_hash) in enumerate(pages, 1):
        client.hset(f"{p}ids", key, page_id)
        doc = {
            "key": key,
            "fingerprint": f"{fp:016x}",
            "text_hash": f"{text_hash:016x}",
            "stored_at": micros(datetime.now(timezone.utc)),
        }
        client.hset(f"{p}doc:{page_id}", mapping=doc)
        for i in range(4):
            client.zadd(f"{p}block:{i}:{(fp >> 16 * i) & 0xFFFF:04x}", {f"{fp:016x}:{page_id}": bin(fp).count("1")})
        client.zadd(f"{p}text:{text_hash:016x}", {str(page_id): page_id})
    client.set(f"{p}next_id", len(pages))
    key, target = dropped
    target_id = [k for k, _, _ in pages].index(target) + 1
    client.hset(f"{p}dup_ids", key, 1)
    client.set(f"{p}next_dup", 1)
    client.zadd(f"{p}dup_log", {"1": 1})
    client.sadd(f"{p}against:{target_id}", 1)
    entry = {
        "key": key,
        "duplicate_of": target,
        "duplicate_of_id": target_id,
        "distance": 1,
        "exact": 0,
        "seen_at": 1,
        "radius": 6,
    }
    client.hset(f"{p}dup:1", mapping=entry)
    client.execute()


def test_an_index_of_key_layout_2_is_upgraded_when_opened_to_write(redis_url: str, client) -> None:
    """Read-only, an index of layout 2 answers what it holds, and refuses to look up near pages
    with a message naming the upgrade; opened to write, it is upgraded in place (in bounded
    calls, its block sets deleted), and decides near copies of what it held."""
    rng = random.Random(5)
    pages = [(f"https://old.example/{n}", rng.getrandbits(64), rng.getrandbits(64)) for n in range(3000)]
    prefix = split_url(redis_url)[1]
    layout_2(client, prefix, pages, ("https://old.example/copy", pages[7][0]))
    with SimhashIndex(redis_url, read_only=True) as index:
        assert len(index) == 3000 and index.describe().schema_version == "2"
        assert [d.key for d in index.duplicates()] == ["https://old.example/copy"]
        assert index.get(pages[3][0]).fingerprint == pages[3][1]
        with pytest.raises(SimhashIndexError, match=r"open it once to write .* to upgrade it"):
            index.query(pages[3][1])
    calls = []
    run = Server.run

    def counted(self: Server, command: str, *args: object) -> object:
        calls.append(command)
        return run(self, command, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Server, "run", counted)
        with SimhashIndex(redis_url) as index:
            assert index.describe().schema_version == "3"
    assert calls.count("migrate") >= 1 and calls[-1] == "migrated"
    assert client.keys(f"{prefix}block:*") == []
    assert client.hget(f"{prefix}meta", "schema_version") == b"3"
    assert redis_keys.problems(client, prefix, stream_whole=False) == []
    with SimhashIndex(redis_url) as index:
        assert index.check_and_add("https://new.example/copy", pages[11][1] ^ 0b101).key == pages[11][0]
        assert index.check_and_add("https://new.example/same", Signature(1, pages[12][2])).key == pages[12][0]
        assert [m.key for m in index.query(pages[13][1] ^ 1)] == [pages[13][0]]
        index.forget([pages[7][0]])
        assert index.duplicates()[-1].key == "https://new.example/same"
        assert len(index.duplicates()) == 2  # the old entry went with the page it was logged against


def test_a_chunk_that_supersedes_many_pages_of_one_text_decides_as_the_rule(redis_url: str) -> None:
    """A writer reads the oldest 65 pages of a text (a chunk of 64 hides at most 64 of them):
    a chunk whose every page supersedes the oldest page of a text 100 pages share decides as the
    memory index, which sees them all."""
    stored = [
        (f"https://old.example/{n}", Signature(n * 0x9E37_79B9_7F4A_7C15 % 2**64, 42, words=10)) for n in range(100)
    ]
    batch = [
        (f"https://new.example/{n}", Signature(n * 0xC2B2_AE3D_27D4_EB4F % 2**64, 42, words=20 + n)) for n in range(64)
    ]
    outcomes = []
    for url in ("memory://", redis_url):
        with SimhashIndex(url, prefer="longest") as index:
            index.add_many(stored)
            answers = [(m.key, m.superseded) if m else None for m in index.check_and_add_many(batch)]
            outcomes.append((answers, sorted((d.key, d.duplicate_of) for d in index.duplicates())))
    assert outcomes[1] == outcomes[0]
    assert outcomes[0][0][0] == ("https://old.example/0", "longer")
