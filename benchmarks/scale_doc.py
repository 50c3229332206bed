"""docs/scale.md: the scale benchmark's method, its tables, and what they show."""

from __future__ import annotations

import argparse

from benchmarks._common import REPO, command, page_key
from benchmarks.scale_runs import Case
from benchmarks.scale_skew import crowds
from benchmarks.scale_tables import checks_line, eval_lines, ordered, results_table, skew_table, storage_table, verdicts

BYTES = """Per page, SQLite stores the row (rowid, the key as text, key hash, fingerprint, `exact_only`
(0 bytes: SQLite's record format keeps the values 0 and 1 in the type header alone), a NULL text
hash and sketch, `stored_at` as a 4-byte integer of seconds) and one entry in each of three indexes:
the unique key hash, and the two half expression indexes (a 4-byte key and the rowid each). The
partial text-hash index (`WHERE text_hash IS NOT NULL`) is empty here: these pages have no text hash.
The session builds every index once, sorted, after loading the rows, so their pages are full.
PostgreSQL adds a 24-byte tuple header and a 4-byte line pointer per row, a BIGINT id with its own
primary-key index (filled as rows arrive, in id order), and 8-byte aligned index entries. Pages from a crawl also carry their 256-byte MinHash sketch and an
8-byte text hash with an entry in the text-hash index: on SQLite about 285 bytes more than these (269
in the row, 17 in the text-hash index; measured once at 100,000 pages, 403 bytes a page against 117)."""

SKEW_INTRO = """Real fingerprints are not uniform: near-duplicates and pages of one template share bits, so a
lookup on one 16-bit block (a Manku-style block table) reads whole clusters. The index's lookups
take each 32-bit half equal to the query's or one bit off. A crowd sharing one 16-bit block value
is bounded: of the 33 values looked up for the half holding that block, only the 17 that leave the
block alone (the exact half, and its 16 one-bit changes in the other block of that half) can reach
the crowd, and each reaches 1/65,536 of it, as the crowd's other 16 bits of that half are random:
about 17/65,536 of the crowd per query. A crowd sharing block1 + block2 (bits 16-47, straddling the halves) is bounded the
same way in each half: about 34/65,536 of it. A crowd sharing a whole 32-bit half is read whole by
that half's lookup: this is the limit of the design, and the eval corpus's largest half bucket below
says how large such crowds are in real pages."""


def method(args: argparse.Namespace, cases: list[Case], parent_rss: float) -> str:
    prefix_only = [
        f"{c.n:,}"
        for c in ordered(cases)
        if c.backend == "postgres" and c.figures["fetched"] > 2 * c.figures["halves"] + 1
    ]
    planner = (
        ""
        if not prefix_only
        else (
            f" At N = {', '.join(prefix_only)}, PostgreSQL fetched more than twice the rows the lookups returned: "
            "its plan read table rows that a filter or recheck then dropped."
        )
    )
    return f"""N random 64-bit fingerprints (keys like `{page_key(0)}`, no text hash, no sketch) are bulk-loaded
with `index.insertion_session(batch_size={args.batch_size:,})`, each (backend, N) in a fresh process whose
peak RSS (`getrusage` maxrss) is that load's alone; PostgreSQL's own memory is not in it. SQLite lives in a
temporary directory, PostgreSQL in a schema of its own (`VACUUM ANALYZE` after the load, as autovacuum
would do). The fingerprints come from a seeded generator (`uniform(N, seed)`), so this process can
regenerate them without reading them back.

Rows read, counted first, while each index holds exactly its N pages: for {args.candidate_queries:,} random
queries, the rows `sql.CANDIDATES` returns. It is the index's lookup: two expression indexes hold the
fingerprint's 32-bit halves (`(fingerprint & 4294967295) - 2147483648` and `fingerprint >> 32`), and a
query takes each half equal to its own or one bit off: 33 values a half, 66 index probes, complete up to
distance 3 (two halves each 2 or more bits off are 4 or more bits apart); theory 66N/2^32 rows. Beside
them, the rows a Manku-style table of four 16-bit blocks would read (pages sharing any one block value
with the query; theory 4N/65536): no such table exists in the schema, so they are counted in numpy from
the fingerprints themselves (one `np.bincount` per block over the regenerated load, then per query the
sum of its four blocks' counts). Table rows the database fetched: for {args.explain_queries:,} of the random
queries, the rows it read from the table to answer the half lookups (SQLite: its plan searches each
half's expression index on the whole key, `<expr>=?`, and every entry found is a row returned, so it
fetches what it returns; PostgreSQL: `EXPLAIN (ANALYZE, FORMAT JSON)`, the rows of its scan nodes,
rows its filters and rechecks dropped included).{planner}

Then, over all indexes in interleaved rounds (a shared machine's load hits all alike): `query()` on
{args.queries:,} random fingerprints and {max(1, args.queries // 4):,} planted ones (a stored fingerprint with 1 to
3 bits flipped) per round, {args.rounds} rounds, medians. SQLite runs the half lookups, then reads the keys
and sketches of the pages within distance 3; PostgreSQL, for which a round trip costs more than the
lookup, runs one statement (`sql.NEAR_POSTGRES`: both halves' probes OR'ed into one bitmap, the distance
tested on the server, the matches' keys and sketches returned). Beside PostgreSQL's queries, in the same
rounds, as many bare `SELECT 1` statements on the pooled connection `query()` reads on: the round trip
under every PostgreSQL query; `check_and_add()` {args.checks:,} times per index
in {args.check_rounds} rounds (each call its own transaction and commit; one in ten a near-duplicate of a
stored page), median of the rounds. Bytes on disk: SQLite's file after a WAL checkpoint, PostgreSQL's
`pg_total_relation_size` of the tables, over N. A fresh process starts at
{min(c.loaded["start_rss"] for c in cases):.0f} MB RSS; this process, which then queried every index, peaked at
{parent_rss:.0f} MB."""


def synthetic(args: argparse.Namespace, skew: list[dict]) -> str:
    if not skew:
        return "Skipped (--no-skew)."
    block, half, straddle = crowds(args)
    expected = (
        f"From the crowd alone a query should read about 17/65,536 x {block.pages:,} = {17 * block.pages / 65536:.0f} "
        f"rows in the block0 crowd, all {half.pages:,} in the low-half crowd, and 34/65,536 x {straddle.pages:,} = "
        f"{34 * straddle.pages / 65536:.0f} in the bits 16-47 crowd (plus its 9 planted neighbours, and 66/2^32 of "
        "the rest)."
    )
    return (
        f"{args.skew_n:,} uniform pages, plus {block.pages:,} pages {block.label}, {half.pages:,} {half.label} and "
        f"{straddle.pages:,} {straddle.label}, random elsewhere, loaded into each backend (PostgreSQL: then VACUUM "
        "ANALYZE). Each query lies in its crowd and has 9 planted neighbours 1 to 3 bits away (flips outside the "
        "shared bits, anywhere, and one inside them, which leaves the crowd); `query()`'s answer is compared with a "
        "brute-force scan (numpy) of every stored fingerprint. Cells are mean / max per query; a row counts once per "
        "half lookup that returns it. The block table's rows are counted in numpy from the same fingerprints. "
        "SQL rows = numpy count: queries for which the rows the SQL returned equal numpy's count of the stored "
        f"pages with a half equal to the query's or one bit off. {expected}\n\n" + skew_table(skew)
    )


def write_doc(
    args: argparse.Namespace,
    cases: list[Case],
    evaluated: dict | None,
    skew: list[dict],
    when: tuple[str, str, str],
    parent_rss: float,
) -> None:
    began, load_before, load_after = when
    text = f"""# Scale

Written by `benchmarks/scale.py`: `{command()}`, {began}.
Machine: {load_before} (at the start); load average at the end: {load_after.split("load average ")[1].split(";")[0]}.
The machine is shared: figures from one run are comparable with each other, less so with another run's.

{method(args, cases, parent_rss)}

{results_table(cases)}

{checks_line(cases)}

![queries/s, check_and_add/s, rows read per query, bytes per page, bulk load rate and peak RSS against N](scale.png)

## Targets

{chr(10).join("- " + line for line in verdicts(cases))}

## Where the bytes go

{storage_table(cases)}

{BYTES}

## Skewed buckets

{SKEW_INTRO}

### The eval corpus

{eval_lines(evaluated, args.eval_dir)}

### Synthetic crowds

{synthetic(args, skew)}
"""
    (REPO / "docs" / "scale.md").write_text(text)
