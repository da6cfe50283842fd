"""Spelling of query words: which words to leave alone and which close word replaces a typo.

A query word is replaced only when it is neither in the collection nor an ordinary English word
(a researcher asking for "recall" in a collection that lacks it wants to be told nothing matches,
not to get results for "real"), and only by a word of the collection's captions that is close
(one edit for short words, two for long ones; a swap of neighbours is one edit) and frequent
(its stem used at least `MIN_COUNT` times in the figure texts), or by a word of the figure
types' names, which a search understands in any collection. The English word list is the one the
pyspellchecker package ships (word frequencies of English, filtered by a dictionary), read
from the installed package: nothing is downloaded.
"""
from __future__ import annotations

import functools
import gzip
import json
from importlib import resources
from typing import Collection, Mapping

from rapidfuzz.distance import OSA

MIN_COUNT = 2  # a replacement word's stem occurs at least this often in the collection's figure texts


@functools.lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """Ordinary English words (lower case), from the word list installed with pyspellchecker."""
    with resources.files("spellchecker").joinpath("resources/en.json.gz").open("rb") as fh:
        return frozenset(json.loads(gzip.decompress(fh.read()).decode("utf-8")))


def max_edits(word: str) -> int:
    """Edits allowed between a typo and its replacement: 1 up to six letters, then 2."""
    return 1 if len(word) <= 6 else 2


def closest_word(word: str, by_key: Mapping[tuple[str, int], Mapping[str, int]],
                 understood: Collection[str] = ()) -> str | None:
    """The word replacing the typo `word` (lower case): among caption words with the same first
    letter within `max_edits` (optimal string alignment distance) used `MIN_COUNT` times or more,
    and the `understood` words (counted as used that often), the fewest edits first, then the
    commonest; None when there is none."""
    limit = max_edits(word)
    best: tuple[int, int, str] | None = None
    extra = {w: MIN_COUNT for w in understood if w[:1] == word[:1] and abs(len(w) - len(word)) <= limit}
    for d in range(-limit, limit + 1):
        words = dict(by_key.get((word[:1], len(word) + d), {}))
        for w, count in extra.items():
            if len(w) == len(word) + d:
                words[w] = max(words.get(w, 0), count)
        for cand, count in words.items():
            if count < MIN_COUNT:
                continue
            edits = OSA.distance(word, cand, score_cutoff=limit)
            if edits > limit:
                continue
            key = (edits, -count, cand)
            if best is None or key < best:
                best = key
    return None if best is None else best[2]
