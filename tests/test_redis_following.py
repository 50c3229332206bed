"""What only Redis writers do to follow the stored pages: a write refused for what the writer
missed, decided again when that touches it; the stream trimmed; a quarter of what the writer
holds gone. What every backend's writers follow alike is in tests/test_following.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis_keys
from conftest import driver
from writer_pairs import BASE, FAR, duplicate_of, near_copy, two_writers

from simhash_index import Signature, SimhashIndex
from simhash_index.index.base import Index

driver("redis", "redis")

from simhash_index.index.redis import changes, deciding, following  # noqa: E402 - needs the redis package


@pytest.fixture
def writers(redis_url: str) -> Iterator[tuple[Index, Index]]:
    with two_writers(redis_url) as found:
        yield found


def test_pages_of_a_bulk_load_are_seen(writers):
    a, b = writers
    b.add_many([(f"https://b.example/bulk/{n}", BASE ^ (n << 50)) for n in range(1, 50)])
    assert duplicate_of(a, "https://a.example/bulk-copy", near_copy(BASE ^ 7 << 50)) == "https://b.example/bulk/7"
    assert a.lookup.builds == 1


def test_a_writer_behind_the_trimmed_stream_builds_its_index_again(writers, monkeypatch):
    a, b = writers
    monkeypatch.setattr(changes, "KEEP", 20)
    for n in range(0, 400, 40):  # the stream keeps its last nodes of entries (a node holds 100): a falls behind
        b.add_many((f"https://b.example/{n + i}", ((n + i) * 0x9E37_79B9_7F4A_7C15) % 2**64) for i in range(40))
    assert b._server.client.xlen(b._server.key("changes")) < 250
    b.check_and_add("https://b.example/page", BASE)
    assert duplicate_of(a, "https://a.example/copy", near_copy(BASE)) == "https://b.example/page"
    assert a.lookup.builds == 2


def test_a_writer_builds_again_once_a_quarter_of_what_it_holds_went(writers, monkeypatch):
    a, b = writers
    monkeypatch.setattr(following, "MIN_STALE", 8)
    keys = [f"https://b.example/{n}" for n in range(40)]
    b.add_many((key, (n * 0x9E37_79B9_7F4A_7C15) % 2**64) for n, key in enumerate(keys))
    a.check_and_add("https://a.example/one", BASE)
    assert a.lookup.builds == 1
    b.forget(keys[:20])
    resent = a.resent
    assert duplicate_of(a, "https://a.example/copy", near_copy(BASE)) == "https://a.example/one"  # refused, sent again
    assert a.lookup.builds == 1 and a.resent == resent + 1
    assert duplicate_of(a, "https://a.example/copy2", near_copy(BASE, 3)) == "https://a.example/one"
    assert a.lookup.builds == 2 and len(a.lookup) == 22


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
    assert far_id in a.lookup.near([FAR ^ 1], 6)[0]
    assert redis_keys.problems(a._server.client, a.prefix) == []


def test_a_writer_whose_index_was_made_anew_reads_it_again(redis_url, writers):
    """Every key of the index deleted (a server restarted without persistence, a flush) and the
    index made anew by another process: its epoch is another (the server's clock), so a writer that
    held the old one's fingerprints reads the new one's before it decides."""
    a, b = writers
    b.check_and_add("https://b.example/old", FAR)
    assert duplicate_of(a, "https://a.example/old-copy", near_copy(FAR)) == "https://b.example/old"
    client, prefix = redis_keys.client_of(redis_url)
    client.delete(*client.keys(f"{prefix}*"))
    client.close()
    with SimhashIndex(redis_url) as c:
        c.check_and_add("https://c.example/new", BASE)
    assert duplicate_of(a, "https://a.example/new-copy", near_copy(BASE)) == "https://c.example/new"
    assert duplicate_of(a, "https://a.example/old-again", near_copy(FAR, 3)) is None
    assert a.lookup.builds == 2
