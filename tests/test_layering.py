"""The package's layering, read from its source: no import cycles, Scrapy only in the Scrapy glue,
and the terminal (click, rich) only in the command line, which the library never imports: archive
reading and runs (archives/, runs/) are library code the commands call."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "simhash_index"


def imports() -> dict[str, set[str]]:
    """module -> the package's modules it imports (relative imports, TYPE_CHECKING ones too)."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["simhash_index", *path.relative_to(PACKAGE).with_suffix("").parts]
        package = parts[:-1]  # what a relative import starts from, for a package's __init__ too
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
                targets |= {f"{base}.{alias.name}" for alias in node.names} if node.module is None else {base}
        found[".".join(parts).removesuffix(".__init__")] = targets
    return {name: {t for t in targets if t in found and t != name} for name, targets in found.items()}


def test_no_module_imports_one_that_imports_it() -> None:
    graph = imports()
    cycles = []

    def visit(module: str, path: list[str], done: set[str]) -> None:
        for target in sorted(graph[module]):
            if target in path:
                cycles.append(path[path.index(target) :])
            elif target not in done:
                done.add(target)
                visit(target, [*path, target], done)

    for module in sorted(graph):
        visit(module, [module], {module})
    assert cycles == []


def importers_of(*packages: str) -> set[str]:
    """The package's first-level modules and subpackages that import any of these packages."""
    importers = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            if any(name.split(".")[0] in packages for name in names):
                importers.add(path.relative_to(PACKAGE).parts[0])
    return importers


def test_only_the_scrapy_glue_imports_scrapy() -> None:
    assert importers_of("scrapy", "twisted") <= {"scrapy"}


def test_only_the_command_line_imports_click_and_nothing_imports_it() -> None:
    assert importers_of("click", "rich") == {"cli"}
    command_line = ("simhash_index.cli", "simhash_index.console")  # console: the script that loads the CLI
    library = {module: targets for module, targets in imports().items() if not module.startswith(command_line)}
    assert {module for module, targets in library.items() if any(t.startswith(command_line) for t in targets)} == set()
    assert {"simhash_index.archives.records", "simhash_index.runs.run"} <= set(library)  # library code, not the CLI's


def test_only_the_dialects_module_tells_the_sql_databases_apart() -> None:
    """The SQL backend asks its dialect object (index/sql/dialects.py) what differs between SQLite
    and PostgreSQL; only SQLAlchemy's own setup (engine.py) and column types (schema.py) compare a
    dialect's or a URL's name."""
    compared = re.compile(r"""dialect\.name\s*[!=]=|[!=]=\s*["'](sqlite|postgresql)["']|get_backend_name\(\)\s*[!=]=""")
    sql = PACKAGE / "index" / "sql"
    comparing = {path.name for path in sql.glob("*.py") if compared.search(path.read_text(encoding="utf-8"))}
    assert comparing <= {"dialects.py", "engine.py", "schema.py"}
