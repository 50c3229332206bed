"""The benchmark suite: `python -m benchmarks.NAME` from the repository root (benchmarks/README.md lists them)."""
