"""trafilatura's parses through a parser of the calling thread, never one shared by threads.

trafilatura parses every page with one module-level `HTMLParser` (trafilatura.utils.HTML_PARSER).
With lxml 6, a thread whose first parse goes through a parser shared by threads adopts that
parser's libxml2 dictionary, so every extraction thread ends up sharing one dictionary, which
libxml2 does not lock: concurrent parses then corrupt it and the heap, and the process dies of a
segmentation fault or a double free (docs/changelog.md, 2026-11-23; the lxml FAQ: "create a parser for each
thread yourself"). trafilatura reaches its shared parser only through the module global
`trafilatura.utils.fromstring`, so wrapping that name once gives each thread a parser of its own
with the same options.
"""

from __future__ import annotations

import threading
from typing import Any

_local = threading.local()
_OPTIONS = {
    "collect_ids": False,
    "default_doctype": False,
    "encoding": "utf-8",
    "huge_tree": True,
    "remove_comments": True,
    "remove_pis": True,
}
_installed = False
_install_lock = threading.Lock()


def thread_parser() -> Any:
    """This thread's HTML parser, with the options of trafilatura's shared one, and `huge_tree`:
    a page under the 20 MB page limit may hold a text node over libxml2's 10 MB one."""
    parser = getattr(_local, "parser", None)
    if parser is None:
        from lxml.html import HTMLParser

        parser = _local.parser = HTMLParser(**_OPTIONS)
    return parser


def install() -> None:
    """Route trafilatura's parses through each thread's own parser (once per process)."""
    global _installed
    if _installed:
        return
    with _install_lock:
        if _installed:
            return
        import trafilatura.utils as utils

        shared, original = utils.HTML_PARSER, utils.fromstring  # type: ignore[attr-defined]

        def fromstring(html: Any, base_url: Any = None, parser: Any = None, **options: Any) -> Any:
            if parser is shared:
                parser = thread_parser()
            return original(html, base_url=base_url, parser=parser, **options)

        utils.fromstring = fromstring  # type: ignore[attr-defined]
        _installed = True
