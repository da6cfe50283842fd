"""The one paper-cluster bootstrap (app/stats.py) every evaluation's intervals come from, and the
paper-grouped folds of every cross-validation."""
import random

import numpy as np

from app.stats import cluster_ci, cluster_statistic_ci, hashed_folds, paper_folds


def test_cluster_interval_contains_the_query_mean():
    papers = ["a"] * 8 + ["b", "c", "d", "e"]
    values = [1.0] * 8 + [0.0] * 4  # query mean .667, mean of paper means .2
    lo, hi = cluster_ci(papers, values)
    assert lo <= 8 / 12 <= hi and hi <= 1.0
    assert cluster_ci(["a", "b"], [0.5, 0.5]) == [0.5, 0.5]


def test_whole_papers_are_resampled():
    """Two papers, one all 1 and one all 0: a resample holds one paper twice or both, so the
    interval spans 0 to 1 however many queries each has; one paper alone has no spread."""
    assert cluster_ci([0, 0, 1, 1], [1.0, 1.0, 0.0, 0.0]) == [0.0, 1.0]
    assert cluster_ci(list(range(6)), np.ones(6)) == [1.0, 1.0]
    assert cluster_ci(["a"] * 3, [0.0, 1.0, 0.5]) == [0.5, 0.5]


def test_the_interval_is_seeded_and_narrows_with_more_papers():
    rng = np.random.default_rng(1)
    few = rng.random(10)
    many = rng.random(400)
    assert cluster_ci(range(10), few) == cluster_ci(range(10), few)
    w_few = np.diff(cluster_ci(range(10), few))[0]
    w_many = np.diff(cluster_ci(range(400), many))[0]
    assert w_many < w_few / 3


def test_folds_deal_out_whole_papers_in_a_seeded_order():
    """Each distinct paper gets one fold, the folds differ in size by one paper at most, the order
    depends only on the set of papers and the seed (not on how often or in what order they come),
    and the two generators give the permutations their callers drew before there was one function."""
    papers = ["p3", "p1", "p2", "p1", "p5", "p4", "p3", "p6", "p7"]
    folds = paper_folds(papers, 3, random.Random(0).shuffle)
    assert set(folds) == set(papers) and set(folds.values()) == {0, 1, 2}
    assert sorted(list(folds.values()).count(f) for f in range(3)) == [2, 2, 3]
    assert folds == paper_folds(reversed(papers), 3, random.Random(0).shuffle)
    order = sorted(set(papers))
    random.Random(0).shuffle(order)
    assert folds == {p: i % 3 for i, p in enumerate(order)}
    order = sorted(set(papers))
    np.random.default_rng(7).shuffle(order)
    assert paper_folds(papers, 3, np.random.default_rng(7).shuffle) == {p: i % 3 for i, p in enumerate(order)}
    assert len({tuple(sorted(paper_folds(papers, 3, random.Random(s).shuffle).items())) for s in range(5)}) > 1


def test_hashed_folds_keep_a_papers_fold_when_others_are_added():
    """A paper's fold comes from its id and the seed alone: adding papers moves none of the others,
    every fold is used, and another seed deals them otherwise."""
    papers = [f"p{i}" for i in range(200)]
    folds = hashed_folds(papers, 5, seed=0)
    assert set(folds) == set(papers) and set(folds.values()) == set(range(5))
    more = hashed_folds(papers[:120] + [f"q{i}" for i in range(80)] + papers[120:], 5, seed=0)
    assert all(more[p] == folds[p] for p in papers)
    assert hashed_folds(papers, 5, seed=1) != folds


def test_a_statistic_over_items_is_resampled_by_paper():
    """The mean as the statistic gives cluster_ci's interval; a statistic over types (recall averaged
    over them) moves with the papers that hold each type, and resamples where it is undefined are
    left out."""
    papers, values = [0, 0, 1, 1, 2], [1.0, 1.0, 0.0, 0.0, 0.5]
    assert cluster_statistic_ci(papers, values, lambda v: float(np.mean(v))) == cluster_ci(papers, values)
    assert cluster_statistic_ci(["a"] * 3, [0.0, 1.0, 0.5], lambda v: float(np.mean(v))) == [0.5, 0.5]

    def recall_over_types(items):  # (type, right)
        by_type = {}
        for t, ok in items:
            by_type.setdefault(t, []).append(ok)
        return float(np.mean([np.mean(v) for v in by_type.values()]))

    # paper a: 9 right line charts; paper b: one box plot, wrong. Over items .9, over types .5
    items = [("line", 1.0)] * 9 + [("box", 0.0)]
    papers = ["a"] * 9 + ["b"]
    lo, hi = cluster_statistic_ci(papers, items, recall_over_types)
    assert lo == 0.0 and hi == 1.0 and recall_over_types(items) == 0.5
    assert all(np.isnan(cluster_statistic_ci(papers, items, lambda v: float("nan"))))
