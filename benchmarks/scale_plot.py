"""docs/scale.png: the scale benchmark's figures against N, one panel each, SQLite and PostgreSQL side by side."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.scale_lookups import block_theory, half_theory
from benchmarks.scale_runs import Case
from benchmarks.scale_tables import TARGET_BYTES, TARGET_LOAD

PANELS = [
    (
        "queries/s (solid: random, dashed: planted,\ndotted: PostgreSQL's bare SELECT 1 round trip)",
        [("random", "-o"), ("planted", "--s"), ("round_trip", ":^")],
    ),
    ("check_and_add/s (a commit each)", [("checks", "-o")]),
    (
        "rows per random query: half lookups (solid),\nblock table (dashed), DB fetched (dotted)",
        [("halves", "-o"), ("block_table", "--s"), ("fetched", ":^")],
    ),
    ("bytes on disk per page", [("bytes", "-o")]),
    ("bulk load, fingerprints/s", [("load", "-o")]),
    ("peak RSS of the loading process, MB", [("rss", "-o")]),
]
DERIVED = {
    "bytes": lambda c: c.loaded["disk"] / c.n,
    "load": lambda c: c.n / c.loaded["seconds"],
    "rss": lambda c: c.loaded["rss"],
}
COLORS = {"sqlite": "tab:blue", "postgres": "tab:orange"}


def plot(cases: list[Case], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    for axis, (title, lines) in zip(axes.flat, PANELS):
        for backend, color in COLORS.items():
            mine = sorted((c for c in cases if c.backend == backend), key=lambda c: c.n)
            label = backend
            for figure_name, style in lines:
                get = DERIVED.get(figure_name) or (lambda c, name=figure_name: c.figures.get(name, 0))
                points = [(c.n, get(c)) for c in mine if get(c) > 0]  # log scale: nothing read has no point
                if points:
                    axis.plot(*zip(*points), style, color=color, label=label)
                    label = None
        reference_lines(axis, title, np.array(sorted({c.n for c in cases}), dtype=float))
        axis.set(xscale="log", yscale="log", title=title, xlabel="stored pages N")
        for ax in (axis.xaxis, axis.yaxis):
            ax.set_major_formatter(compact_formatter())
            ax.set_minor_formatter(compact_formatter(only_decades=False))
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8, loc="upper left" if title.startswith("rows per") else "best")
    figure.suptitle("simhash_index at scale: SQLite and PostgreSQL, random 64-bit fingerprints")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def reference_lines(axis: object, title: str, sizes: np.ndarray) -> None:
    """Theory and targets for the panels that have them."""
    if title.startswith("rows per"):
        axis.plot(sizes, half_theory(sizes), "-", color="black", linewidth=0.8, label="theory, half lookups: 66N/2^32")
        axis.plot(sizes, block_theory(sizes), "-.", color="gray", label="theory, block table: 4N/65536")
    if title.startswith("bytes"):
        axis.axhline(TARGET_BYTES, color="red", linestyle=":", label=f"target {TARGET_BYTES} (SQLite, 10M)")
    if title.startswith("bulk"):
        axis.axhline(TARGET_LOAD, color="red", linestyle=":", label=f"target {TARGET_LOAD:,}/s (SQLite)")


def _compact(value: float) -> str:
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def compact_formatter(only_decades: bool = True) -> object:
    """Log-axis tick labels where matplotlib would put them, as 20k rather than 2x10^4 (a matplotlib Formatter)."""
    from matplotlib.ticker import LogFormatterSciNotation

    class Compact(LogFormatterSciNotation):
        def __call__(self, x: float, pos: int | None = None) -> str:
            return _compact(x) if super().__call__(x, pos) else ""

    return Compact(labelOnlyBase=only_decades)
