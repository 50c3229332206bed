"""The evidence of each decision, on every backend: `duplicates` with similarities and
`--url`, `query` and `compare` on dropped pages, and `explain`.

Pages carry real sketches; expected similarities are computed from the sketches put in.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone

import pytest
from commands import ok, run
from samples import KEPT, NEAR_TEXT, OTHER, TEXT, WORDS, signature

from simhash_index import SimhashIndex
from simhash_index.fingerprinting.fingerprinter import Signature
from simhash_index.fingerprinting.simhash import to_hex
from simhash_index.fingerprinting.sketch import estimate_jaccard
from simhash_index.index.explain import explain

NEAR = "https://example.com/near"  # dropped: near, verified
EXACT = "https://example.com/exact"  # dropped: the same text
TWIN = "https://example.com/twin"  # kept: KEPT's simhash, another text's sketch
SHORT = "https://example.com/short"  # kept: exact matches only


def twin() -> Signature:
    """KEPT's fingerprint with another text's sketch: a candidate at distance 0, not similar."""
    kept, other = signature(TEXT), signature(OTHER)
    return Signature(kept.simhash, other.text_hash, other.sketch)


RADIUS = 6  # the crawl's search radius, logged with each drop


@pytest.fixture
def evidence(db_url: str) -> str:
    with SimhashIndex(db_url, max_distance=RADIUS) as index:
        assert index.check_and_add(KEPT, signature(TEXT)) is None
        assert index.check_and_add(NEAR, signature(NEAR_TEXT)) is not None
        assert index.check_and_add(EXACT, signature(TEXT)) is not None
        assert index.check_and_add(TWIN, twin()) is None
        assert index.check_and_add(SHORT, signature("A short page.")) is None
    return db_url


def near_similarity() -> float:
    return round(estimate_jaccard(signature(NEAR_TEXT).sketch, signature(TEXT).sketch), 3)


def twin_similarity() -> float:
    return round(estimate_jaccard(signature(OTHER).sketch, signature(TEXT).sketch), 3)


def test_duplicates_show_the_similarity_and_find_one_url(evidence: str) -> None:
    rows = [json.loads(line) for line in ok("duplicates", "--db", evidence).splitlines()]
    assert [(r["url"], r["duplicate_of"], r["similarity"], r["exact"], r["radius"]) for r in rows] == [
        (NEAR, KEPT, near_similarity(), False, RADIUS),
        (EXACT, KEPT, None, True, RADIUS),
    ]
    assert 0.88 <= near_similarity() < 1.0
    one = json.loads(ok("duplicates", "--db", evidence, "--url", NEAR, "--format", "json"))
    assert one == rows[:1]
    result = run("duplicates", "--db", evidence, "--url", KEPT)
    assert result.exit_code == 1 and "is not logged as a duplicate" in result.stderr


def test_duplicates_filter_near_from_exact_and_clusters_show_the_similarity(evidence: str) -> None:
    def urls(*options: str) -> list[str]:
        return [json.loads(line)["url"] for line in ok("duplicates", "--db", evidence, *options).splitlines()]

    assert (urls("--near"), urls("--exact"), urls()) == ([NEAR], [EXACT], [NEAR, EXACT])
    assert urls("--exact", "--url", NEAR) == []
    assert run("duplicates", "--db", evidence, "--near", "--exact").exit_code == 2
    (cluster,) = json.loads(ok("clusters", "--db", evidence, "--format", "json"))
    shown = [(d["url"], d["similarity"], d["exact"]) for d in cluster["duplicates"]]
    assert (cluster["url"], shown) == (KEPT, [(NEAR, near_similarity(), False), (EXACT, None, True)])
    csv_rows = ok("clusters", "--db", evidence, "--format", "csv").splitlines()
    assert csv_rows[0].split(",")[:5] == ["url", "count", "duplicate", "distance", "similarity"]
    assert csv_rows[1].split(",")[4] == str(near_similarity())


def test_query_and_compare_show_the_similarity(evidence: str) -> None:
    near = json.loads(ok("query", "--db", evidence, "--url", KEPT, "--format", "json"))
    assert [(m["url"], m["distance"], m["similarity"]) for m in near] == [(TWIN, 0, twin_similarity())]
    assert twin_similarity() < 0.88  # why TWIN was kept at distance 0
    # a dropped page: its similarity to the page it duplicated is the logged one
    dropped = json.loads(ok("query", "--db", evidence, "--url", NEAR, "--format", "json"))
    assert (dropped[0]["url"], dropped[0]["similarity"]) == (KEPT, near_similarity())
    compared = json.loads(ok("compare", "--db", evidence, NEAR, KEPT, "--format", "json"))[0]
    distance = (signature(NEAR_TEXT).simhash ^ signature(TEXT).simhash).bit_count()
    assert (compared["a_simhash"], compared["distance"], compared["similarity"]) == (
        to_hex(signature(NEAR_TEXT).simhash),
        distance,
        near_similarity(),
    )
    compared = json.loads(ok("compare", "--db", evidence, KEPT, TWIN, "--format", "json"))[0]
    assert (compared["distance"], compared["similarity"]) == (0, twin_similarity())


def explained(db: str, url: str) -> dict:
    return json.loads(ok("explain", "--db", db, url, "--format", "json"))


def test_explain_a_dropped_page(evidence: str) -> None:
    near = explained(evidence, NEAR)
    distance = (signature(NEAR_TEXT).simhash ^ signature(TEXT).simhash).bit_count()
    assert {k: near[k] for k in ("decision", "rule", "duplicate_of", "distance", "similarity", "radius")} == {
        "decision": "dropped",
        "rule": "near",
        "duplicate_of": KEPT,
        "distance": distance,
        "similarity": near_similarity(),
        "radius": RADIUS,
    }
    assert near["simhash"] == to_hex(signature(NEAR_TEXT).simhash)
    assert KEPT in near["reasons"][0] and "near, verified" in near["reasons"][0]
    assert f"checked at radius {RADIUS}" in near["reasons"][0]
    exact = explained(evidence, EXACT)
    assert (exact["decision"], exact["rule"], exact["duplicate_of"], exact["similarity"]) == (
        "dropped",
        "exact",
        KEPT,
        None,
    )


def test_explain_a_kept_page(evidence: str) -> None:
    kept = explained(evidence, KEPT)
    assert (kept["decision"], kept["candidates"], kept["short_text"]) == ("kept", [], False)  # the oldest
    twin_page = explained(evidence, TWIN)
    assert twin_page["decision"] == "kept"
    assert twin_page["candidates"] == [
        {
            "url": KEPT,
            "simhash": to_hex(signature(TEXT).simhash),
            "distance": 0,
            "similarity": twin_similarity(),
            "duplicate": False,
            "reason": "below min_similarity",
            "diff": None,  # the index keeps no texts
        }
    ]
    # under a lower threshold, the same evidence would have made it a duplicate
    lower = json.loads(
        ok("explain", "--db", evidence, TWIN, "--format", "json", "--min-similarity", str(twin_similarity()))
    )
    assert lower["candidates"][0]["duplicate"] is True
    short = explained(evidence, SHORT)
    assert (short["decision"], short["short_text"]) == ("kept", True)
    assert "too short" in short["reasons"][0]


def test_explain_as_text_and_unknown_pages(evidence: str) -> None:
    text = ok("explain", "--db", evidence, TWIN, "--format", "text")
    lines = text.splitlines()
    assert f"url             {TWIN}" in lines and "decision        kept" in lines
    assert any(line.startswith(KEPT) and "below min_similarity" in line for line in lines)
    assert f"{twin_similarity()}" in text
    result = run("explain", "--db", evidence, "https://example.com/never")
    assert result.exit_code == 1 and "neither stored nor logged" in result.stderr


OLD, NEW, COPY, CUT = (f"https://example.com/{name}" for name in ("old", "new", "copy", "cut"))


def dated(text: str, month: int) -> Signature:
    """The signature of a text last modified on the 1st of that month of 2024."""
    return replace(signature(text), modified=datetime(2024, month, 1, tzinfo=timezone.utc))


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "redis", "memory"])
def test_explain_a_kept_page_lists_the_pages_dropped_against_it_and_those_it_superseded(
    request: pytest.FixtureRequest, backend: str
) -> None:
    """Issue 51: it said only "kept: no older stored page within 6 bits"."""
    url = "memory://" if backend == "memory" else request.getfixturevalue(f"{backend}_url")
    with SimhashIndex(url, max_distance=RADIUS, prefer="newest") as index:
        assert index.check_and_add(OLD, dated(TEXT, 1)) is None
        assert index.check_and_add(NEW, dated(TEXT, 6)).superseded == "newer"
        assert index.check_and_add(COPY, dated(TEXT, 2)).key == NEW
        assert index.check_and_add(CUT, dated(" ".join(WORDS[:-3]), 2)).key == NEW
        explained_here = explain(index, NEW)
    assert [d.key for d in explained_here.dropped] == [COPY, CUT]
    assert [(d.key, d.superseded) for d in explained_here.superseded] == [(OLD, "newer")]
    reasons = explained_here.reasons()
    assert reasons[0].startswith("kept: ") and "dropped as its duplicates: 2 page(s)" in reasons
    assert f"  {COPY}: the same normalised text" in reasons and any(r.startswith(f"  {OLD}: ") for r in reasons)
    if backend == "memory":
        return
    shown = explained(url, NEW)
    assert [(d["url"], d["rule"]) for d in shown["duplicates"]] == [(COPY, "exact"), (CUT, "near")]
    assert shown["duplicates"][1]["similarity"] >= 0.88
    assert [(d["url"], d["reason"], d["rule"]) for d in shown["superseded"]] == [(OLD, "newer", "exact")]
    lines = ok("explain", "--db", url, NEW, "--format", "text").splitlines()
    listed = lines.index("dropped as its duplicates:")
    assert lines[listed + 3].startswith(COPY) and lines[listed + 4].startswith(CUT)  # below the header
    assert lines[lines.index("superseded by it:") + 3].startswith(OLD)
    assert explained(url, COPY)["duplicate_of"] == NEW
