"""A Redis writer's in-memory lookup follows every change other writers make, through the change stream.

Writer `a` finds candidates in its own memory (index/redis/following.py); every other change
comes through another index object (another process would be the same to the server). After
each change, `a` must decide as if it had read every stored page: a page near a stored one is
its duplicate; a page near one that went is new. A write `a` decided before another writer's
change is refused, and decided again when that change touches it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
import redis_keys
from conftest import driver

from simhash_index import Signature, SimhashIndex

driver("redis", "redis")

from simhash_index.index.redis import changes, deciding, following  # noqa: E402 - needs the redis package

BASE = 0x0123_4567_89AB_CDEF
FAR = 0xF0F0_0F0F_3C3C_C3C3  # 32 bits from BASE


@pytest.fixture
def writers(redis_url: str) -> Iterator[tuple[SimhashIndex, SimhashIndex]]:
    """Writer `a`, whose lookup is built before the other writer `b` changes anything."""
    with SimhashIndex(redis_url) as a, SimhashIndex(redis_url) as b:
        a.check_and_add("https://a.example/seed", FAR ^ 0xFFFF)  # builds a's lookup
        yield a, b


def near_copy(fingerprint: int, bits: int = 5) -> int:
    return fingerprint ^ ((1 << bits) - 1) << 20


def duplicate_of(index: SimhashIndex, key: str, fingerprint: int | Signature) -> str | None:
    match = index.check_and_add(key, fingerprint)
    return None if match is None else match.key


def test_a_page_another_writer_stored_is_seen(writers):
    a, b = writers
    b.check_and_add("https://b.example/page", BASE)
    assert duplicate_of(a, "https://a.example/copy", near_copy(BASE)) == "https://b.example/page"
    assert a.follower.builds == 1  # followed through the change stream, not built again


def test_a_fingerprint_updated_in_place_is_seen_at_its_new_value_only(writers):
    a, b = writers
    b.check_and_add("https://b.example/page", FAR)
    assert duplicate_of(a, "https://a.example/far-copy", near_copy(FAR, 3)) == "https://b.example/page"
    b.check_and_add("https://b.example/page", BASE)  # its text changed: its page follows it
    assert duplicate_of(a, "https://a.example/copy", near_copy(BASE)) == "https://b.example/page"
    assert duplicate_of(a, "https://a.example/old-copy", near_copy(FAR, 4)) is None


def test_a_superseding_survivor_is_seen_and_the_superseded_page_is_not(redis_url, writers):
    a, _ = writers
    with SimhashIndex(redis_url, prefer="longest") as b:
        b.check_and_add("https://b.example/short", Signature(BASE, 1, words=10))
        match = b.check_and_add("https://b.example/long", Signature(BASE ^ 1 << 40, 2, words=50))
        assert match is not None and match.superseded == "longer"
    assert duplicate_of(a, "https://a.example/copy", BASE ^ 1 << 40 ^ 0b111) == "https://b.example/long"
    assert duplicate_of(a, "https://a.example/same-text", Signature(FAR, 1)) is None  # the short page's text went


@pytest.mark.parametrize("how", ["forget", "prune", "reset"])
def test_a_page_that_left_is_not_matched_and_a_new_one_in_its_place_is(writers, how):
    a, b = writers
    b.check_and_add("https://b.example/page", BASE)
    assert duplicate_of(a, "https://a.example/first", near_copy(BASE)) == "https://b.example/page"
    if how == "forget":
        b.forget(["https://b.example/page"])
    elif how == "prune":
        b.prune(before=datetime.now(timezone.utc) + timedelta(days=1))
    else:
        b.reset()
    assert duplicate_of(a, "https://a.example/second", near_copy(BASE, 4)) is None  # stored: nothing near
    b.check_and_add("https://b.example/again", near_copy(FAR))
    assert duplicate_of(a, "https://a.example/third", FAR) == "https://b.example/again"
    assert a.follower.builds == (2 if how == "reset" else 1)  # a reset starts a new epoch: built anew


def test_pages_of_a_bulk_load_are_seen(writers):
    a, b = writers
    b.add_many([(f"https://b.example/bulk/{n}", BASE ^ (n << 50)) for n in range(1, 50)])
    assert duplicate_of(a, "https://a.example/bulk-copy", near_copy(BASE ^ 7 << 50)) == "https://b.example/bulk/7"
    assert a.follower.builds == 1


def test_a_writer_behind_the_trimmed_stream_builds_its_index_again(writers, monkeypatch):
    a, b = writers
    monkeypatch.setattr(changes, "KEEP", 20)
    for n in range(0, 400, 40):  # the stream keeps its last nodes of entries (a node holds 100): a falls behind
        b.add_many((f"https://b.example/{n + i}", ((n + i) * 0x9E37_79B9_7F4A_7C15) % 2**64) for i in range(40))
    assert b._server.client.xlen(b._server.key("changes")) < 250
    b.check_and_add("https://b.example/page", BASE)
    assert duplicate_of(a, "https://a.example/copy", near_copy(BASE)) == "https://b.example/page"
    assert a.follower.builds == 2


def test_a_writer_builds_again_once_a_quarter_of_what_it_holds_went(writers, monkeypatch):
    a, b = writers
    monkeypatch.setattr(following, "MIN_STALE", 8)
    keys = [f"https://b.example/{n}" for n in range(40)]
    b.add_many((key, (n * 0x9E37_79B9_7F4A_7C15) % 2**64) for n, key in enumerate(keys))
    a.check_and_add("https://a.example/one", BASE)
    assert a.follower.builds == 1
    b.forget(keys[:20])
    resent = a.resent
    assert duplicate_of(a, "https://a.example/copy", near_copy(BASE)) == "https://a.example/one"  # refused, sent again
    assert a.follower.builds == 1 and a.resent == resent + 1
    assert duplicate_of(a, "https://a.example/copy2", near_copy(BASE, 3)) == "https://a.example/one"
    assert a.follower.builds == 2 and len(a.follower) == 22


def interleaved(monkeypatch: pytest.MonkeyPatch, meanwhile) -> None:  # type: ignore[no-untyped-def]
    """Run `meanwhile()` once, between the next decision and its write."""
    decide, ran = deciding.decide, []

    def then_meanwhile(*args, **options):  # type: ignore[no-untyped-def]
        decided = decide(*args, **options)
        if not ran:
            ran.append(True)
            meanwhile()
        return decided

    monkeypatch.setattr(deciding, "decide", then_meanwhile)


def test_a_write_refused_for_a_change_that_touches_it_is_decided_again(writers, monkeypatch):
    """Another writer stores a near copy of `a`'s page after `a` decided it, before its write:
    the write is refused, and the page decided again is that copy's duplicate."""
    a, b = writers
    interleaved(monkeypatch, lambda: b.check_and_add("https://b.example/page", BASE))
    assert duplicate_of(a, "https://a.example/page", near_copy(BASE)) == "https://b.example/page"
    assert (a.redecided, a.resent) == (1, 0)
    assert a.get("https://a.example/page") is None and a.duplicate("https://a.example/page") is not None


@pytest.mark.parametrize("change", ["key", "text"])
def test_a_write_refused_for_its_key_or_text_is_decided_again(writers, monkeypatch, change):
    a, b = writers
    if change == "key":  # the same URL, stored meanwhile: a's page is its own, updated
        interleaved(monkeypatch, lambda: b.check_and_add("https://shared.example/page", Signature(FAR ^ 1 << 60, 5)))
        assert duplicate_of(a, "https://shared.example/page", Signature(BASE, 6)) is None
        assert a.get("https://shared.example/page").fingerprint == BASE
        assert len(a.duplicates()) == 0
    else:  # the same text far away: a's page is its exact duplicate
        interleaved(monkeypatch, lambda: b.check_and_add("https://b.example/page", Signature(FAR ^ 1 << 60, 5)))
        assert duplicate_of(a, "https://a.example/page", Signature(BASE, 5)) == "https://b.example/page"
    assert a.redecided == 1


def test_a_write_refused_for_a_change_far_from_it_is_sent_again_as_decided(writers, monkeypatch):
    """What another writer stored meanwhile touches nothing of the batch: the write is sent again
    as decided, and `a` has followed what it missed (the refusal returned it)."""
    a, b = writers
    interleaved(monkeypatch, lambda: b.check_and_add("https://b.example/far", FAR))
    assert duplicate_of(a, "https://a.example/page", BASE) is None
    assert (a.redecided, a.resent) == (0, 1)
    far_id = int(b._server.client.hget(b._server.key("ids"), "https://b.example/far"))
    assert far_id in a.follower.near([FAR ^ 1], 6)[0]
    assert redis_keys.problems(a._server.client, a.prefix) == []


def test_threads_sharing_one_writer_decide_one_batch_at_a_time(redis_url):
    """Several threads on one index object, each with a copy of every group's page: its in-memory
    lookup follows one batch at a time, and one page of each group is stored."""
    bases = [g * 0x9E37_79B9_7F4A_7C15 % 2**64 for g in range(1, 41)]  # some 32 bits apart
    copies = [
        [(f"https://t{t}.example/{g}", Signature(fp ^ 1 << t, g)) for g, fp in enumerate(bases)] for t in range(4)
    ]
    with SimhashIndex(redis_url) as index:
        threads = [threading.Thread(target=index.check_and_add_many, args=(pages,)) for pages in copies]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        stored = [key for pages in copies for key, _ in pages if index.get(key) is not None]
    assert len(stored) == 40 and len({key.rsplit("/", 1)[1] for key in stored}) == 40
