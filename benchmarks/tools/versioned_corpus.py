"""Build the versioned-docs corpus: several built versions of the same documentation sites.

    python -m benchmarks.tools.versioned_corpus --out DIR [--mirrors /work/.mirror]
                                                [--repo OWNER/NAME=GIT_DIR ...] [--jobs 2]

Six documentation sites that keep their built HTML in a public repository (SITES: MkDocs
sites deployed with mike, one folder a version, in English and Chinese; a Docusaurus site with
versioned docs in both; a Sphinx site's deploy history at five moments), each page copied
byte for byte from the pinned commit. The same page in two versions is the near-duplicate a
crawler of a versioned or regularly updated site meets, and a newer version often adds a
section (issue 48): the truth says, for every pair of versions of a page and every pair of
pages whose texts are 0.8-similar, how many words each adds to the other
(benchmarks/added_words.py).

The output has the layout and files of ../shared/eval (its README), so its score.py scores a
crawl of it, and more:
- site/: the pages, at SITE/VERSION/PATH (and an empty index.html in each folder without one,
  so that no web server lists a folder's versions); site/index.html starts a chain of listing pages,
  one a version, newest version first; site-oldest/ serves the same pages (symbolic links)
  from an index.html whose chain lists the oldest version first. A crawl started at either
  index.html reaches every page in that order of versions (each listing links the next one
  first, so a depth-first crawl reaches it last and a breadth-first one a level deeper).
- pages.jsonl: path, lang, chars, source (the site), version, rank (0 = the oldest version),
  page (the page's name across versions), repo, commit, orig_path, bytes, text_sha1.
- extracted_text.jsonl.gz: each page's main text (simhash_index.text.extract.extract_text).
- truth.jsonl / truth_gray.jsonl: pairs of one language's pages with Jaccard >= 0.9 / 0.8-0.9
  (word 3-shingles, character 5-shingles for CJK text), with a_adds and b_adds: the words
  each page adds to the other.
- versions.jsonl: every pair of versions of the same page (a the older), whatever their
  similarity, with the same fields.
- pairs.jsonl: every pair of the three files above once, with same_page, both normalised
  texts, their distinct shingles (shingles_a, shingles_b, shingles_common: the sets the index's
  sketches estimate) and words (words_a, words_b, as added_words counts them): what the
  duplicate rule's estimate of the words a page adds is calibrated on.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import html
import json
import os
import re
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from benchmarks.added_words import added, units
from benchmarks.tools.multilingual_corpus import NEAR, truth_pairs, write_jsonl
from simhash_index.fingerprinting.fingerprinter import DEFAULT
from simhash_index.text.extract import extract_text
from simhash_index.text.tokens import is_cjk_text, shingles


@dataclass(frozen=True)
class Version:
    """One version of a site: the folders of a commit's tree that hold its pages."""

    label: str  # its folder in the corpus
    commit: str
    folders: tuple[tuple[str, str], ...]  # (prefix in the corpus, folder in the tree)
    skip: str = r"$^"  # paths (below a folder) that are not this version's pages


@dataclass(frozen=True)
class Site:
    name: str
    repo: str
    generator: str
    license: str
    versions: tuple[Version, ...]  # oldest first


def _mike(commit: str, *labels: str) -> tuple[Version, ...]:
    """The versions of a site deployed with mike: a folder each, at one commit."""
    return tuple(Version(label, commit, (("", label),)) for label in labels)


_OPENYURT = "d6fa6a8e9169c22c1ae10a7831e9f50e9ccf5350"
_RELENG = "releng-tool/releng-tool-www-docs"
SITES = (
    Site(
        "fate-flow",
        "FederatedAI/FATE-Flow",
        "MkDocs (Material, mike)",
        "Apache-2.0",
        _mike(
            "cadaa6fc1ec8e3c61c4779d0bb7fbc6230b9b64f", "1.7.0", "1.8.0", "1.9.0", "1.10.0", "1.11.2", "2.0.0", "latest"
        ),
    ),
    Site(
        "spiderpool",
        "spidernet-io/spiderpool",
        "MkDocs (Material, mike)",
        "Apache-2.0",
        _mike(
            "e0a3fe85b1ad4f8bf2417d31f2b6394dd573a612", "v0.6", "v0.7", "v0.8", "v0.9", "v1.0", "v1.1", "v1.2", "dev"
        ),
    ),
    Site(
        "egressgateway",
        "spidernet-io/egressgateway",
        "MkDocs (Material, mike)",
        "Apache-2.0",
        _mike("fb4ce6e8000e745b905620714c5527a50506742b", "v0.2", "v0.3", "v0.4", "v0.5", "v0.6", "dev"),
    ),
    Site(
        "flask-openapi3",
        "luolingchun/flask-openapi3",
        "MkDocs (Material, mike)",
        "MIT",
        _mike("f51803696f907d5896a6f16c5a2c0a587639d54a", "v2.x", "v3.x", "v4.x"),
    ),
    Site(
        "openyurt",
        "openyurtio/openyurt.io",
        "Docusaurus (versioned docs, i18n)",
        "Apache-2.0",
        (
            *(
                Version(label, _OPENYURT, (("", f"docs/{label}"), ("zh/", f"zh/docs/{label}")))
                for label in ("v0.5.0", "v0.7.0", "v1.0", "v1.2", "v1.4", "v1.6")
            ),
            # the newest release is served at docs/ itself, beside the older versions' folders
            Version("v1.7", _OPENYURT, (("", "docs"), ("zh/", "zh/docs")), skip=r"^(v\d[^/]*|next)/"),
            Version("next", _OPENYURT, (("", "docs/next"), ("zh/", "zh/docs/next"))),
        ),
    ),
    Site(
        "releng-tool",
        _RELENG,
        "Sphinx (dirhtml, Furo), the deployed site at five moments",
        "BSD-2-Clause",
        tuple(
            Version(label, commit, (("", "en"),))
            for label, commit in (
                ("2023-12", "e1e8471e024834b64e7322c435c2009ef932516e"),
                ("2024-08", "5280e31bc47c4b0c15bf0b74f9b3839195cbc544"),
                ("2025-02", "469ceeae0c6e1fd771f6ac8b5f95232fd774a256"),
                ("2025-08", "aa5eedecf43fcb192f1412ee228a7c2663df18b0"),
                ("2026-04", "5af55424bbb7d1999c8d60f10eb35f468cb92e6e"),
            )
        ),
    ),
)
# search, index and error pages, and templates: not a version's documentation
_NOT_PAGES = re.compile(r"(^|/)(search|genindex|py-modindex|404|_[^/]*|overrides|theme)(/|\.html$)")


def git_dir(repo: str, mirrors: Path, given: dict[str, Path]) -> Path:
    """A clone of `repo` (OWNER/NAME): the one given, else the fetch tool's mirror of it."""
    path = given.get(repo) or mirrors / repo.replace("/", "+") / "repo"
    if not (path / "objects").is_dir() and not (path / ".git").is_dir():
        raise SystemExit(f"no clone of {repo} at {path}: fetch it, or give --repo {repo}=GIT_DIR")
    return path


class Blobs:
    """Files of a repository read through one `git cat-file --batch` process."""

    def __init__(self, repo: Path) -> None:
        self.process = subprocess.Popen(
            ["git", f"--git-dir={repo}", "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self.requests: IO[bytes] = self.process.stdin  # type: ignore[assignment]  # PIPE: never None
        self.answers: IO[bytes] = self.process.stdout  # type: ignore[assignment]

    def read(self, commit: str, path: str) -> bytes:
        self.requests.write(f"{commit}:{path}\n".encode())
        self.requests.flush()
        header = self.answers.readline().split()
        if len(header) != 3:
            raise SystemExit(f"{commit}:{path}: not in the repository ({b' '.join(header).decode()})")
        body = self.answers.read(int(header[2]))
        self.answers.read(1)  # the newline after each object
        return body

    def close(self) -> None:
        self.requests.close()
        self.process.wait()


def files(repo: Path, version: Version) -> Iterator[tuple[str, str]]:
    """(path in the corpus below SITE/VERSION/, path in the tree) of a version's HTML pages."""
    skip = re.compile(version.skip)
    for prefix, folder in version.folders:
        listed = subprocess.run(
            [
                "git",
                f"--git-dir={repo}",
                "-c",
                "core.quotepath=off",
                "ls-tree",
                "-r",
                "--name-only",
                version.commit,
                "--",
                f"{folder}/",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.splitlines()
        for orig in sorted(listed):
            below = orig[len(folder) + 1 :]
            if below.endswith(".html") and not _NOT_PAGES.search(below) and not skip.search(below):
                yield prefix + below, orig


def read_site(site: Site, repo: Path, out: Path, jobs: int) -> Iterator[tuple[dict[str, Any], str]]:
    """Each page of each version of a site with a main text, written to out/site, with its row
    and text. A page's language is its text's as the index sees it: Chinese when it is shingled
    by characters (tokens.is_cjk_text), else English (these sites' Chinese folders hold some
    untranslated English pages: English pages, then, near copies of the English folder's)."""
    blobs = Blobs(repo)
    try:
        for rank, version in enumerate(site.versions):
            found = [(below, orig, blobs.read(version.commit, orig)) for below, orig in files(repo, version)]
            with ProcessPoolExecutor(jobs) as pool:
                texts = list(pool.map(extract_text, [body for _, _, body in found], chunksize=8))
            for (below, orig, body), text in zip(found, texts):
                if not text:
                    continue
                lang = "zh" if is_cjk_text(DEFAULT.normalize(text)) else "en"
                path = f"{site.name}/{version.label}/{below}"
                target = out / "site" / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(body)
                row = {
                    "path": path,
                    "lang": lang,
                    "chars": len(text),
                    "source": site.name,
                    "version": version.label,
                    "rank": rank,
                    "page": below,
                    "scheme": "char5" if lang == "zh" else "word3",
                    "repo": site.repo,
                    "commit": version.commit,
                    "orig_path": orig,
                    "bytes": len(body),
                    "text_sha1": hashlib.sha1(text.encode("utf-8")).hexdigest(),
                }
                yield row, text
            print(f"{site.name} {version.label}: {len(found)} files", flush=True)
    finally:
        blobs.close()


def version_pairs(rows: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """Every pair of versions of the same page (its site, language and name), older first."""
    by_page: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_page[(row["source"], row["lang"], row["page"])].append(row)
    for versions in by_page.values():
        versions.sort(key=lambda row: row["rank"])
        for i, older in enumerate(versions):
            for newer in versions[i + 1 :]:
                yield older["path"], newer["path"]


def _adds(texts: tuple[str, str]) -> tuple[int, int]:
    result = added(*texts, normalized=True)
    return result.a_adds, result.b_adds


def truth(out: Path, rows: list[dict[str, Any]], texts: dict[str, str], jobs: int) -> None:
    """truth.jsonl, truth_gray.jsonl, versions.jsonl and pairs.jsonl (module docstring)."""
    normalized = {path: DEFAULT.normalize(text) for path, text in texts.items()}
    near: dict[tuple[str, str], dict[str, Any]] = {(str(p["a"]), str(p["b"])): p for p in truth_pairs(rows, texts)}
    sets = {path: frozenset(shingles(text)) for path, text in normalized.items()}
    lang = {row["path"]: row["lang"] for row in rows}
    versions: list[dict[str, Any]] = []
    for a, b in version_pairs(rows):
        common = len(sets[a] & sets[b])
        jaccard = round(common / (len(sets[a]) + len(sets[b]) - common), 4)
        versions.append({"a": a, "b": b, "jaccard": jaccard, "exact": texts[a] == texts[b], "lang": lang[a]})
    every = {(p["a"], p["b"]) for p in versions} | set(near)
    distinct = sorted(
        {tuple(sorted((normalized[a], normalized[b]))) for a, b in every if normalized[a] != normalized[b]}
    )
    with ProcessPoolExecutor(jobs) as pool:
        adds = dict(zip(distinct, pool.map(_adds, distinct, chunksize=4)))

    def with_adds(pair: dict[str, Any]) -> dict[str, Any]:
        x, y = normalized[pair["a"]], normalized[pair["b"]]
        a_adds, b_adds = (0, 0) if x == y else adds[(x, y)] if x < y else adds[(y, x)][::-1]
        return {**pair, "a_adds": a_adds, "b_adds": b_adds}

    near_rows = [with_adds(p) for p in near.values()]
    write_jsonl(out / "truth.jsonl", [p for p in near_rows if p["jaccard"] >= NEAR])
    write_jsonl(out / "truth_gray.jsonl", [p for p in near_rows if p["jaccard"] < NEAR])
    version_rows = [with_adds(p) for p in versions]
    write_jsonl(out / "versions.jsonl", version_rows)
    same_page = {frozenset((p["a"], p["b"])) for p in version_rows}
    merged = {frozenset((p["a"], p["b"])): p for p in near_rows} | {
        frozenset((p["a"], p["b"])): p for p in version_rows
    }
    with (out / "pairs.jsonl").open("w", encoding="utf-8") as lines:
        for key, pair in merged.items():
            a, b = pair["a"], pair["b"]
            row = {
                **pair,
                "same_page": key in same_page,
                "shingles_a": len(sets[a]),
                "shingles_b": len(sets[b]),
                "shingles_common": len(sets[a] & sets[b]),
                "words_a": len(units(normalized[a])),
                "words_b": len(units(normalized[b])),
                "text_a": normalized[a],
                "text_b": normalized[b],
            }
            lines.write(json.dumps(row, ensure_ascii=False) + "\n")


def listings(out: Path, rows: list[dict[str, Any]]) -> None:
    """site/index.html (newest version first) and site-oldest/index.html (oldest first), each the
    start of a chain of listing pages, one a version of a site."""
    by_version: dict[tuple[str, int], list[str]] = defaultdict(list)
    for row in rows:
        by_version[(row["source"], row["rank"])].append(row["path"])
    sites = list(dict.fromkeys(row["source"] for row in rows))
    orders = {
        "newest": [(s, r) for s in sites for r in sorted({r for t, r in by_version if t == s}, reverse=True)],
        "oldest": [(s, r) for s in sites for r in sorted({r for t, r in by_version if t == s})],
    }
    listing = out / "site" / "_index"
    listing.mkdir(parents=True, exist_ok=True)
    for order, chain in orders.items():
        for number, key in enumerate(chain):
            follow = f"{order}-{number + 1:03d}.html"
            items = [f'<li><a href="{follow}">next: {follow}</a></li>'] if number + 1 < len(chain) else []
            items += [f'<li><a href="../{html.escape(_link(p))}">{html.escape(p)}</a></li>' for p in by_version[key]]
            (listing / f"{order}-{number:03d}.html").write_text(
                f"<html><body><h1>{key[0]} {key[1]}</h1><ul>\n" + "\n".join(items) + "\n</ul></body></html>\n",
                encoding="utf-8",
            )
    start = '<html><body><a href="_index/{}-000.html">{} version first</a></body></html>\n'
    (out / "site" / "index.html").write_text(start.format("newest", "newest"), encoding="utf-8")
    oldest = out / "site-oldest"
    oldest.mkdir(exist_ok=True)
    (oldest / "index.html").write_text(start.format("oldest", "oldest"), encoding="utf-8")
    for entry in sorted((out / "site").iterdir()):
        if entry.name != "index.html" and not (oldest / entry.name).exists():
            (oldest / entry.name).symlink_to(Path("..") / "site" / entry.name)


EMPTY = '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title></title></head><body></body></html>\n'


def placeholders(site: Path) -> int:
    """An empty index.html in every folder of the site that has none: a link to a folder (a page's
    "../../") would otherwise get a web server's listing of it, which links every version of a
    site and so crawls them out of the listings' order."""
    written = 0
    for folder in sorted(path for path in site.rglob("*") if path.is_dir()):
        if not (folder / "index.html").exists():
            (folder / "index.html").write_text(EMPTY, encoding="utf-8")
            written += 1
    return written


def _link(path: str) -> str:
    """A page's link as the pages link each other: a folder's index.html as the folder."""
    return path.removesuffix("index.html")


def build(out: Path, mirrors: Path, given: dict[str, Path], jobs: int) -> None:
    rows: list[dict[str, Any]] = []
    texts: dict[str, str] = {}
    for site in SITES:
        for row, text in read_site(site, git_dir(site.repo, mirrors, given), out, jobs):
            rows.append(row)
            texts[row["path"]] = text
    write_jsonl(out / "pages.jsonl", rows)
    with gzip.open(out / "extracted_text.jsonl.gz", "wt", encoding="utf-8") as lines:
        for row in rows:
            lines.write(json.dumps({"path": row["path"], "text": texts[row["path"]]}, ensure_ascii=False) + "\n")
    placeholders(out / "site")
    listings(out, rows)
    truth(out, rows, texts, jobs)


def retruth(out: Path, jobs: int) -> None:
    """The truth files of a built corpus again, from its pages.jsonl and extracted texts (after a
    change of what a page adds)."""
    rows = [json.loads(line) for line in (out / "pages.jsonl").read_text(encoding="utf-8").splitlines()]
    with gzip.open(out / "extracted_text.jsonl.gz", "rt", encoding="utf-8") as lines:
        texts = {row["path"]: row["text"] for row in map(json.loads, lines)}
    truth(out, rows, texts, jobs)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.tools.versioned_corpus",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--out", type=Path, required=True, help="directory to write the corpus into (new or empty)")
    p.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="where OWNER+NAME/repo clones are")
    p.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME=GIT_DIR", help="a clone elsewhere")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="extraction processes")
    p.add_argument("--truth-only", action="store_true", help="rewrite the truth files of the corpus at --out")
    return p


def main() -> None:
    args = parser().parse_args()
    given = {}
    for item in args.repo:
        name, _, path = item.partition("=")
        if name not in {site.repo for site in SITES} or not path:
            raise SystemExit(f"--repo {item!r}: expected OWNER/NAME=GIT_DIR, NAME one of {[s.repo for s in SITES]}")
        given[name] = Path(path)
    if args.truth_only:
        retruth(args.out, args.jobs)
        return
    if args.out.exists() and any(args.out.iterdir()):
        raise SystemExit(f"--out {args.out}: not empty; give a new directory")
    args.out.mkdir(parents=True, exist_ok=True)
    build(args.out, args.mirrors, given, args.jobs)


if __name__ == "__main__":
    main()
