"""Build the multilingual development corpus from the history of git/git-scm.com and reactjs/LANG.react.dev.

    python -m benchmarks.tools.multilingual_corpus --repo GIT_DIR --out DIR [--languages ja,ko,...]
                                             [--pages 250] [--until COMMIT] [--react LANG=GIT_DIR ...]

Each --react adds the pages of a react.dev translation (multilingual_react_dev.py), two versions
of each page, before git-scm.com's; for the languages in its LEGACY, those of the translation's
former reactjs.org site too (the same repository's branch `legacy`).

GIT_DIR is a clone of github.com/git/git-scm.com (its gh-pages branch). That site commits
its built content: the Pro Git book in some thirty languages (external/book/content/book/LANG/v2/)
and the translated reference manual (external/docs/content/docs/COMMAND/LANG.html), each an
HTML body under a YAML front matter. Every commit that changed a page is a version of it, so
a page's versions are the near-duplicates a crawler meets in a site's deploy history: real
edits of a translation, and rebuilds that changed only markup.

Per language: every version of each page that has more than one, then pages with one version
(in a fixed pseudo-random order) until there are `--pages`; versions whose text is not in the
language (untranslated chapters, in English) are left out. Each version becomes one file of
the corpus site: the body inside a minimal HTML page (its title, `lang`, a shared header and
footer), with Hugo's `relurl` shortcodes turned into plain links. The output has the layout
and files of ../shared/eval (README there): site/, pages.jsonl, truth.jsonl,
truth_gray.jsonl, extracted_text.jsonl.gz, so its score.py scores a crawl of it
(`--pages/--truth/--gray`). Truth: exact Jaccard of the extracted texts' shingles
(simhash_index.text.tokens.shingles: word 3-shingles, character 5-shingles for CJK text).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import html
import json
import re
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import quote

import trafilatura
import xxhash

from simhash_index.text.tokens import normalize, shingles

from . import multilingual_react_dev as react_dev

REPO_NAME = "git/git-scm.com"
UNTIL = "ee67ac6060f369e01bc8e5b3a1a15a35f8658534"  # the snapshot the committed manifest was built from
# corpus language -> (book folder, manual file name)
SOURCES = {
    "ja": ("ja", "ja"),
    "ko": ("ko", "ko"),
    "ru": ("ru", "ru"),
    "de": ("de", "de"),
    "fr": ("fr", "fr"),
    "es": ("es", "es"),
    "pt": ("pt-br", "pt_BR"),
    "uk": ("uk", "uk"),
    "pl": ("pl", None),
}
NEAR, GRAY = 0.9, 0.8
_SHORTCODE_LINK = re.compile(r'\{\{<\s*relurl\s+"([^"]*)"\s*>\}\}')
_SHORTCODE = re.compile(r"\{\{<.*?>\}\}", re.S)
_TITLE = re.compile(r"^title:\s*(.+)$", re.M)
_SKIPPED = re.compile(r"(/_index\.html|/ch00/)")  # listings, and the book's anchor redirects
_SCRIPTS = {"ja": "\u3040-\u30ff", "ko": "\uac00-\ud7af", "ru": "\u0400-\u04ff", "uk": "\u0400-\u04ff"}
_WORD = re.compile(r"\w+")
_OTHER_LOCALE = re.compile(r"\.[a-z]{2}-[A-Z]{2}\.md$")  # conferences.it-IT.md: another language's page
_UNSAFE = re.compile(r"[?#%&]")  # not in a corpus path: score.py reads a plain line's ? and # as URL parts
TEMPLATE = """<!DOCTYPE html>
<html lang="{lang}">
<head><meta charset="utf-8"><title>{title}</title></head>
<body>
<header><nav><a href="/">Git</a> | <a href="/about">About</a> | <a href="/doc">Documentation</a> |
<a href="/downloads">Downloads</a> | <a href="/community">Community</a></nav></header>
<main id="main">
{body}
</main>
<footer><p>This book is licensed under the Creative Commons Attribution-Non Commercial-Share Alike 3.0
license. The reference manual is licensed under the GNU General Public License version 2.</p></footer>
</body>
</html>
"""


@dataclass(frozen=True)
class Version:
    """One version of one page: the blob of `orig_path` as of `commit`."""

    lang: str
    kind: str  # "book" or "docs"
    orig_path: str
    commit: str
    blob: str

    @property
    def path(self) -> str:
        """The page's path in the corpus site."""
        stem = self.orig_path.rsplit("/", 2)
        name = stem[-1].removesuffix(".html") if self.kind == "book" else stem[-2]
        return f"git-scm/{self.lang}/{self.kind}/{_UNSAFE.sub('_', name)}/{self.commit[:10]}.html"


def git(repo: Path, *args: str) -> str:
    """A git command's output, in the repository whose git directory is `repo`."""
    return subprocess.run(
        ["git", "-c", "core.quotepath=off", f"--git-dir={repo}", *args],
        check=True,
        capture_output=True,
        text=True,
        encoding="utf-8",
    ).stdout


def versions(repo: Path, until: str, lang: str, pathspec: str, kind: str) -> dict[str, list[Version]]:
    """orig_path -> its distinct versions, oldest first, from the commits that changed it."""
    log = git(repo, "log", "--reverse", "--format=C %H", "--raw", "--no-abbrev", "--no-renames", until, "--", pathspec)
    found: dict[str, list[Version]] = defaultdict(list)
    seen: set[str] = set()
    commit = ""
    for line in log.splitlines():
        if line.startswith("C "):
            commit = line[2:]
        elif line.startswith(":"):
            meta, orig_path = line.split("\t", 1)
            blob = meta.split()[3]
            if blob != "0" * 40 and blob not in seen and not _SKIPPED.search(orig_path):
                seen.add(blob)
                found[orig_path].append(Version(lang, kind, orig_path, commit, blob))
    return found


def ordered(found: dict[str, list[Version]]) -> Iterator[Version]:
    """Every version of the pages with several, then single-version pages in a fixed
    pseudo-random order."""
    yield from (v for path in sorted(found) if len(found[path]) > 1 for v in found[path])
    single = sorted((path for path in found if len(found[path]) == 1), key=lambda p: xxhash.xxh64_hexdigest(p.encode()))
    yield from (found[path][0] for path in single)


def render(raw: str, lang: str) -> str:
    """A page around a Hugo content file's body."""
    _, _, rest = raw.partition("---\n")
    front, _, body = rest.partition("\n---\n")
    match = _TITLE.search(front)
    title = match.group(1).strip().strip("\"'") if match else "Git"
    body = _SHORTCODE.sub("", _SHORTCODE_LINK.sub(r"/\1", body))
    return TEMPLATE.format(lang=lang, title=html.escape(title), body=body)


def in_language(text: str, lang: str) -> bool:
    """Whether a text is (mostly) in the language its folder says: untranslated chapters are
    English. Judged by script for ja/ko/ru/uk (a fifth of the letters), else by the language's
    100 commonest words outnumbering English's (wordfreq), not by a language identifier, so
    the corpus can measure those."""
    if lang in _SCRIPTS:
        letters = sum(c.isalpha() for c in text)
        return letters > 0 and len(re.findall(f"[{_SCRIPTS[lang]}]", text)) >= 0.2 * letters
    words = [w.casefold() for w in _WORD.findall(text)]
    own, english = _commonest(lang), _commonest("en")
    shared = own & english  # "in", "a", "die"... say nothing
    return sum(w in own and w not in shared for w in words) > sum(w in english and w not in shared for w in words)


@cache
def _commonest(lang: str) -> frozenset[str]:
    import wordfreq

    return frozenset(wordfreq.top_n_list(lang, 100))


def react_pages(repo: Path, lang: str, site: Path, legacy: bool = False) -> Iterator[tuple[dict[str, object], str]]:
    """Per react.dev page (reactjs.org page if `legacy`), its newest version in the language and
    the newest before it with another text (react_dev.VERSIONS, among the newest
    react_dev.SCANNED), written to `site`."""
    if legacy:
        source, until, content = "reactjs.org", react_dev.LEGACY[lang], react_dev.LEGACY_CONTENT
    else:
        source, until, content = "react.dev", react_dev.PINNED[lang], react_dev.CONTENT
    found = versions(repo, until, lang, f"{content}/*.md", "react")
    for orig_path in sorted(path for path in found if not _OTHER_LOCALE.search(path)):
        kept: list[str] = []
        for version in list(reversed(found[orig_path]))[: react_dev.SCANNED]:
            page = react_dev.render(git(repo, "cat-file", "blob", version.blob), lang).encode("utf-8")
            text = trafilatura.extract(page)
            if not text or text in kept or not in_language(text, lang):
                continue
            kept.append(text)
            path = react_dev.page_path(lang, orig_path, version.commit)
            target = site / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(page)
            yield _row(path, lang, source, react_dev.repo_name(lang), version, page, text), text
            if len(kept) == react_dev.VERSIONS:
                break


def _row(path: str, lang: str, source: str, repo: str, version: Version, page: bytes, text: str) -> dict[str, object]:
    return {
        "path": path,
        "lang": lang,
        "chars": len(text),
        "source": source,
        "scheme": "char5" if lang in ("ja", "ko") else "word3",
        "repo": repo,
        "commit": version.commit,
        "orig_path": version.orig_path,
        "bytes": len(page),
        "text_sha1": hashlib.sha1(text.encode("utf-8")).hexdigest(),
    }


def truth_pairs(rows: list[dict[str, object]], texts: dict[str, str]) -> Iterator[dict[str, object]]:
    """Pairs of one language's pages with Jaccard >= GRAY, exact for identical texts."""
    sets = {row["path"]: frozenset(shingles(normalize(texts[str(row["path"])]))) for row in rows}
    by_lang: dict[object, list[str]] = defaultdict(list)
    for row in rows:
        by_lang[row["lang"]].append(str(row["path"]))
    for lang, paths in by_lang.items():
        paths.sort(key=lambda p: len(sets[p]))
        for i, a in enumerate(paths):
            for b in paths[i + 1 :]:
                if GRAY * len(sets[b]) > len(sets[a]):
                    break  # sorted by size: no later page can be GRAY-similar
                common = len(sets[a] & sets[b])
                jaccard = common / (len(sets[a]) + len(sets[b]) - common)
                if jaccard >= GRAY:
                    x, y = sorted((a, b))
                    exact = texts[x] == texts[y]
                    yield {"a": x, "b": y, "jaccard": round(jaccard, 4), "exact": exact, "lang": lang}


def listing(out: Path, rows: list[dict[str, object]]) -> None:
    """site/index.html -> site/_index/LANG.html -> every page of that language."""
    by_lang: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        by_lang[str(row["lang"])].append(str(row["path"]))
    (out / "site" / "_index").mkdir(parents=True, exist_ok=True)
    links = "".join(f'<li><a href="_index/{lang}.html">{lang}</a></li>\n' for lang in sorted(by_lang))
    (out / "site" / "index.html").write_text(f"<html><body><ul>\n{links}</ul></body></html>\n", encoding="utf-8")
    for lang, paths in by_lang.items():
        items = "".join(f'<li><a href="../{html.escape(quote(p))}">{html.escape(p)}</a></li>\n' for p in paths)
        (out / "site" / "_index" / f"{lang}.html").write_text(
            f"<html><body><ul>\n{items}</ul></body></html>\n", encoding="utf-8"
        )


def build(repo: Path, out: Path, languages: list[str], pages: int, until: str, react: dict[str, Path]) -> None:
    rows: list[dict[str, object]] = []
    texts: dict[str, str] = {}
    for lang, react_repo in sorted(react.items()):
        for legacy in (False, True) if lang in react_dev.LEGACY else (False,):
            before = len(rows)
            for row, text in react_pages(react_repo, lang, out / "site", legacy):
                rows.append(row)
                texts[str(row["path"])] = text
            print(f"{lang}: {len(rows) - before} {'reactjs.org' if legacy else 'react.dev'} pages")
    for lang in languages:
        book, manual = SOURCES[lang]
        found = versions(repo, until, lang, f"external/book/content/book/{book}/v2", "book")
        if manual:
            found.update(versions(repo, until, lang, f"external/docs/content/docs/*/{manual}.html", "docs"))
        kept = skipped = 0
        for version in ordered(found):
            if kept >= pages and len(found[version.orig_path]) == 1:
                break
            page = render(git(repo, "cat-file", "blob", version.blob), lang).encode("utf-8")
            text = trafilatura.extract(page)
            if not text or not in_language(text, lang):
                skipped += 1
                continue
            target = out / "site" / version.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(page)
            texts[version.path] = text
            rows.append(_row(version.path, lang, f"git-scm-{version.kind}", REPO_NAME, version, page, text))
            kept += 1
        print(f"{lang}: {kept} pages; {skipped} versions without text in {lang} left out")
    listing(out, rows)
    write_jsonl(out / "pages.jsonl", rows)
    pairs = list(truth_pairs(rows, texts))
    write_jsonl(out / "truth.jsonl", [p for p in pairs if float(str(p["jaccard"])) >= NEAR])
    write_jsonl(out / "truth_gray.jsonl", [p for p in pairs if float(str(p["jaccard"])) < NEAR])
    with gzip.open(out / "extracted_text.jsonl.gz", "wt", encoding="utf-8") as lines:
        for row in rows:
            lines.write(json.dumps({"path": row["path"], "text": texts[str(row["path"])]}, ensure_ascii=False) + "\n")


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    with path.open("w", encoding="utf-8") as lines:
        for row in rows:
            lines.write(json.dumps(row, ensure_ascii=False) + "\n")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.tools.multilingual_corpus",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--repo", type=Path, required=True, help="git directory of a git/git-scm.com clone")
    p.add_argument("--out", type=Path, required=True, help="directory to write the corpus into")
    p.add_argument("--languages", default=",".join(SOURCES), help=f"comma-separated, of {sorted(SOURCES)}")
    p.add_argument("--pages", type=int, default=250, help="pages per language at least (default 250)")
    p.add_argument("--until", default=UNTIL, help="newest commit of the history read (default: the manifest's)")
    p.add_argument(
        "--react",
        action="append",
        default=[],
        metavar="LANG=GIT_DIR",
        help="a clone of github.com/reactjs/LANG.react.dev for that language, pt-br.react.dev for pt "
        "(repeatable; multilingual_react_dev.py)",
    )
    return p


def main() -> None:
    p = parser()
    args = p.parse_args()
    languages = [lang.strip() for lang in args.languages.split(",") if lang.strip()]
    unknown = sorted(set(languages) - set(SOURCES))
    if unknown:
        raise SystemExit(f"--languages: no source for {unknown}; choose from {sorted(SOURCES)}")
    if args.out.exists() and any(args.out.iterdir()):
        raise SystemExit(f"--out {args.out}: not empty; give a new directory")
    react = {}
    for item in args.react:
        lang, _, path = item.partition("=")
        if lang not in react_dev.PINNED or not path:
            raise SystemExit(f"--react {item!r}: expected LANG=GIT_DIR with LANG one of {sorted(react_dev.PINNED)}")
        react[lang] = Path(path)
    args.out.mkdir(parents=True, exist_ok=True)
    build(args.repo, args.out, languages, args.pages, args.until, react)


if __name__ == "__main__":
    main()
