"""Searcher: first stage + re-ranking semantics, hits, versioned persistence of its parts."""
from dataclasses import replace

import numpy as np
import pytest

from app.model_store.versions import current_version
from app.search.doc_table import FigureDoc
from app.search.ranking import DEFAULT_THRESHOLDS
from app.search.searcher import QueryVocabulary, Searcher
from app.search.text import analyze

TEXTS = [
    "Click-through rate prediction with factorization machines on the Criteo dataset",
    "CTR prediction AUC of factorization machines and deep networks on Criteo",
    "Deep factorization machine architecture for click-through rate prediction",
    "Multi-task learning with mixture of experts gates for recommendation",
    "Mixture of experts: gate weights across tasks in multi-task recommendation",
    "Training loss of the mixture of experts model",
    "Image classification accuracy of convolutional networks on ImageNet",
    "Click-through rate of the baseline model over time",
]


def docs():
    return [FigureDoc(figure_id=100 + i, paper_id=10 + i // 3, caption=f"Figure {i}: {t[:20]}", text=t)
            for i, t in enumerate(TEXTS)]


def emb(seed=0, dim=16):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((len(TEXTS), dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


class FakeEncoder:
    """Deterministic query 'embedding': the normalised sum of the doc vectors sharing a word."""

    def __init__(self, e):
        self.e, self.calls = e, 0

    def __call__(self, texts):
        self.calls += 1
        q = set(analyze(texts[0]))
        v = sum((self.e[i] for i, t in enumerate(TEXTS) if q & set(analyze(t))), np.full(self.e.shape[1], 1e-3))
        return np.asarray(v, dtype=np.float32)[None, :]


# a query names a figure type by its code name (the product's vocabulary is app.vision.vocabulary's)
TYPE_NAMES = QueryVocabulary(lambda q: [w for w in q.split() if w in ("photo", "heatmap", "line_chart")])


def with_thresholds(eng, **values):
    """The searcher ranking with other text-query thresholds (ranking config)."""
    eng.ranking = replace(eng.ranking, thresholds={**eng.ranking.thresholds, **values})
    return eng


@pytest.fixture()
def engine():
    e = emb()
    return Searcher.build(docs(), embeddings=e, encoder=FakeEncoder(e), vector_kind="flat", gpu="off")


def test_similar_excludes_target_and_w1_is_lexical(engine):
    hits = engine.similar(100, k=7, w=1.0)
    assert 100 not in [h.figure_id for h in hits]
    lex_rows, lex_scores = engine.lexical().search_doc(engine.row_of(100), k=7)
    assert [h.figure_id for h in hits] == [100 + r for r in lex_rows.tolist()]
    assert [h.lexical_score for h in hits] == pytest.approx(lex_scores.tolist())
    assert hits[0].figure_id in (101, 102, 107)


def test_similar_w0_is_cosine_order_among_candidates(engine):
    e = emb()
    hits = engine.similar(100, k=10, w=0.0)
    cand = set(engine.lexical().search_doc(0, k=100)[0].tolist())
    assert {h.figure_id - 100 for h in hits} == cand
    cos = [float(e[h.figure_id - 100] @ e[0]) for h in hits]
    assert cos == sorted(cos, reverse=True)
    assert [h.embedding_score for h in hits] == pytest.approx(cos, abs=2e-3)
    assert [h.score for h in hits] == pytest.approx(cos, abs=2e-3)


def test_hits_carry_fields_and_matched_terms(engine):
    hits = engine.similar(100, k=3, w=0.5)
    h = hits[0]
    assert h.paper_id == 10 + (h.figure_id - 100) // 3
    assert h.caption.startswith(f"Figure {h.figure_id - 100}:")
    assert h.matched_terms and set(h.matched_terms) <= set(analyze(TEXTS[0]))
    res = engine.search("factorization machines criteo", k=3, rerank=False)
    assert res[0].figure_id in (100, 101)
    assert set(res[0].matched_terms) == {"factor", "machin", "criteo"}
    assert res[0].embedding_score is None


def test_search_rerank_offset_and_default_w(engine):
    enc = engine.encoder
    full = engine.search("mixture of experts recommendation", k=5)
    assert enc.calls == 1 and all(h.embedding_score is not None for h in full)
    unlimited = engine.search("mixture of experts recommendation", k=5, per_paper=0)
    assert {h.figure_id for h in unlimited[:3]} == {103, 104, 105}  # one paper's three figures
    # served: two of a paper in a block, its third moved down after another paper's
    assert [h.figure_id for h in full[:2]] == [h.figure_id for h in unlimited[:2]]
    assert full[2].paper_id != full[0].paper_id and unlimited[2].figure_id in {h.figure_id for h in full[3:]}
    page2 = engine.search("mixture of experts recommendation", k=2, offset=2)
    assert [h.figure_id for h in page2] == [h.figure_id for h in full[2:4]]
    assert engine.w == 0.5
    lex_only = engine.search("mixture of experts recommendation", k=5, w=1.0, per_paper=0)
    lexical = [h.figure_id for h in engine.search("mixture of experts recommendation", k=5, rerank=False,
                                                  per_paper=0)]
    # w = 1 keeps the lexical order; figures found only by meaning come after every word match
    # (before the per-paper limit, which depends on which other papers' figures are candidates)
    assert [h.figure_id for h in lex_only][:len(lexical)] == lexical
    assert all(h.lexical_score == 0 for h in lex_only[len(lexical):])
    assert engine.search("zzzz qqqq", k=3, rerank=False) == []


def test_search_without_a_real_match_returns_nothing(engine):
    """Neither a word nor a close embedding: no results, instead of the nearest arbitrary figures."""
    with_thresholds(engine, dense_match_min=2.0)  # no cosine reaches it
    assert engine.search("zzzz qqqq", k=3) == []
    assert engine.search("mixture of experts", k=3)  # word matches still count


def test_query_of_unknown_words_needs_a_clearly_close_meaning():
    """A query none of whose words the collection knows (a keyboard mash) counts a figure found
    only by its embedding from dense_match_unknown_words_min on; with a known word in the query,
    dense_match_min is enough."""
    e = np.eye(len(TEXTS), 16, dtype=np.float32)
    q = np.zeros((1, 16), np.float32)
    q[0, 0], q[0, 15] = 0.35, np.sqrt(1 - 0.35 ** 2)  # cosine .35 with the first figure, 0 with the rest
    eng = Searcher.build(docs(), embeddings=e, encoder=lambda texts: q, vector_kind="flat", gpu="off",
                         vocabulary=TYPE_NAMES)
    assert DEFAULT_THRESHOLDS["dense_match_min"] < 0.35 < DEFAULT_THRESHOLDS["dense_match_unknown_words_min"]
    assert eng.search("qwertyuiop", k=5) == []
    known = [h.figure_id for h in eng.search("experts", k=8)]
    assert set(known) == {100, 103, 104, 105}  # the three word matches and the close figure
    # a query naming a figure type counts as known words even where the collection never uses them
    assert [h.figure_id for h in eng.search("photo", k=5)] == [100]
    with_thresholds(eng, dense_match_unknown_words_min=0.3)
    assert [h.figure_id for h in eng.search("qwertyuiop", k=5)] == [100]


def test_picture_search_prefers_figures_of_the_uploads_kind():
    """By picture: the nearest fingerprint first, unless a slightly farther figure is of the
    upload's kind (its type scores); an exact copy stays first; without type scores, fingerprint
    order."""
    vis = np.eye(len(TEXTS), 16, dtype=np.float32)
    q = np.zeros(16, np.float32)
    q[0], q[1] = 0.8, 0.6  # cosine .8 with figure 100, .6 with figure 101, 0 with the rest
    types = ["line_chart", "heatmap"] + ["diagram"] * (len(TEXTS) - 2)
    scores = [{t: 0.9} for t in types]
    eng = Searcher.build(docs(), visual_embeddings=vis, figure_types=types, type_scores=scores)
    assert [h.figure_id for h in eng.by_picture(q, k=2)] == [100, 101]
    heat = {"heatmap": 0.95, "line_chart": 0.05}
    hits = eng.by_picture(q, k=2, type_scores=heat)
    assert [h.figure_id for h in hits] == [101, 100]
    assert [h.signals["type"] for h in hits] == [1.0, 0.0]  # "same kind of figure" only for the heatmap
    assert eng.by_picture(vis[0], k=1, type_scores=heat)[0].figure_id == 100  # a copy of figure 100


def test_spelling_suggestion_for_unknown_words():
    eng = Searcher.build(docs())
    assert eng.spelling_suggestion("factorizaton machines") == "factorization machines"  # spelt as in a caption
    assert eng.spelling_suggestion("Mixtre of experts") == "mixture of experts"
    assert eng.spelling_suggestion("factorization machines") is None  # every word is known
    assert eng.spelling_suggestion("qwertyuiop") is None  # no close spelling: stays unmatched
    assert eng.spelling_suggestion("factorizaton qwertyuiop") is None


def test_spelling_leaves_english_words_alone_and_needs_a_close_frequent_word():
    """An English word the collection lacks ("recall") is never replaced by a near word it has
    ("real"); a typo is replaced by the closest word the captions use often enough, not by a
    word one caption happens to use."""
    texts = ["Real clicks of users over a week shown as a heatmap",
             "Real and simulated sessions, heatmap of dwell time per item",
             "Heatmap of attention weights over the real catalogue",
             "Histogram of session lengths on the real log, one outlier"]
    eng = Searcher.build([FigureDoc(figure_id=1 + i, paper_id=1 + i, caption=t, text=t)
                              for i, t in enumerate(texts)])
    assert eng.spelling_suggestion("recall") is None
    assert eng.spelling_suggestion("recall heatmpa") == "recall heatmap"
    assert eng.spelling_suggestion("heatmpa") == "heatmap"
    assert eng.spelling_suggestion("outlie") is None  # English word: left alone
    assert eng.spelling_suggestion("outlierz") is None  # "outlier" is in one caption only
    # a word of the figure types' names is understood in any collection
    eng.vocabulary = QueryVocabulary(understood=frozenset({"histogram"}))
    assert eng.spelling_suggestion("histogrma") == "histogram"
    assert eng.spelling_suggestion("outlierz") is None


def test_spelling_vocabulary_is_built_once_even_when_prepared_concurrently():
    """A server prepares the vocabulary in the background while a request may already need it:
    both get the one vocabulary, and the captions are read once."""
    import threading

    from app.search.spelling import Spelling

    eng = Searcher.build(docs())
    reads = []

    class Counting(list):
        def __getitem__(self, i):
            reads.append(i)
            return super().__getitem__(i)

    eng.spelling = Spelling(captions=Counting(eng.captions), lexical=eng.lexical())
    threads = [threading.Thread(target=eng.prepare_spelling) for _ in range(4)]
    for t in threads:
        t.start()
    assert eng.spelling_suggestion("factorizaton machines") == "factorization machines"
    for t in threads:
        t.join()
    assert len(reads) == len(eng.captions)


def test_lexical_only_engine_and_tfidf():
    eng = Searcher.build(docs())
    hits = eng.similar(103, k=3)
    assert hits and all(h.embedding_score is None for h in hits)
    assert hits[0].score == hits[0].lexical_score
    t = eng.similar(103, k=3, method="tfidf")
    assert t[0].figure_id in (104, 105) and 0 < t[0].score <= 1.0
    with pytest.raises(KeyError):
        eng.similar(999)


def test_union_dense_adds_neighbours(engine):
    hits = engine.similar(106, k=8, union_dense=7, w=0.0)
    assert 106 not in [h.figure_id for h in hits]
    assert len(hits) == 7          # every other figure: lexical candidates + dense neighbours


def test_save_load_current_and_version_switch(tmp_path, engine):
    root = tmp_path / "index"
    assert current_version(root) is None
    v1 = engine.save(root)
    assert current_version(root) == v1
    a = Searcher.load_current(root, encoder=engine.encoder)
    assert a.version == v1
    assert [h.figure_id for h in a.similar(100, k=5)] == [h.figure_id for h in engine.similar(100, k=5)]
    assert [h.score for h in a.search("criteo", k=3)] == pytest.approx(
        [h.score for h in engine.search("criteo", k=3)], abs=1e-6)
    # a new build becomes CURRENT atomically; the old object keeps working
    smaller = Searcher.build(docs()[:5])
    v2 = smaller.save(root)
    assert v2 != v1 and current_version(root) == v2
    b = Searcher.load(root)
    assert len(b) == 5 and b.version == v2 and len(a) == 8
    # a fitted ranking config is published as a new version of the same index
    from app.search.ranking import RankingConfig, publish_ranking

    cfg = b.ranking.with_weights("other_papers", {"lexical": 1.0, "text": 2.0}, w=0.7, fitted_for=v2)
    v3 = publish_ranking(root, cfg)
    c = Searcher.load_current(root)
    assert c.version == v3 and c.w == 0.7 and c.ranking == cfg and len(c) == 5
    assert c.weights("other_papers") == {"lexical": 1.0, "text": 2.0}
    assert Searcher.load(root / v2).ranking == RankingConfig()  # the old version is untouched
    for _ in range(3):
        smaller.save(root, keep=2)
    assert len([p for p in root.iterdir() if p.is_dir()]) == 2


def test_scopes_split_other_papers_and_same_paper(engine):
    own = {100, 101, 102}  # paper 10
    other = engine.similar(100, k=20, scope="other_papers")
    assert other and not own & {h.figure_id for h in other}
    same = engine.similar(100, k=20, scope="same_paper")
    assert {h.figure_id for h in same} == own - {100}
    assert all(h.signals is not None and "lexical" in h.signals for h in other + same)
    with pytest.raises(ValueError):
        engine.similar(100, scope="everything")


def test_paper_signals_and_persistence(tmp_path):
    from app.search.papers import PaperIndex

    d = docs()
    pids = sorted({x.paper_id for x in d})
    texts = {10: "click through rate prediction", 11: "mixture of experts multi task",
             12: "click rate prediction with factorization", 13: "image segmentation"}
    eng = Searcher.build(d, figure_types=["line_chart", "heatmap"] * (len(d) // 2) + ["diagram"] * (len(d) % 2))
    eng.papers = PaperIndex.build(pids, None, [analyze(texts.get(p, "misc")) for p in pids], eng.lexical(),
                                  eng.paper_ids)
    hits = eng.similar(100, k=20, scope="other_papers", weights={"lexical": 0.0, "paper_text": 1.0})
    # paper 12 shares "click ... prediction" with paper 10: its figures come first
    assert hits[0].paper_id == 12 and hits[0].signals["paper_text"] > 0
    assert eng.types.type_of_row(eng.row_of(101)) == "heatmap"
    eng.save(tmp_path)
    back = Searcher.load(tmp_path)
    assert back.papers is not None and back.types.names == eng.types.names
    again = back.similar(100, k=20, scope="other_papers", weights={"lexical": 0.0, "paper_text": 1.0})
    assert [h.figure_id for h in again] == [h.figure_id for h in hits]


def test_search_finds_a_named_type_without_the_word(engine):
    e = emb()
    eng = Searcher.build(docs(), embeddings=e, encoder=FakeEncoder(e), vector_kind="flat", gpu="off",
                         figure_types=["heatmap" if i == 4 else "line_chart" for i in range(len(TEXTS))],
                         vocabulary=TYPE_NAMES)
    with_thresholds(eng, dense_match_min=2.0)  # only words or the named type count
    hits = eng.search("heatmap", k=3)
    assert [h.figure_id for h in hits] == [104]


def test_search_ranks_a_named_type_by_its_score(tmp_path):
    """A figure whose classifier scores the named type high without it being dominant is still
    found, after the dominant one and before figures where the type scores low; the scores
    survive save/load."""
    e = emb()
    scores = [{"line_chart": 0.9, "heatmap": 0.05} for _ in TEXTS]
    scores[4] = {"line_chart": 0.1, "heatmap": 0.9}
    scores[6] = {"line_chart": 0.6, "heatmap": 0.55}  # dominant: line chart, but shows a heatmap too
    scores[2] = {"line_chart": 0.85, "heatmap": 0.15}  # below the threshold (.2): not a heatmap
    eng = Searcher.build(docs(), embeddings=e, encoder=FakeEncoder(e), vector_kind="flat", gpu="off",
                         figure_types=[max(s, key=s.get) for s in scores], type_scores=scores,
                         vocabulary=TYPE_NAMES)
    with_thresholds(eng, dense_match_min=2.0)  # only words or the named type count
    assert [h.figure_id for h in eng.search("heatmap", k=5)] == [104, 106]
    eng.save(tmp_path)
    back = Searcher.load(tmp_path, encoder=FakeEncoder(e), vocabulary=TYPE_NAMES)
    with_thresholds(back, dense_match_min=2.0)
    assert [h.figure_id for h in back.search("heatmap", k=5)] == [104, 106]
    assert back.types.scores is not None and back.types.scores.shape == (len(TEXTS), 2)


def test_each_result_of_a_named_type_query_says_how_surely_it_shows_the_type():
    """A query naming a type: a figure scoring it at even odds or more "looks like" it, one that
    passes only the search's own cut-off (type_match_min) "may show" it, and one found by a word
    alone claims nothing about the type."""
    from app.search.explain import reasons

    e = emb()
    scores = [{"line_chart": 0.9, "heatmap": 0.05} for _ in TEXTS]
    scores[4] = {"line_chart": 0.1, "heatmap": 0.9}
    scores[6] = {"line_chart": 0.7, "heatmap": 0.3}  # above type_match_min (.2), below SAME_TYPE_MIN (.5)
    scores[5] = {"line_chart": 0.9, "heatmap": 0.1}  # found by the word "training" only
    eng = Searcher.build(docs(), embeddings=e, encoder=FakeEncoder(e), vector_kind="flat", gpu="off",
                         figure_types=[max(s, key=s.get) for s in scores], type_scores=scores,
                         vocabulary=TYPE_NAMES)
    with_thresholds(eng, dense_match_min=2.0)  # only words or the named type count

    def said():
        return {h.figure_id: [r for r in reasons(h.signals, "heatmap", named_type=True) if "heatmap" in r]
                for h in eng.search("heatmap training", k=10)}

    assert said() == {104: ["looks like a heatmap"], 106: ["may show a heatmap"], 105: []}
    with_thresholds(eng, dense_match_min=2.0, type_match_min=0.4)  # the served cut-off decides, not a copy of it
    assert said() == {104: ["looks like a heatmap"], 105: []}


def test_tables_are_rows_of_their_own_kind(tmp_path):
    """Tables share the index with figures: search restricts by kind, a figure's related rows are
    figures and a table's are tables, and the kinds survive save/load."""
    ds = docs()
    ds[1] = FigureDoc(101, 10, "Table 1: CTR", ds[1].text + " auc logloss criteo", kind="table")
    ds[4] = FigureDoc(104, 11, "Table 2: gates", ds[4].text + " auc", kind="table")
    eng = Searcher.build(ds, embeddings=emb(), encoder=FakeEncoder(emb()))
    assert eng.types.count("figure") == 6 and eng.types.count("table") == 2
    figs = eng.search("criteo factorization", k=10, rerank=False)
    assert figs and all(h.figure_id not in (101, 104) for h in figs)
    assert [h.figure_id for h in eng.search("criteo", k=10, rerank=False, kind="table")] == [101]
    both = {h.figure_id for h in eng.search("criteo", k=10, rerank=False, kind="both")}
    assert 101 in both and both & {100, 102}
    for scope in ("all", "other_papers", "same_paper"):
        assert {h.figure_id for h in eng.similar(101, k=10, scope=scope)} <= {104}
        assert not {h.figure_id for h in eng.similar(100, k=10, scope=scope)} & {101, 104}
    eng.save(tmp_path)
    back = Searcher.load(tmp_path)
    assert back.types.count("table") == 2 and back.types.kind_of_row(back.row_of(104)) == "table"
    pics = Searcher.build(ds, visual_embeddings=emb(1))
    assert [h.figure_id for h in pics.by_picture(emb(1)[1], k=1, kind="table")] == [101]
    assert 101 not in [h.figure_id for h in pics.by_picture(emb(1)[1], k=8)]
    assert len(pics.by_picture(emb(1)[0], k=8)) == 6 and len(pics.by_picture(emb(1)[0], k=8, kind="both")) == 8
    without = Searcher.build(docs())  # an index without tables stores no kinds
    assert without.types.kinds is None and without.types.count("table") == 0
    assert without.search("criteo", k=10, rerank=False, kind="table") == []


def test_a_copy_of_the_picture_comes_first_whatever_the_text_says():
    """Among related figures of other papers, one whose picture is a copy of the query's (cosine
    at least SAME_PICTURE_MIN) is ranked first even when its text ranks it last."""
    from app.search.fusion import SAME_PICTURE_MIN

    rng = np.random.default_rng(3)
    vis = rng.standard_normal((len(TEXTS), 16)).astype(np.float32)
    vis /= np.linalg.norm(vis, axis=1, keepdims=True)
    plain = Searcher.build(docs(), embeddings=emb(), visual_embeddings=vis, vector_kind="flat", gpu="off")
    before = [h.figure_id for h in plain.similar(100, k=len(TEXTS), scope="other_papers")]
    last = before[-1]
    copy = vis.copy()
    copy[last - 100] = vis[0]  # the last one now shows the query's picture
    eng = Searcher.build(docs(), embeddings=emb(), visual_embeddings=copy, vector_kind="flat", gpu="off")
    hits = eng.similar(100, k=len(TEXTS), scope="other_papers")
    assert hits[0].figure_id == last and hits[0].signals["visual"] >= SAME_PICTURE_MIN


def test_text_query_falls_back_to_the_closest_spelling_once():
    """The text query path the API, the CLI and the type evaluation share: a misspelt word the
    collection lacks is searched as the closest frequent word (or word of a figure type's name:
    "model", of "model architecture"), and the caller is told which."""
    from app.pipeline.searching import QUERY_VOCABULARY

    eng = Searcher.build(docs(), vocabulary=QUERY_VOCABULARY)
    assert eng.rank_text("modl", k=5) == []
    hits = eng.search("modl", k=5, rerank=False)
    assert hits.query == "model" and hits
    assert [h.figure_id for h in hits] == [h.figure_id for h in eng.rank_text("model", k=5)]
    same = eng.search("model", k=5, rerank=False)
    assert same.query == "model" and [h.figure_id for h in same] == [h.figure_id for h in hits]
    none = eng.search("baselne", k=5, rerank=False)  # no close frequent word: nothing
    assert none == [] and none.query == "baselne"


def test_related_figures_rank_alike_whatever_the_threads_per_query(engine):
    """The first stage beside the nearest-vector lookups (two threads) ranks exactly as one after
    the other (one thread): the same figures, the same scores and signals to the bit."""
    from app.search.query_threads import query_threads, set_query_threads

    before = query_threads()
    runs = []
    try:
        for n in (1, 2):
            set_query_threads(n)
            runs.append([(h.figure_id, h.score, h.lexical_score, h.embedding_score) for fid in (100, 103, 106)
                         for scope in ("all", "other_papers") for h in engine.similar(fid, k=8, scope=scope,
                                                                                      union_dense=4)])
    finally:
        set_query_threads(before)
    assert runs[0] and runs[0] == runs[1]


def test_a_query_naming_a_type_puts_a_sure_figure_of_it_before_one_that_only_uses_the_word():
    """A figure whose text refers to a heatmap (another figure's) but which the classifier takes
    for a line chart comes after a figure it is sure shows a heatmap, though only the first has
    the query's word."""
    ds = docs()
    ds[3] = FigureDoc(figure_id=103, paper_id=11, caption="Figure 3: gate weights",
                      text="Gate weights of the experts over training, read off the heatmap of Figure 2")
    scores = [{"line_chart": 0.9, "heatmap": 0.05} for _ in ds]
    scores[3] = {"line_chart": 0.7, "heatmap": 0.3}  # may show a heatmap (above type_match_min)
    scores[6] = {"line_chart": 0.05, "heatmap": 0.9}  # no word of the query
    eng = Searcher.build(ds, figure_types=[max(s, key=s.get) for s in scores], type_scores=scores,
                         vocabulary=TYPE_NAMES)
    assert [h.figure_id for h in eng.search("heatmap", k=5)] == [106, 103]


def test_a_new_picture_is_searched_among_tables_only_when_its_neighbours_clearly_are_tables():
    """An upload the collection does not hold goes to the tables only when nearly all its nearest
    pictures are tables and the nearest table is clearly nearer than the nearest figure: a figure
    searched among tables loses its answer, so a bare majority of tables is not enough."""
    dim = 8
    base = np.eye(dim, dtype=np.float32)[0]

    def unit(v):
        return (v / np.linalg.norm(v)).astype(np.float32)

    def near(cos, axis):  # a vector at cosine `cos` from `base`
        return unit(cos * base + np.sqrt(1 - cos ** 2) * np.eye(dim, dtype=np.float32)[axis])

    def engine(table_cos, figure_cos):
        ds, vecs = [], []
        for i, c in enumerate(table_cos):
            ds.append(FigureDoc(200 + i, 20 + i, f"Table {i}: rows", "rows", kind="table"))
            vecs.append(near(c, 1 + i % (dim - 1)))
        for i, c in enumerate(figure_cos):
            ds.append(FigureDoc(300 + i, 40 + i, f"Figure {i}: curve", "curve"))
            vecs.append(near(c, 1 + i % (dim - 1)))
        return Searcher.build(ds, visual_embeddings=np.stack(vecs))

    three_of_five = engine([.95, .94, .93], [.92, .91, .5, .4])
    assert three_of_five.picture_kind(base) == "figure"
    four_close = engine([.95, .94, .93, .92], [.90, .5])  # the nearest figure within the margin
    assert four_close.picture_kind(base) == "figure"
    clearly = engine([.95, .94, .93, .92, .91], [.80, .5])
    assert clearly.picture_kind(base) == "table"


def crowded_docs():
    """One paper with six figures that match "attention heatmap" best, five papers with one each
    that matches "heatmap", and papers of other words."""
    ds = [FigureDoc(figure_id=500 + i, paper_id=50, caption=f"Attention heatmap of layer {i}",
                    text=f"Attention heatmap of layer {i}") for i in range(6)]
    ds += [FigureDoc(figure_id=600 + i, paper_id=60 + i, caption=f"Heatmap of model {i}",
                     text=f"Heatmap of model {i}") for i in range(5)]
    ds += [FigureDoc(figure_id=700 + i, paper_id=70 + i, caption=t, text=t) for i, t in enumerate(TEXTS)]
    return ds


def test_a_text_search_shows_at_most_a_few_figures_of_a_paper_first_and_moves_the_rest_down():
    eng = Searcher.build(crowded_docs())
    assert eng.ranking.text_per_paper > 0  # served by default
    unlimited = eng.search("attention heatmap", k=11, rerank=False, per_paper=0)
    assert [h.paper_id for h in unlimited[:6]] == [50] * 6 and not unlimited.limited_papers
    hits = eng.search("attention heatmap", k=11, rerank=False, per_paper=2)
    assert [h.paper_id for h in hits] == [50, 50, 60, 61, 62, 63, 64, 50, 50, 50, 50]
    assert sorted(h.figure_id for h in hits) == sorted(h.figure_id for h in unlimited)  # moved, not removed
    assert hits.limited_papers == {50}
    # pages of the spread ranking join up
    assert [h.figure_id for h in eng.search("attention heatmap", k=4, offset=5, rerank=False, per_paper=2)] == \
        [h.figure_id for h in hits[5:9]]
    # a search within the paper keeps its own order
    only = np.array([int(p) == 50 for p in eng.paper_ids], dtype=bool)
    within = eng.search("attention heatmap", k=6, rerank=False, per_paper=2, allowed_rows=only)
    assert [h.figure_id for h in within] == [h.figure_id for h in unlimited[:6]] and not within.limited_papers


def test_a_query_naming_a_papers_title_keeps_its_figures_first():
    eng = Searcher.build(crowded_docs())
    asked = []

    def titles(ids):
        asked.append(list(ids))
        return {50: "Attention Heatmaps", **{60 + i: f"Model {i}" for i in range(5)}}

    hits = eng.search("attention heatmap", k=8, rerank=False, per_paper=2, titles=titles)
    assert [h.paper_id for h in hits[:6]] == [50] * 6 and not hits.limited_papers
    assert asked == [[50]]  # only the papers the limit moved are looked up
    other = eng.search("heatmap layer", k=8, rerank=False, per_paper=2, titles=titles)
    assert [h.paper_id for h in other[:3]] == [50, 50, 60]  # a word the title lacks: not named
    assert other.limited_papers == {50}
