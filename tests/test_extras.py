"""PostgreSQL and Redis drivers are extras: without one, a clear line naming the extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

CASES = [
    ("psycopg", "postgresql://user@127.0.0.1:1/nowhere", "pip install '/path/to/simhash-index[postgres]'"),
    ("redis", "redis://127.0.0.1:1/0", "pip install '/path/to/simhash-index[redis]'"),
]


def without(module: str, code: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter where importing `module` fails, as when it is not installed."""
    hidden = f"import sys; sys.modules[{module!r}] = None\n"
    return subprocess.run([sys.executable, "-c", hidden + code], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("module", "url", "extra"), CASES)
def test_the_library_names_the_missing_extra(module: str, url: str, extra: str) -> None:
    result = without(
        module,
        "from simhash_index import open_index\n"
        "from simhash_index.errors import MissingDependencyError\n"
        "try:\n"
        f"    open_index({url!r})\n"
        "except MissingDependencyError as exc:\n"
        "    assert isinstance(exc, ImportError)\n"
        "    print(exc)\n",
    )
    assert result.returncode == 0, result.stderr
    assert extra in result.stdout


@pytest.mark.parametrize(("module", "url", "extra"), CASES)
def test_the_command_line_says_it_in_one_line(module: str, url: str, extra: str) -> None:
    result = without(
        module,
        "import sys\nfrom simhash_index.cli import main\n"
        f"sys.argv = ['simhash-index', 'stats', '--db', {url!r}]\nmain()",
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    assert extra in result.stderr
