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


def test_body_view_compares_papers_by_their_body_terms(tmp_path):
    """The body view ranks the paper whose body shares rare terms first, survives save/load, and is
    absent (no signal) when no paper has body terms."""
    from app.search.text import top_term_counts

    bodies = {1: "We train a gating network over experts. The gating network routes each task to experts.",
              2: "Experts and a gating network share the input; every task has its own gating weights.",
              3: "Molecular dynamics simulations sample the folding landscape of a protein."}
    pids = [1, 2, 3]
    fig_index = LexicalIndex.build([analyze("figure") for _ in pids])
    titles = [analyze("a study") for _ in pids]
    idx = PaperIndex.build(pids, None, titles, fig_index, np.array(pids),
                           body_terms=[top_term_counts(bodies[p]) for p in pids])
    sims = idx.similarity(1, [2, 3])
    assert sims["paper_body"][0] > 0 and sims["paper_body"][1] == 0
    idx.save(tmp_path / "p")
    assert PaperIndex.load(tmp_path / "p").similarity(1, [2, 3])["paper_body"].tolist() == sims["paper_body"].tolist()
    assert "paper_body" not in PaperIndex.build(pids, None, titles, fig_index, np.array(pids)).similarity(1, [2])


def test_body_terms_leave_citation_markers_out():
    from app.search.text import top_term_counts

    counts = top_term_counts("Gating networks [3, 12-14] route tasks (Smith and Lee, 2019). "
                             "Jones et al. (2020) route tasks too (Wang et al., 2021; Li, 2018).")
    assert counts[analyze("route")[0]] == 2
    assert not {"smith", "lee", "jone", "jones", "wang", "li"} & set(counts)
