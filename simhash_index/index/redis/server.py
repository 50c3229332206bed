"""The index's keys on a Redis server: its script's commands and plain reads, errors as the library's."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...errors import (
    IndexNotFoundError,
    IndexUnavailableError,
    MissingDependencyError,
    SimhashIndexError,
    install_extra,
)
from . import changes
from .codec import BLOB_NAMES

try:
    import redis
except ImportError as missing:
    raise MissingDependencyError(f"Redis indexes need the redis package: {install_extra('redis')}") from missing

_SCRIPT = (Path(__file__).parent / "script.lua").read_text(encoding="utf-8")
STREAM_ROWS = 1000  # log entries, or keys, read at a time
PAGES_PER_CALL = 200  # pages (or texts, or keys to forget) sent a script call
CALL_US = 5_000  # a call that loops over pages or keys stops after this long (the server's clock)


def connect(url: str, connect_timeout: float, timeout: float) -> Any:
    """A client of the server at `url` (redis-py's URL); its calls fail after `timeout` seconds."""
    # Any: redis-py types every reply as a union of what any command could return
    return redis.Redis.from_url(url, socket_connect_timeout=connect_timeout, socket_timeout=timeout)


class Server:
    """A client of the server, the key prefix, and how messages name them."""

    def __init__(self, client: Any, prefix: str, url: str, scrub: Any) -> None:
        """`url`: the server as messages name it; `scrub(error)`: an error's text, credentials out."""
        self.client = client
        self.prefix = prefix
        self.url = url
        self._scrub = scrub
        self._script = client.register_script(_SCRIPT)

    def key(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def run(self, command: str, *args: Any) -> Any:
        """One call of the script, its errors as the library's."""
        with self.talking():
            return self._script(args=[command, self.prefix, BLOB_NAMES, changes.KEEP, *args])

    def in_calls(self, command: str, items: Sequence[Sequence[Any]], *head: Any) -> list[Any]:
        """Send the items (each its arguments) in calls of PAGES_PER_CALL at most, after `head`; a
        call that does only a part (its time budget spent) is followed by one with the rest. The
        replies: how many items the call did, or a list that begins with it."""
        replies, done = [], 0
        while done < len(items):
            sent = items[done : done + PAGES_PER_CALL]
            reply = self.run(command, *head, *(argument for item in sent for argument in item))
            did = reply if isinstance(reply, int) else int(reply[0])
            if did == 0 and (isinstance(reply, int) or not any(reply[1:])):
                raise SimhashIndexError(f"{self.url}: the script did none of the {len(sent)} items it was sent")
            replies.append(reply)
            done += did
        return replies

    def close(self) -> None:
        self.client.close()

    @contextmanager
    def talking(self) -> Iterator[None]:
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
