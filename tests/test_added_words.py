"""What one page adds to another (benchmarks/added_words.py): the truth of the versioned-docs corpus.

Each case is one a reader settled by hand on that corpus (benchmarks/corpus/versioned/README.md)."""

from __future__ import annotations

import doctest

from benchmarks import added_words
from benchmarks.added_words import ADDS, added, category

SECTION = (
    "Full fetching. Most package sources are acquired during the fetch stage; however, some packages define "
    "dependencies within their sources, and releng-tool first fetches a package, extracts it, then fetches "
    "the dependencies it defines."
)
PAGE = " ".join(f"Option {n}: the value of option number {n}, a string, empty by default." for n in range(12))


def test_the_doctests_hold() -> None:
    assert doctest.testmod(added_words).failed == 0


def test_a_new_section_adds_its_words_and_the_older_page_adds_nothing() -> None:
    result = added(PAGE, PAGE + " " + SECTION)
    assert result.b_adds == 34
    assert category(result.b_adds) == "adds"
    assert result.a_adds == 0


def test_a_section_that_moved_adds_nothing() -> None:
    head, tail = PAGE[: len(PAGE) // 2], PAGE[len(PAGE) // 2 :]
    result = added(head + " " + SECTION + " " + tail, SECTION + " " + head + " " + tail)
    assert (result.a_adds, result.b_adds) == (0, 0)


def test_a_renamed_word_here_and_there_adds_nothing() -> None:
    renamed = PAGE.replace("string", "releng-tool.rt string")
    assert added(PAGE, renamed).b_adds == 0


def test_a_latin_name_in_chinese_text_is_one_word_not_its_letters() -> None:
    before = "。".join(f"EgressClusterEndpointSlice 资源第{n}项的字段说明" for n in range(10))
    after = before.replace("EgressClusterEndpointSlice", "EgressEndpointSlice")
    result = added(before, after)
    assert result.cjk
    assert (result.a_adds, result.b_adds) == (0, 0)


def test_chinese_counts_characters() -> None:
    sentence = "如果需要为容器添加多张网卡可以参考多网卡文档中的示例配置和说明"  # 31 characters
    assert added(PAGE + "。第一节说明。", PAGE + "。第一节说明。" + sentence + "。").b_adds == 31 >= ADDS


def test_a_note_repeated_under_each_option_counts_once() -> None:
    note = "Changed in version 2.2: support added for path-like values."
    options = [f"Option {n}: the value of option number {n}, a string, empty by default." for n in range(12)]
    result = added(" ".join(options), " ".join(f"{option} {note}" for option in options))
    assert result.b_adds == 11
