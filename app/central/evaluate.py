"""Ranking metrics and the two central-figure evaluations.

Metric definitions (a ranking = figure numbers, best first; gold = figure numbers in order of
preference, gold[0] = the central figure; gold numbers that the paper does not have, e.g. a
figure the extractor missed, are dropped and a paper whose gold[0] is missing is skipped):
  acc@k  gold[0] is among the first k of the ranking
  mrr    1 / rank of the first *relevant* figure (any figure listed in gold)
  map    average precision with every listed figure relevant (binary)
  ndcg   graded gains len(gold) - i for gold[i] (3, 2, 1 for a top-3 list), log2 discount,
         over the full ranking, normalised by the ideal ranking
Self-supervised task: one query per (mention sentence, figure); the "gold" is the single
mentioned figure, so acc@1 and mrr are computed with gold = [target].

`random` is reported as its exact expectation over uniform permutations for the
self-supervised task (acc@1 = 1/n, mrr = H_n / n) and as the mean over 200 seeded permutations
for the gold task.
"""
from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Sequence

import numpy as np

METHODS = ("random", "pick_first", "tfidf", "model", "combined")


# ---------------------------------------------------------------------------------------------
# metrics


def rank_by(numbers: Sequence[int], scores: Sequence[float]) -> list[int]:
    """Figure numbers sorted by score (desc); ties keep figure order (lower number first)."""
    return [n for _, n in sorted(zip(scores, numbers), key=lambda t: (-t[0], t[1]))]


def acc_at_k(ranking: Sequence[int], gold: Sequence[int], k: int) -> float:
    return float(bool(gold) and gold[0] in list(ranking)[:k])


def reciprocal_rank(ranking: Sequence[int], gold: Sequence[int]) -> float:
    rel = set(gold)
    for i, n in enumerate(ranking, 1):
        if n in rel:
            return 1.0 / i
    return 0.0


def average_precision(ranking: Sequence[int], gold: Sequence[int]) -> float:
    rel = set(gold)
    if not rel:
        return 0.0
    hits, total = 0, 0.0
    for i, n in enumerate(ranking, 1):
        if n in rel:
            hits += 1
            total += hits / i
    return total / len(rel)


def ndcg(ranking: Sequence[int], gold: Sequence[int]) -> float:
    gains = {n: float(len(gold) - i) for i, n in enumerate(gold)}
    dcg = sum(gains.get(n, 0.0) / math.log2(i + 1) for i, n in enumerate(ranking, 1))
    ideal = sorted(gains.values(), reverse=True)
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, 1))
    return dcg / idcg if idcg > 0 else 0.0


def gold_metrics(ranking: Sequence[int], gold: Sequence[int]) -> dict[str, float]:
    return {"acc@1": acc_at_k(ranking, gold, 1), "acc@3": acc_at_k(ranking, gold, 3),
            "map": average_precision(ranking, gold), "mrr": reciprocal_rank(ranking, gold),
            "ndcg": ndcg(ranking, gold)}


def mean_metrics(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {k: round(float(np.mean([r[k] for r in rows])), 4) for k in rows[0]}


def random_expectation(n: int) -> dict[str, float]:
    """Expected acc@1 and mrr of a uniformly random ranking of n items with one relevant item."""
    return {"acc@1": 1.0 / n, "mrr": sum(1.0 / i for i in range(1, n + 1)) / n}


# ---------------------------------------------------------------------------------------------
# self-supervised evaluation


def selfsup_model_metrics(model, queries, papers, batch_size: int = 128) -> dict[str, float]:
    """acc@1 / mrr of the cross-encoder alone on self-supervised queries (used after training)."""
    caps = {p.sha256: {f.number: f.text for f in p.figures} for p in papers}
    sents, capts, spans = [], [], []
    for q in queries:
        spans.append((len(sents), len(q.candidates)))
        for k in q.candidates:
            sents.append(q.sentence)
            capts.append(caps[q.paper_sha][k])
    scores = model.score(sents, capts, batch_size=batch_size)
    rows = []
    for q, (s, n) in zip(queries, spans):
        r = rank_by(q.candidates, scores[s:s + n])
        rows.append({"acc@1": acc_at_k(r, [q.target], 1), "mrr": reciprocal_rank(r, [q.target])})
    return mean_metrics(rows)
