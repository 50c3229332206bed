"""Benchmark scripts (run them from the repository root)."""
