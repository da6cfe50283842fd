"""One ranking rule for serving and evaluation: a weighted sum of a candidate set's signals.

Signals of a candidate figure relative to a query figure (or text query):
  lexical  tf.idf / BM25 score of the figure text, min-max scaled over the candidate set
  text     cosine of the figure-text embeddings (MiniLM, or a trained model's vectors)
  visual   cosine of the figures' visual embeddings (pixels)
  type     1 when both figures have the same dominant figure type, else 0
  type_scores  cosine of the two figures' type classifier scores (how alike their kinds look)
  figure_words tf.idf cosine of the words printed inside the two figures (axis titles, legends,
           node labels: figure_words.py); 0 when either has none (a raster figure)
  paper, paper_text, paper_figures, paper_body
           cosines of the two papers (title + abstract dense and tf.idf; all figure texts tf.idf;
           body text tf.idf), paper-level fields (papers.py)

The tf.idf + embedding recommender of Kuzi & Zhai is the special case {lexical: w, text: 1 - w}. Weights are fitted by
`figsearch fit` / `figsearch eval` and kept in the index version's ranking config (ranking.py);
the defaults below are used until a fit has stored its own.
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from app.search.spread import spread

SIGNALS = ("lexical", "text", "visual", "type", "type_scores", "figure_words", "paper", "paper_text", "paper_figures",
           "paper_body")
# no field that identifies the figure's paper
FIGURE_LEVEL = ("lexical", "text", "visual", "type", "type_scores", "figure_words")
SCOPES = ("other_papers", "same_paper", "all")

# Defaults until `figsearch fit` stores weights fitted on the collection itself.
# other_papers: the weights `figsearch fit --judgments tests/data/related_judgments.jsonl --judge
# judge1` fitted on 50 query figures of the shared recommender-systems + NLP corpus whose related
# figures were graded by looking, three pooling rounds, with `--citation-floor 1.1` (weights must
# keep 1.1 times the citation cross-paper p@5 of the unguarded refit on the citation protocol's
# validation targets; README, Measurements): the papers' body text carries the topic, and the
# figure's text, picture and kind then order a related paper's figures. same_paper has no
# relevance labels of its own and uses equal figure-level weights.
# Figures of the same kind (dominant type) also get a fixed bonus in the citation protocol's
# comparison row (`citation_fitted`), where a fit on citation labels would drop it: citation links
# ignore what a figure shows.
SAME_TYPE_BONUS = 0.5
DEFAULT_WEIGHTS: dict[str, dict[str, float]] = {
    "other_papers": {"lexical": 1.0, "text": 1.0, "visual": 1.0, "type": 1.0, "type_scores": 0.3, "paper": 3.0,
                     "paper_text": 0.3, "paper_body": 10.0, "paper_figures": 1.0},
    "same_paper": {"lexical": 1.0, "text": 1.0, "visual": 0.3, "type": 0.1},
    "all": {"lexical": 1.0, "text": 0.3},
}


def minmax(x: np.ndarray) -> np.ndarray:
    """Scale to [0, 1] over the candidate set; a constant set maps to 1 (or 0 if all zero)."""
    x = np.asarray(x, dtype=np.float64)
    if len(x) == 0:
        return x
    lo, hi = float(x.min()), float(x.max())
    if hi > lo:
        return (x - lo) / (hi - lo)
    return np.full(len(x), 1.0 if hi > 0 else 0.0)


def fuse(signals: Mapping[str, np.ndarray | None], weights: Mapping[str, float]) -> np.ndarray:
    """The combined score of each candidate. `signals["lexical"]` is raw (scaled here); a missing
    signal (None) contributes nothing, so an index without visual vectors still ranks."""
    n = next((len(v) for v in signals.values() if v is not None), 0)
    used = [k for k, w in weights.items() if w and signals.get(k) is not None]
    if used == ["lexical"]:  # nothing to mix: keep the lexical score's own scale
        return np.asarray(signals["lexical"], dtype=np.float64)
    out = np.zeros(n, dtype=np.float64)
    for name, w in weights.items():
        v = signals.get(name)
        if v is None or w == 0:
            continue
        v = minmax(v) if name == "lexical" else np.asarray(v, dtype=np.float64)
        out += float(w) * v
    return out


def seed_weights(w: float) -> dict[str, float]:
    """The tf.idf + embedding recommender: w * minmax(lexical) + (1 - w) * text cosine."""
    return {"lexical": float(w), "text": 1.0 - float(w)}


def order(final: np.ndarray) -> np.ndarray:
    """Indices by descending score, ties kept in the incoming (first-stage) order."""
    final = np.asarray(final)
    return np.lexsort((np.arange(len(final)), -final))


# rescaled JPEG copies of a figure: cosine with it .910 at the 5th percentile, .992 at the median;
# the nearest other figure of the collection: .946 at the 95th percentile, .980 at the 99th
# (`figsearch eval-image-copies`, naacl2024 + misc), so a few look-alikes also count as the same
# picture: the rule for rows without a perceptual hash (app/search/looks.py decides for the others)
SAME_PICTURE_MIN = 0.95


def same_picture_first(ranked: np.ndarray, same: np.ndarray) -> np.ndarray:
    """Positions `ranked` with copies of the query's picture (`same[i]`: candidate i is one,
    app/search/looks.py) moved first, each part keeping its order: someone who opens a figure that
    another paper reprints wants to see that first, whatever the texts say."""
    ranked = np.asarray(ranked)
    first = np.asarray(same, dtype=bool)[ranked]
    return np.concatenate([ranked[first], ranked[~first]])


def diversify(ranked: np.ndarray, group: np.ndarray, max_per_group: int) -> np.ndarray:
    """Positions `ranked` re-ordered so that no group (paper) has more than `max_per_group` items
    before every group has had its turn: the overflow keeps its order after the rest (spread.py's
    rule with one block as long as the ranking)."""
    if max_per_group <= 0 or len(ranked) == 0:
        return ranked
    positions, _ = spread(np.asarray(group)[ranked], max_per_group, len(ranked), len(ranked))
    return ranked[positions]


# ------------------------------------------------------------------ fitting
GRID = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0)


def fit_weights(evaluate: Callable[[dict[str, float]], float], signals: tuple[str, ...],
                anchor: str, grid: tuple[float, ...] = GRID, rounds: int = 2) -> tuple[dict[str, float], float]:
    """Coordinate search over a small grid, `anchor`'s weight fixed at 1 (scores are scale-free).

    `evaluate(weights)` returns the validation metric (higher is better). Cheap and transparent:
    a handful of signals needs no solver, and every fitted value is one of a few round numbers."""
    weights = {s: (1.0 if s == anchor else 0.0) for s in signals}
    best = evaluate(weights)
    for _ in range(rounds):
        changed = False
        for s in signals:
            if s == anchor:
                continue
            for v in grid:
                trial = {**weights, s: v}
                score = evaluate(trial)
                if score > best + 1e-9:
                    best, weights, changed = score, trial, True
        if not changed:
            break
    return weights, best
