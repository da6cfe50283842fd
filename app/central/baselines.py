"""Non-learned rankers of a paper's figures: random, pick-first, tf.idf cosine.

All return one score per candidate (higher = more central), in candidate order.

  random      not a function here: the evaluation reports its exact expectation (evaluate.py)
  pick_first  the figure with the lowest number first (figure order = reading order)
  tfidf       cosine between the tf.idf vectors of a text (abstract, or a sentence) and each caption;
              text analysis = app.search.text.analyze (stop words, Snowball stemming); idf fitted on
              the collection's captions and abstracts (smoothed: log((1 + N) / (1 + df)) + 1),
              sublinear tf (1 + log tf). Ties (e.g. all zero) keep figure order via a tiny
              position tie-breaker added by the callers that rank.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Iterable, Sequence

from app.search.text import analyze


def pick_first_scores(numbers: Sequence[int]) -> list[float]:
    """Higher for lower figure numbers: rank = figure order."""
    return [-float(k) for k in numbers]


class Tfidf:
    """Tiny tf.idf model: fit document frequencies once, then cosine between texts."""

    def __init__(self, idf: dict[str, float] | None = None, n_docs: int = 0):
        self.idf = idf or {}
        self.n_docs = n_docs

    @classmethod
    def fit(cls, docs: Iterable[str]) -> "Tfidf":
        df: Counter = Counter()
        n = 0
        for d in docs:
            n += 1
            df.update(set(analyze(d)))
        idf = {t: math.log((1 + n) / (1 + c)) + 1.0 for t, c in df.items()}
        return cls(idf, n)

    def _default_idf(self) -> float:
        return math.log(1 + self.n_docs) + 1.0  # an unseen term is as rare as it gets

    def vector(self, text: str) -> dict[str, float]:
        tf = Counter(analyze(text))
        dflt = self._default_idf()
        vec = {t: (1.0 + math.log(c)) * self.idf.get(t, dflt) for t, c in tf.items()}
        norm = math.sqrt(sum(v * v for v in vec.values()))
        return {t: v / norm for t, v in vec.items()} if norm > 0 else {}

    def cosine(self, a: dict[str, float], b: dict[str, float]) -> float:
        if len(a) > len(b):
            a, b = b, a
        return sum(v * b.get(t, 0.0) for t, v in a.items())

    def scores(self, text: str, captions: Sequence[str]) -> list[float]:
        q = self.vector(text)
        return [self.cosine(q, self.vector(c)) for c in captions]

    def matrix(self, texts: Sequence[str], captions: Sequence[str]) -> list[list[float]]:
        """Cosine of every (text, caption) pair: one row per text, each caption vectorised once."""
        caps = [self.vector(c) for c in captions]
        rows = []
        for t in texts:
            q = self.vector(t)
            rows.append([self.cosine(q, c) for c in caps])
        return rows

    def pair_scores(self, texts: Sequence[str], captions: Sequence[str]) -> list[float]:
        """Cosine of each (texts[i], captions[i]) pair; equal texts are vectorised once."""
        cache: dict[str, dict[str, float]] = {}

        def vec(t: str) -> dict[str, float]:
            if t not in cache:
                cache[t] = self.vector(t)
            return cache[t]

        return [self.cosine(vec(a), vec(b)) for a, b in zip(texts, captions)]


def fit_tfidf_for_papers(papers) -> Tfidf:
    """idf over every caption and abstract of the given papers (data.PaperInfo)."""
    docs = [p.abstract for p in papers if p.abstract]
    docs += [f.text for p in papers for f in p.figures if f.text]
    return Tfidf.fit(docs)
