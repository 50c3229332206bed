"""One factory picks the backend from the URL: the one module that opens a database backend."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode

from sqlalchemy.engine import URL

from .. import defaults
from ..errors import InvalidArgumentError
from ..fingerprinting.fingerprinter import DEFAULT
from .base import Index
from .prefer import Prefer
from .records import Policy, as_window

MEMORY = "memory://"
REDIS = ("redis://", "rediss://")


def open_index(
    url: str | URL = defaults.DATABASE_URL,
    *,
    max_distance: int | None = None,
    min_similarity: float = defaults.MIN_SIMILARITY,
    added_words: int | None = defaults.ADDED_WORDS,
    scheme: str | None = DEFAULT.scheme,
    create: bool = True,
    layout: str | None = None,
    block_assignment: str | None = None,
    prefix: str | None = None,
    read_only: bool = False,
    connect_timeout: float = defaults.CONNECT_TIMEOUT_S,
    statement_timeout: float = defaults.STATEMENT_TIMEOUT_S,
    window: timedelta | str | float | None = None,
    keep_texts: bool = False,
    prefer: Prefer = "first",
    lookup: str | None = None,
) -> Index:
    """The index at `url`: `sqlite:///path` or `postgresql://...` (SqlIndex),
    `redis://host:6379/0` (RedisIndex) or `memory://` (MemoryIndex, this process only).

    max_distance: the search radius, 0 to 8; None: the default (8), or the largest radius the
    index's layout answers when that is smaller (a "halves" SQL index: 5). A radius chosen beyond
    the layout's largest is refused.
    added_words: a similar page that may add this many words to the stored page (a tenth of
    a short page's) is kept, not dropped as its duplicate (docs/accuracy.md, "What a page adds");
    None: the plain similarity rule.
    scheme: the Fingerprinter.scheme of the fingerprints to be stored (None adopts the
    index's). create: create the index when there is none (False: IndexNotFoundError).
    layout, block_assignment: an SQL table's lookup layout, chosen when it is created
    ("blocks" by default, or "halves"; "contiguous" or "interleaved" blocks); an existing
    index keeps its own. prefix: the Redis key prefix (or `?prefix=` in the URL).
    read_only: open an existing index without writing anything to it, ever (reports).
    connect_timeout, statement_timeout: seconds a connection and a call may take before they
    fail with IndexUnavailableError, even when the server hangs.
    window: a page is a duplicate only of pages stored within this time before it (a
    timedelta, seconds, or '30d', '12h'; or `?window=30d` in the URL); docs/operating.md.
    keep_texts: keep each page's text, compressed, when given to Index.store_texts (or
    `?texts=1` in the URL), so that `explain` and the report can show word-level diffs.
    prefer: which copy survives, the stored page or a duplicate of it: "first" (the stored
    one), "longest", "newest", or a function (new, stored) -> bool (index/prefer.py).
    lookup: where an SQL index's writes find a page's near pages (or `?lookup=` in the URL):
    "memory" (the default: an index of the stored fingerprints in this process, about 30-60
    bytes a page) or "sql" (the table's block columns: no memory, slower as the index grows).
    """
    url, texts = _option_in_url(url, "texts")
    if texts is not None and texts not in ("0", "1", "true", "false"):
        raise InvalidArgumentError(f"?texts= must be 1 or 0; got {texts!r}")
    url, lookup_in_url = _option_in_url(url, "lookup")
    if lookup_in_url is not None and lookup is not None and lookup_in_url != lookup:
        raise InvalidArgumentError(
            f"two different lookups given (the URL's and lookup=): {lookup_in_url!r} and {lookup!r}"
        )
    url, window_in_url = _option_in_url(url, "window")
    if window_in_url is not None and window is not None and as_window(window) != as_window(window_in_url):
        raise InvalidArgumentError(
            f"two different windows given (the URL's and window=): {window_in_url!r} and {window!r}"
        )
    options = Options(
        policy=Policy.of(
            max_distance,
            min_similarity,
            as_window(window if window is not None else window_in_url),
            prefer,
            added_words,
        ),
        radius_chosen=max_distance is not None,
        scheme=scheme,
        create=create and not read_only,
        read_only=read_only,
        keep_texts=keep_texts or texts in ("1", "true"),
        layout=layout,
        block_assignment=block_assignment,
        prefix=prefix,
        connect_timeout=connect_timeout,
        statement_timeout=statement_timeout,
        lookup=lookup if lookup is not None else lookup_in_url,
    )
    if isinstance(url, str) and url == MEMORY:
        return _memory(url, options)
    if isinstance(url, str) and url.startswith(REDIS):
        return _redis(url, options)
    return _sql(url, options)


@dataclass(frozen=True)
class Options:
    """What open_index was given, as every backend's opener takes it."""

    policy: Policy
    radius_chosen: bool  # False: the policy's radius is the default, which a layout may cap
    scheme: str | None
    create: bool
    read_only: bool
    keep_texts: bool
    layout: str | None
    block_assignment: str | None
    prefix: str | None
    connect_timeout: float
    statement_timeout: float
    lookup: str | None

    def no_layout(self) -> None:
        if self.layout is not None or self.block_assignment is not None or self.lookup is not None:
            raise InvalidArgumentError(
                "layout, block_assignment and lookup choose an SQL table's lookups; a Redis or memory index has none"
            )


def _memory(url: str, options: Options) -> Index:
    from .memory import MemoryIndex

    options.no_layout()
    return MemoryIndex(url, policy=options.policy, scheme=options.scheme, keep_texts=options.keep_texts)


def _redis(url: str, options: Options) -> Index:
    from .redis.backend import RedisIndex

    options.no_layout()
    return RedisIndex(
        url,
        policy=options.policy,
        scheme=options.scheme,
        create=options.create,
        prefix=options.prefix,
        read_only=options.read_only,
        connect_timeout=options.connect_timeout,
        statement_timeout=options.statement_timeout,
        keep_texts=options.keep_texts,
    )


def _sql(url: str | URL, options: Options) -> Index:
    if options.prefix is not None:
        raise InvalidArgumentError("prefix is a Redis key prefix; an SQL index has none")
    from .sql.backend import SqlIndex
    from .sql.engine import Access
    from .sql.layouts import Layout

    layout = None
    if options.layout is not None or options.block_assignment is not None:
        layout = Layout(
            options.layout or defaults.LAYOUT,  # type: ignore[arg-type]
            options.block_assignment or defaults.BLOCK_ASSIGNMENT,  # type: ignore[arg-type]
        )
    return SqlIndex(
        url,
        policy=options.policy,
        scheme=options.scheme,
        create=options.create,
        layout=layout,
        access=Access(options.read_only, options.connect_timeout, options.statement_timeout),
        radius_chosen=options.radius_chosen,
        keep_texts=options.keep_texts,
        lookup=options.lookup or "memory",  # type: ignore[arg-type]
    )


def _option_in_url(url: str | URL, name: str) -> tuple[str | URL, str | None]:
    """`?window=30d` or `?texts=1` in the URL: ours, taken out of what the backend sees."""
    if isinstance(url, URL):
        given = url.query.get(name)
        if given is None:
            return url, None
        if not isinstance(given, str):
            raise InvalidArgumentError(f"give ?{name}= once in the URL")
        return url.difference_update_query([name]), given
    base, mark, tail = url.partition("?")
    query = parse_qsl(tail, keep_blank_values=True)
    found = [value for option, value in query if option == name]
    if not mark or not found:
        return url, None
    if len(found) > 1:
        raise InvalidArgumentError(f"give ?{name}= once in the URL")
    rest = urlencode([(option, value) for option, value in query if option != name])
    return base + ("?" + rest if rest else ""), found[0]


def SimhashIndex(url: str | URL = defaults.DATABASE_URL, **options: Any) -> Index:  # noqa: N802 - the name users know
    """`open_index` under the name the library has always had: a factory, not a class (the
    index's class depends on the URL; `isinstance(index, Index)` holds for every one).

    It takes `open_index`'s arguments, with its defaults: max_distance None (the radius 8, or 5
    on a "halves" index), min_similarity 0.88, added_words 25 (None: the plain similarity rule),
    prefer "first", and the rest as `open_index` documents them."""
    return open_index(url, **options)
