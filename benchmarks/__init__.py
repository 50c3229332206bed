"""The benchmark suite: `python -m benchmarks.NAME` from the repository root (docs/benchmarks.md lists them)."""
