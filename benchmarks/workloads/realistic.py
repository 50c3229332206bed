"""Generated sites for the index benchmarks: templates, reused paragraphs and near copies (`realistic`).

A page is a list of word ids drawn from a real frequency list (wordfreq's top words of a language,
each kept only if the default Fingerprinter turns it into exactly that one feature, stop words
out). Its fingerprint is the default Fingerprinter's: each distinct word weighs tf ** 0.5 and votes
with the xxHash64 of its UTF-8 bytes; `text()` gives the page as text, and `validate()` checks that
`DEFAULT.fingerprint(text)` is the same number. Every page is a pure function of (seed, site, page),
so any page of a 10M-page corpus can be regenerated alone. Generated sites are cached in CACHE.

    python -m benchmarks.workloads.realistic [--n 90000] [--write]

measures the model's collision shares (its calibration, benchmarks/workloads/README.md) for the sites of an
N-page load: `realistic`, calibrated per site to real sites. Its pages carry no sketch (crowded.py's do).
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

from benchmarks._common import REPO, add_write, command, machine, stamp, table, write_section
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


# The models by workload name, per language (benchmarks/workloads/README.md): realistic, calibrated
# per site: two pages of one site that are not near copies come within 6 bits at the share measured
# on real sites (3e-4 to 1.4e-3 a site, 4,058 pages in ten languages), which puts 1 to 15 stored
# pages within 6 bits of a page at 1M, as real sites do.
MODELS = {
    "realistic": {
        "en": Model(template=150, short=0.02, short_length=3.0),
        "zh": Model(template=150, short=0.02, short_length=3.0),
    },
}
_VOCABULARIES: dict[str, Vocabulary] = {}


def corpus(lang: str, seed: int, model: Model | str = "realistic") -> Corpus:
    """The corpus of a language, of a model or a named one (vocabularies built once per process)."""
    if lang not in _VOCABULARIES:
        _VOCABULARIES[lang] = Vocabulary(lang)
    return Corpus(_VOCABULARIES[lang], MODELS[model][lang] if isinstance(model, str) else model, seed)


def site_fingerprints(name: str, lang: str, seed: int, site: int) -> np.ndarray:
    """The fingerprints of every page of a site of the named model, in page order."""
    pages = corpus(lang, seed, name)
    first = site * pages.model.site_pages
    return pages.fingerprints(range(first, first + pages.model.site_pages))


SITE = MODELS["realistic"]["en"].site_pages
HELD_OUT = 100  # page j of a site with j % HELD_OUT == HELD_OUT - 1 is not loaded
CACHE = Path(tempfile.gettempdir()) / "simhash-realistic-cache"


def site_language(g: int) -> tuple[str, int]:
    """Global site g: its language (3 in 10 Chinese) and its number among that language's sites."""
    zh = g % 10 in (2, 5, 8)
    before_zh = (g // 10) * 3 + sum(1 for r in (2, 5, 8) if r < g % 10)
    return ("zh", before_zh) if zh else ("en", g - before_zh)


def cached_site(args: tuple[str, str, int, int]) -> np.ndarray:
    name, lang, seed, site = args
    model = xxhash.xxh64_hexdigest(repr(MODELS[name][lang]).encode())[:8]  # a changed model is generated anew
    path = CACHE / f"{lang}-{model}-{seed}-{site}.npy"
    if path.exists():
        return np.load(path)
    fps = site_fingerprints(name, lang, seed, site)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path.with_suffix(".tmp.npy"), fps)
    os.replace(path.with_suffix(".tmp.npy"), path)
    return fps


def realistic(n: int, seed: int, workers: int, name: str = "realistic") -> tuple[np.ndarray, list[str], np.ndarray]:
    """The n loaded fingerprints of the named model, their keys, and the held-out pages' fingerprints of the
    same sites."""
    per_site = SITE - SITE // HELD_OUT
    sites = -(-n // per_site)
    jobs = [(*site_language(g), g) for g in range(sites)]
    with Pool(workers) as pool:
        arrays = pool.map(cached_site, [(name, lang, seed, s) for lang, s, _ in jobs], chunksize=1)
    held = np.arange(SITE) % HELD_OUT == HELD_OUT - 1
    loaded = np.concatenate([a[~held] for a in arrays])[:n]
    keys = [f"https://{lang}{s}.example.com/{j}.html" for lang, s, _ in jobs for j in range(SITE) if not held[j]][:n]
    return loaded, keys, np.concatenate([a[held] for a in arrays])


RADII = (3, 6, 10)  # the distances the calibration counts pairs within


def collisions(fps: np.ndarray, roots: np.ndarray, sites: np.ndarray) -> dict[str, int]:
    """Pairs within each of RADII among the pages, every pair: in one site (`same R`) and across sites
    (`cross R`), near copies by construction (pages of one copy root) apart. A collision is such a pair
    that is not a near copy."""
    n = len(fps)
    counts = {f"{where} {r}": 0 for where in ("same", "cross") for r in RADII}
    for i in range(0, n, 500):
        rows = slice(i, i + 500)
        distance = np.bitwise_count(fps[rows, None] ^ fps[None, :])
        later = np.arange(i, i + 500)[: n - i, None] < np.arange(n)
        distinct = later & (roots[rows, None] != roots[None, :])
        in_site = sites[rows, None] == sites[None, :]
        for r in RADII:
            close = distinct & (distance <= r)
            counts[f"same {r}"] += int((close & in_site).sum())
            counts[f"cross {r}"] += int((close & ~in_site).sum())
    same_pairs = sum(k * (k - 1) // 2 for k in np.unique(sites, return_counts=True)[1].tolist())
    return {**counts, "same_pairs": same_pairs, "cross_pairs": n * (n - 1) // 2 - same_pairs}


def validate(corpus: Corpus, pages: Sequence[int]) -> list[int]:
    """Per page, the bits between its fingerprint here and DEFAULT.fingerprint of its text (0: equal)."""
    vocabulary = corpus.vocabulary
    return [
        (vocabulary.fingerprint(ids) ^ DEFAULT.fingerprint(vocabulary.text(ids))).bit_count()
        for ids in map(corpus.page, pages)
    ]


def site_shares(name: str, lang: str, seed: int, site: int) -> dict[int, float]:
    """A site's collision share within each of RADII: its pairs of pages that are not near copies
    and are that close, over all its pairs."""
    pages = corpus(lang, seed, name)
    fps = cached_site((name, lang, seed, site))
    roots = np.array([pages.root(p) for p in range(site * SITE, (site + 1) * SITE)])
    found = collisions(fps, roots, np.zeros(SITE))
    return {r: found[f"same {r}"] / found["same_pairs"] for r in RADII}


def spread(values: list[float], form: str) -> str:
    """min / median / max of per-site figures."""
    low, mid, high = min(values), float(np.median(values)), max(values)
    return f"{low:{form}} / {mid:{form}} / {high:{form}}"


def calibration(args: argparse.Namespace) -> str:
    """The named model's collision shares, site by site, for the sites of the N-page load; and every
    pair of 3 sites of a language (pairs across sites)."""
    per_site = SITE - SITE // HELD_OUT
    sites = [site_language(g) for g in range(-(-args.n // per_site))]
    realistic(args.n, args.seed, args.workers, args.workload)  # generated and cached, in parallel
    rows = []
    for lang in ("en", "zh"):
        numbers = [s for language, s in sites if language == lang]
        if len(numbers) < 3:
            raise SystemExit(f"--n {args.n:,} has {len(numbers)} {lang} sites; give 90000 or more for 3 a language")
        shares = [site_shares(args.workload, lang, args.seed, s) for s in numbers]
        pages = corpus(lang, args.seed, args.workload)
        first = [(cached_site((args.workload, lang, args.seed, s)), s) for s in range(3)]
        roots = [np.array([pages.root(p) for p in range(s * SITE, (s + 1) * SITE)]) for _, s in first]
        cross = collisions(
            np.concatenate([f for f, _ in first]), np.concatenate(roots), np.arange(len(first) * SITE) // SITE
        )
        diffs = Counter(validate(pages, range(0, 3 * SITE, 97)))
        rows.append(
            [
                lang,
                str(len(numbers)),
                spread([share[6] for share in shares], ".1e"),
                spread([share[6] * (SITE - 1) for share in shares], ".1f"),
                spread([share[3] for share in shares], ".1e"),
                f"{cross['cross_pairs']:,} pairs: {cross['cross 6']:,} / {cross['cross 10']:,}",
                f"{diffs[0]}/{sum(diffs.values())} equal"
                + "".join(f"; {k} differ by {d} bits" for d, k in sorted(diffs.items()) if d),
            ]
        )
        print(rows[-1], flush=True)
    return "\n".join(
        [
            f"### {args.workload}",
            "",
            f"`{command()}`, {stamp()}; {machine()}: the sites of the {args.n:,}-page load; per site, pairs that are"
            " not near copies by construction; min / median / max over the sites.",
            "",
            table(
                [
                    "lang",
                    "sites",
                    "share within 6 bits",
                    "pages within 6 bits of a page (at any N)",
                    "share within 3 bits",
                    "pairs of 3 sites: within 6 / 10 bits",
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
        description="A generated workload's calibration: its collision shares, site by site and across sites.",
    )
    p.add_argument("--workload", choices=sorted(MODELS), default="realistic", help="the model measured")
    p.add_argument("--n", type=int, default=90_000, help="the load whose sites are measured (90,000: 7 en, 3 zh)")
    p.add_argument("--workers", type=int, default=2, help="processes generating sites")
    p.add_argument("--seed", type=int, default=1)
    add_write(p, DOC)
    return p


def main() -> None:
    args = parser().parse_args()
    body = calibration(args)
    print(body)
    if args.write:
        write_section(f"calibration {args.workload}", body, DOC)


if __name__ == "__main__":
    main()
