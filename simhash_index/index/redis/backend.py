"""RedisIndex: the index on a Redis server, decided in the writer's memory, written by a server-side script.

A writer finds a batch's candidates in its own memory (following.py: a Held of the stored
fingerprints, following the index's change stream), reads the stored pages they name, decides
the batch with the one duplicate rule (deciding.py, index/rule.py), and sends what it decided
to the script (script.lua), with the stream position it decided at: the script writes it, or
refuses when the stream moved on since, returning what the writer missed; when that touches the
batch, the writer decides again. Redis runs one script at a time, so every decision is atomic
and exact across processes, and no call holds the server for long. The key layout is
docs/schema.md's ("Redis").
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ... import defaults, urls
from ...errors import (
    IndexNotFoundError,
    IndexUnavailableError,
    InvalidArgumentError,
    SchemaVersionError,
    SchemeMismatchError,
    SimhashIndexError,
)
from ...fingerprinting.bits import hamming
from ...fingerprinting.fingerprinter import DEFAULT, Signature
from ..base import Description, Forgotten, Index, Keyed
from ..records import DEFAULT_POLICY, Duplicate, Match, Policy, StoredPage, now
from ..texts import TextSizes
from . import changes, deciding, forgetting, reading
from .codec import BLOBS, duplicate_of_entry, glob_escape, micros, page_args, text_of
from .following import Follower
from .server import CALL_US, PAGES_PER_CALL, STREAM_ROWS, Server, connect

SCHEMES = ("redis://", "rediss://")
SCHEMA_VERSION = "3"  # of the key layout (docs/schema.md); 2 had block sets and no change stream, 1 no sketches
MIGRATES_FROM = "2"  # a layout upgraded in place when opened to write
CHECK_PAGES = 64  # pages a writer decides and writes at a time (one `write` call)
WRITE_TRIES = 20  # times a chunk may be decided again before the writer gives up
# The names (after the prefix) of an index's data keys, docs/schema.md's, `meta` aside: no key of
# another index, whose prefix extends this one's, has such a name (block sets: layout version 2).
_DATA_KEY = re.compile(
    rb"ids|next_id|dup_ids|next_dup|dup_log|texts|texts_bytes|changes"
    rb"|(?:doc|dup|against|fp"
    + b"".join(b"|" + re.escape(field.name.encode()) for field in BLOBS)
    + rb"):[0-9]+|block:[0-3]:[0-9a-f]{4}|text:[0-9a-f]{16}"
)


def split_url(url: str, prefix: str | None = None) -> tuple[str, str]:
    """(the URL to connect to, the key prefix): `?prefix=` is ours, the rest is redis-py's."""
    if not isinstance(url, str) or not url.startswith(SCHEMES):
        raise IndexUnavailableError(f"url {urls.masked(url)!r} is not a Redis URL: use e.g. redis://127.0.0.1:6379/0")
    problem = urls.unescaped_userinfo(url)
    if problem:
        raise IndexUnavailableError(f"url {urls.masked(url)!r}: {problem}")
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    given = [value for name, value in query if name == "prefix"]
    if len(set(given)) > 1 or (given and prefix is not None and given[0] != prefix):
        raise InvalidArgumentError(
            f"two different key prefixes given (the URL's ?prefix= and prefix=): {[*given, prefix]!r}; give one"
        )
    chosen = prefix if prefix is not None else (given[0] if given else defaults.REDIS_PREFIX)
    if not isinstance(chosen, str) or not chosen:
        raise InvalidArgumentError(f"prefix must be a non-empty string, e.g. 'crawl1:'; got {chosen!r}")
    rest = urlencode([(name, value) for name, value in query if name != "prefix"])
    return urlunsplit(parts._replace(query=rest)), chosen


class RedisIndex(Index):
    """Near-duplicate index on a Redis server, under a key prefix of its own.

    `lookup`: this process's view of the stored fingerprints (following.py); `written`,
    `resent`, `redecided`: its `write` calls that stored a chunk, that were refused and sent again
    as decided, that were refused and decided again."""

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        policy: Policy = DEFAULT_POLICY,
        scheme: str | None = DEFAULT.scheme,
        create: bool = True,
        prefix: str | None = None,
        read_only: bool = False,
        connect_timeout: float = defaults.CONNECT_TIMEOUT_S,
        statement_timeout: float = defaults.STATEMENT_TIMEOUT_S,
        keep_texts: bool = False,
    ) -> None:
        connect_to, self.prefix = split_url(url, prefix)
        self._typed = url
        self.url = urls.masked(url)
        self.policy = policy
        self.read_only = read_only
        self.keep_texts = keep_texts
        self.version = SCHEMA_VERSION
        self._deciding = threading.Lock()  # one batch at a time follows the stream in this process
        self.written = self.resent = self.redecided = 0
        try:
            # Opened with the connect timeout for every call, so that a TLS handshake with a server
            # that never answers it (rediss:// to a plain port) fails as fast as a connection.
            # Any: redis-py types every reply as a union of what any command could return
            client: Any = connect(connect_to, connect_timeout, connect_timeout)
            pool = client.connection_pool
            pool.connection_class(**pool.connection_kwargs)  # an unknown ?option= fails here, before any call
        except TypeError as exc:  # redis-py passes an option it does not know on as a keyword
            option = str(exc).rpartition("keyword argument ")[2] or self._scrub(exc)
            raise IndexUnavailableError(
                f"url {self.url!r} is not a usable Redis URL: unknown option {option}"
            ) from None
        except ValueError as exc:  # a bad port or database number, or a bad option value
            raise IndexUnavailableError(f"url {self.url!r} is not a usable Redis URL: {self._scrub(exc)}") from None
        self._server = Server(client, self.prefix, self.url, self._scrub)
        with self._released_on_failure():
            self.scheme = self._open(scheme, create and not read_only)
        self._server.close()  # from here on, calls may take the statement timeout
        client = connect(connect_to, connect_timeout, statement_timeout)
        self._server = Server(client, self.prefix, self.url, self._scrub)
        self.lookup = Follower(self._server)

    def __repr__(self) -> str:
        return f"RedisIndex({self.url!r}, prefix={self.prefix!r}, max_distance={self.max_distance})"

    # -- opening ---------------------------------------------------------------------------

    def _open(self, scheme: str | None, create: bool) -> str:
        version, recorded, created = self._server.run(
            "open", SCHEMA_VERSION, scheme or DEFAULT.scheme, "1" if create else "0"
        )
        self.created = created == 1
        where = self._where
        if version is None and not create:
            raise IndexNotFoundError(f"{where} holds no simhash index: is it the right server, database and prefix?")
        found = SCHEMA_VERSION if version is None else text_of(version)
        if found == MIGRATES_FROM and not self.read_only:
            self._migrate()
        elif found not in (SCHEMA_VERSION, MIGRATES_FROM):
            raise SchemaVersionError(
                f"{where} has schema version {found}; this simhash-index reads version "
                f"{SCHEMA_VERSION} (and upgrades {MIGRATES_FROM}): use a new prefix, or the simhash-index version "
                "that wrote it"
            )
        else:
            self.version = found
        recorded_scheme = text_of(recorded) if recorded is not None else scheme or DEFAULT.scheme
        if scheme is not None and recorded_scheme != scheme:
            raise SchemeMismatchError(
                f"{where} holds fingerprints of another scheme, which are not comparable:\n"
                f"  database: {recorded_scheme}\n  asked:    {scheme}\n"
                "use the database's fingerprinter settings, or a new prefix"
            )
        return recorded_scheme

    def _migrate(self) -> None:
        """Key layout 2 to 3, in calls of CALL_US at most: the fingerprint buckets filled from the
        pages' hashes, the block sets deleted, the epoch and floor of the change stream recorded,
        then the version. Idempotent: a process stopped halfway leaves version 2, and the next
        opener starts again (two at once do the same writes)."""
        next_id = 1
        while next_id:
            next_id = int(self._server.run("migrate", next_id, CALL_US))
        forgetting.unlink(self._server, glob_escape(self.prefix) + "block:*", re.compile(rb"block:[0-3]:[0-9a-f]{4}"))
        self._server.run("migrated", SCHEMA_VERSION)

    @property
    def _where(self) -> str:
        return f"{self.url} (prefix {self.prefix!r})"

    def _key(self, name: str) -> str:
        return f"{self.prefix}{name}"

    @property
    def _client(self) -> Any:
        return self._server.client

    # -- the interface -------------------------------------------------------------------

    def ping(self) -> None:
        with self._server.talking():
            self._client.ping()

    def __len__(self) -> int:
        with self._server.talking():
            return int(self._client.hlen(self._key("ids")))

    def describe(self) -> Description:
        return Description("redis", self.version)

    def _check_and_add_many(self, pages: Sequence[Keyed]) -> list[Match | None]:
        self._writable()
        answers: list[Match | None] = []
        with self._deciding:
            for start in range(0, len(pages), CHECK_PAGES):
                answers += self._check_chunk(pages[start : start + CHECK_PAGES])
        return answers

    def _check_chunk(self, pages: Sequence[Keyed]) -> list[Match | None]:
        """Decide the pages where the writer stands in the stream, and write them. A write refused
        returns what the writer missed: sent again as decided when that touches none of the pages,
        else decided again (after following the stream, when the writer was too far behind)."""
        follower, radius = self.lookup, self.max_distance
        for _ in range(WRITE_TRIES):
            follower.ready()
            moment = now()
            decided = deciding.decide(self._server, pages, follower, self.policy, moment)
            while True:
                assert follower.epoch is not None  # built
                reply = self._server.run(
                    "write", follower.epoch, follower.position, micros(moment), radius, *decided.ops
                )
                status = text_of(reply[0])
                if status == "ok":
                    follower.apply(changes.parse(reply[1]))
                    self.written += 1
                    return decided.answers
                if status != "moved":  # the stream cannot be followed from there, or the index was emptied
                    follower.follow()
                    break
                missed = changes.parse(reply[1])
                follower.apply(missed)
                if changes.touches(missed, pages, radius):
                    break
                self.resent += 1  # what came meanwhile does not change what was decided
            self.redecided += 1
        raise IndexUnavailableError(
            f"{self._where} changed faster than this writer could decide {len(pages)} pages "
            f"{WRITE_TRIES} times in a row"
        )

    def _add_many(self, pages: Sequence[Keyed]) -> None:
        self._writable()
        moment = str(micros(now()))
        self._server.in_calls("store", [page_args(key, signature) for key, signature in pages], moment, CALL_US)

    def _query(self, fingerprint: int) -> list[Match]:
        near = []
        for page in self._near_pages(fingerprint).values():
            stored = page.signature.near_simhash
            if stored is not None and (bits := hamming(stored, fingerprint)) <= self.max_distance:
                near.append((bits, page.order, page))
        return [Match(page.key, page.signature.simhash, bits) for bits, _, page in sorted(near)]

    def _near_pages(self, fingerprint: int) -> dict[int, StoredPage]:
        """The near-matchable stored pages that may be within the radius of the fingerprint, by id."""
        if self.version != SCHEMA_VERSION:
            raise SimhashIndexError(
                f"{self._where} has key layout version {self.version}, which finds near pages only once "
                f"upgraded to version {SCHEMA_VERSION}: open it once to write (a crawl, simhash-index import, "
                "SimhashIndex(url)) to upgrade it"
            )
        with self._deciding:
            self.lookup.follow()
            ids = self.lookup.near([fingerprint], self.max_distance)[0]
        found = reading.pages_by_id(self._server, ids)
        return {page_id: page for page_id, page in found.items() if page.signature.near_simhash is not None}

    def _get(self, key: str) -> Match | None:
        found = self._server.run("get", key.encode("utf-8"))
        if found is None:
            return None
        return Match(key, int(found[0], 16) if found[0] else None, 0, exact=True)

    def _page(self, key: str) -> StoredPage | None:
        with self._server.talking():
            page_id = self._client.hget(self._key("ids"), key.encode("utf-8"))
        if page_id is None:
            return None
        page = reading.pages_by_id(self._server, [int(page_id)]).get(int(page_id))
        return page if page is not None and page.key == key else None  # replaced between the two reads

    def _store_texts(self, pages: list[tuple[str, bytes]]) -> None:
        self._writable()
        for start in range(0, len(pages), PAGES_PER_CALL):
            chunk = pages[start : start + PAGES_PER_CALL]
            self._server.run("texts", *(part for key, body in chunk for part in (key.encode("utf-8"), body)))

    def _texts(self, keys: list[str]) -> dict[str, bytes]:
        with self._server.talking():
            found = self._client.hmget(self._key("texts"), [key.encode("utf-8") for key in keys])
        return {key: body for key, body in zip(keys, found) if body is not None}

    def _text_sizes(self) -> TextSizes:
        with self._server.talking():
            count = self._client.hlen(self._key("texts"))
            total = self._client.get(self._key("texts_bytes"))
        return TextSizes(int(count), int(total or 0))

    def _forget(self, keys: list[str]) -> Forgotten:
        self._writable()
        return forgetting.forget(self._server, keys)

    def _prune(self, before: datetime) -> Forgotten:
        self._writable()
        return forgetting.prune(self._server, before)

    def _stored_before(self, before: datetime) -> int:
        return forgetting.stored_before(self._server, before)

    def _reset(self) -> Forgotten:
        self._writable()
        return forgetting.reset(self._server, _DATA_KEY)

    def _logged(self, since: datetime | None) -> Iterator[Duplicate]:
        log, after = self._key("dup_log"), "-inf"
        while True:
            with self._server.talking():
                ids = self._client.zrangebyscore(log, after, "+inf", start=0, num=STREAM_ROWS)
                if not ids:
                    return
                pipe = self._client.pipeline(transaction=False)
                for log_id in ids:
                    pipe.hgetall(self._key(f"dup:{text_of(log_id)}"))
                entries = pipe.execute()
            for entry in entries:
                if entry:  # empty when it left the log between the two reads
                    duplicate = duplicate_of_entry(entry)
                    if since is None or duplicate.seen_at >= since:
                        yield duplicate
            after = f"({text_of(ids[-1])}"

    def _duplicate(self, key: str) -> Duplicate | None:
        with self._server.talking():
            log_id = self._client.hget(self._key("dup_ids"), key.encode("utf-8"))
            entry = self._client.hgetall(self._key(f"dup:{text_of(log_id)}")) if log_id is not None else None
        return duplicate_of_entry(entry) if entry else None

    def _duplicates_of(self, key: str) -> list[Duplicate]:
        """The log ids in the page's `against:` set (an index written before those sets were kept
        lists only what was logged since)."""
        with self._server.talking():
            page_id = self._client.hget(self._key("ids"), key.encode("utf-8"))
            if page_id is None:
                return []
            ids = sorted(int(member) for member in self._client.smembers(self._key(f"against:{text_of(page_id)}")))
            pipe = self._client.pipeline(transaction=False)
            for log_id in ids:
                pipe.hgetall(self._key(f"dup:{log_id}"))
            entries = pipe.execute()
        return [duplicate_of_entry(entry) for entry in entries if entry]

    def _neighbourhood(self, key: str, signature: Signature) -> list[StoredPage]:
        texts = [] if signature.text_hash is None else [signature.text_hash]
        stored = reading.read(self._server, [key], texts, [])
        found = stored.pages
        if signature.simhash is not None:
            found |= self._near_pages(signature.simhash)
        return [found[page_id] for page_id in sorted(found)]

    def close(self) -> None:
        self._server.close()
