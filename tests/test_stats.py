"""The one paper-cluster bootstrap (app/stats.py) every evaluation's intervals come from."""
import numpy as np

from app.stats import cluster_ci


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
