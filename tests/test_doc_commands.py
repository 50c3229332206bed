"""Every `simhash-index ...` command the README and docs/ show parses with the real command line, and
the README's table of commands runs, as written, against an index built here (as sqlite-utils
tests its documentation): a renamed command or option, or a changed output, fails the suite."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import click
import pytest
from commands import run
from sites import english_article, page

from simhash_index.cli import cli

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCUMENTS = [README, *sorted((REPO / "docs").glob("*.md"))]

_FENCE = re.compile(r"^[ \t]*```(\w*)\n(.*?)^[ \t]*```$", re.MULTILINE | re.DOTALL)
_COMMAND = re.compile(r"(?:^|(?<=[\s/]))simhash-index\s+(.*)")
_SHELL = re.compile(r"\s(?:#|\||>>?|&&|;)(?:\s|$)")  # where the shell takes over from the command


def command_line(code: str) -> list[str] | None:
    """The arguments of the `simhash-index ...` in a line of code, up to a comment or the shell's
    own operators; None when the line runs no simhash-index command or names one by a placeholder
    (`simhash-index COMMAND --help`)."""
    found = _COMMAND.search(code)
    if found is None:
        return None
    rest = found.group(1)
    end = _SHELL.search(" " + rest)
    words = shlex.split(rest[: end.start() - 1] if end else rest)
    name = command_name(words)
    if name is None or not name.islower():  # no command, or a placeholder (COMMAND)
        return None
    return words


def command_name(words: list[str]) -> str | None:
    """The command among the arguments: the first word that is no option (nor --db's URL)."""
    for before, word in zip(["", *words], words):
        if not word.startswith("-") and before != "--db":
            return word
    return None


def documented_commands() -> list[tuple[str, int, list[str]]]:
    """(document, line, arguments) of each simhash-index command in a shell block's lines or an
    inline code span."""
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for block in _FENCE.finditer(text):
            if block.group(1) not in ("", "sh", "bash", "console"):
                continue
            first = text.count("\n", 0, block.start()) + 2
            for offset, line in enumerate(block.group(2).splitlines()):
                if (words := command_line(line)) is not None:
                    found.append((document.name, first + offset, words))
        prose = _FENCE.sub(lambda block: "\n" * block.group(0).count("\n"), text)  # keeps line numbers
        for span in re.finditer(r"`([^`]+)`", prose):
            if (words := command_line(" ".join(span.group(1).split()))) is not None:
                found.append((document.name, prose.count("\n", 0, span.start()) + 1, words))
    return found


def parse(words: list[str], folder: Path) -> click.Context | click.Command:
    """`simhash-index WORDS` parsed as the command line parses it, arguments converted and checked
    (a FILE must exist: each word that could name one is made an empty file in `folder`). A command
    named alone (`simhash-index import` in a sentence) is a mention: it need only exist."""
    if len(words) == 1:
        if words[0] not in cli.commands:
            raise click.UsageError(f"no command {words[0]!r}")
        return cli.commands[words[0]]
    for word in words:
        if not word.startswith("-") and "/" not in word and not (folder / word).exists():
            (folder / word).touch()
    group = cli.make_context("simhash-index", list(words), resilient_parsing=False)
    rest = list(group.args)
    name = words[len(words) - len(rest) - 1]
    command = cli.get_command(group, name)
    if command is None:
        raise click.UsageError(f"no command {name!r}")
    return command.make_context(name, rest, parent=group, resilient_parsing=False)


COMMANDS = documented_commands()


def test_the_docs_show_commands() -> None:
    """The collection itself works: the README's table and docs/cli.md's examples are found."""
    documents = {document for document, _, _ in COMMANDS}
    assert {"README.md", "cli.md"} <= documents, documents
    assert {command_name(words) for _, _, words in COMMANDS} >= set(cli.commands)


@pytest.mark.parametrize(("document", "line", "words"), COMMANDS, ids=[f"{d}:{n}" for d, n, _ in COMMANDS])
def test_documented_command_parses(
    document: str, line: int, words: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    try:
        parse(words, tmp_path)
    except click.ClickException as error:
        pytest.fail(f"{document}:{line}: `simhash-index {shlex.join(words)}` does not parse: {error.format_message()}")


def test_a_renamed_option_or_command_fails_to_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the test above catches: a misspelt option, command or choice, a missing argument."""
    monkeypatch.chdir(tmp_path)
    for broken in (
        "duplicates --hosts example.com",
        "duplicate --host example.com",
        "import corpus.jsonl --layout quarters",
        "compare a.html",
        "query --max-distance 9",
    ):
        with pytest.raises(click.UsageError):
            parse(shlex.split(broken), tmp_path)
    assert command_line("simhash-index COMMAND --help") is None
    assert command_line("simhash-index filter crawl.warc.gz - | gzip -t") == ["filter", "crawl.warc.gz", "-"]


# -- the README's table of commands, run for real -------------------------------------------

_TABLE_ROW = re.compile(r"^\| `simhash-index ([^`]+)` \|", re.MULTILINE)
# What each command's output must hold, on the index the test builds (the dropped page is a?utm=1).
EXPECTED = {
    "stats": '"documents": 2',
    "duplicates": '"duplicate_of": "https://example.com/a"',
    "clusters": "https://example.com/a?utm=1",
    "query": "no other stored page within",  # a is alone: its copy was dropped
    "explain": "dropped: the same normalised text as https://example.com/a",
    "compare": '"distance": ',
    "fingerprint": '"file": "page.html"',
    "report": "wrote report.html",
    "import": "kept ",
    "filter": "wrote ",
    "forget": "forgot 1 pages stored",
    "prune": "forgot ",
    "reset": "forgot ",
}


def readme_table() -> list[list[str]]:
    """The arguments of each command in the README's table, in its order."""
    section = README.read_text(encoding="utf-8").split("\n## The command line\n")[1].split("\n## ")[0]
    return [shlex.split(row) for row in _TABLE_ROW.findall(section)]


def build_index(folder: Path) -> None:
    """The files the README's examples name, and an index in simhash.db made from corpus.jsonl: a
    page, an exact copy of it under another URL, and an unrelated page."""
    from archives import write_archive

    story, other = page("Story", english_article(11)), page("Other", english_article(12))
    pages = [("https://example.com/a", story), ("https://example.com/a?utm=1", story), ("https://example.com/b", other)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"url": u, "html": h}) + "\n" for u, h in pages))
    for name, html in (("a.html", story), ("b.html", other), ("page.html", story)):
        (folder / name).write_text(html, encoding="utf-8")
    write_archive(folder / "crawl.warc.gz", compress=True)
    done = run("import", "corpus.jsonl", "--workers", "0")
    assert done.exit_code == 0, done.output


def test_the_readme_table_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the index is the default, sqlite:///simhash.db in this folder
    monkeypatch.delenv("SIMHASH_DATABASE_URL", raising=False)
    build_index(tmp_path)
    rows = readme_table()
    assert [words[0] for words in rows if words[0] in EXPECTED] == [words[0] for words in rows], rows
    for words in rows:
        done = run(*words, input="y\n")  # prune and reset ask first
        shown = f"`simhash-index {shlex.join(words)}`: exit status {done.exit_code}\n{done.output}"
        assert done.exit_code == 0, shown
        assert EXPECTED[words[0]] in done.output, shown
    assert (tmp_path / "report.html").stat().st_size > 0 and (tmp_path / "deduped.warc.gz").stat().st_size > 0


def test_query_names_the_radius_it_searched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SIMHASH_DATABASE_URL", raising=False)
    build_index(tmp_path)
    done = run("query", "--url", "https://example.com/a")
    assert "no other stored page within 8 bits of https://example.com/a" in done.output, done.output
