"""Every module of benchmarks/ imports: a module moved or renamed is caught here, not by the next
person who runs a benchmark."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
MODULES = sorted(
    ".".join(path.relative_to(BENCHMARKS.parent).with_suffix("").parts) for path in BENCHMARKS.rglob("*.py")
)


@pytest.mark.parametrize("name", MODULES)
def test_the_benchmark_module_imports(name: str) -> None:
    assert importlib.import_module(name).__name__ == name
