"""The index: stored fingerprints, found by their near neighbours, checked and stored atomically.

`base.Index` is the interface, `rule` the duplicate rule every backend applies, `factory`
opens a backend by URL: `sql` (SQLite, PostgreSQL), `redis`, `memory`. `dry_run` answers as
an index would without writing to it; `probes` says which block values a lookup reads.
"""
