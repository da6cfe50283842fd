"""Paper-level relatedness: each paper keeps its strongest terms; views compare papers by cosine."""
import numpy as np

from app.search.lexical import LexicalIndex
from app.search.papers import PaperIndex, strongest_terms_index
from app.search.text import analyze


def test_groups_of_rows_keep_their_strongest_terms():
    # rows 0, 1 -> group 0; row 2 -> group 1. Term 0 is in both groups (idf 0), so it ranks last.
    ptr = np.array([0, 2, 4, 6])
    terms = np.array([0, 1, 0, 2, 0, 3], dtype=np.int32)
    tf = np.array([3, 1, 2, 1, 1, 2], dtype=np.uint16)
    lex = strongest_terms_index(ptr, terms, tf, ["a", "b", "c", "d"], order=np.array([0, 1, 2]),
                                bounds=np.array([0, 2, 3]), max_terms=2)
    assert lex.n_docs == 2
    assert lex.row_terms[lex.row_ptr[0]:lex.row_ptr[1]].tolist() == [1, 2]   # b, c (a dropped: idf 0)
    assert lex.row_terms[lex.row_ptr[1]:lex.row_ptr[2]].tolist() == [0, 3]   # only two terms anyway
    assert lex.row_tf[lex.row_ptr[1]:lex.row_ptr[2]].tolist() == [1, 2]


def test_similarity_and_related_papers():
    texts = {1: "neural click through rate prediction with feature interactions",
             2: "feature interactions for click through rate prediction",
             3: "protein folding with molecular dynamics"}
    figs = {1: "auc logloss criteo avazu", 2: "auc on criteo and avazu", 3: "energy landscape of folding"}
    pids = [1, 2, 3]
    fig_index = LexicalIndex.build([analyze(figs[p]) for p in pids])
    idx = PaperIndex.build(pids, None, [analyze(texts[p]) for p in pids], fig_index, np.array(pids))
    sims = idx.similarity(1, [2, 3])
    assert sims["paper_text"][0] > sims["paper_text"][1] and sims["paper_figures"][0] > sims["paper_figures"][1]
    assert idx.related(1, 1).tolist() == [2]
