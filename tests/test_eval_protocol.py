"""The evaluation protocols: a feature that knows a figure's paper must win the published protocol and
gain nothing when same-paper figures are not candidates (cross-paper)."""
import numpy as np

from app.eval.recommendation import (EvalData, Split, engine_candidates, evaluate_cross, evaluate_ranker,
                                     fused_ranker, paper_grouped_test, run_cross_paper, summarise)
from app.search.collection import Collection
from app.search.doc_table import FigureDoc
from app.search.searcher import Searcher
from app.search.fusion import SAME_TYPE_BONUS

WORDS = [f"w{i}x" for i in range(60)]


def collection(n_papers=12, per_paper=7, seed=0):
    rng = np.random.default_rng(seed)
    docs, neigh = [], {}
    for p in range(n_papers):
        topic = WORDS[(p % 6) * 10:(p % 6) * 10 + 10]
        for j in range(per_paper):
            words = list(rng.choice(topic, 6)) + list(rng.choice(WORDS, 4))
            docs.append(FigureDoc(1000 * p + j, p, f"Figure {j}", " ".join(words)))
        neigh.setdefault(p, set()).add((p + 1) % n_papers)
        neigh.setdefault((p + 1) % n_papers, set()).add(p)
    col = Collection(docs, {p: f"{p:064x}" for p in range(n_papers)})
    col.neighbours.update(neigh)
    return col


def test_planted_same_paper_feature_wins_published_protocol_and_adds_nothing_cross_paper():
    col = collection()
    data = EvalData(col, Searcher.build(col.docs), {})
    targets = list(range(0, len(col.docs), 3))

    def planted(t, rows):
        return {"planted": (data.paper_of[rows] == data.paper_of[t]).astype(float)}

    seed_c = engine_candidates(data, targets, "all", extra=planted)
    with_plant = summarise(evaluate_ranker(data, fused_ranker(seed_c, {"lexical": 0.01, "planted": 1.0}), targets))
    without = summarise(evaluate_ranker(data, fused_ranker(seed_c, {"lexical": 1.0}), targets))
    assert with_plant["p@5"] > 0.99 and with_plant["same_p@5"] > 0.99
    assert with_plant["p@5"] > without["p@5"]

    cross_c = engine_candidates(data, targets, "other_papers", extra=planted)
    a = evaluate_cross(data, fused_ranker(cross_c, {"lexical": 1.0, "planted": 1.0}), targets)
    b = evaluate_cross(data, fused_ranker(cross_c, {"lexical": 1.0}), targets)
    assert a["p@5"] == b["p@5"]
    assert all(not cross_c.signals[t]["planted"].any() for t in targets)


def test_cross_paper_section_and_grouped_test():
    col = collection()
    data = EvalData(col, Searcher.build(col.docs), {})
    rows = list(range(len(col.docs)))
    split = Split(test=[r for r in rows if data.paper_of[r] < 8], val=[r for r in rows if data.paper_of[r] >= 8],
                  n_qualifying=len(rows))
    section, weights = run_cross_paper(data, split)
    assert section["n_targets"] == len(split.test)
    for name in ("tfidf", "tfidf_abstract", "default"):
        row = section["methods"][name]
        assert {"p@5", "p@10", "map", "p_value_vs_tfidf", "uses_paper_fields"} <= set(row)
    assert section["methods"]["tfidf"]["p_value_vs_tfidf"] == 1.0
    assert "lexical" in weights
    assert weights == data.engine.ranking.weights_of("other_papers")
    assert section["methods"]["citation_fitted"]["weights"]["type"] == SAME_TYPE_BONUS
    # the served row ranks with the engine's ranking config, not with weights fitted on these labels
    assert section["methods"]["default"]["weights"] == data.engine.ranking.weights_of("other_papers")
    # grouped test: a clear difference on every paper is significant, no difference is not
    n = len(split.test)
    hi, lo = [1.0] * n, [0.0] * n
    clear = paper_grouped_test(data, split.test, hi, lo)
    assert clear["diff"] == 1.0 and clear["ci95"] == [1.0, 1.0]
    assert paper_grouped_test(data, split.test, lo, lo)["p_value"] == 1.0


def test_paper_views_rank_citation_neighbours():
    from app.eval.recommendation import paper_view_ranking
    from app.search.papers import PaperIndex

    col = collection()
    engine = Searcher.build(col.docs)
    data = EvalData(col, engine, {})
    pids = sorted({d.paper_id for d in col.docs})
    # papers 2k and 2k + 1 cite each other and share a title word; nothing else is shared
    titles = [[f"pair{p // 2}x", f"own{p}x"] for p in pids]
    engine.papers = PaperIndex.build(pids, None, titles, engine.lexical(), data.paper_of)
    targets = list(range(len(col.docs)))
    out = paper_view_ranking(data, targets, {"paper_text": 1.0})
    assert out["n_papers"] == len(pids)
    assert out["views"]["paper_text"]["p@1"] == 1.0 and out["views"]["served_mix"]["p@1"] == 1.0
    # the figures view has no such cue: the topic words its papers share are not the citation ring's
    assert out["views"]["paper_figures"]["p@1"] < 0.5


def test_cross_paper_reports_how_many_related_figures_share_the_type():
    """The served ranking's fixed same-type bonus shows in `same_type@5` (not a relevance metric)."""
    col = collection()
    types = ["line_chart" if d.figure_id % 2 else "bar_chart" for d in col.docs]
    data = EvalData(col, Searcher.build(col.docs, figure_types=types), {})
    rows = list(range(len(col.docs)))
    split = Split(test=[r for r in rows if data.paper_of[r] < 8], val=[r for r in rows if data.paper_of[r] >= 8],
                  n_qualifying=len(rows))
    section, _ = run_cross_paper(data, split)
    tfidf, served = section["methods"]["tfidf"], section["methods"]["default"]
    assert 0.0 <= tfidf["same_type@5"] <= 1.0
    assert served["same_type@5"] > tfidf["same_type@5"] + 0.2
