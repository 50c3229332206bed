"""Every command, and every option, has help text; every command is in the README's CLI section."""

from __future__ import annotations

import argparse
import doctest
import importlib
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

from simhash_index.cli import cli

README = Path(__file__).resolve().parent.parent / "README.md"
SECTION = "## The command line"


def cli_section() -> str:
    """The README from its "## The command line" heading to the next "## " heading."""
    text = README.read_text(encoding="utf-8")
    start = text.find(f"\n{SECTION}\n")
    assert start != -1, f"README.md has no {SECTION!r} section"
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def documented_commands() -> set[str]:
    return set(re.findall(r"simhash-index ([a-z][a-z-]*)", cli_section()))


COMMANDS = sorted(cli.commands.items())


@pytest.mark.parametrize("name", [name for name, _ in COMMANDS])
def test_command_is_in_the_readme(name: str) -> None:
    assert name in documented_commands(), f"`simhash-index {name}` is missing from README.md's {SECTION!r} section"


@pytest.mark.parametrize(("name", "command"), COMMANDS)
def test_command_has_help(name: str, command: click.Command) -> None:
    assert command.help and command.help.strip(), f"command {name!r} has no help text"
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"option {param.opts[0]} of {name!r} has no help text"


def test_group_has_help() -> None:
    assert cli.help and cli.help.strip()


def test_every_documented_command_exists() -> None:
    assert documented_commands() <= set(cli.commands)


# -- every Python block of the documentation runs ---------------------------------

DOCUMENTS = [README, *sorted((README.parent / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def python_blocks() -> list[tuple[str, int, str]]:
    """(document, line number, code) of each ```python block."""
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in _BLOCK.finditer(text):
            found.append((document.name, text.count("\n", 0, match.start()) + 1, match.group(1)))
    return found


@pytest.mark.parametrize(("document", "line", "code"), python_blocks(), ids=lambda v: str(v)[:40])
def test_python_blocks_run(
    document: str, line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Blocks written as a session (>>>) must print what they show; other blocks must run."""
    monkeypatch.chdir(tmp_path)  # blocks create their databases in the working directory
    if "redis://" in code:  # the examples' key prefix, swapped for one of the test's own (deleted after)
        test_url = request.getfixturevalue("redis_url")
        code = code.replace("?prefix=crawl1:", "?prefix=" + test_url.rpartition("prefix=")[2])
    if code.lstrip().startswith(">>>"):
        parser = doctest.DocTestParser()
        test = parser.get_doctest(code, {}, f"{document}:{line}", document, line)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        output: list[str] = []
        runner.run(test, out=output.append)
        assert runner.failures == 0, "".join(output)
    else:
        exec(compile(code, f"{document}:{line}", "exec"), {"__name__": "__docs__"})


# -- the README's shape and its links ------------------------------------------------

LINT = "ruff check simhash_index crawler tests benchmarks"  # the code, its tests and its benchmarks
FRESH_MACHINE = (
    ".venv/bin/pip install -e . && .venv/bin/scrapy crawl site -a start_url=",
    f".venv/bin/pip install -e '.[test]' && .venv/bin/{LINT} && .venv/bin/mypy && .venv/bin/pytest",
)
FIRST_SCREEN = 24  # lines


def test_the_first_screen_holds_the_two_fresh_machine_commands() -> None:
    first = README.read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN]
    for command in FRESH_MACHINE:
        assert any(command in line for line in first), f"{command!r} is not in README's first {FIRST_SCREEN} lines"


def test_the_readme_lint_command_passes_on_the_tests_and_benchmarks_too() -> None:
    ruff = Path(sys.executable).with_name("ruff")
    done = subprocess.run(
        [str(ruff), *shlex.split(LINT)[1:]], cwd=README.parent, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]


_LINK = re.compile(r"\]\(([^)#\s]*)(#[^)\s]*)?\)")


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: d.name)
def test_links_between_documents_resolve(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    for target, anchor in _LINK.findall(text):
        if "://" in target:
            continue
        path = (document.parent / target).resolve() if target else document
        assert path.exists(), f"{document.name} links to {target}, which does not exist"
        if anchor and path.suffix == ".md":
            headings = {_anchor(h) for h in re.findall(r"^#+ (.*)$", path.read_text(encoding="utf-8"), re.M)}
            assert anchor[1:] in headings, f"{document.name} links to {target}{anchor}: no such heading"


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_page_of_docs_is_linked_from_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    for page in sorted((README.parent / "docs").glob("*.md")):
        assert f"](docs/{page.name}" in text, f"README.md does not link docs/{page.name}"


# -- every benchmark command in the documentation names a module and options it takes ---

_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_BENCHMARK = re.compile(r"python3? (?:-m )?benchmarks[./]")


def benchmark_commands() -> list[tuple[str, str]]:
    """(document, command) of every `python ... benchmarks...` in code: a code block's lines, inline code spans."""
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        spans = [line for block in _FENCE.findall(text) for line in block.splitlines()]
        spans += [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", _FENCE.sub("", text))]
        found += [(document.name, span[_BENCHMARK.search(span).start() :]) for span in spans if _BENCHMARK.search(span)]
    return found


@pytest.mark.parametrize(("document", "command"), benchmark_commands(), ids=lambda v: str(v)[:60])
def test_documented_benchmark_commands_parse(document: str, command: str) -> None:
    """`python -m benchmarks.NAME OPTIONS`: the module exists and its parser() takes the options."""
    words = [w for w in shlex.split(command.split(" #")[0]) if w != "..."]  # "...": more of the same
    assert words[1] == "-m", f"{document}: {command!r} runs a file; write `python -m benchmarks.NAME`"
    module = importlib.import_module(words[2])
    try:
        module.parser().parse_args(words[3:])
    except SystemExit as exit:  # --help exits 0
        assert exit.code == 0, f"{document}: {command!r} does not parse"


def test_benchmark_files_named_in_the_docs_exist() -> None:
    for document in DOCUMENTS:
        for path in re.findall(r"\bbenchmarks/[\w/]+\.(?:py|md)\b", document.read_text(encoding="utf-8")):
            assert (README.parent / path).exists(), f"{document.name} names {path}, which does not exist"


# -- the pages describe the product as it is today -------------------------------------

CHANGELOG = "changelog.md"  # history lives there, and only there
RETIRED = {  # what earlier versions had, which no other page may present as current: pattern -> what it was
    r"(?i)default (?:search )?radius(?: is|,| of| was)? 3\b": "radius 3 was the default until 2026-11-25 (now 6)",
    r"(?i)\bradius 3,? (?:the|our) default": "radius 3 was the default until 2026-11-25 (now 6)",
    r"(?i)distance 0 to 3 makes a \*?candidate": "radius 3 was the default until 2026-11-25 (now 6)",
    r"(?i)within 3 makes a candidate": "radius 3 was the default until 2026-11-25 (now 6)",
    r"(?i)\b0 to 7\b": "the widest radius was 7 until 2026-11-27 (now 8)",
    r"tf\^1\.33": "the weighting before 2026-11-23",
    r"(?i)the previous (?:index|defaults|fingerprint defaults)": "figures of a retired index or defaults",
    r"(?i)halves\W+\(?the default": "the halves layout was the default until 2026-11-23",
    r"(?i)this version writes \*\*[1-4]\*\*": "schema 5 is written since 2026-11-25",
    r"(?i)advisory locks? on every block": "PostgreSQL writers take one writer lock since 2026-11-27",
    r"(?i)default(?: search)? radius(?: is|,| of| was)?,? 6\b": "radius 6 was the default until 2026-12-06 (now 8)",
    r"(?i)radius,? 6,? (?:by default|the default)": "radius 6 was the default until 2026-12-06 (now 8)",
    r"(?i)\(6 by default\)|\b6 by default\b": "radius 6 was the default until 2026-12-06 (now 8)",
    r"(?i)at the default radius,? 6\b|None: 6\b|the radius \(6\)": "radius 6 was the default until 2026-12-06 (now 8)",
    r"(?i)\bthe default\s+6\b": "radius 6 was the default until 2026-12-06 (now 8)",
}


@pytest.mark.parametrize("document", [d for d in DOCUMENTS if d.name != CHANGELOG], ids=lambda d: d.name)
def test_no_page_names_a_retired_layout_or_default_as_current(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    for pattern, what in RETIRED.items():
        found = re.search(pattern, text)
        assert found is None, f"{document.name}: {found.group(0)!r}: {what}; history goes in docs/{CHANGELOG}"


SETTINGS_PAGE = README.parent / "docs" / "scrapy.md"  # the settings table


def test_the_settings_table_gives_todays_defaults() -> None:
    from simhash_index import defaults
    from simhash_index.fingerprinting.fingerprinter import Fingerprinter
    from simhash_index.text.extract import ExtractOptions

    rows = dict(re.findall(r"^\| `(SIMHASH_[A-Z_]+)` \| ([^|]*) \|", SETTINGS_PAGE.read_text(encoding="utf-8"), re.M))
    today = {
        "SIMHASH_MAX_DISTANCE": defaults.MAX_DISTANCE,
        "SIMHASH_MIN_SIMILARITY": defaults.MIN_SIMILARITY,
        "SIMHASH_INDEX_LAYOUT": defaults.LAYOUT,
        "SIMHASH_BLOCK_ASSIGNMENT": defaults.BLOCK_ASSIGNMENT,
        "SIMHASH_BATCH_SIZE": defaults.BATCH_SIZE,
        "SIMHASH_WORKER_TIMEOUT": defaults.WORKER_TIMEOUT_S,
        "SIMHASH_CONNECT_TIMEOUT": defaults.CONNECT_TIMEOUT_S,
        "SIMHASH_STATEMENT_TIMEOUT": defaults.STATEMENT_TIMEOUT_S,
        "SIMHASH_MIN_TEXT_LENGTH": Fingerprinter().min_length,
        "SIMHASH_EXTRACT_MAX_BYTES": ExtractOptions().max_bytes,
        "SIMHASH_PREFER": "first",
    }
    for setting, value in today.items():
        shown = rows[setting].strip().strip("`")
        assert shown == str(value) or float(shown) == value, (
            f"scrapy.md says {setting} defaults to {shown}, not {value}"
        )


# -- a benchmark edits the docs only when asked, and only its own section --------------------

BENCHMARKS = README.parent / "benchmarks"


def _write_flags(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The parser's --write actions, its subcommands' included."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found += [flag for sub in action.choices.values() for flag in _write_flags(sub)]
        elif "--write" in action.option_strings:
            found.append(action)
    return found


@pytest.mark.parametrize(
    "module",
    sorted(
        ".".join(path.relative_to(README.parent).with_suffix("").parts)
        for path in BENCHMARKS.rglob("*.py")
        if "write_section(" in path.read_text(encoding="utf-8") and path.name != "_common.py"
    ),
)
def test_a_benchmark_writes_the_docs_only_with_write(module: str) -> None:
    flags = _write_flags(importlib.import_module(module).parser())
    assert flags, f"{module} writes a docs section without a --write flag"
    assert all(flag.default in (False, None) for flag in flags), f"{module} writes the docs by default"


def test_a_benchmark_never_adds_a_section(tmp_path: Path) -> None:
    from benchmarks._common import write_section

    page = tmp_path / "page.md"
    page.write_text("# Page\n\n<!-- mine: start -->\nold\n<!-- mine: end -->\n\nthe rest\n", encoding="utf-8")
    write_section("mine", "new", page)
    assert page.read_text(encoding="utf-8") == "# Page\n\n<!-- mine: start -->\nnew\n<!-- mine: end -->\n\nthe rest\n"
    with pytest.raises(SystemExit, match="no <!-- other: start -->"):
        write_section("other", "added", page)
    assert "added" not in page.read_text(encoding="utf-8")
