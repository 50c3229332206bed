"""Realistic synthetic pages for the index benchmarks: sites with templates, reused paragraphs and near copies.

A page is a list of word ids drawn from a real frequency list (wordfreq's top words of a language,
each kept only if the default Fingerprinter turns it into exactly that one feature, stop words
out). Its fingerprint is the default Fingerprinter's: each distinct word weighs tf ** 0.5 and votes
with the xxHash64 of its UTF-8 bytes; `text()` gives the page as text, and `validate()` checks that
`DEFAULT.fingerprint(text)` is the same number. Every page is a pure function of (seed, site, page),
so any page of a 10M-page corpus can be regenerated alone. Generated sites are cached in CACHE.

    python -m benchmarks.workloads.realistic [--n 100000] [--write]

measures the generator's collision share (its calibration, benchmarks/workloads/README.md) for the sites of an
N-page load.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import xxhash

from benchmarks._common import REPO, command, stamp, table, write_section
from simhash_index.fingerprinting.fingerprinter import DEFAULT


@dataclass(frozen=True)
class Model:
    """How pages are made; the defaults are the calibrated ones (benchmarks/workloads/README.md)."""

    site_pages: int = 10_000  # pages per site
    template: int = 40  # mean words of a site's template (navigation, footer), on every page
    shared_templates: int = 50  # CMS boilerplate blocks shared between sites (cookie notice, licence)
    shared_words: int = 30  # words of each shared block
    pool: int = 300  # paragraphs a site reuses across its pages
    paragraph: int = 60  # mean words of a paragraph
    reused: float = 0.2  # share of a page's paragraphs taken from its site's pool
    length: float = 250.0  # median words of a page's own text (lognormal)
    short: float = 0.05  # share of short pages (tag, listing and error pages): mostly template
    short_length: float = 15.0  # their median words of their own
    spread: float = 0.8  # sigma of log(length)
    topic: int = 400  # words of a site's topic vocabulary
    topical: float = 0.2  # share of a page's fresh words drawn from its site's topic
    copies: float = 0.05  # share of pages that are near copies of an earlier page of their site
    edits: float = 0.03  # share of a copy's words replaced
    revisions: float = 0.1  # share of original pages that are a new version of an earlier one (not near copies)
    rewritten: float = 0.4  # share of a revision's paragraphs rewritten

    def replace(self, **changes: float) -> Model:
        return Model(**{**self.__dict__, **changes})


class Vocabulary:
    """A language's words with their frequencies, and their hash bits as the default Fingerprinter sees them."""

    def __init__(self, lang: str, size: int = 30_000) -> None:
        import wordfreq

        words = [w for w in wordfreq.top_n_list(lang, size) if DEFAULT.tokens(DEFAULT.normalize(w)) == [w]]
        freq = np.array([wordfreq.word_frequency(w, lang) for w in words])
        self.lang = lang
        self.words = words
        self.cdf = np.cumsum(freq / freq.sum())
        digests = b"".join(xxhash.xxh64_intdigest(w.encode("utf-8")).to_bytes(8, "little") for w in words)
        bits = np.unpackbits(np.frombuffer(digests, dtype=np.uint8), bitorder="little").reshape(len(words), 64)
        self.bits = bits.astype(np.float64)

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n word ids by their real frequency (Zipf-like)."""
        return np.minimum(np.searchsorted(self.cdf, rng.random(n)), len(self.words) - 1)

    def fingerprint(self, ids: np.ndarray) -> int:
        """The default Fingerprinter's simhash of the page: tf ** 0.5 per distinct word."""
        unique, counts = np.unique(ids, return_counts=True)
        weights = counts.astype(np.float64) ** 0.5
        positive = 2 * (weights @ self.bits[unique]) > weights.sum()
        return int.from_bytes(np.packbits(positive, bitorder="little").tobytes(), "little")

    def text(self, ids: np.ndarray) -> str:
        return " ".join(self.words[i] for i in ids.tolist())


class Corpus:
    """Pages of one language; page p belongs to site p // site_pages."""

    def __init__(self, vocabulary: Vocabulary, model: Model, seed: int) -> None:
        self.vocabulary, self.model, self.seed = vocabulary, model, seed
        self._sites: dict[int, Site] = {}

    def site(self, s: int) -> Site:
        if s not in self._sites:
            if len(self._sites) > 64:
                self._sites.clear()
            self._sites[s] = Site(self, s)
        return self._sites[s]

    @cached_property
    def shared(self) -> list[np.ndarray]:
        rng = np.random.default_rng([self.seed, 1 << 40])
        return [self.vocabulary.draw(rng, self.model.shared_words) for _ in range(self.model.shared_templates)]

    def root(self, p: int) -> int:
        """The page p is a near copy of (itself when it is an original)."""
        s, j = divmod(p, self.model.site_pages)
        while j > 0:
            rng = np.random.default_rng([self.seed, s, j, 1])
            if rng.random() >= self.model.copies:
                break
            j = int(rng.integers(j))
        return s * self.model.site_pages + j

    def page(self, p: int) -> np.ndarray:
        """Page p's word ids."""
        s, j = divmod(p, self.model.site_pages)
        root = self.root(p)
        ids = self.site(s).original(root % self.model.site_pages)
        if root != p:  # a near copy: some words replaced
            rng = np.random.default_rng([self.seed, s, j, 2])
            ids = ids.copy()
            where = rng.random(len(ids)) < self.model.edits
            ids[where] = self.vocabulary.draw(rng, int(where.sum()))
        return ids

    def fingerprints(self, pages: Sequence[int]) -> np.ndarray:
        return np.array([self.vocabulary.fingerprint(self.page(p)) for p in pages], dtype=np.uint64)


class Site:
    """A site's template, topic words and paragraph pool."""

    def __init__(self, corpus: Corpus, s: int) -> None:
        m, vocab = corpus.model, corpus.vocabulary
        self.corpus = corpus
        self.s = s
        rng = np.random.default_rng([corpus.seed, s, 0])
        n_words = len(vocab.words)
        self.topic = rng.choice(np.arange(200, n_words), size=m.topic, replace=False)
        self.template = np.concatenate(
            [
                corpus.shared[int(rng.integers(m.shared_templates))],
                self.mixed(rng, max(1, int(rng.poisson(m.template)))),
            ]
        )
        self.pool = [self.mixed(rng, max(5, int(rng.poisson(m.paragraph)))) for _ in range(m.pool)]

    def mixed(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n words: the language's frequencies, a `topical` share from the site's topic words."""
        ids = self.corpus.vocabulary.draw(rng, n)
        topical = rng.random(n) < self.corpus.model.topical
        ids[topical] = self.topic[rng.integers(len(self.topic), size=int(topical.sum()))]
        return ids

    def original(self, j: int) -> np.ndarray:
        """Page j of the site (an original, not a near copy): its template, then its paragraphs."""
        return np.concatenate([self.template, *self.paragraphs(j)])

    def paragraphs(self, j: int) -> list[np.ndarray]:
        m = self.corpus.model
        rng = np.random.default_rng([self.corpus.seed, self.s, j, 3])
        if j > 0 and rng.random() < m.revisions:  # a new version of an earlier page: some paragraphs rewritten
            return [
                self.paragraph(rng) if rng.random() < m.rewritten else part
                for part in self.paragraphs(int(rng.integers(j)))
            ]
        median = m.short_length if rng.random() < m.short else m.length
        words = max(5, int(rng.lognormal(np.log(median), m.spread)))
        count = max(1, round(words / m.paragraph))
        if count == 1:  # a short page: one paragraph of its own
            return [self.mixed(rng, words)]
        reused = rng.random(count) < m.reused
        pool = rng.integers(m.pool, size=count)
        lengths = np.maximum(5, rng.poisson(m.paragraph, size=count))
        fresh = np.split(self.mixed(rng, int(lengths.sum())), np.cumsum(lengths)[:-1])
        return [self.pool[int(k)] if r else f for r, k, f in zip(reused.tolist(), pool.tolist(), fresh)]

    def paragraph(self, rng: np.random.Generator) -> np.ndarray:
        return self.mixed(rng, max(5, int(rng.poisson(self.corpus.model.paragraph))))


# Calibrated (benchmarks/workloads/README.md): the collision share at distance 3 of a 1M-page corpus is the real
# corpus's (docs/accuracy.md: 3.7e-5 English, 4.6e-5 Chinese).
CALIBRATED = {
    "en": Model(template=150, short=0.115, short_length=3.0),
    "zh": Model(template=150, short=0.125, short_length=3.0),
}
_VOCABULARIES: dict[str, Vocabulary] = {}


def corpus(lang: str, seed: int, model: Model | None = None) -> Corpus:
    """The calibrated corpus of a language (vocabularies built once per process)."""
    if lang not in _VOCABULARIES:
        _VOCABULARIES[lang] = Vocabulary(lang)
    return Corpus(_VOCABULARIES[lang], model or CALIBRATED[lang], seed)


def site_fingerprints(lang: str, seed: int, site: int) -> np.ndarray:
    """The fingerprints of every page of a site, in page order."""
    pages = corpus(lang, seed)
    first = site * pages.model.site_pages
    return pages.fingerprints(range(first, first + pages.model.site_pages))


SITE = CALIBRATED["en"].site_pages
HELD_OUT = 100  # page j of a site with j % HELD_OUT == HELD_OUT - 1 is not loaded
CACHE = Path(tempfile.gettempdir()) / "simhash-realistic-cache"


def site_language(g: int) -> tuple[str, int]:
    """Global site g: its language (3 in 10 Chinese) and its number among that language's sites."""
    zh = g % 10 in (2, 5, 8)
    before_zh = (g // 10) * 3 + sum(1 for r in (2, 5, 8) if r < g % 10)
    return ("zh", before_zh) if zh else ("en", g - before_zh)


def cached_site(args: tuple[str, int, int]) -> np.ndarray:
    lang, seed, site = args
    model = xxhash.xxh64_hexdigest(repr(CALIBRATED[lang]).encode())[:8]  # a changed model is generated anew
    path = CACHE / f"{lang}-{model}-{seed}-{site}.npy"
    if path.exists():
        return np.load(path)
    fps = site_fingerprints(lang, seed, site)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path.with_suffix(".tmp.npy"), fps)
    os.replace(path.with_suffix(".tmp.npy"), path)
    return fps


def realistic(n: int, seed: int, workers: int) -> tuple[np.ndarray, list[str], np.ndarray]:
    """The n loaded fingerprints, their keys, and the held-out pages' fingerprints of the same sites."""
    per_site = SITE - SITE // HELD_OUT
    sites = -(-n // per_site)
    jobs = [(*site_language(g), g) for g in range(sites)]
    with Pool(workers) as pool:
        arrays = pool.map(cached_site, [(lang, seed, s) for lang, s, _ in jobs], chunksize=1)
    held = np.arange(SITE) % HELD_OUT == HELD_OUT - 1
    loaded = np.concatenate([a[~held] for a in arrays])[:n]
    keys = [f"https://{lang}{s}.example.com/{j}.html" for lang, s, _ in jobs for j in range(SITE) if not held[j]][:n]
    return loaded, keys, np.concatenate([a[held] for a in arrays])


def collisions(fps: np.ndarray, roots: np.ndarray, sites: np.ndarray) -> dict[str, int]:
    """Pairs within 3 bits among the pages, every pair: in one site and across sites, near copies by construction
    (pages of one copy root) apart. A collision is such a pair that is not a near copy."""
    n = len(fps)
    counts = dict.fromkeys(("same", "cross", "copies"), 0)
    for i in range(0, n, 1000):
        rows = slice(i, i + 1000)
        close = (np.bitwise_count(fps[rows, None] ^ fps[None, :]) <= 3) & (
            np.arange(i, i + 1000)[: n - i, None] < np.arange(n)
        )
        copy = roots[rows, None] == roots[None, :]
        in_site = sites[rows, None] == sites[None, :]
        counts["same"] += int((close & ~copy & in_site).sum())
        counts["cross"] += int((close & ~copy & ~in_site).sum())
        counts["copies"] += int((close & copy).sum())
    same_pairs = sum(k * (k - 1) // 2 for k in np.unique(sites, return_counts=True)[1].tolist())
    return {**counts, "same_pairs": same_pairs, "cross_pairs": n * (n - 1) // 2 - same_pairs}


def share(rates: dict[str, float], site_pages: int, n: int) -> float:
    """The collision share of an n-page corpus: a pair shares its site with probability (site_pages - 1) / (n - 1)."""
    in_one = (site_pages - 1) / (n - 1)
    return rates["p_same"] * in_one + rates["p_cross"] * (1 - in_one)


def validate(corpus: Corpus, pages: Sequence[int]) -> list[int]:
    """Per page, the bits between its fingerprint here and DEFAULT.fingerprint of its text (0: equal)."""
    vocabulary = corpus.vocabulary
    return [
        (vocabulary.fingerprint(ids) ^ DEFAULT.fingerprint(vocabulary.text(ids))).bit_count()
        for ids in map(corpus.page, pages)
    ]


def calibration(args: argparse.Namespace) -> str:
    """The collision share of the N-page load: every pair within each site, and every pair of 3 sites of a language."""
    per_site = SITE - SITE // HELD_OUT
    sites = [site_language(g) for g in range(-(-args.n // per_site))]
    rows = []
    for lang in ("en", "zh"):
        pages = corpus(lang, args.seed)
        numbers = [s for language, s in sites if language == lang]
        if not numbers:
            continue
        totals: Counter = Counter()
        first: list[tuple[np.ndarray, np.ndarray]] = []  # 3 sites, for the pairs across sites
        for s in numbers:
            fps = cached_site((lang, args.seed, s))
            roots = np.array([pages.root(p) for p in range(s * SITE, (s + 1) * SITE)])
            found = collisions(fps, roots, np.zeros(SITE))
            totals.update(same=found["same"], same_pairs=found["same_pairs"], copies=found["copies"])
            if len(first) < 3:
                first.append((fps, roots))
        cross = collisions(
            np.concatenate([f for f, _ in first]),
            np.concatenate([r for _, r in first]),
            np.arange(len(first) * SITE) // SITE,
        )
        rates = {
            "p_same": totals["same"] / totals["same_pairs"],
            "p_cross": cross["cross"] / max(1, cross["cross_pairs"]),
        }
        collision_share = share(rates, SITE, args.n)
        diffs = Counter(validate(pages, range(0, 3 * SITE, 97)))
        rows.append(
            [
                lang,
                f"{len(numbers)} sites, {totals['same_pairs']:,} pairs: {totals['same']:,} collisions, "
                f"{rates['p_same']:.2e}",
                f"{cross['cross_pairs']:,} pairs: {cross['cross']:,}",
                f"{collision_share:.1e}",
                f"{collision_share * (args.n - 1):.1f}",
                f"{diffs[0]}/{sum(diffs.values())} equal"
                + "".join(f"; {k} differ by {d} bits" for d, k in sorted(diffs.items()) if d),
            ]
        )
        print(rows[-1], flush=True)
    return "\n".join(
        [
            "### Calibration",
            "",
            f"`{command()}`, {stamp()}: the sites of the {args.n:,}-page load.",
            "",
            table(
                [
                    "lang",
                    "pairs in one site, within 3 bits and not near copies",
                    "pairs of 3 sites",
                    f"collision share at {args.n:,}",
                    "collisions per lookup",
                    "validation: DEFAULT.fingerprint(text)",
                ],
                rows,
            ),
        ]
    )


DOC = REPO / "benchmarks" / "workloads" / "README.md"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.workloads.realistic",
        description="The realistic pages' calibration: their collision share at distance 3.",
    )
    p.add_argument("--n", type=int, default=100_000, help="the load whose sites are measured")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--write", action="store_true", help="replace the calibration section of benchmarks/workloads/README.md"
    )
    return p


def main() -> None:
    args = parser().parse_args()
    body = calibration(args)
    print(body)
    if args.write:
        write_section("calibration", body, DOC)


if __name__ == "__main__":
    main()
