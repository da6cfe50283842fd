"""Uncertainty for every evaluation (central figures, figure types, crops, related figures,
picture search): the paper is the unit.

Queries of one paper share captions and vocabulary, so they are not independent; every interval
and test here resamples or pairs *papers*, each in one implementation:
  bootstrap_ci      95% percentile interval of a mean over papers (2000 seeded resamples)
  cluster_ci        the same for a mean over queries: papers are resampled with all their queries
  cluster_statistic_ci  the same for any statistic of the items (e.g. recall averaged over types)
  paired_by_paper   difference of two methods: per-paper mean difference, its bootstrap interval
                    and a two-tailed paired t-test over papers (plus a Wilcoxon signed-rank p)
and cross-validation folds hold whole papers (paper_folds, hashed_folds), so no paper is on both sides.
"""
from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from typing import Callable, Hashable, Iterable, Sequence

import numpy as np

N_BOOT = 2000


def paper_folds(papers: Iterable[Hashable], k: int, shuffle: Callable[[list], None]) -> dict:
    """Fold (0..k-1) of each distinct paper: the papers sorted, put in a seeded order by `shuffle`
    (`random.Random(seed).shuffle` or `numpy.random.default_rng(seed).shuffle`: each caller keeps
    the generator its reported folds were drawn with) and dealt out in turn."""
    order = sorted(set(papers))
    shuffle(order)
    return {p: i % k for i, p in enumerate(order)}


def hashed_folds(papers: Iterable[Hashable], k: int, seed: int = 0) -> dict:
    """Fold (0..k-1) of each distinct paper from a hash of (seed, paper) alone: a paper keeps its
    fold whatever other papers are added, so two training sets that differ by added papers are
    compared on the same folds for the papers they share (folds differ in size by chance)."""
    return {p: int.from_bytes(hashlib.sha256(f"{seed}\0{p}".encode()).digest()[:8], "big") % k for p in set(papers)}


def _means_by_paper(papers: Sequence[str], values: Sequence[float]) -> tuple[list[str], np.ndarray]:
    groups: dict[str, list[float]] = defaultdict(list)
    for p, v in zip(papers, values):
        groups[p].append(float(v))
    keys = sorted(groups)
    return keys, np.asarray([np.mean(groups[k]) for k in keys])


def bootstrap_ci(per_paper: Sequence[float], n: int = N_BOOT, seed: int = 0, level: float = 0.95) -> list[float]:
    """[low, high] of the mean of `per_paper` (one value per paper)."""
    x = np.asarray(per_paper, dtype=np.float64)
    if x.size == 0:
        return [math.nan, math.nan]
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n, x.size))].mean(axis=1)
    a = (1 - level) / 2
    return [round(float(np.quantile(means, a)), 4), round(float(np.quantile(means, 1 - a)), 4)]


def cluster_ci(papers: Sequence[str], values: Sequence[float], n: int = N_BOOT, seed: int = 0,
               level: float = 0.95, digits: int | None = 4) -> list[float]:
    """[low, high] of the mean over items when whole papers (with all their items) are resampled,
    rounded to `digits` (None: unrounded, for a report that rounds when it prints)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for p, v in zip(papers, values):
        groups[p].append(float(v))
    if not groups:
        return [math.nan, math.nan]
    sums = np.asarray([sum(v) for v in groups.values()])
    counts = np.asarray([len(v) for v in groups.values()])
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, sums.size, size=(n, sums.size))
    means = sums[pick].sum(axis=1) / counts[pick].sum(axis=1)
    a = (1 - level) / 2
    bounds = [float(np.quantile(means, a)), float(np.quantile(means, 1 - a))]
    return bounds if digits is None else [round(x, digits) for x in bounds]


def cluster_statistic_ci(papers: Sequence[Hashable], items: Sequence, statistic: Callable[[list], float],
                         n: int = N_BOOT, seed: int = 0, level: float = 0.95) -> list[float]:
    """[low, high] of `statistic(items)` when whole papers (with all their items) are resampled: for
    statistics that are not a mean over items, such as recall averaged over types, where a paper
    full of one type moves several types' recall at once. Resamples where the statistic is NaN
    (e.g. no item of any type) are left out."""
    groups: dict[Hashable, list] = defaultdict(list)
    for p, item in zip(papers, items):
        groups[p].append(item)
    if not groups:
        return [math.nan, math.nan]
    keys = list(groups)
    rng = np.random.default_rng(seed)
    values = np.asarray([statistic([it for k in rng.integers(0, len(keys), size=len(keys)) for it in groups[keys[k]]])
                         for _ in range(n)], dtype=np.float64)
    values = values[~np.isnan(values)]
    if not values.size:
        return [math.nan, math.nan]
    a = (1 - level) / 2
    return [round(float(np.quantile(values, a)), 4), round(float(np.quantile(values, 1 - a)), 4)]


def paired_by_paper(papers: Sequence[str], a: Sequence[float], b: Sequence[float], seed: int = 0) -> dict:
    """a - b per item, averaged within each paper, then compared over papers."""
    from scipy.stats import ttest_1samp, wilcoxon

    _, d = _means_by_paper(papers, np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))
    out = {"n_papers": int(d.size), "mean_diff": round(float(d.mean()), 4) if d.size else None,
           "ci95": bootstrap_ci(d, seed=seed), "p_t": 1.0, "p_wilcoxon": 1.0,
           "papers_better": int((d > 0).sum()), "papers_worse": int((d < 0).sum())}
    if d.size >= 2 and np.allclose(d, d[0]) and not np.isclose(d[0], 0):
        out["p_t"] = 0.0  # the same non-zero difference on every paper
    elif d.size >= 2 and not np.allclose(d, 0):
        p = float(ttest_1samp(d, 0.0).pvalue)
        out["p_t"] = round(p, 6) if not math.isnan(p) else 1.0
        nz = d[d != 0]
        if nz.size >= 1:
            out["p_wilcoxon"] = round(float(wilcoxon(nz).pvalue), 6)
    return out
