"""A Redis index's keys read back with plain commands, and checked against one another (docs/schema.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import redis

SLOT = 9
BUCKET = 1024


def client_of(url: str) -> tuple[redis.Redis, str]:
    """A client of a Redis index URL's server, and the URL's key prefix."""
    import redis

    from simhash_index.index.redis.backend import split_url

    connect_to, prefix = split_url(url)
    return redis.Redis.from_url(connect_to), prefix


def slots(client: redis.Redis, prefix: str) -> dict[int, int]:
    """page id -> fingerprint of every near-matchable page in the fingerprint buckets."""
    found = {}
    for key in client.scan_iter(match=f"{prefix}fp:*", count=1000):
        number = int(key.rsplit(b":", 1)[1])
        held = client.get(key) or b""
        for at in range(0, len(held) - SLOT + 1, SLOT):
            if held[at] == 1:
                found[number * BUCKET + at // SLOT] = int.from_bytes(held[at + 1 : at + SLOT], "big")
    return found


def replayed(client: redis.Redis, prefix: str) -> dict[int, int]:
    """page id -> fingerprint of the near-matchable pages, by the change stream from its start."""
    held: dict[int, int] = {}
    for _, entry in client.xrange(f"{prefix}changes"):
        page_id = int(entry[b"i"])
        if entry[b"a"] == b"1":
            if entry[b"f"]:
                held[page_id] = int(entry[b"f"], 16)
            else:
                held.pop(page_id, None)
        elif entry[b"f"] and held.get(page_id) == int(entry[b"f"], 16):
            del held[page_id]
    return held


def problems(client: redis.Redis, prefix: str, *, stream_whole: bool = True) -> list[str]:
    """What disagrees among the index's keys: every stored key has its page hash, its slot and
    its text set entry, and nothing else has one; every logged duplicate points at a stored page
    that lists it; the change stream (when `stream_whole`: never trimmed) replays to the buckets."""
    found: list[str] = []
    ids = {key: int(page_id) for key, page_id in client.hgetall(f"{prefix}ids").items()}
    near: dict[int, int] = {}
    texts: dict[bytes, set[int]] = {}
    for key, page_id in ids.items():
        doc = client.hgetall(f"{prefix}doc:{page_id}")
        if doc.get(b"key") != key:
            found.append(f"{key!r}: page {page_id}'s hash names {doc.get(b'key')!r}")
            continue
        if b"fingerprint" in doc and b"exact_only" not in doc:
            near[page_id] = int(doc[b"fingerprint"], 16)
        if b"text_hash" in doc:
            texts.setdefault(doc[b"text_hash"], set()).add(page_id)
    for key in client.scan_iter(match=f"{prefix}doc:*", count=1000):
        if int(key.rsplit(b":", 1)[1]) not in ids.values():
            found.append(f"{key!r} is no stored key's")
    if slots(client, prefix) != near:
        found.append(f"the fingerprint buckets hold {slots(client, prefix)}, the pages {near}")
    for key in client.scan_iter(match=f"{prefix}text:*", count=1000):
        members = {int(member) for member in client.zrange(key, 0, -1)}
        if members != texts.pop(key.rsplit(b":", 1)[1], set()):
            found.append(f"{key!r} holds {members}")
    if texts:
        found.append(f"text sets missing: {texts}")
    for key, log_id in client.hgetall(f"{prefix}dup_ids").items():
        entry = client.hgetall(f"{prefix}dup:{int(log_id)}")
        target = int(entry.get(b"duplicate_of_id", 0))
        if key in ids:
            found.append(f"{key!r} is stored and logged")
        if ids.get(entry.get(b"duplicate_of")) != target:
            found.append(f"{key!r} is logged against {entry.get(b'duplicate_of')!r}, not stored as {target}")
        if not client.sismember(f"{prefix}against:{target}", log_id):
            found.append(f"{key!r} is not in against:{target}")
    if stream_whole and replayed(client, prefix) != near:
        found.append(f"the change stream replays to {replayed(client, prefix)}, the pages hold {near}")
    return found


def entries(client: redis.Redis, prefix: str) -> list[tuple[str, int, str, str, str]]:
    """The change stream's entries: (came '1' or went '0', page id, fingerprint, key hash, text hash)."""
    return [
        (e[b"a"].decode(), int(e[b"i"]), e[b"f"].decode(), e[b"k"].decode(), e[b"t"].decode())
        for _, e in client.xrange(f"{prefix}changes")
    ]
