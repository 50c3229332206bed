"""RedisIndex: the index on a Redis server, check_and_add_many one server-side script.

The script (script.lua) applies the duplicate rule of rule.py to each page of a batch,
atomically: Redis runs one script at a time. tests/test_redis_index.py holds it to the
Python rule on random sequences. The key layout is docs/schema.md's ("Redis").
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ... import defaults, urls
from ...errors import (
    IndexNotFoundError,
    IndexUnavailableError,
    MissingDependencyError,
    SchemaVersionError,
    SchemeMismatchError,
    SimhashIndexError,
    install_extra,
)
from ...fingerprinting.bits import blocks
from ...fingerprinting.fingerprinter import DEFAULT, Signature
from ..base import Description, Forgotten, Index, Keyed
from ..prefer import name_of
from ..probes import part_probes
from ..records import DEFAULT_POLICY, Duplicate, Match, Policy, StoredPage
from ..texts import TextSizes
from .codec import (
    duplicate_of_entry,
    glob_escape,
    hex_or_empty,
    match_of,
    micros,
    moment,
    page_args,
    stored_signature,
    text_of,
)

try:
    import redis
except ImportError as missing:
    raise MissingDependencyError(f"Redis indexes need the redis package: {install_extra('redis')}") from missing

SCHEMES = ("redis://", "rediss://")
SCHEMA_VERSION = "2"  # of the key layout (docs/schema.md); version 1 had no sketches
STREAM_ROWS = 1000  # log entries read at a time
PAGES_PER_CALL = 100  # pages (or texts, or keys to forget) a script call: under ~50 ms of the server on a busy machine
# A `check` call is sent at most CHECK_PAGES pages and stops after the page that ends CHECK_US
# microseconds (the server's clock) after the call began; the client sends the rest in another
# call. So a Redis shared with other clients (a scrapy-redis scheduler) is never held by one call
# for much longer than a page's lookup, whatever the batch size (docs/performance.md, "Redis
# script calls").
CHECK_PAGES = 64
CHECK_US = 20_000
_SCRIPT = (Path(__file__).parent / "script.lua").read_text(encoding="utf-8")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# The names (after the prefix) of an index's data keys, docs/schema.md's, `meta` aside: no key of
# another index, whose prefix extends this one's, has such a name.
_DATA_KEY = re.compile(
    rb"ids|next_id|dup_ids|next_dup|dup_log|texts|texts_bytes"
    rb"|(?:doc|sketch|dup|against):[0-9]+|block:[0-3]:[0-9a-f]{4}|text:[0-9a-f]{16}"
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
        raise ValueError(
            f"two different key prefixes given (the URL's ?prefix= and prefix=): {[*given, prefix]!r}; give one"
        )
    chosen = prefix if prefix is not None else (given[0] if given else defaults.REDIS_PREFIX)
    if not isinstance(chosen, str) or not chosen:
        raise ValueError(f"prefix must be a non-empty string, e.g. 'crawl1:'; got {chosen!r}")
    rest = urlencode([(name, value) for name, value in query if name != "prefix"])
    return urlunsplit(parts._replace(query=rest)), chosen


class RedisIndex(Index):
    """Near-duplicate index on a Redis server, under a key prefix of its own."""

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
        name_of(policy.prefer)  # a function policy cannot run in the script: refused here
        self._typed = url
        self.url = urls.masked(url)
        self.policy = policy
        self.read_only = read_only
        self.keep_texts = keep_texts
        try:
            # Opened with the connect timeout for every call, so that a TLS handshake with a server
            # that never answers it (rediss:// to a plain port) fails as fast as a connection.
            # Any: redis-py types every reply as a union of what any command could return
            self._client: Any = redis.Redis.from_url(
                connect_to, socket_connect_timeout=connect_timeout, socket_timeout=connect_timeout
            )
            pool = self._client.connection_pool
            pool.connection_class(**pool.connection_kwargs)  # an unknown ?option= fails here, before any call
        except TypeError as exc:  # redis-py passes an option it does not know on as a keyword
            option = str(exc).rpartition("keyword argument ")[2] or self._scrub(exc)
            raise IndexUnavailableError(
                f"url {self.url!r} is not a usable Redis URL: unknown option {option}"
            ) from None
        except ValueError as exc:  # a bad port or database number, or a bad option value
            raise IndexUnavailableError(f"url {self.url!r} is not a usable Redis URL: {self._scrub(exc)}") from None
        self._script = self._client.register_script(_SCRIPT)
        with self._released_on_failure():
            self.scheme = self._open(scheme, create and not read_only)
        self._client.close()  # from here on, calls may take the statement timeout
        self._client = redis.Redis.from_url(
            connect_to, socket_connect_timeout=connect_timeout, socket_timeout=statement_timeout
        )
        self._script = self._client.register_script(_SCRIPT)

    def __repr__(self) -> str:
        return f"RedisIndex({self.url!r}, prefix={self.prefix!r}, max_distance={self.max_distance})"

    # -- talking to the server --------------------------------------------------------

    @contextmanager
    def _talking(self) -> Iterator[None]:
        """Redis errors as the library's: IndexUnavailableError when the server cannot be reached."""
        try:
            yield
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise IndexUnavailableError(f"redis {self.url} is unavailable: {self._scrub(exc)}") from exc
        except redis.ResponseError as exc:
            if not str(exc).startswith("NOINDEX"):
                raise SimhashIndexError(f"redis {self.url} failed: {self._scrub(exc)}") from exc
            raise IndexNotFoundError(
                f"redis {self.url} holds no index under prefix {self.prefix!r} any more (restarted without "
                "persistence, or flushed?): open it again to start a new one"
            ) from exc
        except redis.RedisError as exc:
            raise SimhashIndexError(f"redis {self.url} failed: {self._scrub(exc)}") from exc

    def _run(self, command: str, *args: Any, client: Any = None) -> Any:
        return self._script(args=[command, self.prefix, *args], client=client)

    def _open(self, scheme: str | None, create: bool) -> str:
        with self._talking():
            version, recorded, created = self._run(
                "open", SCHEMA_VERSION, scheme or DEFAULT.scheme, "1" if create else "0"
            )
        self.created = created == 1
        where = self._where
        if version is None and not create:
            raise IndexNotFoundError(f"{where} holds no simhash index: is it the right server, database and prefix?")
        if version is not None and text_of(version) != SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{where} has schema version {text_of(version)}; this simhash-index reads version "
                f"{SCHEMA_VERSION}: use a new prefix, or the simhash-index version that wrote it"
            )
        recorded_scheme = text_of(recorded) if recorded is not None else scheme or DEFAULT.scheme
        if scheme is not None and recorded_scheme != scheme:
            raise SchemeMismatchError(
                f"{where} holds fingerprints of another scheme, which are not comparable:\n"
                f"  database: {recorded_scheme}\n  asked:    {scheme}\n"
                "use the database's fingerprinter settings, or a new prefix"
            )
        return recorded_scheme

    @property
    def _where(self) -> str:
        return f"{self.url} (prefix {self.prefix!r})"

    def _key(self, name: str) -> str:
        return f"{self.prefix}{name}"

    # -- the interface -------------------------------------------------------------------

    def ping(self) -> None:
        with self._talking():
            self._client.ping()

    def __len__(self) -> int:
        with self._talking():
            return int(self._client.hlen(self._key("ids")))

    def describe(self) -> Description:
        return Description("redis", SCHEMA_VERSION)

    def _check_and_add_many(self, pages: Sequence[Keyed]) -> list[Match | None]:
        self._writable()
        now = micros(datetime.now(timezone.utc))
        window = "" if self.policy.window is None else self.policy.window // timedelta(microseconds=1)
        similarity = repr(float(self.min_similarity))
        prefer = name_of(self.policy.prefer)
        found: list[Any] = []
        while len(found) < len(pages):  # each call decides a prefix of what it is sent, one page at least
            chunk = pages[len(found) : len(found) + CHECK_PAGES]
            arguments = [argument for key, signature in chunk for argument in page_args(key, signature)]
            with self._talking():
                answers = self._run("check", now, self.max_distance, similarity, window, prefer, CHECK_US, *arguments)
            if not answers:
                raise SimhashIndexError(f"{self._where}: the script decided none of {len(chunk)} pages sent")
            found += answers
        return [match_of(answer) for answer in found]

    def _add_many(self, pages: Sequence[Keyed]) -> None:
        self._writable()
        now = micros(datetime.now(timezone.utc))
        with self._talking():
            pipe = self._client.pipeline(transaction=False)
            for start in range(0, len(pages), PAGES_PER_CALL):
                arguments = [
                    a for key, signature in pages[start : start + PAGES_PER_CALL] for a in page_args(key, signature)
                ]
                self._run("store", now, *arguments, client=pipe)
            pipe.execute()

    def _query(self, fingerprint: int) -> list[Match]:
        with self._talking():
            rows = self._run("near", hex_or_empty(fingerprint), self.max_distance)
        return [Match(text_of(key), int(stored, 16), int(distance)) for key, stored, distance in rows]

    def _get(self, key: str) -> Match | None:
        with self._talking():
            found = self._run("get", key.encode("utf-8"))
        if found is None:
            return None
        return Match(key, int(found[0], 16) if found[0] else None, 0, exact=True)

    def _page(self, key: str) -> StoredPage | None:
        with self._talking():
            page_id = self._client.hget(self._key("ids"), key.encode("utf-8"))
            if page_id is None:
                return None
            pipe = self._client.pipeline(transaction=True)
            pipe.hgetall(self._key(f"doc:{text_of(page_id)}"))
            pipe.get(self._key(f"sketch:{text_of(page_id)}"))
            doc, sketch = pipe.execute()
        if not doc:  # replaced between the two reads
            return None
        return StoredPage(key, stored_signature(doc, sketch), int(page_id), moment(doc[b"stored_at"]))

    def _store_texts(self, pages: list[tuple[str, bytes]]) -> None:
        self._writable()
        with self._talking():
            for start in range(0, len(pages), PAGES_PER_CALL):
                chunk = pages[start : start + PAGES_PER_CALL]
                self._run("texts", *(part for key, body in chunk for part in (key.encode("utf-8"), body)))

    def _texts(self, keys: list[str]) -> dict[str, bytes]:
        with self._talking():
            found = self._client.hmget(self._key("texts"), [key.encode("utf-8") for key in keys])
        return {key: body for key, body in zip(keys, found) if body is not None}

    def _text_sizes(self) -> TextSizes:
        with self._talking():
            count = self._client.hlen(self._key("texts"))
            total = self._client.get(self._key("texts_bytes"))
        return TextSizes(int(count), int(total or 0))

    def _forget(self, keys: list[str]) -> Forgotten:
        self._writable()
        total = Forgotten()
        for start in range(0, len(keys), PAGES_PER_CALL):
            chunk = [key.encode("utf-8") for key in keys[start : start + PAGES_PER_CALL]]
            with self._talking():
                pages, duplicates = self._run("forget", *chunk)
            total += Forgotten(int(pages), int(duplicates))
        return total + self._sweep(None) if total.pages else total  # logged before `against:` sets

    def _prune(self, before: datetime) -> Forgotten:
        """HSCAN the stored keys; the script removes those stored before `before` with the
        duplicates logged against them, a batch at a time; then a sweep of the log."""
        self._writable()
        total, cutoff = Forgotten(), micros(before)
        with self._talking():
            batch: list[bytes] = []
            for key in self._client.hscan_iter(self._key("ids"), count=STREAM_ROWS):
                batch.append(key[0])
                if len(batch) >= STREAM_ROWS:
                    total += Forgotten(*map(int, self._run("prune", cutoff, *batch)))
                    batch = []
            if batch:
                total += Forgotten(*map(int, self._run("prune", cutoff, *batch)))
        return total + self._sweep(cutoff)

    def _stored_before(self, before: datetime) -> int:
        cutoff, count = micros(before), 0
        with self._talking():
            ids = [page_id for _, page_id in self._client.hscan_iter(self._key("ids"), count=STREAM_ROWS)]
            for start in range(0, len(ids), STREAM_ROWS):
                pipe = self._client.pipeline(transaction=False)
                for page_id in ids[start : start + STREAM_ROWS]:
                    pipe.hget(self._key(f"doc:{text_of(page_id)}"), "stored_at")
                count += sum(1 for stored in pipe.execute() if stored is not None and int(stored) < cutoff)
        return count

    def _sweep(self, before: int | None) -> Forgotten:
        """Take out of the log the entries logged before `before` (microseconds) and those
        against a page no longer stored (logged before the `against:` sets were kept), STREAM_ROWS
        log ids a script call."""
        removed, after = 0, "-inf"
        while True:
            with self._talking():
                ids = self._client.zrangebyscore(self._key("dup_log"), after, "+inf", start=0, num=STREAM_ROWS)
                if not ids:
                    return Forgotten(0, removed)
                removed += int(self._run("sweep", "" if before is None else before, *ids))
            after = f"({text_of(ids[-1])}"

    def _reset(self) -> Forgotten:
        self._writable()
        pages, duplicates = len(self), 0
        with self._talking():
            duplicates = int(self._client.zcard(self._key("dup_log")))
            prefix = self.prefix.encode("utf-8")
            pattern = glob_escape(self.prefix) + "*"
            doomed: list[bytes] = []
            for key in self._client.scan_iter(match=pattern, count=STREAM_ROWS):
                # an index whose prefix extends this one's (`site:` and `site:news:`) keeps its keys
                if _DATA_KEY.fullmatch(key[len(prefix) :]):
                    doomed.append(key)
                if len(doomed) >= STREAM_ROWS:
                    self._client.unlink(*doomed)
                    doomed = []
            if doomed:
                self._client.unlink(*doomed)
        return Forgotten(pages, duplicates)

    def _logged(self, since: datetime | None) -> Iterator[Duplicate]:
        log, after = self._key("dup_log"), "-inf"
        while True:
            with self._talking():
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
        with self._talking():
            log_id = self._client.hget(self._key("dup_ids"), key.encode("utf-8"))
            entry = self._client.hgetall(self._key(f"dup:{text_of(log_id)}")) if log_id is not None else None
        return duplicate_of_entry(entry) if entry else None

    def _duplicates_of(self, key: str) -> list[Duplicate]:
        """The log ids in the page's `against:` set (an index written before those sets were kept
        lists only what was logged since)."""
        with self._talking():
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
        pipe = self._client.pipeline(transaction=True)
        pipe.hget(self._key("ids"), key.encode("utf-8"))
        if signature.text_hash is not None:
            pipe.zrange(self._key(f"text:{hex_or_empty(signature.text_hash)}"), 0, -1)
        if signature.simhash is not None:
            for i, values in enumerate(part_probes(blocks(signature.simhash), 16, self.max_distance)):
                for value in values:
                    pipe.zrange(self._key(f"block:{i}:{value:04x}"), 0, -1)
        with self._talking():
            own, *sets = pipe.execute()
            ids = {int(own)} if own is not None else set()
            for members in sets:
                ids.update(int(member.rsplit(b":", 1)[-1]) for member in members)
            pipe = self._client.pipeline(transaction=True)
            ordered = sorted(ids)
            for page_id in ordered:
                pipe.hgetall(self._key(f"doc:{page_id}"))
                pipe.get(self._key(f"sketch:{page_id}"))
            found = pipe.execute()
        pages = zip(ordered, found[::2], found[1::2])
        return [
            StoredPage(text_of(doc[b"key"]), stored_signature(doc, sketch), page_id, moment(doc[b"stored_at"]))
            for page_id, doc, sketch in pages
            if doc
        ]

    def close(self) -> None:
        self._client.close()
