"""The index: stored fingerprints, found by their near neighbours, checked and stored atomically.

`base.Index` is the interface, `rule` the duplicate rule every backend applies, `factory`
opens a backend by URL: `sql` (SQLite, PostgreSQL), `redis`, `memory`.
"""
