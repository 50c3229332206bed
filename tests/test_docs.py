"""Every command, and every option, has help text; every command is in the README's CLI section."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import click
import pytest

from simhash_index.cli.commands import cli

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
