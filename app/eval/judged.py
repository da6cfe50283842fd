"""Related figures in other papers, measured with grades people gave by looking at the figures.

A judgment is one JSON line: the query and the candidate figure, each by its paper's sha256 + kind
+ number (stable across ingests and data dirs), a grade (0 not related, 1 somewhat: related topic
or comparable kind, 2 closely related: the same kind of content for a closely related purpose)
and the judge's id. Per query and ranking, over the top five figures of other papers:
  close_fill    share of the five slots holding a grade-2 figure
  related_fill  share holding a grade >= 1 figure
  ndcg@5        gain 2^grade - 1, ideal order from every judged candidate of the query
  unjudged      slots holding a figure nobody graded for that query (counted as grade 0 above,
                and reported: a ranking that surfaces many needs more judging)
Means come with a paper-cluster bootstrap interval (queries of one paper resampled together).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping

import numpy as np
from sqlalchemy import select

from app.db.schema import Figure, Paper
from app.stats import cluster_ci

TOP = 5
METRICS = ("close_fill", "related_fill", "ndcg@5", "unjudged")

Key = tuple[str, str, int]  # paper sha256, kind, number


def key_of(d: Mapping) -> Key:
    return (str(d["sha256"]).lower(), str(d.get("kind", "figure")), int(d["number"]))


@dataclass
class Judged:
    """Grades of one judge (or several, combined) by query figure id: {candidate figure id: grade}."""
    grades: dict[int, dict[int, float]]
    paper_of_query: dict[int, int]
    missing: int  # judged figures not in this collection
    agreement: dict | None = None  # judges' agreement on the pairs they share (set by the caller)

    @property
    def queries(self) -> list[int]:
        return sorted(self.grades)


def read_judgments(path: str | Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def judges_of(rows: Iterable[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r.get("judge", "")] = out.get(r.get("judge", ""), 0) + 1
    return out


def resolve(session, rows: list[dict], judge: str | None = None) -> Judged:
    """Map judgment lines to figure ids of this collection. With several judges of a pair, the
    mean grade (`judge` keeps one judge's lines only)."""
    if judge is not None:
        rows = [r for r in rows if r.get("judge") == judge]
    ids: dict[Key, int] = {}
    paper: dict[int, int] = {}
    for fid, pid, sha, kind, number in session.execute(
            select(Figure.id, Figure.paper_id, Paper.sha256, Figure.kind, Figure.number).join(Paper)):
        ids[(sha.lower(), kind, int(number))] = fid
        paper[fid] = pid
    sums: dict[int, dict[int, list[float]]] = {}
    missing = 0
    for r in rows:
        q, c = ids.get(key_of(r["query"])), ids.get(key_of(r["candidate"]))
        if q is None or c is None:
            missing += 1
            continue
        sums.setdefault(q, {}).setdefault(c, []).append(float(r["grade"]))
    grades = {q: {c: float(np.mean(g)) for c, g in cs.items()} for q, cs in sums.items()}
    return Judged(grades, {q: paper[q] for q in grades}, missing)


def query_metrics(ranked: list[int], grades: Mapping[int, float], k: int = TOP) -> dict[str, float]:
    """Metrics of one query's ranked candidate figure ids (best first)."""
    top = list(ranked[:k])
    g = np.array([grades.get(f, 0.0) for f in top], dtype=float)
    g = np.r_[g, np.zeros(k - len(g))]
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    ideal = np.sort(np.array(list(grades.values()), dtype=float))[::-1][:k]
    ideal = np.r_[ideal, np.zeros(k - len(ideal))]
    idcg = float(((2 ** ideal - 1) * disc).sum())
    return {"close_fill": float((g >= 1.5).sum()) / k,
            "related_fill": float((g >= 0.5).sum()) / k,
            "ndcg@5": float(((2 ** g - 1) * disc).sum()) / idcg if idcg > 0 else 0.0,
            "unjudged": float(sum(1 for f in top if f not in grades)) / k}


def evaluate_rankings(judged: Judged, rankers: Mapping[str, Callable[[int], list[int]]],
                      queries: list[int] | None = None) -> dict:
    """Per ranking: mean metrics over the queries with paper-cluster 95% intervals, and the
    per-query values (for paired comparisons)."""
    queries = judged.queries if queries is None else queries
    groups = np.array([judged.paper_of_query[q] for q in queries])
    out = {}
    for name, rank in rankers.items():
        per = {m: [] for m in METRICS}
        for q in queries:
            for m, v in query_metrics(rank(q), judged.grades[q]).items():
                per[m].append(v)
        row = {m: float(np.mean(v)) if v else 0.0 for m, v in per.items()}
        for m in ("close_fill", "related_fill", "ndcg@5"):
            row[f"{m}_ci95"] = cluster_ci(groups.tolist(), per[m], digits=None) if per[m] else [0.0, 0.0]
        row["per_query"] = per
        out[name] = row
    return out


def kappa(a: list[int], b: list[int], labels=(0, 1, 2)) -> float:
    """Cohen's kappa of two judges' grades on the same pairs."""
    a, b = np.asarray(a), np.asarray(b)
    if not len(a):
        return float("nan")
    po = float((a == b).mean())
    pe = float(sum((a == l).mean() * (b == l).mean() for l in labels))
    return 1.0 if pe == 1 else (po - pe) / (1 - pe)


def agreement(rows: list[dict], judge_a: str, judge_b: str) -> dict:
    """Kappa (unweighted and linear-weighted) and raw agreement on the pairs both judges graded."""
    def by(j):
        return {(key_of(r["query"]), key_of(r["candidate"])): int(r["grade"]) for r in rows if r.get("judge") == j}
    ga, gb = by(judge_a), by(judge_b)
    both = sorted(set(ga) & set(gb))
    a, b = [ga[p] for p in both], [gb[p] for p in both]
    out = {"n_pairs": len(both), "kappa": kappa(a, b),
           "raw_agreement": float(np.mean(np.array(a) == np.array(b))) if both else float("nan")}
    if both:  # linear weights: a 0/2 disagreement counts twice a 0/1 one
        w = 1 - np.abs(np.subtract.outer([0, 1, 2], [0, 1, 2])) / 2
        obs = np.zeros((3, 3))
        for x, y in zip(a, b):
            obs[x, y] += 1
        obs /= obs.sum()
        exp = np.outer(obs.sum(1), obs.sum(0))
        out["kappa_linear"] = float(1 - (1 - (w * obs).sum()) / max(1 - (w * exp).sum(), 1e-12))
        out["close_agreement"] = float(np.mean((np.array(a) == 2) == (np.array(b) == 2)))
    return out


# ----------------------------------------------------------------- rankings compared
def other_figures(engine, row: int) -> np.ndarray:
    """Rows of the figures (not tables) of every other paper."""
    rows = np.arange(len(engine))
    return rows[(engine.paper_ids != engine.paper_ids[row]) & engine.types.kind_mask(rows, "figure")]


def _top(engine, scores: np.ndarray, rows: np.ndarray, k: int) -> list[int]:
    return [int(engine.figure_ids[r]) for r in rows[np.lexsort((rows, -scores))][:k]]


def baseline_rankers(engine, k: int = TOP) -> dict[str, Callable[[int], list[int]]]:
    """Figure ids of other papers' figures, best first, by single signals and simple mixes:
    served (the ranking config), tf.idf of caption + mentions, MiniLM cosine of caption +
    mentions, picture fingerprint cosine, and within the ten papers nearest by topic: the same
    dominant type first (then MiniLM), or MiniLM alone."""
    def served(fid):
        return [h.figure_id for h in engine.similar(fid, k=k, scope="other_papers")]

    def tfidf(fid):
        row = engine.row_of(fid)
        others, lex = other_figures(engine, row), engine.lexical("tfidf")
        q, qtf = lex.doc_terms(row)
        return _top(engine, lex.score_docs(q, lex.query_weights(q, qtf), others), others, k)

    def cosine(vecs):
        def rank(fid):
            row = engine.row_of(fid)
            others = other_figures(engine, row)
            return _top(engine, vecs.vectors_for(others) @ vecs.vectors_for([row])[0], others, k)
        return rank

    def related(same_type_first: bool):
        def rank(fid):
            row = engine.row_of(fid)
            others = other_figures(engine, row)
            near = engine.papers.related(int(engine.paper_ids[row]), 10)
            rows = others[np.isin(engine.paper_ids[others], near)]
            if not len(rows):
                return []
            score = engine.vectors.vectors_for(rows) @ engine.vectors.vectors_for([row])[0]
            dominant = engine.types.dominant
            if same_type_first and dominant is not None:
                score = score + 10.0 * (dominant[rows] == dominant[row])
            return _top(engine, score, rows, k)
        return rank

    out = {"served": served, "tfidf": tfidf}
    if engine.vectors is not None:
        out["minilm"] = cosine(engine.vectors)
    if engine.visual is not None:
        out["picture"] = cosine(engine.visual)
    if engine.papers is not None and engine.vectors is not None:
        out["same_type_related"] = related(True)
        out["minilm_related"] = related(False)
    return out
