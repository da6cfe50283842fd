"""Why a result was returned, in words a researcher can check.

- `informative_terms`: shared terms worth showing, rarest first, with the filler of scientific prose
  removed ("see", "work", "based", "method", "propose"...: frequent in every paper, so they say
  nothing about *this* match even when they are not classic stop words).
- `reasons`: for related figures, the signals that stand out, in words (same figure type, similar
  picture, related paper topic). The cut-offs are fixed by hand, not fitted.
- `best_sentence`: the sentence of a figure's text that matches a query best, whether it is from
  the caption or the body text, and the character spans of the matched words (for highlighting).
"""
from __future__ import annotations

import re
from typing import Mapping, Sequence

import numpy as np

from app.search.text import analyze

# Stems of words common in scientific prose that are not classic stop words.
BOILERPLATE: frozenset[str] = frozenset(analyze(
    "see seen work works working based base method methods approach approaches propose proposed "
    "proposes using use used uses two three four five example examples plan planned study studies "
    "studied future paper papers present presented presents result results show showed shown "
    "also different differ various new novel first second third final finally respectively "
    "given give gives obtain obtained perform performed consider considered note following follow "
    "illustrate illustrated illustration describe described demonstrate demonstrated compare "
    "compared comparison report reported case cases number numbers value values part parts left "
    "right top bottom panel panels line lines denote denotes denoted represent represents "
    "correspond corresponding order well may can set sets setting settings data experiment "
    "experiments experimental evaluate evaluation analysis overall main detail details indicate "
    "indicates indicated axis large small high low higher lower larger smaller test model models "
    "change changes function effect effects"))

MAX_TERMS = 6
SAME_TYPE_MIN = 0.5     # type signal is 0/1
SIMILAR_PICTURE_MIN = 0.8  # cosine of picture vectors (app/vision/pictures.py)
# rescaled JPEG copies of a figure: cosine with it .910 at the 5th percentile, .992 at the median;
# the nearest other figure of the collection: .946 at the 95th percentile, .980 at the 99th
# (`figsearch eval-image-copies`, naacl2024 + misc), so a few look-alikes also read "same picture"
SAME_PICTURE_MIN = 0.95
RELATED_TOPIC_MIN = 0.5    # cosine of the papers' title + abstract embeddings


COMMON_DF = 0.1  # a term in more than 10% of the figures says little about one match


def informative_terms(stems: Sequence[str], idf: "TermStats | None" = None,
                      max_terms: int = MAX_TERMS) -> list[str]:
    """Shared stems without boilerplate or collection-wide common terms, rarest first (by idf
    when known), at most `max_terms`."""
    kept = [s for s in dict.fromkeys(stems) if s not in BOILERPLATE]
    if idf:
        kept = [s for s in kept if s not in idf.common]
        kept.sort(key=lambda s: -idf.get(s, 0.0))
    return kept[:max_terms]


def looks_like(figure_type: str) -> str:
    """"looks like a pie chart": why a figure answers a query naming its type."""
    name = figure_type.replace("_", " ")
    return "looks like text" if figure_type == "text" else f"looks like {'an' if name[0] in 'aeiou' else 'a'} {name}"


def reasons(signals: Mapping[str, float] | None, figure_type: str | None = None,
            same_paper: bool = False, named_type: bool = False) -> list[str]:
    """Plain-language reasons a related figure was ranked high (paper topic only across papers).
    With `named_type`, `figure_type` is the type a text query named and the figure shows."""
    if not signals:
        return []
    out = []
    if signals.get("type", 0.0) >= SAME_TYPE_MIN and figure_type != "table":  # tables relate only to tables
        if named_type and figure_type:
            out.append(looks_like(figure_type))
        else:
            out.append(f"same figure type ({figure_type.replace('_', ' ')})" if figure_type else "same figure type")
    if signals.get("visual", 0.0) >= SAME_PICTURE_MIN:
        out.append("same picture")
    elif signals.get("visual", 0.0) >= SIMILAR_PICTURE_MIN:
        out.append("similar picture")
    if not same_paper and signals.get("paper", 0.0) >= RELATED_TOPIC_MIN:
        out.append("related paper topic")
    if signals.get("text", 0.0) >= 0.6:
        out.append("similar description")
    return out


_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])")
_WORD_RE = re.compile(r"[^\W_]+")
_COMPOUND_RE = re.compile(r"[^\W_]+(?:-[^\W_]+)+")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_RE.split(text or "") if s.strip()]


def highlight_spans(sentence: str, query_stems: set[str]) -> list[tuple[int, int]]:
    """[start, end) character spans of the words of `sentence` whose stem is a query stem. A
    hyphenated compound whose every indexed part matches is one span, so "t-SNE" is highlighted
    whole although its one-letter part is not indexed."""
    spans = []
    for m in _COMPOUND_RE.finditer(sentence):
        st = analyze(m.group(0))
        if st and all(t in query_stems for t in st):
            spans.append((m.start(), m.end()))
    whole = list(spans)
    for m in _WORD_RE.finditer(sentence):
        if any(a <= m.start() < b for a, b in whole):
            continue
        st = analyze(m.group(0))
        if len(st) == 1 and st[0] in query_stems:
            spans.append((m.start(), m.end()))
    return sorted(spans)


def best_sentence(query: str, caption: str, body: Sequence[str],
                  idf: Mapping[str, float] | None = None, cells: str = "") -> dict | None:
    """The caption or body sentence (or, for a table, the run of its cells) sharing the most
    (idf-weighted) query terms; None if none does.
    Returns {"text", "source": "caption" | "body" | "table", "highlights": [[start, end], ...]}."""
    q = set(analyze(query))
    if not q:
        return None
    best, best_score = None, 0.0
    for source, texts in (("caption", sentences(caption)), ("body", [s for t in body for s in sentences(t)]),
                          ("table", cell_windows(cells))):
        for s in texts:
            shared = q & set(analyze(s))
            score = sum((idf or {}).get(t, 1.0) for t in shared)
            if source == "caption":
                score *= 1.01  # the caption wins ties: it describes the figure itself
            if score > best_score:
                best, best_score = (s, source), score
    if best is None:
        return None
    text, source = best
    if len(text) > 400:
        text = text[:400].rsplit(" ", 1)[0] + " ..."
    return {"text": text, "source": source,
            "highlights": [list(sp) for sp in highlight_spans(text, q)]}


def cell_windows(cells: str, width: int = 24) -> list[str]:
    """A table's cell text (no sentences) as overlapping windows of `width` words."""
    words = cells.split()
    step = width // 2
    return [" ".join(words[i:i + width]) for i in range(0, max(len(words) - step, 1), step)] if words else []


class TermStats(dict):
    """term -> idf of a collection, plus the set of its common terms (df above COMMON_DF)."""
    common: frozenset = frozenset()


def idf_of(lexical) -> TermStats:
    """Term statistics of a LexicalIndex (cached on the index object)."""
    cached = getattr(lexical, "_term_stats", None)
    if cached is None:
        cached = TermStats(zip(lexical.vocab, np.asarray(lexical.idf, dtype=float).tolist()))
        df = np.asarray(lexical.df)
        if lexical.n_docs >= 50:  # in a handful of figures every term is "common"
            cached.common = frozenset(lexical.vocab[i] for i in np.flatnonzero(df > COMMON_DF * lexical.n_docs))
        lexical._term_stats = cached
    return cached
