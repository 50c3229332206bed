"""Reports over an index (stats, the duplicates log, clusters): the same code for every
backend, through the Index interface.

Hosts are parsed from URLs in Python, so every backend agrees on them.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlsplit

from ..index.base import Cluster, Description, Index
from ..index.records import Duplicate
from ..index.texts import TextSizes


def host_of(url: str) -> str | None:
    """The lower-cased host name of a URL, without port or user; None when it has none.

    >>> host_of("https://User@WWW.Example.com:8080/a?b"), host_of("not a url")
    ('www.example.com', None)
    """
    try:
        return urlsplit(url).hostname or None
    except ValueError:  # e.g. an unbalanced IPv6 bracket
        return None


def normalize_host(host: str) -> str:
    """A host as given on the command line, as `host_of` spells it."""
    return host.strip().rstrip(".").lower()


DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class HostFilter:
    """Pages on a host or its subdomains, and on one port when one is given.

    >>> wanted = HostFilter.parse("127.0.0.1:8765")
    >>> wanted.matches("http://127.0.0.1:8765/a"), wanted.matches("http://127.0.0.1:9000/a")
    (True, False)
    >>> HostFilter.parse("https://Example.com/").matches("http://www.example.com:443/")
    True
    """

    host: str
    port: int | None = None

    @classmethod
    def parse(cls, given: str) -> HostFilter:
        """`example.com`, `example.com:8080`, `[::1]:8080`, or a URL (its host and port);
        ValueError when there is no host, or the port is not a number."""
        text = given.strip()
        parts = urlsplit(text if "://" in text else "//" + text)
        try:
            port = parts.port
        except ValueError:
            raise ValueError(f"{given!r} has a port that is not a number from 0 to 65535") from None
        if not parts.hostname or any(c.isspace() for c in text):
            raise ValueError(f"{given!r} is not a host name, e.g. example.com or 127.0.0.1:8765")
        return cls(normalize_host(parts.hostname), port)

    def matches(self, url: str) -> bool:
        if not on_host(url, self.host):
            return False
        if self.port is None:
            return True
        try:
            parts = urlsplit(url)
            return (parts.port or DEFAULT_PORTS.get(parts.scheme)) == self.port
        except ValueError:
            return False


def on_host(url: str, host: str) -> bool:
    """Whether a URL is on `host` (already normalised) or one of its subdomains.

    >>> on_host("https://news.example.com/a", "example.com"), on_host("https://badexample.com/", "example.com")
    (True, False)
    """
    found = host_of(url)
    return found is not None and (found == host or found.endswith("." + host))


# -- stats ------------------------------------------------------------------------


@dataclass(frozen=True)
class Stats:
    """What an index holds."""

    documents: int
    duplicates: int
    exact_duplicates: int
    distances: dict[int, int]  # distance -> duplicates, every distance from 0 to the largest seen
    top_hosts: list[tuple[str | None, int]]  # (host, duplicates), most first
    scheme: str
    description: Description
    texts: TextSizes = field(default_factory=lambda: TextSizes(0, 0))  # texts kept (keep_texts), compressed

    @property
    def near_duplicates(self) -> int:
        return self.duplicates - self.exact_duplicates


def stats(index: Index, *, top: int = 10) -> Stats:
    """Pages stored, duplicates logged by distance, and the `top` hosts with the most duplicates."""
    by_distance: Counter[int] = Counter()
    hosts: Counter[str | None] = Counter()
    exact = 0
    for duplicate in index.logged():
        by_distance[duplicate.distance] += 1
        exact += duplicate.exact
        hosts[host_of(duplicate.key)] += 1
    histogram = {d: by_distance[d] for d in range(max(by_distance, default=-1) + 1)}
    ranked = sorted(hosts.items(), key=lambda item: (-item[1], item[0] is None, item[0] or ""))
    return Stats(
        len(index),
        sum(by_distance.values()),
        exact,
        histogram,
        ranked[:top],
        index.scheme,
        index.describe(),
        index.text_sizes(),
    )


# -- the duplicates log -----------------------------------------------------------


def duplicates(
    index: Index,
    *,
    host: str | HostFilter | None = None,
    since: datetime | None = None,
    max_distance: int | None = None,
    limit: int | None = None,
    exact: bool | None = None,
) -> Iterator[Duplicate]:
    """Pages dropped as duplicates, in the order they were first logged, streamed.

    host: only pages on this host or its subdomains (and port, when it has one; see
    HostFilter). since: only pages dropped at or after this moment (naive means UTC).
    exact: only exact-text duplicates (True) or only near ones (False).
    """
    rows = duplicates_among(index.logged(since=since), host=host, max_distance=max_distance, exact=exact)
    yield from itertools.islice(rows, limit)


def duplicates_among(
    rows: Iterable[Duplicate],
    *,
    host: str | HostFilter | None = None,
    since: datetime | None = None,
    max_distance: int | None = None,
    exact: bool | None = None,
) -> Iterator[Duplicate]:
    """The duplicates of `rows` that pass the filters of `duplicates`."""
    if exact is not None:
        rows = (row for row in rows if row.exact == exact)
    if since is not None:
        rows = (row for row in rows if row.seen_at >= since)
    if max_distance is not None:
        rows = (row for row in rows if row.distance <= max_distance)
    if host is not None:
        wanted = host if isinstance(host, HostFilter) else HostFilter.parse(host)
        rows = (row for row in rows if wanted.matches(row.key))
    yield from rows


def clusters(index: Index, *, limit: int | None = None) -> Iterator[Cluster]:
    """Each stored page that has duplicates, with them; the largest clusters first, streamed."""
    return index.clusters(limit=limit)
