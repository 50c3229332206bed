"""Every default of the library, the pipeline and the command line, in one place."""

from __future__ import annotations

DATABASE_URL = "sqlite:///simhash.db"
DATABASE_URL_ENV = "SIMHASH_DATABASE_URL"  # read by the command line and the crawl

# The largest search radius any index answers (the blocks layout's probes, index/probes.py, and
# the writers' in-memory index; the halves layout answers up to 5).
MAX_SUPPORTED_DISTANCE = 8
# The search radius, chosen by accuracy: at 8 strict precision stays 1.0 in every language
# measured and recall is the highest of 6, 7 and 8 (docs/accuracy.md, "Radius 6, 7 or 8").
MAX_DISTANCE = 8
# Estimated Jaccard similarity a simhash candidate's sketch must reach to be a duplicate;
# measured on real pages (docs/accuracy.md).
MIN_SIMILARITY = 0.88
# A similar page that may add this many words to the stored page is kept, not dropped as its
# duplicate; a short page, a share of its words (docs/accuracy.md, "What a page adds").
ADDED_WORDS = 25
ADDED_SHARE = 0.1

LAYOUT = "blocks"  # the SQL table's lookup columns: "blocks" or "halves"
BLOCK_ASSIGNMENT = "contiguous"  # bits 0-15 in block 0, ...; or "interleaved" (bit i in block i mod 4)

BATCH_SIZE = 64  # pages decided per writer transaction, at most (the pipeline, check_and_add_many)
MAX_BATCH_SIZE = 10_000  # SIMHASH_BATCH_SIZE, at most: the items of a batch wait for its last one
BULK_BATCH_SIZE = 100_000  # rows per transaction of a bulk load (add_many)
WORKER_TIMEOUT_S = 120.0  # a page analysed longer than this is given up and its worker replaced

CONNECT_TIMEOUT_S = 10.0  # reaching the database server
STATEMENT_TIMEOUT_S = 60.0  # one statement, or waiting for a lock (SQLite's busy timeout)

REDIS_PREFIX = "simhash:"
