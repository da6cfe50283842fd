"""Lexical index against the rank_bm25 oracle.

Tolerance: our weights are stored as float32 (sums in float32/float64), rank_bm25 computes in
float64, so scores must agree within 1e-4 relative. Top-100 id lists must be identical except where
documents tie (scores equal within that tolerance) at the boundary or within the list, where the
order/membership among the tied documents is arbitrary.
"""
import numpy as np
import pytest
from rank_bm25 import BM25Okapi

import app.search.lexical as L
from app.eval.bench import collection_docs, synthetic_collection
from app.search.lexical import LexicalIndex

REL = 1e-4


@pytest.fixture(scope="module")
def corpus():
    col = synthetic_collection(3000, seed=3, n_general=20_000, n_domain=1_000, n_topics=40)
    docs = collection_docs(col)
    rng = np.random.default_rng(0)
    queries = []
    for i in range(30):
        d = docs[int(rng.integers(len(docs)))]
        if i % 3 == 0:
            queries.append(list(d))                      # "more like this": a whole figure text
        else:
            q = list(rng.choice(d, size=int(rng.integers(2, 6))))
            queries.append(q + q[:1] + ["zzzunknownzzz"])  # repeated and unknown terms
    return docs, queries


@pytest.fixture(scope="module")
def oracle(corpus):
    return BM25Okapi(corpus[0], k1=1.5, b=0.75, epsilon=0.25)


@pytest.fixture(scope="module")
def index(corpus):
    return LexicalIndex.build(corpus[0], method="bm25", k1=1.5, b=0.75, epsilon=0.25)


def _check_against_oracle(ids, scores, ref, k=100, exclude=None):
    ref = ref.copy()
    if exclude is not None:
        ref[exclude] = 0.0
    pos = np.flatnonzero(ref > 0)
    order = pos[np.argsort(-ref[pos], kind="stable")][:k]
    assert len(ids) == len(order)
    np.testing.assert_allclose(scores, ref[ids], rtol=REL, atol=1e-9)
    assert np.all(np.diff(scores) <= 1e-9), "not sorted by descending score"
    if len(order):
        kth = ref[order[-1]]
        mismatch = set(ids.tolist()) ^ set(order.tolist())
        for d in mismatch:  # only ties at the boundary may differ
            assert abs(ref[d] - kth) <= REL * max(1.0, abs(kth)), (d, ref[d], kth)
        # within the list, the order may differ only among tied scores
        np.testing.assert_allclose(np.sort(ref[ids])[::-1], ref[order], rtol=REL, atol=1e-9)


@pytest.mark.parametrize("path", ["default", "maxscore", "kernel"])
def test_bm25_matches_rank_bm25(corpus, oracle, index, path, monkeypatch):
    if path == "maxscore":          # force the pruned exact path even on this small corpus
        monkeypatch.setattr(L, "_MAXSCORE_MIN", 0)
        monkeypatch.setattr(L, "_PROBE_POSTINGS", 200)
    if path == "kernel":            # force the C++ accumulation instead of the sort-based one
        monkeypatch.setattr(L, "_SORT_MAX", 0)
    _, queries = corpus
    for q in queries:
        ids, scores = index.search(q, k=100)
        _check_against_oracle(ids, scores, oracle.get_scores(q))


def test_idf_floor_matches(oracle, index):
    for t, i in list(index.term_ids.items())[:2000]:
        assert index.idf[i] == pytest.approx(oracle.idf[t], rel=1e-12, abs=1e-12)
    assert (index.idf > 0).all()


def test_exclude_and_search_doc(corpus, oracle, index):
    docs, _ = corpus
    for d in (0, 17, 2999):
        ids, scores = index.search(docs[d], k=100, exclude=d)
        assert d not in ids.tolist()
        _check_against_oracle(ids, scores, oracle.get_scores(docs[d]), exclude=d)
        ids2, scores2 = index.search_doc(d, k=100)
        assert ids2.tolist() == ids.tolist()


def test_pruned_query_returns_exact_scores(corpus, oracle, index):
    docs, _ = corpus
    q, qtf = index.doc_terms(5)
    ids, scores = index.search_terms(q, qtf, k=50, exclude=5, max_query_terms=8, rescore=200)
    ref = oracle.get_scores(docs[5])
    np.testing.assert_allclose(scores, ref[ids], rtol=REL)
    exact, exact_scores = index.search_doc(5, k=50)
    assert len(set(ids.tolist()) & set(exact.tolist())) >= 15   # approximation: only a sanity floor
    assert ids[0] == exact[0]
    same, same_scores = index.search_terms(q, qtf, k=50, exclude=5, max_query_terms=len(q))
    assert same.tolist() == exact.tolist()


def test_score_docs_matches_oracle_and_checks_bounds(corpus, oracle, index):
    docs, _ = corpus
    q, qtf = index.doc_terms(11)
    chosen = np.array([2999, 0, 11, 500, 500])  # any order, repeats allowed
    got = index.score_docs(q, index.query_weights(q, qtf), chosen)
    np.testing.assert_allclose(got, oracle.get_scores(docs[11])[chosen], rtol=REL)
    for bad in ([-1], [len(docs)]):
        with pytest.raises(IndexError):
            index.score_docs(q, index.query_weights(q, qtf), np.array(bad))


def test_no_match_and_matched_terms(index, corpus):
    ids, scores = index.search(["zzznothingzzz"], k=10)
    assert len(ids) == 0 and len(scores) == 0
    docs, _ = corpus
    d = docs[3]
    q = [d[0], d[1], "zzznothingzzz", d[0]]
    mt = index.matched_terms(q, 3)
    assert mt == list(dict.fromkeys([d[0], d[1]]))


def test_tfidf_cosine_sanity():
    docs = [["graph", "neural", "network"], ["graph", "graph", "database"], ["image", "network"],
            ["cooking", "recipe"], ["graph", "neural", "network"]]
    idx = LexicalIndex.build(docs, method="tfidf")
    ids, scores = idx.search(["graph", "neural", "network"], k=10)
    assert ids[:2].tolist() == [0, 4]
    assert scores[0] == pytest.approx(1.0, abs=1e-5)       # identical vectors: cosine 1
    assert 3 not in ids.tolist()
    assert np.all((scores > 0) & (scores <= 1.0 + 1e-6))
    # brute-force cosine check
    vocab = sorted({t for d in docs for t in d})
    N = len(docs)
    df = {t: sum(t in d for d in docs) for t in vocab}
    def vec(toks):
        v = np.zeros(len(vocab))
        for t in set(toks):
            v[vocab.index(t)] = (1 + np.log(toks.count(t))) * np.log(N / df[t])
        n = np.linalg.norm(v)
        return v / n if n else v
    qv = vec(["graph", "neural", "network"])
    for i, s in zip(ids, scores):
        assert s == pytest.approx(float(vec(docs[i]) @ qv), rel=1e-5)
    # same docs, other method
    bm = idx.reweighted("bm25")
    assert bm.method == "bm25" and bm.search(["graph"], k=3)[0].tolist()[0] == 1


def test_save_load_round_trip(tmp_path, index, corpus):
    index.save(tmp_path / "lex")
    for mmap in (False, True):
        other = LexicalIndex.load(tmp_path / "lex", mmap=mmap)
        assert other.vocab == index.vocab and other.n_docs == index.n_docs
        for q in corpus[1][:5]:
            a, sa = index.search(q, k=20)
            b, sb = other.search(q, k=20)
            assert a.tolist() == b.tolist()
            np.testing.assert_array_equal(sa, sb)


def test_from_token_ids_equals_build(corpus):
    docs = corpus[0][:200]
    a = LexicalIndex.build(docs)
    ids = {t: i for i, t in enumerate(a.vocab)}
    lens = [len(d) for d in docs]
    indptr = np.r_[0, np.cumsum(lens)]
    toks = np.array([ids[t] for d in docs for t in d], dtype=np.int32)
    b = LexicalIndex.from_token_ids(indptr, toks, a.vocab)
    np.testing.assert_array_equal(a.col_w, b.col_w)
    np.testing.assert_array_equal(a.row_terms, b.row_terms)


def test_tfidf_scores_of_chosen_docs_compiled_equal_numpy_to_the_bit(monkeypatch):
    """tf.idf views (paper-level similarity) score chosen documents with a compiled loop; its numbers
    are those of the NumPy computation, counts above 255 and rows of norm 0 included."""
    rng = np.random.default_rng(5)
    n, n_terms = 3_000, 800
    lens = rng.integers(0, 40, n)
    row_ptr = np.r_[0, np.cumsum(lens)].astype(np.int64)
    terms = np.concatenate([np.sort(rng.choice(n_terms, size=m, replace=False)) for m in lens]).astype(np.int32)
    tf = rng.choice(np.array([1, 1, 1, 2, 3, 7, 300, 65535], np.uint16), size=len(terms))
    idx = LexicalIndex.from_counts(row_ptr, terms, tf, lens.astype(np.float64), [f"w{i}" for i in range(n_terms)],
                                   method="tfidf")
    assert L._compiled_rows(idx)
    docs = rng.integers(0, n, 500)
    for _ in range(5):
        q = rng.choice(n_terms, size=30, replace=False)
        qw = rng.random(30)
        compiled = idx.score_docs(q, qw, docs)
        with monkeypatch.context() as m:
            m.setattr(L, "_compiled_rows", lambda index: False)
            plain = idx.score_docs(q, qw, docs)
        assert compiled.any() and np.array_equal(compiled, plain)
    with pytest.raises(IndexError):
        idx.score_docs(q, qw, np.array([n]))
