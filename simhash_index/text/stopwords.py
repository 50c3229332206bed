"""Stop words: the commonest function words of English and Chinese, and (`COMMON`) of seven more languages.

Short on purpose: these words say nothing about what a page is about, and
dropping them keeps boilerplate phrases from dominating a fingerprint.
"""

from pathlib import Path


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


ENGLISH = _words(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves
    """
)

CHINESE = _words(
    """
    的 了 和 是 在 就 都 而 及 与 着 或 一个 没有 我们 你们 他们 她们 它们 我 你 他 她 它 这 那 这个 那个
    这些 那些 之 以 于 为 被 把 让 给 从 向 对 也 又 还 但 但是 而且 并 并且 如果 因为 所以 虽然 然后 可以
    会 能 要 将 已 已经 地 得 吗 呢 吧 啊 呀 么 等 等等 其 其中 此 该 各 每 很 更 最 不 没 有 个 上 中 下
    """
)

ALL = ENGLISH | CHINESE


def _common_words() -> frozenset[str]:
    """The words of common_words.txt: the 50 commonest of de, es, fr, pl, pt, ru and uk in wordfreq's
    tables (benchmarks/tools/common_words.py writes it, so an install needs no wordfreq)."""
    lines = Path(__file__).with_name("common_words.txt").read_text(encoding="utf-8").splitlines()
    return frozenset(word for line in lines if line and not line.startswith("#") for word in line.split()[1:])


# the built-in lists and the common words of seven European languages on every page, no language
# identification (docs/accuracy.md, "Portuguese's collisions and the default")
COMMON = ALL | _common_words()

# names a Fingerprinter's `stopwords` accepts, and how its scheme records them
BY_NAME = {"english": ENGLISH, "chinese": CHINESE, "common": COMMON}


def by_name(name: str) -> frozenset[str]:
    """A built-in list by name ("english", "chinese" or "common")."""
    try:
        return BY_NAME[name.strip().lower()]
    except KeyError:
        raise ValueError(
            f"stopwords: {name!r} is not a built-in list; use True (English and Chinese), "
            f"one of {sorted(BY_NAME)}, False, or a collection of words"
        ) from None
