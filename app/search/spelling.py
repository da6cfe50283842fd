"""Spelling of query words: which words to leave alone and which close word replaces a typo.

A query word is replaced only when it is neither in the collection nor an ordinary English word
(a researcher asking for "recall" in a collection that lacks it wants to be told nothing matches,
not to get results for "real"), and only by a word of the collection's captions that is close
(one edit for short words, two for long ones; a swap of neighbours is one edit) and frequent
(its stem used at least `MIN_COUNT` times in the figure texts), or by a word of the figure
types' names, which a search understands in any collection. The English word list is the one the
pyspellchecker package ships (word frequencies of English, filtered by a dictionary), read
from the installed package: nothing is downloaded.

`Spelling` is the index part holding the collection's side: its caption words with their counts,
computed when an index version is saved (at a million figures that takes seconds, which no query
should wait for) and read back with it.
"""
from __future__ import annotations

import functools
import gzip
import json
import re
import threading
from importlib import resources
from pathlib import Path
from typing import Collection, Iterable, Mapping

from rapidfuzz.distance import OSA

from app.search.text import analyze

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


_WORD_RE = re.compile(r"[a-z]+")
WordsByKey = dict[tuple[str, int], dict[str, int]]


class Spelling:
    """The collection's spelling vocabulary: caption words by (first letter, length), each with
    how often the figure texts use its stem, and the query words it corrects."""

    # words of at most this many captions (evenly spread) make the vocabulary
    sample_captions = 200_000

    def __init__(self, words: Mapping[str, int] | None = None, captions=None, lexical=None):
        """Either the `words` ({word: uses}) of a saved vocabulary, or the `captions` and
        `lexical` index to build it from on first use."""
        self._by_key: WordsByKey | None = None if words is None else self._keyed(words)
        self._source = (captions, lexical)
        self._lock = threading.Lock()

    @staticmethod
    def _keyed(words: Mapping[str, int]) -> WordsByKey:
        out: WordsByKey = {}
        for w, uses in words.items():
            out.setdefault((w[0], len(w)), {})[w] = int(uses)
        return out

    def words(self) -> WordsByKey:
        """Caption words (letters only, 3+ long) whose stem the lexical index knows, with how
        often the figure texts use that stem (captions, mentions, cells), built once."""
        with self._lock:
            if self._by_key is None:
                captions, lex = self._source
                words: set[str] = set()
                n = len(captions)
                for row in range(0, n, max(1, n // self.sample_captions)):
                    words.update(w for w in _WORD_RE.findall(captions[row].lower()) if len(w) >= 3)
                known = lex.term_ids
                uses = lex.collection_counts()
                found: dict[str, int] = {}
                for w in sorted(words):
                    stems = analyze(w)
                    if len(stems) == 1 and stems[0] in known:
                        found[w] = int(uses[known[stems[0]]])
                self._by_key = self._keyed(found)
                self._source = (None, None)
            return self._by_key

    def prepare(self) -> None:
        """Have the vocabulary and the English word list ready before the first query needs them."""
        self.words()
        english_words()

    def suggestion(self, query: str, known: Collection[str], understood: Iterable[str] = ()) -> str | None:
        """The query with each misspelt word replaced by a close, frequent word its captions use,
        or by one of the `understood` words (the figure-type names a search understands in any
        collection). A word whose stems are `known` (the lexical index's terms) or an ordinary
        English word is never replaced ("recall" in a collection without it stays "recall":
        nothing matches, and the page says so). None when no word is replaced, or when a misspelt
        word has no close spelling (a keyboard mash stays unmatched)."""
        english = english_words()
        understood = frozenset(understood)
        out, changed = [], False
        for word in query.split():
            w = word.lower().strip(".,;:!?()[]\"'")
            if all(t in known for t in analyze(word)) or w in english or not w.isalpha():
                out.append(word)
                continue
            near = closest_word(w, self.words(), understood)
            if near is None or not (near in understood or all(t in known for t in analyze(near))):
                return None
            out.append(near)
            changed = True
        return " ".join(out) if changed else None

    # --------------------------------------------------------- persistence
    def save(self, d: str | Path) -> None:
        """words.json: {word: uses} (built now if it was not yet)."""
        d = Path(d)
        d.mkdir(parents=True, exist_ok=True)
        words = {w: n for by_len in self.words().values() for w, n in by_len.items()}
        (d / "words.json").write_text(json.dumps({"format": 1, "words": dict(sorted(words.items()))}))

    @classmethod
    def load(cls, d: str | Path) -> "Spelling":
        return cls(json.loads((Path(d) / "words.json").read_text())["words"])
