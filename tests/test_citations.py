"""Tests for app.ingest.citations."""
from __future__ import annotations


from app.ingest.citations import TitleMatcher, link_citations, normalise_title

TITLES = {
    1: "Wide & Deep Learning for Recommender Systems",
    2: "DeepFM: A Factorization-Machine based Neural Network for CTR Prediction",
    3: "Deep & Cross Network for Ad Click Predictions",
    4: "Deep Neural Networks for YouTube Recommendations",
    5: "Deep Learning",  # too short / generic: never matched
    6: "Neural Collaborative Filtering",
    7: "Attention Is All You Need",
}


def test_normalise_title():
    assert normalise_title("  DeepFM: A Factorization-Machine  based\nNetwork ") == "deepfm a factorization machine based network"
    assert normalise_title("Caf\u00e9 na\u00efve R\u00e9sum\u00e9") == "cafe naive resume"
    assert normalise_title("Wide & Deep") == "wide deep"
    assert normalise_title("") == ""


def test_exact_and_case_insensitive_match():
    m = TitleMatcher(TITLES)
    ref = ("[3] Heng-Tze Cheng, Levent Koc, et al. 2016. Wide & deep learning for recommender systems. "
           "In DLRS. 7-10.")
    assert m.match(ref)[0][0] == 1
    assert m.match(ref)[0][1] >= 99


def test_fuzzy_typos_and_hyphenation():
    m = TitleMatcher(TITLES)
    typo = "Guo, H. et al. 2017. DeepFM: a factorisation-machine based neural netwrk for CTR prediction. IJCAI."
    assert [pid for pid, _ in m.match(typo)] == [2]
    hyph = "P. Covington, J. Adams, E. Sargin. Deep neural net- works for YouTube recom- mendations. RecSys 2016."
    assert [pid for pid, _ in m.match(hyph)] == [4]
    subtitle = "R. Wang, B. Fu, G. Fu, M. Wang. Deep & Cross Network for Ad Click Predictions. In ADKDD'17, 2017."
    assert [pid for pid, _ in m.match(subtitle)] == [3]


def test_no_false_matches():
    m = TitleMatcher(TITLES)
    # short generic title is never indexed
    assert m.match("I. Goodfellow, Y. Bengio, A. Courville. Deep Learning. MIT Press, 2016.") == []
    # a longer title that merely starts with a collection title
    ref = ("S. Rendle, W. Krichene, L. Zhang, J. Anderson. 2020. Neural Collaborative Filtering vs. "
           "Matrix Factorization Revisited. In RecSys.")
    assert m.match(ref) == []
    assert m.match("X. He et al. 2017. Neural collaborative filtering. In WWW. 173-182.")[0][0] == 6
    # unrelated reference sharing some words
    assert m.match("A. Author. Deep networks for click prediction in display ads. KDD 2015.") == []


def test_link_citations_no_self_links_and_best_score():
    refs = {
        1: ["X. Guo. 2017. DeepFM: A Factorization-Machine based Neural Network for CTR Prediction. IJCAI.",
            "H. Cheng. 2016. Wide & Deep Learning for Recommender Systems. DLRS."],  # self-citation
        2: ["H. Cheng et al. 2016. Wide & deep learning for recommender systms. DLRS.",
            "H. Cheng et al. 2016. Wide & deep learning for recommender systems. In DLRS."],
        7: [],
    }
    links = link_citations(refs, TITLES)
    pairs = [(c, d) for c, d, _, _ in links]
    assert (1, 2) in pairs and (2, 1) in pairs
    assert (1, 1) not in pairs
    assert len(pairs) == len(set(pairs))
    best = [l for l in links if l[:2] == (2, 1)][0]
    assert best[3] == 100.0 and "systems" in best[2]


def test_matcher_scales_without_false_matches():
    """Thousands of near-template titles: unrelated references match none of them, a real one still
    finds its paper (the speed is measured by the ingestion benchmark, not here)."""
    titles = {i: f"Learning topic {i} representations with method number {i * 7} for tasks" for i in range(5000)}
    titles.update(TITLES)
    m = TitleMatcher(titles)
    refs = [f"A. Author. 2019. Some study number {i} of recommender systems and ads. In KDD." for i in range(1000)]
    assert all(m.match(r) == [] for r in refs)
    hit = m.match("H. Guo et al. 2017. DeepFM: A Factorization-Machine based Neural Network for CTR Prediction. IJCAI.")
    assert hit and hit[0][0] == 2
