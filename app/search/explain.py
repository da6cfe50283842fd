"""Why a result was returned, in words a researcher can check.

- `informative_terms`: shared terms worth showing, rarest first, with the filler of scientific prose
  removed ("see", "work", "based", "method", "propose"...: frequent in every paper, so they say
  nothing about *this* match even when they are not classic stop words).
- `reasons`: for related figures, the signals that stand out, in words (same kind of figure,
  similar picture, the same picture as one of its panels, related paper topic); for results of a query naming a figure type, whether
  they show it ("looks like a box plot", less surely "may show a box plot"). The cut-offs are
  fixed by hand, not fitted.
  `related_reasons` adds, for figures of other papers, the words printed inside both figures, the
  words both captions use and the words both papers' titles use.
- `best_sentence`: the sentence of a figure's text that matches a query best, from the body text
  about this figure (the caption only when nothing else matches: a card shows the caption already),
  and the character spans of the matched words (for highlighting).
"""
from __future__ import annotations

import re
from typing import Container, Mapping, Sequence

import numpy as np

from app.labels import mentioned_numbers
from app.search.fusion import SAME_PICTURE_MIN
from app.search.looks import panel_letter
from app.search.plots import plotted
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
SAME_TYPE_MIN = 0.5     # related figures: type signal is 0/1; a query naming a type: its probability, from even odds
SIMILAR_PICTURE_MIN = 0.8  # cosine of picture vectors (app/vision/pictures.py)
RELATED_TOPIC_MIN = 0.5    # cosine of the papers' title + abstract embeddings


COMMON_DF = 0.1  # a term in more than 10% of the figures says little about one match


def informative_terms(stems: Sequence[str], idf: "TermStats | None" = None,
                      max_terms: int = MAX_TERMS, topical: bool = True) -> list[str]:
    """Shared stems without boilerplate or collection-wide common terms, rarest first (by idf
    when known), at most `max_terms`; with `topical`, also without words of ordinary prose (spread
    over the papers as by chance, `TermStats.spread_evenly`): what two texts share says what both
    are about only through words of a topic. A query's own words are kept (`topical=False`)."""
    kept = [s for s in dict.fromkeys(stems) if s not in BOILERPLATE]
    if idf:
        kept = [s for s in kept if s not in idf.common and not (topical and idf.spread_evenly(s))]
        kept.sort(key=lambda s: -idf.get(s, 0.0))
    return kept[:max_terms]


def looks_like(figure_type: str, sure: bool = True) -> str:
    """"looks like a pie chart" (`sure`) or "may show a pie chart": why a figure answers a query
    naming its type."""
    name = figure_type.replace("_", " ")
    verb = "looks like" if sure else "may show"
    return f"{verb} text" if figure_type == "text" else f"{verb} {'an' if name[0] in 'aeiou' else 'a'} {name}"


def shown_named_type(named_types: Sequence[str], shown: Sequence[Mapping] | None) -> str | None:
    """The named type a figure shows with the highest score (`shown`: its stored types list,
    best first), else the first named type (None when the query names none)."""
    for t in shown or []:
        if t.get("type") in named_types:
            return t["type"]
    return named_types[0] if named_types else None


def named_type_reason(signals: Mapping[str, float], figure_type: str | None) -> str | None:
    """For a text query naming figure types, what a result's picture says about the named type
    `figure_type` (the one it shows best): "looks like a box plot" when its classifier score
    for it reaches SAME_TYPE_MIN, "may show a box plot" when the figure passes only the search's
    own rule for showing it (`type_shown`: the score reaches the ranking's `type_match_min`, or it is
    the dominant type), nothing when it does not show the type (found by its words or meaning)."""
    if not figure_type:
        return None
    if signals.get("type", 0.0) >= SAME_TYPE_MIN:
        return looks_like(figure_type)
    if signals.get("type_shown", 0.0) > 0:
        return looks_like(figure_type, sure=False)
    return None


def is_same_picture(signals: Mapping[str, float]) -> bool:
    """A copy of the query's picture: the searcher's verdict (perceptual hashes, app/search/looks.py)
    where it gave one, else the picture-vector cosine rule."""
    if signals.get("same_picture") is not None:
        return signals["same_picture"] >= 0.5
    return signals.get("visual", 0.0) >= SAME_PICTURE_MIN


def reasons(signals: Mapping[str, float] | None, figure_type: str | None = None,
            same_paper: bool = False, named_type: bool = False) -> list[str]:
    """Plain-language reasons a related figure was ranked high (paper topic only across papers).
    With `named_type`, `figure_type` is the type a text query named and the figure shows best
    (`named_type_reason`)."""
    if not signals:
        return []
    out = []
    if named_type:
        said = named_type_reason(signals, figure_type)
        if said:
            out.append(said)
    elif signals.get("type", 0.0) >= SAME_TYPE_MIN and figure_type != "table":  # tables relate only to tables
        out.append(f"same kind of figure ({figure_type.replace('_', ' ')})" if figure_type else "same kind of figure")
    if is_same_picture(signals):
        out.append("same picture")
    elif panel_letter(signals.get("same_panel", 0.0)):
        out.append(f"same picture as panel ({panel_letter(signals['same_panel'])}) of this figure")
    elif signals.get("visual", 0.0) >= SIMILAR_PICTURE_MIN:
        out.append("similar picture")
    if not same_paper and signals.get("paper", 0.0) >= RELATED_TOPIC_MIN:
        out.append("related paper topic")
    if signals.get("text", 0.0) >= 0.6:
        out.append("similar description")
    return out


SHARED_CAPTION_TERMS = 3


def related_reasons(signals: Mapping[str, float] | None, figure_type: str | None, caption: str, other_caption: str,
                    title: str = "", other_title: str = "", idf: "TermStats | None" = None,
                    words: str = "", other_words: str = "", words_idf: "TermStats | None" = None) -> list[str]:
    """Reasons in words for a related figure of another paper, each checkable on its card: its
    kind (`reasons`: "same kind of figure (box plot)", "similar picture", "similar description"),
    what both figures print inside them (`words`, `other_words`: their region words; "both show:
    recall, embedding size", `inside_reason`), what both captions name ("both captions mention
    recall@k, embedding size": informative words both use, rarest first) and, when the two papers
    are close in topic, what their titles share ("related paper: both on bidding, advertising";
    "related paper topic" when the titles share no informative word)."""
    out = [r for r in reasons(signals, figure_type) if r != "related paper topic"]
    plots, said = plot_reason(caption, other_caption)
    if plots:
        out.append(plots)
    inside, printed = inside_reason(words, other_words, words_idf, said) \
        if (signals or {}).get("figure_words", 1.0) >= SHARED_INSIDE_MIN else (None, set())
    if inside:
        out.append(inside)
        said = said | printed
    shared = [w for w in shared_words(caption, other_caption, idf, SHARED_CAPTION_TERMS + len(said))
              if not set(analyze(w)) <= said][:SHARED_CAPTION_TERMS]
    if shared:
        out.append("both captions mention " + ", ".join(shared))
    if signals and signals.get("paper", 0.0) >= RELATED_TOPIC_MIN:
        on = shared_words(other_title, title, idf, SHARED_CAPTION_TERMS)
        out.append(f"related paper: both on {', '.join(on)}" if on else "related paper topic")
    return out


SHARED_INSIDE_TERMS = 4
SHARED_INSIDE_MIN = 0.1  # figure_words cosine below which one shared label is chance ("layer", "step")


def inside_reason(words: str, other_words: str, idf: "TermStats | None" = None,
                  said: set[str] = frozenset()) -> tuple[str | None, set[str]]:
    """What both figures print inside them (axis titles, legends, node labels): "both show:
    recall, embedding size", the informative words both use (rarest first, filler and words
    common to many figures removed, none of the stems in `said`), as the other figure writes
    them. Returns (reason or None, the stems it names)."""
    if not words or not other_words:
        return None, set()
    theirs = set(analyze(words))
    stems = [t for t in dict.fromkeys(analyze(other_words)) if t in theirs and t not in said and t not in CHART_WORDS]
    stems = informative_terms(stems, idf, SHARED_INSIDE_TERMS)
    shown = [as_both_print(stem, a, b)
             for stem, a, b in zip(stems, surface_words(stems, other_words), surface_words(stems, words))]
    if len(shown) != len(stems):
        shown = surface_words(stems, other_words, words)
    printed = [{m.group(0).lower() for m in _TOKEN_RE.finditer(t)} for t in (words, other_words)]
    # a prefix of compounds ("multi" of Multi-Task and Multi-gate) names nothing
    prefixes = {w for w in shown if w.lower() in BOUND_PARTS and not all(w.lower() in p for p in printed)}
    shown = [w for w in dict.fromkeys(shown) if w not in prefixes]
    if not shown:
        return None, set()
    return "both show: " + ", ".join(shown), set(stems) - {st for w in prefixes for st in analyze(w)}


def as_both_print(stem: str, other: str, mine: str) -> str:
    """A word as both figures print it ("HR@10" in both), else the part both print: the measure
    without its cut-off ("HR" for HR@10 and HR@50), the word alone that the other prints inside a
    compound ("DeepFM" for DeepFM and DeepFM-FE), so that the reason is true of both figures."""
    if other.lower() == mine.lower():
        return other
    other, mine = _AT_SUFFIX.sub("", other), _AT_SUFFIX.sub("", mine)
    if other.lower() == mine.lower():
        return other
    mine_parts = {p.lower() for p in mine.split("-")}
    common = [p for p in other.split("-") if p.lower() in mine_parts and stem in analyze(p)]
    return display_form(common[0]) if common else other


# what every chart is: "both show curve" says nothing
CHART_WORDS: frozenset[str] = frozenset(analyze("curve curves plot plots chart charts graph figure diagram"))


def plot_reason(caption: str, other_caption: str) -> tuple[str | None, set[str]]:
    """What both charts plot, as their captions say it (plots.py): "both plot recall against
    embedding size" when they name the same measure and the same variable ("both show t-SNE
    visualization across distortions" when neither caption says the measure is plotted against
    the variable), "both show recall" or "both vary embedding size" when they share one of the
    two; the words as the other figure's caption writes them. Returns (reason or None, the stems
    it names)."""
    mine, theirs = plotted(caption), plotted(other_caption)
    # the same measure (variable) only when both phrases end in the same head noun
    measure = (mine.measure_stems & theirs.measure_stems) - BOILERPLATE - CHART_WORDS \
        if mine.measure_head and mine.measure_head == theirs.measure_head else set()
    against = (mine.against_stems & theirs.against_stems) - BOILERPLATE \
        if mine.against_head and mine.against_head == theirs.against_head else set()
    m, x = _words_in(theirs.measure, measure), _words_in(theirs.against, against)
    if m and x:
        how = "plot {} against {}" if mine.curve or theirs.curve else "show {} across {}"
        return "both " + how.format(m, x), measure | against
    if m:
        return f"both show {m}", measure
    if x:
        return f"both vary {x}", against
    return None, set()


def _words_in(phrase: str, stems: set[str]) -> str:
    """The words of `phrase` whose stems are all in `stems`, in the phrase's order."""
    words = [m.group(0) for m in _TOKEN_RE.finditer(phrase or "")]
    kept = [w for w in words if analyze(w) and set(analyze(w)) <= stems]
    capitals = in_capitals(phrase)
    return " ".join(display_form(w, capitals) for w in dict.fromkeys(kept))


# English prefixes that are no word alone: what "Multi-Task" and "Multi-Channel" share ("multi"),
# or "Self-Attentive" and "Self-Supervised" ("self"), names no topic.
BOUND_PREFIXES: frozenset[str] = frozenset(
    "multi self semi non pre post co inter intra sub meta auto bi tri uni hyper anti pseudo quasi mono "
    "poly mid cross".split())
# Second parts of compounds that are no topic alone either: what "step-wise" and "frame-wise" share
# ("wise"), or "word-level" and "sentence-level" ("level").
BOUND_SUFFIXES: frozenset[str] = frozenset(
    "wise level based like aware specific driven oriented free style grained scale wide".split())
BOUND_PARTS = BOUND_PREFIXES | BOUND_SUFFIXES


def words_both_print(stems: Sequence[str], text: str, other: str, *more: str, text_words: str = "",
                     other_words: str = "") -> list[str]:
    """Shared stems as words (`surface_words` of `text`, `other` and `more`), each true of both
    sides: the words a related figure's card names ("both mention", "both show:", "both captions
    mention", "related paper: both on"; `text`: the query figure's texts; `other`, `more`: the
    related figure's). A word only one side prints ("SELF-GUARD" beside "self-supervision",
    "step-wise" beside "frame-wise", "HR@10" beside "HR@50") is named by the part both print
    (`as_both_print`), and a part that is a prefix or second part of compounds alone (BOUND_PARTS:
    "self", "wise") names nothing: left out.
    `text_words`, `other_words`: more text of either side (the words printed inside the query
    figure, the related figure's mentions), read for what it prints but not for the words' forms.
    A stem one side does not print (matched in text not given here) keeps its word."""
    return _named_by_both(stems, text, other, *more, text_words=text_words, other_words=other_words)[0]


def _named_by_both(stems: Sequence[str], text: str, other: str, *more: str, text_words: str = "",
                   other_words: str = "") -> tuple[list[str], int]:
    """`words_both_print`, and how many of its words were left out (bound parts)."""
    theirs_text, mine_text = " ".join((other, *more, other_words)), f"{text} {text_words}"
    printed = [{m.group(0).lower() for m in _TOKEN_RE.finditer(t or "")} for t in (mine_text, theirs_text)]
    sides = (set(analyze(mine_text)), set(analyze(theirs_text)))

    def in_both(word: str) -> bool:
        return all(word.lower() in p for p in printed)

    out, left_out = [], 0
    for word in surface_words(stems, text, other, *more):
        shown = word
        stem = next((st for st in stems if st in analyze(word)), None)
        if ("-" in word or "@" in word) and not in_both(word) and stem is not None \
                and all(stem in side for side in sides):
            shown = as_both_print(stem, surface_words([stem], theirs_text)[0], surface_words([stem], mine_text)[0])
            if "-" in shown and not in_both(shown):
                # a compound one side lacks ("state-of-the-art" beside "States"): the part with the stem
                shown = next((display_form(p) for p in shown.split("-") if stem in analyze(p)), shown)
        if shown.lower() in BOUND_PARTS and not in_both(shown):
            left_out += 1  # a bare prefix or second part of compounds, on one side at least
            continue
        out.append(shown)
    return list(dict.fromkeys(out)), left_out


def shared_words(text: str, other: str, idf: "TermStats | None" = None, n: int = MAX_TERMS) -> list[str]:
    """Informative words both texts use (the `n` rarest stems, `informative_terms`), as both
    print them (`words_both_print`: "shot" for "few-shot" beside "zero-shot", "T5" for "T5-3B"
    beside "FLAN-T5"); a word left out there (a bare prefix or second part of compounds: "multi"
    of "multi-task" and "multi-channel") gives its place to the next rarest stem."""
    theirs = set(analyze(other))
    candidates = [t for t in dict.fromkeys(analyze(text)) if t in theirs]
    left_out = 0  # words left out: as many more stems are read, so that n words are named if there are n
    while True:
        stems = informative_terms(candidates, idf, n + left_out)
        words, dropped = _named_by_both(stems, text, other)
        if dropped == left_out or len(stems) < n + left_out:
            return words
        left_out = dropped


def surface_words(stems: Sequence[str], *texts: str) -> list[str]:
    """Each stem as written in `texts`, in the form a card shows it (`display_form`): the shortest
    word with that stem alone, else the shortest hyphenated compound containing it ("multi" ->
    "multi-task"), a word of a text in capitals ("POST-CLICK CONVERSION") only when no other text
    has one; duplicates dropped."""
    best: dict[str, tuple[tuple, str]] = {}
    for text in texts:
        capitals = in_capitals(text)
        for m in _TOKEN_RE.finditer(text or ""):
            word = m.group(0)
            st = analyze(word)
            for stem in set(st) & set(stems):
                rank = (0 if len(st) == 1 else 1, capitals, len(word))
                if stem not in best or rank < best[stem][0]:
                    best[stem] = (rank, display_form(word, capitals))
    words = list(dict.fromkeys(best[s][1] if s in best else s for s in stems))
    parts = {p.lower() for w in words if "-" in w for p in w.split("-")}
    return [w for w in words if "-" in w or w.lower() not in parts]  # "task" is in "multi-task"


ACRONYM_MAX = 4  # in a text set in capitals, a longer capitalised word is taken for a plain word


def display_form(word: str, capitals: bool = False) -> str:
    """One readable form for words taken from titles, captions and figures: title case is not part
    of a word ("Post-Click" -> "post-click"), acronyms (AUC, CTR) and mixed case (t-SNE, Recall@K)
    are; in a text set in capitals (`capitals`) only a short unhyphenated word stays an acronym."""
    if capitals and word.isupper() and (len(word) > ACRONYM_MAX or "-" in word):
        return word.lower()
    return "-".join(p.lower() if p[:1].isupper() and p[1:].islower() else p for p in word.split("-"))


def in_capitals(text: str) -> bool:
    """Whether a text is set in capitals (a title "ENTIRE SPACE MULTI-TASK MODEL"): most of its
    words of several letters are upper case."""
    words = [w for w in _WORD_RE.findall(text or "") if len(w) > 1 and not w.isdigit()]
    return len(words) >= 3 and sum(w.isupper() for w in words) > 0.6 * len(words)


_TOKEN_RE = re.compile(r"[^\W_]+(?:[@-][^\W_]+)*")
_AT_SUFFIX = re.compile(r"@[^\W_]+$")  # the cut-off of a measure: "@10" of HR@10
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
                  idf: Mapping[str, float] | None = None, cells: str = "",
                  about: tuple[str, int] | None = None, seen: Container[str] = ()) -> dict | None:
    """The sentence to show under a result: the body sentence (or, for a table, the run of its
    cells) sharing the most (idf-weighted) query terms; the caption's best sentence only when no
    other text matches, as the card shows the caption already. A body sentence that names other
    figures or tables but not this one (`about`: kind, number) describes another figure and is
    never chosen; nor is a sentence in `seen` (shown under an earlier result), so one generic
    sentence ("Error bars are omitted for clarity.") is not every result's snippet. None if
    nothing else matches.
    Returns {"text", "source": "caption" | "body" | "table", "highlights": [[start, end], ...]}."""
    q = set(analyze(query))
    if not q:
        return None

    def score(s: str) -> float:
        return 0.0 if s in seen else sum((idf or {}).get(t, 1.0) for t in q & set(analyze(s)))

    best = None
    for source, texts in (("body", [s for t in body for s in sentences(t) if _about(s, about)]),
                          ("table", cell_windows(cells)), ("caption", sentences(caption))):
        scored = [(score(s), -i, s) for i, s in enumerate(texts)]
        top = max(scored, default=None)
        if top is not None and top[0] > 0 and (best is None or top[0] > best[0]):
            best = (top[0], top[2], source)
        if best is not None and source == "table":
            break  # a sentence besides the caption matched: the caption stays where it is shown
    if best is None:
        return None
    _, text, source = best
    if len(text) > 400:
        text = text[:400].rsplit(" ", 1)[0] + " ..."
    return {"text": text, "source": source,
            "highlights": [list(sp) for sp in highlight_spans(text, q)]}


def _about(sentence: str, about: tuple[str, int] | None) -> bool:
    """False when the sentence refers to figures or tables and not to `about` (kind, number)."""
    if about is None:
        return True
    refs = mentioned_numbers([sentence])
    return not refs or about in refs


def cell_windows(cells: str, width: int = 24) -> list[str]:
    """A table's cell text (no sentences) as overlapping windows of `width` words."""
    words = cells.split()
    step = width // 2
    return [" ".join(words[i:i + width]) for i in range(0, max(len(words) - step, 1), step)] if words else []


class TermStats(dict):
    """term -> idf of a collection, plus the set of its common terms (df above COMMON_DF) and,
    when the papers of its figures are known, how a term spreads over papers (`spread_evenly`)."""
    common: frozenset = frozenset()
    _lexical = None
    _paper_ids: np.ndarray | None = None
    _paper_sizes: np.ndarray | None = None

    def clustering(self, term: str) -> float | None:
        """How much fewer papers use `term` than would if its figures were drawn at random (log2
        of expected / observed papers: Church & Gale's residual idf, counted over papers). A word
        of a topic ("conversion", "BLEU") recurs in the figures of the papers on it; a word of
        ordinary prose ("according", "several") turns up once here, once there, as by chance.
        None when the papers are unknown or the term is not in the index."""
        if self._paper_ids is None or term not in self:
            return None
        cache = self.__dict__.setdefault("_clustering", {})
        if term not in cache:
            lex, t = self._lexical, self._lexical.term_ids[term]
            docs, _ = lex.search_terms(np.array([t]), np.array([1.0]), k=int(lex.df[t]))
            papers = len(np.unique(self._paper_ids[docs]))
            share = self._paper_sizes / len(self._paper_ids)
            expected = float(np.sum(1.0 - (1.0 - share) ** len(docs)))
            cache[term] = float(np.log2(expected / papers)) if papers else None
        return cache[term]

    def spread_evenly(self, term: str) -> bool:
        """A word of ordinary prose by its spread: in at least SPREAD_EVIDENCE figures (fewer
        say nothing about a spread) and hardly more clustered in papers than chance."""
        t = self._lexical.term_ids.get(term) if self._lexical is not None else None
        if t is None or int(self._lexical.df[t]) < SPREAD_EVIDENCE:
            return False
        c = self.clustering(term)
        return c is not None and c < CLUSTERED_MIN


SPREAD_EVIDENCE = 10  # figures using a word before its spread over papers is read
CLUSTERED_MIN = 0.5   # log2 expected / observed papers: below, a word is spread as by chance


def idf_of(lexical, paper_ids: np.ndarray | None = None) -> TermStats:
    """Term statistics of a LexicalIndex (cached on the index object); with the paper of each of
    its rows (`paper_ids`), also how each term spreads over the papers."""
    cached = getattr(lexical, "_term_stats", None)
    if cached is None or (paper_ids is not None and cached._paper_ids is None):
        cached = TermStats(zip(lexical.vocab, np.asarray(lexical.idf, dtype=float).tolist()))
        df = np.asarray(lexical.df)
        if lexical.n_docs >= 50:  # in a handful of figures every term is "common"
            cached.common = frozenset(lexical.vocab[i] for i in np.flatnonzero(df > COMMON_DF * lexical.n_docs))
        if paper_ids is not None and len(paper_ids) == lexical.n_docs:
            cached._lexical, cached._paper_ids = lexical, np.asarray(paper_ids)
            cached._paper_sizes = np.unique(cached._paper_ids, return_counts=True)[1]
        lexical._term_stats = cached
    return cached
