"""Paper-level relatedness: each paper keeps its strongest terms; views compare papers by cosine."""
import numpy as np

from app.search.papers import PaperIndex, strongest_counts
from app.search.text import analyze


def test_strongest_counts_keeps_the_top_terms_per_row():
    # row 0: terms 0 (tf 5), 1 (tf 1), 2 (tf 1); row 1: term 0 (tf 1), 3 (tf 2). Term 0 is in both rows.
    ptr = np.array([0, 3, 5])
    terms = np.array([0, 1, 2, 0, 3], dtype=np.int32)
    tf = np.array([5, 1, 1, 1, 2], dtype=np.uint16)
    p, t, f = strongest_counts(ptr, terms, tf, n_terms=4, max_terms=2)
    # idf(term 0) = log(2/2) = 0, so it ranks last in both rows despite tf 5
    assert p.tolist() == [0, 2, 4]
    assert t[:2].tolist() == [1, 2] and t[2:].tolist() == [0, 3]
    assert f.tolist() == [1, 1, 1, 2]


def test_similarity_and_related_papers():
    texts = {1: "neural click through rate prediction with feature interactions",
             2: "feature interactions for click through rate prediction",
             3: "protein folding with molecular dynamics"}
    figs = {1: "auc logloss criteo avazu", 2: "auc on criteo and avazu", 3: "energy landscape of folding"}
    pids = [1, 2, 3]
    idx = PaperIndex.build(pids, None, [analyze(texts[p]) for p in pids], [analyze(figs[p]) for p in pids])
    sims = idx.similarity(1, [2, 3])
    assert sims["paper_text"][0] > sims["paper_text"][1] and sims["paper_figures"][0] > sims["paper_figures"][1]
    assert idx.related(1, 1).tolist() == [2]
