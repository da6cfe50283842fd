"""Match reference strings to the titles of papers in the collection.

A reference "cites" a collection paper when the paper's normalised title
occurs (fuzzily) inside the normalised reference string.  To keep this fast
for thousands of references against thousands of titles, candidate titles are
first selected through an inverted index over their informative (rare) tokens;
only candidates sharing most of those tokens with the reference are scored
with ``rapidfuzz.fuzz.partial_ratio_alignment``.

Note: :class:`TitleMatcher` knows nothing about who wrote a reference; a
paper's own title can appear in its own reference list only by accident, and
the caller (``link_citations`` here) must drop self-matches.
"""
from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections import defaultdict
from typing import Hashable, Iterable

from rapidfuzz import fuzz

__all__ = ["normalise_title", "TitleMatcher", "link_citations"]

MIN_TITLE_WORDS = 3
MIN_TITLE_CHARS = 15
MIN_SCORE = 90.0

_STOP = {
    "a", "an", "the", "of", "for", "and", "in", "on", "to", "with", "via", "by", "from", "at", "as",
    "is", "are", "its", "into", "using", "towards", "toward", "or", "vs", "we", "do", "can", "how",
}
_NON_ALNUM_RE = re.compile(r"[^0-9a-z]+")
_VENUE_RE = re.compile(r"(?:in|proc|arxiv|journal|ieee|acm|corr|advances|international|springer)\b")
_HYPHEN_BREAK_RE = re.compile(r"(?<=[a-z])[-\u2010\u2011\u00ad]\s+(?=[a-z])")


def _strip_accents(s: str) -> str:
    if s.isascii():  # most references: nothing to decompose (each new paper rescans them all)
        return s
    s = unicodedata.normalize("NFKD", s)
    return "".join(c for c in s if not unicodedata.combining(c))


def normalise_title(s: str) -> str:
    """Lowercase, NFKD without accents, non-alphanumerics to space, collapsed."""
    s = _strip_accents(s or "").lower()
    return " ".join(_NON_ALNUM_RE.sub(" ", s).split())


_TOKEN_RE = re.compile(r"[a-z0-9]+")


def _clean_reference(ref: str) -> str:
    """Lower-case reference without accents, line-break hyphenation undone ("recom- mendation")."""
    return _HYPHEN_BREAK_RE.sub("", _strip_accents(ref or "").lower())


def _token_spans(raw: str) -> list[tuple[int, int, int]]:
    """(start in the normalised reference, start in `raw`, end in `raw`) of each token of `raw`."""
    spans: list[tuple[int, int, int]] = []
    n = 0
    for m in _TOKEN_RE.finditer(raw):
        spans.append((n, m.start(), m.end()))
        n += m.end() - m.start() + 1
    return spans


class TitleMatcher:
    """Fuzzy "title contained in reference" matcher over a fixed set of titles."""

    def __init__(self, titles: dict[Hashable, str], min_score: float = MIN_SCORE):
        self.min_score = min_score
        self._titles: dict[Hashable, str] = {}
        self._keys: dict[Hashable, tuple[str, ...]] = {}
        df: dict[str, int] = defaultdict(int)
        for pid, title in titles.items():
            norm = normalise_title(title)
            words = norm.split()
            if len(words) < MIN_TITLE_WORDS or len(norm) < MIN_TITLE_CHARS:
                continue  # too short / generic to match safely
            self._titles[pid] = norm
            for w in set(words):
                df[w] += 1
        n = max(len(self._titles), 1)
        common = max(50, int(0.02 * n))
        self._index: dict[str, list[Hashable]] = defaultdict(list)
        for pid, norm in self._titles.items():
            toks = {w for w in norm.split() if w not in _STOP and len(w) > 1}
            keys = {w for w in toks if df[w] <= common} or toks or set(norm.split())
            self._keys[pid] = tuple(sorted(keys))
            for w in keys:
                self._index[w].append(pid)

    def __len__(self) -> int:
        return len(self._titles)

    def _candidates(self, ref_tokens: set[str]) -> Iterable[Hashable]:
        hits: dict[Hashable, int] = defaultdict(int)
        for w in ref_tokens:
            for pid in self._index.get(w, ()):
                hits[pid] += 1
        for pid, h in hits.items():
            k = len(self._keys[pid])
            # the informative tokens must be present; allow one (or ~30% in long titles) mangled
            need = k if k <= 2 else (k - 1 if k <= 5 else -(-7 * k // 10))
            if h >= need:
                yield pid

    def match(self, reference: str) -> list[tuple[Hashable, float]]:
        """Collection papers whose title appears in ``reference``, best first."""
        raw = _clean_reference(reference)
        words = _TOKEN_RE.findall(raw)
        ref = " ".join(words)
        if len(ref) < MIN_TITLE_CHARS:
            return []
        tokens = set(words)
        # tokens of hyphen-split words joined back ("click through" -> "clickthrough")
        tokens.update(a + b for a, b in zip(words, words[1:]))
        out: list[tuple[Hashable, float, str]] = []
        spans = None  # token positions, needed only once a title aligns
        for pid in self._candidates(tokens):
            title = self._titles[pid]
            al = fuzz.partial_ratio_alignment(title, ref, score_cutoff=self.min_score - 0.01)
            if al is None:
                continue
            score = al.score
            if len(title) < 30 and score < 95:
                continue  # short titles must match (almost) exactly
            spans = spans if spans is not None else _token_spans(raw)
            if not self._clean_end(raw, spans, al.dest_end):
                continue
            out.append((pid, round(score, 1), title))
        if len(out) > 1:
            # when one matched title is contained in another matched title, keep the longer
            out = [
                o for o in out
                if not any(o is not p and len(p[2]) > len(o[2]) and o[2] in p[2] for p in out)
            ]
        out.sort(key=lambda t: (-t[1], -len(t[2])))
        return [(pid, score) for pid, score, _ in out]

    @staticmethod
    def _clean_end(raw: str, spans: list[tuple[int, int, int]], end: int) -> bool:
        """False when the title is only the beginning of a longer title in the
        reference (e.g. "neural collaborative filtering" inside "Neural
        Collaborative Filtering vs. Matrix Factorization Revisited"): the
        matched text must be followed by punctuation, a number or the end."""
        # the token in which the alignment ends (an alignment may stop inside a word)
        k = bisect_right([sp[0] for sp in spans], max(end - 1, 0)) - 1
        if k < 0 or k + 1 >= len(spans):
            return True
        i = spans[k][2]
        while i < len(raw) and raw[i] == " ":
            i += 1
        if i >= len(raw) or not raw[i].isalpha():
            return True
        # a plain word follows: accept only if it looks like a venue word
        return bool(_VENUE_RE.match(raw, i))


def link_citations(
    refs_by_paper: dict[int, list[str]], titles: dict[int, str], min_score: float = MIN_SCORE
) -> list[tuple[int, int, str, float]]:
    """(citing_id, cited_id, reference, score) for every reference that matches a
    collection title; no self-links, one link per (citing, cited) keeping the best."""
    matcher = TitleMatcher(titles, min_score=min_score)
    best: dict[tuple[int, int], tuple[str, float]] = {}
    for citing, refs in refs_by_paper.items():
        for ref in refs:
            for cited, score in matcher.match(ref):
                if cited == citing:
                    continue
                key = (citing, cited)
                if key not in best or score > best[key][1]:
                    best[key] = (ref, score)
    return sorted(
        ((c, d, r, s) for (c, d), (r, s) in best.items()), key=lambda t: (t[0], -t[3], t[1])
    )
