"""The react.dev translations as a source of the multilingual corpus (multilingual_corpus.py).

Each of github.com/reactjs/LANG.react.dev keeps its pages as Markdown with JSX components
(src/content/**/*.md) and a long history of small edits: fixes of the translation and merges
of the English site's changes. Two versions of one page a few edits apart are the edited
near-duplicates a crawler meets when it revisits a documentation site, and the pages mix
prose with code samples. A page is rendered to HTML here without a Markdown library: fenced
code becomes <pre>, headings, list items and paragraphs their elements, JSX component lines
are dropped; enough for trafilatura to extract what a browser would show. The site before
react.dev, LANG.reactjs.org, is kept in the same repository (branch `legacy`) in the same
format; it is read for the languages in LEGACY.
"""

from __future__ import annotations

import html
import re

CONTENT = "src/content"
# the snapshot each language's pages were taken from (github.com/reactjs/LANG.react.dev; pt-br for pt)
PINNED = {
    "ja": "7f38231d9d5dddaae6ac51da7d0f173d697f835c",
    "ko": "2e8c873c3cea6703d1c94d01b5d5716259005c8e",
    "fr": "d60169fc8269d36347b340dd1def35c7af8e031d",
    "es": "e91a76a98e0291fd3ae2abeb3da31442981a77f1",
    "ru": "2361adda823b4cb04f0c46aade0303d20e6cb8a4",
    "de": "2e664a02b30e6aefee68f35de685699dee3f6e75",
    "pt": "ac8362350bbc25125a88b9309b54457589023c7e",
    "pl": "29bb57389586ff9b3b20b463041bf48931ff3496",
    "uk": "da7bd45121c470cd4ec997e6c760d5029ac0f75c",
}
# the former LANG.reactjs.org (the repository's branch `legacy`, pages under content/), read where
# the react.dev translation has too few translated pages for 20 edited pairs
LEGACY = {"de": "e43355db00ba18a5ca023598eee3cbd7c8ac39d4", "pl": "7537f5e8ebf1cc1e4bec36dbb627cd089e422d19"}
LEGACY_CONTENT = "content"
_SITES = {"pt": "pt-br"}  # corpus language -> the translation's site name, where they differ
VERSIONS = 2  # per page: the newest version in the language and the newest whose text differs
SCANNED = 8  # versions read per page, newest first, looking for those
TEMPLATE = """<!DOCTYPE html>
<html lang="{lang}">
<head><meta charset="utf-8"><title>{title}</title></head>
<body>
<header><nav><a href="/">React</a> | <a href="/learn">Learn</a> | <a href="/reference/react">Reference</a> |
<a href="/community">Community</a> | <a href="/blog">Blog</a></nav></header>
<main>
<article>
<h1>{title}</h1>
{body}
</article>
</main>
<footer><p>Copyright Meta Platforms, Inc. Content licensed under CC BY 4.0.</p></footer>
</body>
</html>
"""
_TITLE = re.compile(r"^title:\s*(.+)$", re.M)
_FENCE = re.compile(r"^\s*```")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*(\{/\*.*?\*/\})?\s*$")
_ITEM = re.compile(r"^\s*(?:[*-]|\d+\.)\s+(.*)$")
_JSX = re.compile(r"^\s*</?[A-Z][\w.]*(\s[^>]*)?/?>\s*$")  # <Intro>, </Sandpack>, <Diagram ... />
_COMMENT = re.compile(r"\{/\*.*?\*/\}")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_CODE = re.compile(r"`([^`]+)`")
_EMPHASIS = re.compile(r"\*\*?|__")


def repo_name(lang: str) -> str:
    """The GitHub repository of a corpus language's translation."""
    return f"reactjs/{_SITES.get(lang, lang)}.react.dev"


def page_path(lang: str, orig_path: str, commit: str) -> str:
    """A version's path in the corpus site: react.dev/... or, for a LEGACY page, reactjs.org/..."""
    if orig_path.startswith(f"{CONTENT}/"):
        site, name = "react.dev", orig_path.removeprefix(f"{CONTENT}/")
    else:
        site, name = "reactjs.org", orig_path.removeprefix(f"{LEGACY_CONTENT}/")
    return f"{site}/{lang}/{name.removesuffix('.md').replace('/', '-')}/{commit[:10]}.html"


def render(raw: str, lang: str) -> str:
    """A page around a Markdown content file's body."""
    _, _, rest = raw.partition("---\n")
    front, _, body = rest.partition("\n---\n")
    match = _TITLE.search(front)
    title = match.group(1).strip().strip("\"'") if match else "React"
    return TEMPLATE.format(lang=lang, title=html.escape(title), body="\n".join(_blocks(body)))


def _blocks(markdown: str) -> list[str]:
    out: list[str] = []
    paragraph: list[str] = []
    code: list[str] | None = None

    def flush() -> None:
        if paragraph:
            out.append(f"<p>{_inline(' '.join(paragraph))}</p>")
            paragraph.clear()

    for line in markdown.splitlines():
        if code is not None:
            if _FENCE.match(line):
                out.append(f"<pre><code>{html.escape(chr(10).join(code))}</code></pre>")
                code = None
            else:
                code.append(line)
            continue
        if _FENCE.match(line):
            flush()
            code = []
        elif not line.strip() or _JSX.match(line):
            flush()
        elif heading := _HEADING.match(line):
            flush()
            level = len(heading.group(1))
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif item := _ITEM.match(line):
            flush()
            out.append(f"<ul><li>{_inline(item.group(1))}</li></ul>")
        else:
            paragraph.append(line.strip())
    flush()
    return out


def _inline(text: str) -> str:
    text = html.escape(_EMPHASIS.sub("", _COMMENT.sub("", text)), quote=False)
    text = _LINK.sub(lambda m: f'<a href="{m.group(2)}">{m.group(1)}</a>', text)
    return _CODE.sub(r"<code>\1</code>", text)
