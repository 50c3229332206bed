"""Crawl a corpus in both orders and score what the duplicate rule drops by what it would lose.

    python -m benchmarks.versioned_score --corpus /work/corpora/versioned [--orders both]
                                          [--set NAME=VALUE ...] [--keep DIR] [--json FILE]
    python -m benchmarks.versioned_score --corpus ../shared/eval --orders both
    python -m benchmarks.versioned_score --corpus DIR --index sqlite:///crawl.db --feed kept.jsonl
                                          [--order newest]   # score a crawl made elsewhere

Each order is a `scrapy crawl site` of the corpus served on 127.0.0.1 (crawl_eval.py's server
and crawl: the defaults, an SQLite index of its own) with any --set: a versioned corpus
(tools/versioned_corpus.py) has two orders, `newest` (site/index.html: each site's newest
version first) and `oldest` (site-oldest/index.html); another corpus in ../shared/eval's
format has `dfs` (Scrapy's default) and `bfs` (breadth first, crawl_eval.py's settings).
Each crawl is scored, per language, by:

(a) drops that lose text: dropped pages that add >= ADDS words (added_words.py) to the page
    they were dropped in favour of (the duplicates log's key and duplicate_of), each listed;
    issue 48's target: none;
(b) recall of the pages that add nothing: a page is redundant when a page decided before it
    (the index's stored_at / seen_at; within one batch, the corpus's order) is a truth pair of
    it (Jaccard >= 0.9) to which it adds <= NOTHING words; recall = redundant pages dropped /
    redundant pages; target >= 0.95;
(c) score.py's strict precision, precision and recall, and the pair recall of the truth pairs
    (>= 0.9) where neither page adds >= ADDS words: the share of them with a page dropped;
and the order check: of the pairs of versions of one page that were both decided, how many in
the order's direction, in one batch, and against it.

Before any crawl it prints the truth pairs (>= 0.9) that change class (one page adds >= ADDS
words to the other), with examples of what is added; --pairs-only stops there.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from difflib import SequenceMatcher
from itertools import pairwise
from pathlib import Path
from typing import Any, TextIO

from benchmarks.added_words import ADDS, NOTHING, REWORDING, added, units
from benchmarks.crawl_eval import ORDERS as SCHEDULERS
from benchmarks.crawl_eval import crawl, serve
from benchmarks.selectivity import Corpus, load_corpus
from simhash_index import open_index
from simhash_index.fingerprinting.fingerprinter import DEFAULT
from simhash_index.text.tokens import is_cjk_text

VERSIONED = {"newest": "site", "oldest": "site-oldest"}  # order -> the folder it is served from


@dataclass
class Outcome:
    """A crawl as the index recorded it, in corpus paths."""

    kept: set[str]
    drops: list[tuple[str, str, Any]] = field(default_factory=list)  # (dropped, kept instead, log row)
    decided: dict[str, tuple[datetime, int]] = field(default_factory=dict)  # path -> (batch time, place)
    foreign: int = 0  # log rows naming a page outside the corpus (a listing, a placeholder)

    @property
    def dropped(self) -> set[str]:
        return {x for x, _, _ in self.drops} - self.kept

    @property
    def crawled(self) -> set[str]:
        return self.kept | self.dropped


class Scoring:
    """A corpus with what each truth pair adds, and crawls scored against it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.corpus: Corpus = load_corpus(directory)
        self.text = dict(zip(self.corpus.paths, self.corpus.texts))
        self.lang = dict(zip(self.corpus.paths, self.corpus.langs))
        self.resolve = self.corpus.scorer.Resolver(self.corpus.paths)
        self.rows = _jsonl(directory / "pages.jsonl")
        self._normalized: dict[str, str] = {}
        for pair in (*self.corpus.truth, *self.corpus.gray):
            if "a_adds" not in pair:  # a corpus without them (../shared/eval): counted here
                pair["a_adds"], pair["b_adds"] = self.adds(pair["a"], pair["b"])

    def adds(self, a: str, b: str) -> tuple[int, int]:
        """Words a adds to b and b adds to a."""
        result = added(self.normalized(a), self.normalized(b), normalized=True)
        return result.a_adds, result.b_adds

    def normalized(self, path: str) -> str:
        if path not in self._normalized:
            self._normalized[path] = DEFAULT.normalize(self.text[path])
        return self._normalized[path]

    def changed(self) -> list[dict[str, Any]]:
        """Truth pairs (>= 0.9) where one page adds >= ADDS words to the other."""
        return [p for p in self.corpus.truth if max(p["a_adds"], p["b_adds"]) >= ADDS]

    def positions(self, order: str) -> dict[str, int]:
        """Each page's place in the order the listings give (a batch's decisions are in it)."""
        sites = {source: n for n, source in enumerate(dict.fromkeys(row.get("source") for row in self.rows))}
        sign = {"newest": -1, "oldest": 1}.get(order, 0)
        rows = sorted(self.rows, key=lambda row: (sites[row.get("source")], sign * row.get("rank", 0)))
        return {row["path"]: number for number, row in enumerate(rows)}

    # -- a crawl -----------------------------------------------------------------------

    def outcome(self, index_url: str, feed: Path, order: str) -> Outcome:
        """What a crawl kept (its feed, less the pages a preferred copy superseded later) and dropped
        (its index's log), and when each was decided."""
        position = self.positions(order)
        urls = [_url(line) for line in feed.read_text(encoding="utf-8").splitlines() if line.strip()]
        index = open_index(index_url, read_only=True, scheme=None)
        try:
            logged = index.duplicates()
            superseded = {duplicate.key for duplicate in logged}
            outcome = Outcome({p for p in map(self.resolve, set(urls) - superseded) if p is not None})
            for duplicate in logged:
                x, y = self.resolve(duplicate.key), self.resolve(duplicate.duplicate_of)
                if x is None or y is None:
                    outcome.foreign += 1
                elif x != y:  # another URL of the same file (dir/ and dir/index.html) is no drop
                    outcome.drops.append((x, y, duplicate))
                    outcome.decided.setdefault(x, (duplicate.seen_at, position.get(x, 0)))
            for url in urls:
                path, page = self.resolve(url), index.page(url)
                if path is not None and page is not None and page.stored_at is not None:
                    outcome.decided[path] = (page.stored_at, position.get(path, 0))
        finally:
            index.close()
        return outcome

    def score(self, outcome: Outcome, order: str) -> dict[str, Any]:
        """(a), (b), (c) and the order check of one crawl (module docstring)."""
        losing, some = [], 0
        for x, y, duplicate in outcome.drops:
            if x in outcome.kept:
                continue
            x_adds, y_adds = self.adds(x, y)
            if x_adds >= ADDS:
                losing.append(
                    {
                        "dropped": x,
                        "for": y,
                        "adds": x_adds,
                        "other_adds": y_adds,
                        "lang": self.lang[x],
                        "distance": duplicate.distance,
                        "similarity": duplicate.similarity,
                    }
                )
            elif x_adds > NOTHING:
                some += 1
        pages = [{"path": p, "lang": lang} for p, lang in zip(self.corpus.paths, self.corpus.langs)]
        return {
            "losing": sorted(losing, key=lambda h: -h["adds"]),
            "drops_adding_some": some,
            "redundant": self._redundant(outcome),
            "score": self.corpus.scorer.score(
                pages, self.corpus.truth, self.corpus.gray, outcome.kept, outcome.crawled, 0.9
            ),
            "pair_recall": self._pair_recall(outcome),
            "order": self._order(outcome, order),
            "foreign_log_rows": outcome.foreign,
        }

    def _redundant(self, outcome: Outcome) -> dict[str, dict[str, int]]:
        """Per language: the redundant pages, and how many of them were dropped."""
        redundant: set[str] = set()
        for pair in self.corpus.truth:
            a, b = pair["a"], pair["b"]
            if pair["jaccard"] < 0.9 or a not in outcome.decided or b not in outcome.decided:
                continue
            later, adds = (b, pair["b_adds"]) if outcome.decided[a] < outcome.decided[b] else (a, pair["a_adds"])
            if adds <= NOTHING:
                redundant.add(later)
        return _by_language(self.lang, {path: path in outcome.dropped for path in redundant})

    def _pair_recall(self, outcome: Outcome) -> dict[str, dict[str, int]]:
        """Per language: truth pairs (>= 0.9), both crawled, where neither adds >= ADDS words, and
        how many of them lost a page (counted by their first page's language)."""
        caught = {}
        for pair in self.corpus.truth:
            a, b = pair["a"], pair["b"]
            if pair["jaccard"] >= 0.9 and max(pair["a_adds"], pair["b_adds"]) < ADDS and {a, b} <= outcome.crawled:
                caught[f"{a}\t{b}"] = a in outcome.dropped or b in outcome.dropped
        return _by_language({key: self.lang[key.split("\t")[0]] for key in caught}, caught)

    def _order(self, outcome: Outcome, order: str) -> dict[str, int]:
        """Pairs of versions of one page, both decided: in the order's direction, in one batch, against it."""
        if order not in VERSIONED:
            return {}
        rank = {row["path"]: int(row.get("rank", 0)) for row in self.rows}
        by_page: dict[tuple[Any, ...], list[str]] = {}
        for row in self.rows:
            if row["path"] in outcome.decided:
                by_page.setdefault((row.get("source"), row.get("page"), row["lang"]), []).append(row["path"])
        counts: Counter[str] = Counter()
        for paths in by_page.values():
            for i, x in enumerate(paths):
                for y in paths[i + 1 :]:
                    first, second = sorted((x, y), key=lambda p: rank[p] * (-1 if order == "newest" else 1))
                    if rank[first] != rank[second]:
                        t_first, t_second = outcome.decided[first][0], outcome.decided[second][0]
                        counts[
                            "in order" if t_first < t_second else "one batch" if t_first == t_second else "against"
                        ] += 1
        return dict(counts)


def _by_language(lang: dict[str, str], hit: dict[str, bool]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for key, yes in hit.items():
        for name in (lang[key], "all"):
            entry = counts.setdefault(name, {"n": 0, "hit": 0})
            entry["n"] += 1
            entry["hit"] += yes
    return counts


def orders_of(directory: Path, wanted: str) -> list[str]:
    known = VERSIONED if (directory / "site-oldest").is_dir() else SCHEDULERS
    names = list(known) if wanted == "both" else [name.strip() for name in wanted.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SystemExit(f"--orders: {unknown} is not an order of {directory}; give 'both' or of {list(known)}")
    return names


def crawl_and_score(scoring: Scoring, order: str, settings: list[str], workdir: Path) -> dict[str, Any]:
    server, start = serve(scoring.directory / VERSIONED.get(order, "site"))
    try:
        feed, seconds, _, _ = crawl(start, workdir, order, [*SCHEDULERS.get(order, []), *settings])
    finally:
        server.shutdown()
    result = scoring.score(scoring.outcome(f"sqlite:///{workdir / order}.db", feed, order), order)
    result["seconds"] = seconds
    return result


def _share(entry: dict[str, int] | None) -> str:
    return f"{entry['hit'] / entry['n']:.4f} ({entry['hit']}/{entry['n']})" if entry and entry["n"] else "-"


def report(order: str, result: dict[str, Any], out: TextIO = sys.stdout) -> None:
    score = result["score"]
    langs = [lang for lang in score if lang not in ("all", "truth", "input")] + ["all"]
    print(f"\n## order {order} (crawl {result.get('seconds', 0):.0f} s)\n", file=out)
    print(
        "| lang | crawled | dropped | (a) drops adding >= 25 words | (b) recall of pages adding nothing | "
        "strict precision | precision | recall | pair recall, neither adds >= 25 |\n|" + "---|" * 9,
        file=out,
    )
    for lang in langs:
        s = score[lang]
        losing = sum(1 for h in result["losing"] if lang in ("all", h["lang"]))
        print(
            f"| {lang} | {s['crawled']} | {s['dropped']} | {losing} | {_share(result['redundant'].get(lang))} | "
            f"{s['precision_strict']:.4f} | {s['precision']:.4f} | {s['recall']:.4f} | "
            f"{_share(result['pair_recall'].get(lang))} |",
            file=out,
        )
    if result["order"]:
        print(f"\norder check, pairs of versions of a page: {result['order']}", file=out)
    print(
        f"drops adding 4-24 words: {result['drops_adding_some']}; log rows outside the corpus: "
        f"{result['foreign_log_rows']}",
        file=out,
    )
    for h in result["losing"]:
        print(
            f"- {h['dropped']} (adds {h['adds']}) dropped for {h['for']} (which adds {h['other_adds']}; "
            f"distance {h['distance']}, similarity {h['similarity']:.2f})",
            file=out,
        )


def changed_report(scoring: Scoring, examples: int, out: TextIO = sys.stdout) -> None:
    """How many truth pairs change class, with examples of what is added."""
    changed = scoring.changed()
    near = [p for p in scoring.corpus.truth if not p.get("exact")]
    by_lang = Counter(p["lang"] for p in changed)
    print(
        f"truth pairs (>= 0.9): {len(scoring.corpus.truth)} ({len(near)} not exact); one page adds >= {ADDS} "
        f"words to the other: {len(changed)} (" + ", ".join(f"{k} {n}" for k, n in sorted(by_lang.items())) + ")",
        file=out,
    )
    ranked = sorted(changed, key=lambda p: -max(p["a_adds"], p["b_adds"]))
    for pair in ranked[:: max(1, len(ranked) // max(1, examples))][:examples]:
        side, other = (pair["a"], pair["b"]) if pair["a_adds"] >= pair["b_adds"] else (pair["b"], pair["a"])
        print(
            f"\n- {side} adds {max(pair['a_adds'], pair['b_adds'])} words to {other} (which adds "
            f"{min(pair['a_adds'], pair['b_adds'])}), Jaccard {pair['jaccard']}",
            file=out,
        )
        print("  added: " + " ".join(added_text(scoring, side, other))[:400], file=out)


def added_text(scoring: Scoring, page: str, other: str) -> list[str]:
    """The runs of `page` longer than REWORDING units that `other` lacks, for a reader."""
    a, b = units(scoring.normalized(page)), units(scoring.normalized(other))
    return [
        "[" + _joined(a[i1:i2]) + "]"
        for tag, i1, i2, _, _ in SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
        if tag != "equal" and i2 - i1 > REWORDING
    ]


def _joined(run: list[str]) -> str:
    """Units as text: a space between two words, none beside a CJK character."""
    text = run[0] if run else ""
    for before, unit in pairwise(run):
        text += unit if is_cjk_text(before) or is_cjk_text(unit) else " " + unit
    return text


def _url(line: str) -> str:
    """A feed line's URL (a JSON line with "url", or the URL itself)."""
    return str(json.loads(line).get("url", "")) if line.lstrip().startswith("{") else line.strip()


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.versioned_score", description=__doc__.splitlines()[0])
    p.add_argument("--corpus", type=Path, required=True, help="a corpus in ../shared/eval's format")
    p.add_argument("--orders", default="both", help="newest,oldest (a versioned corpus), dfs,bfs (another), or both")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a Scrapy setting for every crawl")
    p.add_argument("--keep", type=Path, help="keep each crawl's index, feed and log in this folder")
    p.add_argument("--json", type=Path, help="write every figure and list as JSON here")
    p.add_argument("--examples", type=int, default=5, help="truth pairs that change class, shown")
    p.add_argument("--pairs-only", action="store_true", help="only the truth pairs that change class; no crawl")
    p.add_argument("--index", help="score this crawl's index (with --feed) instead of crawling")
    p.add_argument("--feed", type=Path, help="the kept pages of --index's crawl (a Scrapy feed, or one URL a line)")
    p.add_argument("--order", default="", help="the order --index's crawl was made in: newest, oldest, dfs, bfs")
    return p


def main() -> None:
    args = parser().parse_args()
    if not (args.corpus / "pages.jsonl").is_file():
        sys.exit(f"--corpus {args.corpus}: no pages.jsonl there; give a corpus in ../shared/eval's format")
    scoring = Scoring(args.corpus)
    changed_report(scoring, args.examples)
    results: dict[str, Any] = {"changed": scoring.changed()}
    if args.index:
        if args.feed is None:
            sys.exit("--index needs --feed: the crawl's kept pages")
        results[args.order or "crawl"] = scoring.score(scoring.outcome(args.index, args.feed, args.order), args.order)
        report(args.order or "crawl", results[args.order or "crawl"])
    elif not args.pairs_only:
        with tempfile.TemporaryDirectory(prefix="versioned-score-") as tmp:
            workdir = args.keep or Path(tmp)
            workdir.mkdir(parents=True, exist_ok=True)
            for order in orders_of(args.corpus, args.orders):
                results[order] = crawl_and_score(scoring, order, args.set, workdir)
                report(order, results[order])
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
