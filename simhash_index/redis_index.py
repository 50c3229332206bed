"""RedisIndex: the SimhashIndex API on a Redis server, with check_and_add one Lua script.

Every key starts with the index's prefix (default "simhash:"), so several crawls can
share a server. With the prefix P:

- `P meta` (hash): schema_version, scheme.
- `P ids` (hash): page key -> page id; `P next_id`: the last id given.
- `P doc:<id>` (hash): key, fingerprint and text_hash (16 hex digits each), exact_only
  ("1" for short texts), stored_at (microseconds since the epoch, UTC).
- `P sketch:<id>` (string): the page's MinHash sketch, when it has one.
- `P block:<i>:<hhhh>` (sorted set): pages whose 16-bit block i (bits 16i..16i+15) is
  hhhh; members "<fingerprint>:<id>", scored by the fingerprint's popcount, so a lookup
  reads only the members within max_distance of the query's popcount.
- `P text:<text_hash>` (sorted set): ids of the pages with that normalised text, scored by id.
- `P dup_ids` (hash): dropped key -> log id; `P next_dup`: the last log id given.
- `P dup:<log id>` (hash): key, duplicate_of, duplicate_of_id, distance, exact, seen_at.
- `P dup_log` (sorted set): log ids scored by themselves, in the order first logged.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis

from . import urls
from .errors import IndexNotFoundError, IndexUnavailableError, SchemaVersionError, SchemeMismatchError, SimhashIndexError
from .fingerprint import DEFAULT, Signature
from .index import DEFAULT_MIN_SIMILARITY, Duplicate, Fingerprint, Match, _signature, check_policy
from .records import as_u64, check_key
from .schema import SCHEMA_VERSION
from .simhash import blocks, to_signed
from .sketch import similarity

REDIS_SCHEMES = ("redis://", "rediss://")
DEFAULT_PREFIX = "simhash:"
STREAM_ROWS = 1000  # log entries read at a time
PAGES_PER_CALL = 250  # pages stored by one script call in add_many: a few ms of the server each
CONNECT_TIMEOUT_S = 10
SOCKET_TIMEOUT_S = 60  # a stuck server fails a call rather than hang a crawler thread
_SCRIPT = Path(__file__).with_name("redis_index.lua").read_text(encoding="utf-8")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def split_url(url: str, prefix: str | None = None) -> tuple[str, str]:
    """(the URL to connect to, the key prefix): `?prefix=` is ours, the rest is redis-py's."""
    if not isinstance(url, str) or not url.startswith(REDIS_SCHEMES):
        raise IndexUnavailableError(f"url {urls.masked(url)!r} is not a Redis URL: use e.g. redis://127.0.0.1:6379/0")
    problem = urls.unescaped_userinfo(url)
    if problem:
        raise IndexUnavailableError(f"url {urls.masked(url)!r}: {problem}")
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    given = [value for name, value in query if name == "prefix"]
    if len(set(given)) > 1 or (given and prefix is not None and given[0] != prefix):
        raise ValueError(f"two different key prefixes given (the URL's ?prefix= and prefix=): {[*given, prefix]!r}; give one")
    chosen = prefix if prefix is not None else (given[0] if given else DEFAULT_PREFIX)
    if not isinstance(chosen, str) or not chosen:
        raise ValueError(f"prefix must be a non-empty string, e.g. 'crawl1:'; got {chosen!r}")
    rest = urlencode([(name, value) for name, value in query if name != "prefix"])
    return urlunsplit(parts._replace(query=rest)), chosen


def _hex(value: int | None) -> str:
    return "" if value is None else f"{value:016x}"


def _text(value: bytes) -> str:
    return value.decode("utf-8", "surrogatepass")


def _micros(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)


def _moment(micros: bytes | int) -> datetime:
    return _EPOCH + timedelta(microseconds=int(micros))


class RedisIndex:
    """Near-duplicate index on a Redis server: the API and guarantees of SimhashIndex.

    `SimhashIndex("redis://host:6379/0?prefix=crawl1:")` returns one. `check_and_add`
    is a single Lua script, so it is atomic across processes and machines.
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        max_distance: int = 3,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        scheme: str | None = DEFAULT.scheme,
        create: bool = True,
        prefix: str | None = None,
    ) -> None:
        check_policy(max_distance, min_similarity)
        connect_to, self.prefix = split_url(url, prefix)
        self.url = url
        self.max_distance = max_distance
        self.min_similarity = min_similarity
        self._shown = urls.masked(url)
        try:
            self._client = redis.Redis.from_url(
                connect_to, socket_connect_timeout=CONNECT_TIMEOUT_S, socket_timeout=SOCKET_TIMEOUT_S
            )
            pool = self._client.connection_pool
            pool.connection_class(**pool.connection_kwargs)  # an unknown ?option= fails here, before any call
        except TypeError as exc:  # redis-py passes an option it does not know on as a keyword
            option = str(exc).rpartition("keyword argument ")[2] or self._scrub(exc)
            raise IndexUnavailableError(f"url {self._shown!r} is not a usable Redis URL: unknown option {option}") from None
        except ValueError as exc:  # a bad port or database number, or a bad option value
            raise IndexUnavailableError(f"url {self._shown!r} is not a usable Redis URL: {self._scrub(exc)}") from None
        self._script = self._client.register_script(_SCRIPT)
        try:
            self.scheme = self._open(scheme, create)
        except SimhashIndexError as exc:
            self._client.close()
            if type(exc) is SimhashIndexError:  # e.g. a database number the server does not have
                raise IndexUnavailableError(str(exc)) from exc
            raise
        except Exception:
            self._client.close()
            raise

    def __repr__(self) -> str:
        return f"RedisIndex({self._shown!r}, prefix={self.prefix!r}, max_distance={self.max_distance})"

    # -- talking to the server --------------------------------------------------------

    def _scrub(self, error: object) -> str:
        return urls.scrub(urls.first_line(error), self.url)

    @contextmanager
    def _talking(self) -> Iterator[None]:
        """Redis errors as the library's: IndexUnavailableError when the server cannot be reached."""
        try:
            yield
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise IndexUnavailableError(f"redis {self._shown} is unavailable: {self._scrub(exc)}") from exc
        except redis.ResponseError as exc:
            if not str(exc).startswith("NOINDEX"):
                raise SimhashIndexError(f"redis {self._shown} failed: {self._scrub(exc)}") from exc
            raise IndexNotFoundError(
                f"redis {self._shown} holds no index under prefix {self.prefix!r} any more (restarted without "
                "persistence, or flushed?): open it again to start a new one"
            ) from exc
        except redis.RedisError as exc:
            raise SimhashIndexError(f"redis {self._shown} failed: {self._scrub(exc)}") from exc

    def _run(self, command: str, *args: object, client: object = None) -> object:
        return self._script(args=[command, self.prefix, *args], client=client)

    def _open(self, scheme: str | None, create: bool) -> str:
        with self._talking():
            version, recorded = self._run("open", SCHEMA_VERSION, scheme or DEFAULT.scheme, "1" if create else "0")
        where = f"{self._shown} (prefix {self.prefix!r})"
        if version is None and not create:
            raise IndexNotFoundError(f"{where} holds no simhash index: is it the right server, database and prefix?")
        if version is not None and _text(version) != SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{where} has schema version {_text(version)}; this simhash-index reads version "
                f"{SCHEMA_VERSION}: use a new prefix, or the simhash-index version that wrote it"
            )
        recorded_scheme = _text(recorded) if recorded is not None else scheme or DEFAULT.scheme
        if scheme is not None and recorded_scheme != scheme:
            raise SchemeMismatchError(
                f"{where} holds fingerprints of another scheme, which are not comparable:\n"
                f"  database: {recorded_scheme}\n  asked:    {scheme}\n"
                "use the database's fingerprinter settings, or a new prefix"
            )
        return recorded_scheme

    def _key(self, name: str) -> str:
        return f"{self.prefix}{name}"

    # -- reads --------------------------------------------------------------------------

    def __len__(self) -> int:
        with self._talking():
            return int(self._client.hlen(self._key("ids")))

    def query(self, fingerprint: int) -> list[Match]:
        """Every stored fingerprint within max_distance, nearest first."""
        fingerprint = as_u64(fingerprint)
        with self._talking():
            rows = self._run("near", _hex(fingerprint), self.max_distance)
        return [Match(_text(key), int(stored, 16), int(distance)) for key, stored, distance in rows]

    def get(self, key: str) -> Match | None:
        """The stored page with this key, as a Match at distance 0, or None."""
        with self._talking():
            found = self._run("get", check_key(key).encode("utf-8"))
        if found is None:
            return None
        return Match(key, int(found[0], 16) if found[0] else None, 0, exact=True)

    def duplicates(self) -> list[Duplicate]:
        """Every page logged as a duplicate, oldest first."""
        return [duplicate for _, duplicate in self.logged()]

    def logged(self, *, batch: int = STREAM_ROWS) -> Iterator[tuple[int, Duplicate]]:
        """(id of the stored page, Duplicate) for each logged page, in the order first logged, streamed."""
        log, after = self._key("dup_log"), "-inf"
        while True:
            with self._talking():
                ids = self._client.zrangebyscore(log, after, "+inf", start=0, num=batch)
                if not ids:
                    return
                pipe = self._client.pipeline(transaction=False)
                for log_id in ids:
                    pipe.hgetall(self._key(f"dup:{_text(log_id)}"))
                entries = pipe.execute()
            for entry in entries:
                if entry:  # empty when it left the log between the two reads
                    yield int(entry[b"duplicate_of_id"]), Duplicate(
                        _text(entry[b"key"]), _text(entry[b"duplicate_of"]), int(entry[b"distance"]),
                        entry[b"exact"] == b"1", _moment(entry[b"seen_at"]),
                    )
            after = f"({_text(ids[-1])}"

    def neighbourhood(self, key: str, signature: Signature) -> list[tuple[str, Signature]]:
        """Stored pages a check of this page could see (same key, same text, a shared block), oldest first."""
        pipe = self._client.pipeline(transaction=True)
        pipe.hget(self._key("ids"), key.encode("utf-8", "surrogatepass"))
        if signature.text_hash is not None:
            pipe.zrange(self._key(f"text:{_hex(signature.text_hash)}"), 0, -1)
        if signature.simhash is not None:
            for i, value in enumerate(blocks(signature.simhash)):
                pipe.zrange(self._key(f"block:{i}:{value:04x}"), 0, -1)
        with self._talking():
            own, *sets = pipe.execute()
            ids = {int(own)} if own is not None else set()
            for members in sets:
                ids.update(int(member.rsplit(b":", 1)[-1]) for member in members)
            pipe = self._client.pipeline(transaction=True)
            for page_id in sorted(ids):
                pipe.hgetall(self._key(f"doc:{page_id}"))
                pipe.get(self._key(f"sketch:{page_id}"))
            found = pipe.execute()
        pages = zip(found[::2], found[1::2])
        return [(_text(doc[b"key"]), _stored_signature(doc, sketch)) for doc, sketch in pages if doc]

    # -- writes -------------------------------------------------------------------------

    def add(self, key: str, fingerprint: Fingerprint, *, text_hash: int | None = None, sketch: bytes | None = None) -> None:
        """Store a page (replacing the stored one with this key), without checking."""
        self.add_many([(key, _signature(fingerprint, text_hash, sketch))])

    def add_many(self, items: Iterable[tuple[str, Fingerprint]], *, batch_size: int = 10_000) -> int:
        """Store many (key, fingerprint or Signature) pairs, pipelined in batches; returns how many."""
        count = 0
        batch: list[tuple[str, Signature]] = []
        for key, fingerprint in items:
            batch.append((check_key(key), _signature(fingerprint, None, None)))
            if len(batch) >= batch_size:
                count += self._store(batch)
                batch = []
        if batch:
            count += self._store(batch)
        return count

    def _store(self, batch: list[tuple[str, Signature]]) -> int:
        now = _micros(datetime.now(timezone.utc))
        with self._talking():
            pipe = self._client.pipeline(transaction=False)
            for start in range(0, len(batch), PAGES_PER_CALL):
                pages = [arg for key, signature in batch[start : start + PAGES_PER_CALL] for arg in _page_args(key, signature)]
                self._run("store", now, *pages, client=pipe)
            pipe.execute()
        return len(batch)

    def check_and_add(
        self, key: str, fingerprint: Fingerprint, *, text_hash: int | None = None, sketch: bytes | None = None
    ) -> Match | None:
        """Store the page unless it duplicates a stored one; return that one, or None.

        One Lua script, atomic: a key already stored is updated in place if its
        content changed; a key logged as a duplicate before is checked again.
        """
        signature = _signature(fingerprint, text_hash, sketch)
        check_key(key)
        now = _micros(datetime.now(timezone.utc))
        with self._talking():
            found = self._run(
                "check", *_page_args(key, signature), self.max_distance, repr(float(self.min_similarity)), now
            )
        if found is None:
            return None
        match_key, stored, distance, exact, stored_sketch = found
        score = similarity(signature.sketch, stored_sketch) if stored_sketch else None
        return Match(_text(match_key), int(stored, 16) if stored else None, int(distance), exact=exact == 1, similarity=score)

    # -- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> RedisIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _page_args(key: str, signature: Signature) -> tuple[bytes, str, str, bytes, str]:
    """A page as the script takes it: key, fingerprint, text_hash, sketch, exact_only."""
    return (
        key.encode("utf-8", "surrogatepass"),
        _hex(signature.simhash),
        _hex(signature.text_hash),
        signature.sketch or b"",
        "1" if signature.exact_only else "0",
    )


def _stored_signature(doc: dict[bytes, bytes], sketch: bytes | None) -> Signature:
    fingerprint, text_hash = doc.get(b"fingerprint"), doc.get(b"text_hash")
    return Signature(
        int(fingerprint, 16) if fingerprint else None,
        int(text_hash, 16) if text_hash else None,
        sketch,
        exact_only=doc.get(b"exact_only") == b"1",
    )
