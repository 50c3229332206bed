"""jieba's accurate mode (`jieba.lcut(run, HMM=True)`), the same words in about two thirds of the time.

jieba finds a run's words by dynamic programming over its dictionary: from each character, every
dictionary word that starts there; the route of highest summed log frequency wins, ties going to
the longer word; runs of single characters that are not a dictionary word go to its HMM
(`jieba.finalseg`). Its own code builds the candidate lists as a dict of lists and takes each
maximum with a generator of tuples. `HanSegmenter` walks the same candidates in one loop per
character, scoring them by the same float operations in the same order, so the route and the
words are jieba's own; jieba's dictionary, regular expressions and HMM
are used as they are. tests/test_segmenter.py holds the two together.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any


class HanSegmenter:
    """`cut(text)` equals `jieba.lcut(text, HMM=True)`, with jieba's default dictionary as it is
    at each call."""

    def __init__(self, jieba: Any) -> None:
        self._tokenizer = jieba.dt
        self._tokenizer.check_initialized()
        self._blocks = jieba.re_han_default
        self._skip = jieba.re_skip_default
        self._hmm: Callable[[str], Any] = jieba.finalseg.cut

    def cut(self, text: str) -> list[str]:
        """jieba's words of `text`, in order (its `cut`, accurate mode with the HMM)."""
        words: list[str] = []
        for block in self._blocks.split(text):
            if not block:
                continue
            if self._blocks.match(block):
                self._cut_block(block, words)
            else:
                for part in self._skip.split(block):
                    if self._skip.match(part):
                        words.append(part)
                    else:
                        words.extend(part)
        return words

    def _route(self, block: str) -> list[int]:
        """For each position, where the best route's word from there ends (exclusive); a word
        weighs log(frequency) - log(total), as jieba's `calc` computes it."""
        freq: dict[str, int] = self._tokenizer.FREQ
        logtotal, log = math.log(self._tokenizer.total), math.log
        alone = math.log(1) - logtotal  # a character that is no word: jieba counts it once
        size = len(block)
        scores = [0.0] * (size + 1)
        ends = [0] * (size + 1)
        for start in range(size - 1, -1, -1):
            best_score = alone + scores[start + 1]
            best_end = start + 1
            found = False
            end = start + 1
            fragment = block[start]
            count = freq.get(fragment)
            while count is not None:  # jieba's prefix dictionary: a count of 0 marks a prefix
                if count:
                    score = log(count) - logtotal + scores[end]
                    if not found or score >= best_score:  # jieba's max of (score, end): ties to the later end
                        best_score, best_end, found = score, end, True
                if end == size:
                    break
                end += 1
                fragment = block[start:end]
                count = freq.get(fragment)
            scores[start] = best_score
            ends[start] = best_end
        return ends

    def _cut_block(self, block: str, words: list[str]) -> None:
        """jieba's `__cut_DAG`: the route's words, with runs of single characters that are not
        themselves a word handed to the HMM."""
        ends = self._route(block)
        single = ""
        position = 0
        while position < len(block):
            end = ends[position]
            if end - position == 1:
                single += block[position]
            else:
                if single:
                    self._flush(single, words)
                    single = ""
                words.append(block[position:end])
            position = end
        if single:
            self._flush(single, words)

    def _flush(self, single: str, words: list[str]) -> None:
        if len(single) == 1:
            words.append(single)
        elif not self._tokenizer.FREQ.get(single):
            words.extend(self._hmm(single))
        else:
            words.extend(single)
