"""trafilatura's shared lxml parser, used from many threads, corrupts the heap; our wrapper
gives each thread its own (simhash_index/text/parsers.py; docs/changelog.md, 2026-11-23)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from simhash_index.text import parsers
from simhash_index.text.extract import extract_text

# Threads whose first parse goes through trafilatura's own path (load_html), then parse pages of
# ever new attribute names, as a crawl's extraction threads do: the libxml2 dictionary they all
# share grows while they parse concurrently.
HARNESS = """
import random, sys, threading
import lxml.html
import trafilatura.utils as utils
if sys.argv[1] == "fixed":
    from simhash_index.text import parsers
    parsers.install()

def page(rnd):
    return "<html><body>" + "".join(f'<div a{rnd.getrandbits(40):x}="1">t</div>' for _ in range(300)) + "</body></html>"

def worker(seed):
    rnd = random.Random(seed)
    utils.load_html("<html><body><p>first</p></body></html>")
    for _ in range(300):
        lxml.html.fromstring(page(rnd), parser=lxml.html.HTMLParser())

threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
for t in threads: t.start()
for t in threads: t.join()
"""


def run(mode: str, tmp_path: Path) -> int:
    script = tmp_path / "harness.py"
    script.write_text(HARNESS)
    return subprocess.run([sys.executable, str(script), mode], capture_output=True, timeout=120).returncode


def test_the_harness_crashes_without_the_fix(tmp_path: Path) -> None:
    """The premise: unfixed, the shared parser kills the process (if lxml ever fixes it, this says so)."""
    assert any(run("unfixed", tmp_path) != 0 for _ in range(3))


def test_with_a_parser_per_thread_it_does_not(tmp_path: Path) -> None:
    assert [run("fixed", tmp_path) for _ in range(3)] == [0, 0, 0]


def test_extraction_goes_through_the_threads_own_parser() -> None:
    """Guards the wrapper: it must be on trafilatura's path (trafilatura may change its internals)."""
    seen: list[object] = []
    original = parsers.thread_parser

    def spy() -> object:
        parser = original()
        seen.append((threading.get_ident(), parser))  # the parser kept alive: ids stay distinct
        return parser

    parsers.thread_parser = spy
    try:
        html = "<html><body><article><p>" + "A paragraph of plain text. " * 30 + "</p></article></body></html>"
        together = threading.Barrier(3)  # all alive at once: no thread reuses another's ident

        def extract_once() -> None:
            together.wait()
            extract_text(html)
            together.wait()

        threads = [threading.Thread(target=extract_once) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        parsers.thread_parser = original
    assert len({ident for ident, _ in seen}) == 3  # every thread parsed through the wrapper
    assert len({id(parser) for _, parser in seen}) == 3  # with a parser of its own
