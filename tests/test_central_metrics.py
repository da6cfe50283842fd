"""Central figure: ranking metrics, text clean-up and the combination fit on hand examples."""
from __future__ import annotations

import math

import numpy as np
import pytest

from app.central.baselines import Tfidf, pick_first_scores
from app.central.data import Segmenter, clean_caption, mask_refs, split_papers
from app.central.evaluate import (acc_at_k, average_precision, gold_metrics, ndcg, random_expectation, rank_by,
                                  reciprocal_rank)


def test_rank_by_ties_keep_figure_order():
    assert rank_by([1, 2, 3], [0.5, 0.9, 0.5]) == [2, 1, 3]
    assert rank_by([3, 1, 2], [0.0, 0.0, 0.0]) == [1, 2, 3]


def test_acc_mrr_map_by_hand():
    ranking, gold = [2, 1, 3, 4], [1, 3]
    assert acc_at_k(ranking, gold, 1) == 0.0
    assert acc_at_k(ranking, gold, 2) == 1.0
    assert reciprocal_rank(ranking, gold) == pytest.approx(1 / 2)
    # relevant at ranks 2 and 3: (1/2 + 2/3) / 2
    assert average_precision(ranking, gold) == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert average_precision([1, 3, 2], gold) == pytest.approx(1.0)
    assert reciprocal_rank([4, 5], gold) == 0.0


def test_ndcg_by_hand():
    gold = [3, 1, 2]  # gains 3, 2, 1
    assert ndcg([3, 1, 2, 4], gold) == pytest.approx(1.0)
    dcg = 2 / math.log2(2) + 3 / math.log2(3) + 1 / math.log2(4)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert ndcg([1, 3, 2], gold) == pytest.approx(dcg / idcg)
    m = gold_metrics([1, 3, 2, 4], gold)
    assert set(m) == {"acc@1", "acc@3", "map", "mrr", "ndcg"}
    assert m["acc@1"] == 0.0 and m["acc@3"] == 1.0 and m["mrr"] == 1.0


def test_random_expectation():
    r = random_expectation(4)
    assert r["acc@1"] == pytest.approx(0.25)
    assert r["mrr"] == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)


def test_pick_first_and_tfidf():
    assert rank_by([2, 1, 5], pick_first_scores([2, 1, 5])) == [1, 2, 5]
    tf = Tfidf.fit(["neural network architecture", "training loss curves", "a prediction model"])
    s = tf.scores("the architecture of our neural network", ["Training loss curves.", "Network architecture."])
    assert s[1] > s[0] and s[0] == 0.0


def test_mask_refs_and_clean_caption():
    assert mask_refs("as shown in Figure 3(b) and Fig. 4") == "as shown in figure and figure"
    assert mask_refs("Figs. 2 and 3 compare; Table 1 lists") == "figure compare; table lists"
    assert "3" not in mask_refs("see Figure3 for details")
    assert clean_caption("Figure 3: The architecture of the model.") == "The architecture of the model."
    assert clean_caption("Fig. 12. Results") == "Results"
    seg = Segmenter.from_texts(["the neural network model with dropout is a simple model"])
    assert clean_caption("Figure1:DropoutNeuralNetModel.Left:a net", seg).startswith("Dropout Neural Net Model. Left:")


def test_split_papers_is_seeded_and_disjoint():
    shas = [f"{i:064x}" for i in range(50)]
    tr, va = split_papers(shas, 0.2, seed=0)
    assert len(va) == 10 and not set(tr) & set(va) and set(tr) | set(va) == set(shas)
    assert split_papers(shas, 0.2, seed=0) == (tr, va)
    assert split_papers(shas, 0.2, seed=1)[1] != va
    # adding a paper does not move the others
    tr2, va2 = split_papers(shas + ["f" * 64], 0.2, seed=0)
    assert set(va) - set(va2) == set() or len(set(va) ^ set(va2)) <= 2


def test_fit_weights_moves_towards_the_signal():
    from app.central.defaults import default_weights

    DEFAULT_WEIGHTS = default_weights()
    from app.central.scoring import FEATURES, fit_weights

    rng = np.random.default_rng(0)
    items = []
    for _ in range(20):  # gold = the figure with the highest "area" feature
        X = rng.normal(size=(5, len(FEATURES)))
        best = int(np.argmax(X[:, FEATURES.index("area")]))
        items.append((X, [1, 2, 3, 4, 5], [best + 1]))
    w = fit_weights(items, DEFAULT_WEIGHTS, l2=0.01)
    assert w["area"] > DEFAULT_WEIGHTS["area"] + 0.5


def test_shipped_gold_file_is_well_formed():
    """tests/data/central_gold.jsonl (hand labels for `eval-central --gold`) parses with the
    project's reader: one paper per sha256, distinct positive figure numbers, central first."""
    import json
    from pathlib import Path

    from app.central.evaluate import read_gold

    path = Path(__file__).parent / "data" / "central_gold.jsonl"
    gold = read_gold(path)
    lines = [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
    assert len(gold) == len(lines) >= 12
    for sha, numbers in gold.items():
        assert len(sha) == 64 and int(sha, 16) >= 0
        assert numbers and len(set(numbers)) == len(numbers) and all(n >= 1 for n in numbers)


def test_bootstrap_interval_and_paper_grouped_test():
    from app.stats import bootstrap_ci, paired_by_paper

    assert bootstrap_ci([1.0] * 10) == [1.0, 1.0]
    lo, hi = bootstrap_ci([0.0] * 10 + [1.0] * 10)
    assert 0.2 < lo < 0.5 < hi < 0.8
    # 10 papers, 5 queries each; a beats b on every paper: grouped by paper, 10 pairs, not 50
    papers = [f"p{i}" for i in range(10) for _ in range(5)]
    a = [1.0, 1.0, 0.0, 1.0, 0.0] * 10
    b = [0.0, 1.0, 0.0, 0.0, 0.0] * 10
    t = paired_by_paper(papers, a, b)
    assert t["n_papers"] == 10 and t["mean_diff"] == pytest.approx(0.4) and t["papers_better"] == 10
    assert t["p_t"] < 0.01 or t["p_wilcoxon"] < 0.01
    same = paired_by_paper(papers, a, a)
    assert same["p_t"] == 1.0 and same["mean_diff"] == 0.0
    mixed = paired_by_paper(["p1", "p1", "p2", "p2"], [1, 0, 0, 0], [0, 0, 1, 0])
    assert mixed["papers_better"] == 1 and mixed["papers_worse"] == 1 and mixed["p_t"] > 0.3


def _paper(figs):
    from app.central.data import FigureInfo, PaperInfo

    return PaperInfo(id=1, sha256="a" * 64, title="T", abstract="", n_pages=10,
                     figures=[FigureInfo(id=i, number=i, caption=c, text=c, page=pg, width=100, height=100, **kw)
                              for i, (c, pg, kw) in enumerate(figs, 1)])


def test_bad_crops_are_never_central_and_type_features():
    from app.central.defaults import default_weights

    DEFAULT_WEIGHTS = default_weights()
    from app.central.scoring import FEATURES, combine, crop_ok, feature_matrix

    p = _paper([("Overview of the framework.", 2, {"crop_quality": "text_only"}),
                ("Results on the test set.", 6, {"figure_types": [{"type": "diagram", "score": 0.9}], "n_panels": 4}),
                ("Accuracy versus size.", 8, {"figure_types": [{"type": "line_chart", "score": 0.8}]})])
    X = feature_matrix(p, None, [1.0, 0.0, 0.0])
    assert X.shape == (3, len(FEATURES))
    col = {k: X[:, i].tolist() for i, k in enumerate(FEATURES)}
    assert col["diagram"] == [0.0, 0.9, 0.0] and col["panels"][1] == pytest.approx(4 / 6)
    assert col["early_diagram"][1] == pytest.approx(0.9 * (1 - 5 / 9))
    assert col["caption_kind"] == [1.0, -1.0, -1.0]
    ok = crop_ok(p)
    assert ok.tolist() == [False, True, True]
    s = combine(X, DEFAULT_WEIGHTS, ok)
    assert s[0] < min(s[1], s[2])  # first, diagram caption, best tf.idf: still below every good crop
    assert combine(X, DEFAULT_WEIGHTS)[0] > s[0]


def test_caption_kind_has_no_corpus_words():
    """The caption keyword lists are generic: metric names of one field do not decide a caption's kind."""
    from app.central.scoring import caption_type

    for text in ("GAUC of the models.", "Logloss over training.", "AUC on the dataset.", "The app interface."):
        assert caption_type(text) == 0.0


class _FixedCosines:
    """Stands in for the bi-encoder: a fixed cosine per (sentence, caption) pair, 0 when not listed."""

    def __init__(self, table: dict[tuple[str, str], float], lexical_weight: float = 0.0):
        self.table = table
        self.meta = {"lexical_weight": lexical_weight}

    def score(self, sentences, captions, batch_size: int = 64):
        return [self.table.get((s, c), 0.0) for s, c in zip(sentences, captions)]

    def score_matrix(self, sentences, captions):
        return np.asarray([self.score([s] * len(captions), captions) for s in sentences])


def _lexical_papers():
    from app.central.data import FigureInfo, PaperInfo, Query

    caps = ["Ranking loss of the sampler on sparse graphs.", "Encoder layout with gated experts.",
            "Click rates under budget limits."]
    paper = PaperInfo(id=1, sha256="p", abstract="We study gated experts on sparse graphs.",
                      figures=[FigureInfo(id=i, number=i, caption=c, text=c) for i, c in enumerate(caps, 1)])
    sents = ["the sampler keeps sparse graphs small", "gated experts share the encoder", "budget limits cut clicks"]
    queries = [Query(paper_sha="p", sentence=s, context=[s], target=i, candidates=[1, 2, 3])
               for i, s in enumerate(sents, 1)]
    return paper, caps, sents, queries


def test_lexical_weight_is_chosen_on_dev_queries():
    from app.central.baselines import fit_tfidf_for_papers
    from app.central.train import fit_lexical_weight

    paper, caps, sents, queries = _lexical_papers()
    tfidf = fit_tfidf_for_papers([paper])
    # cosines that prefer the wrong caption a little: the shared words must win, so w > 0
    wrong = {(s, caps[(i + 1) % 3]): 0.05 for i, s in enumerate(sents)}
    fit = fit_lexical_weight(_FixedCosines(wrong), tfidf, queries, [paper])
    assert fit["weight"] > 0 and fit["dev_mrr"] == 1.0 and fit["dev_mrr_bi_encoder"] < 1.0
    # cosines that already rank every query right: ties go to the smaller weight, 0
    right = {(s, caps[i]): 0.9 for i, s in enumerate(sents)}
    assert fit_lexical_weight(_FixedCosines(right), tfidf, queries, [paper])["weight"] == 0.0


def test_content_model_pair_score_adds_weighted_tfidf():
    from app.central.baselines import fit_tfidf_for_papers
    from app.central.scoring import CentralScorer

    paper, caps, sents, _ = _lexical_papers()
    tfidf = fit_tfidf_for_papers([paper])
    cos = {(sents[0], caps[0]): 0.3, (sents[0], caps[1]): 0.5}
    scorer = CentralScorer(tfidf, model=_FixedCosines(cos, lexical_weight=2.0))
    got = scorer.pair_scores([sents[0], sents[0]], caps[:2])
    tf = tfidf.pair_scores([sents[0], sents[0]], caps[:2])
    assert tf[0] > 0 and tf[1] == 0.0
    assert got == pytest.approx([0.3 + 2.0 * tf[0], 0.5])
    content = scorer.content_scores(paper)
    m = np.asarray(tfidf.matrix([paper.abstract], caps))[0]
    assert content["bi_encoder"] == pytest.approx([0.0, 0.0, 0.0])
    assert content["model"] == pytest.approx((2.0 * m).tolist()) and m.max() > 0
    assert CentralScorer(tfidf, model=_FixedCosines(cos)).pair_scores(sents[:1], caps[1:2]) == [0.5]
