"""HanSegmenter cuts every text into exactly jieba.lcut(text, HMM=True)'s words: the words feed the
fingerprint, so a single difference would change fingerprints of existing indexes."""

from __future__ import annotations

import jieba
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_index.text import tokens
from simhash_index.text.segmenter import HanSegmenter

# common characters that make dictionary words, ones jieba knows only as single characters, and the
# edges of what its block expression takes: extension A, compatibility and astral Han, 9FD6-9FFF
# (past jieba's range), digits, Latin letters, its joining punctuation, white space and kana
COMMON = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种"
    "面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本"
    "去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比"
    "或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总"
    "次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做"
    "必战先回则任取据处理"
)
RARE = "㐀㐁㑇䶵豈更𠀀𠀁𪚥龥鿖鿿"
OTHER = "abcXYZ0189+#&._%-"
SEPARATORS = " \t\n\r\u3000，。、！？（）"
KANA = "あいうアイウ"

texts = st.text(alphabet=COMMON + RARE + OTHER + SEPARATORS + KANA, max_size=60)
han_runs = st.text(alphabet=COMMON + RARE, min_size=1, max_size=40)


@pytest.fixture(scope="module")
def segmenter() -> HanSegmenter:
    tokens._han_cut()  # jieba initialised once, its log quiet
    return HanSegmenter(jieba)


@pytest.mark.parametrize(
    "text",
    [
        "我来到北京清华大学",
        "他来到了网易杭研大厦",  # 杭研: not in the dictionary, found by the HMM
        "小明硕士毕业于中国科学院计算所，后在日本京都大学深造",
        "结婚的和尚未结婚的",
        "工信处女干事每月经过下属科室都要亲口交代24口交换机等技术性器件的安装工作",
        "永和服装饰品有限公司",
        "",
        "的",
        "㐀㐁㑇",  # extension A: outside jieba's Han expression, one character at a time
        "中文𠀀字",
        "python3.11的用法 and more",
    ],
)
def test_known_sentences_are_cut_as_jieba_cuts_them(segmenter: HanSegmenter, text: str) -> None:
    assert segmenter.cut(text) == jieba.lcut(text, HMM=True)


@settings(max_examples=300, deadline=None)
@given(text=han_runs)
def test_han_runs_are_cut_as_jieba_cuts_them(segmenter: HanSegmenter, text: str) -> None:
    assert segmenter.cut(text) == jieba.lcut(text, HMM=True)


@settings(max_examples=200, deadline=None)
@given(text=texts)
def test_mixed_texts_are_cut_as_jieba_cuts_them(segmenter: HanSegmenter, text: str) -> None:
    assert segmenter.cut(text) == jieba.lcut(text, HMM=True)


def test_tokens_cut_han_runs_with_the_segmenter() -> None:
    text = "他来到了网易杭研大厦 and then"
    assert tokens.jieba_words(text) == [*jieba.lcut("他来到了网易杭研大厦", HMM=True), "and", "then"]
