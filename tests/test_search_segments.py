"""Segmented, compressed postings rank like one index built from the same documents."""
import numpy as np
import pytest

from app.search.lexical import LexicalIndex
from app.search.postings import PostingsSegment
from app.search.segments import SegmentedIndex


def _docs(n, seed=0, vocab=400):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(vocab)]
    out = []
    for _ in range(n):
        m = int(rng.integers(5, 60))
        out.append([words[int(i) % vocab] for i in rng.zipf(1.25, m)])
    return out


def test_postings_round_trip_and_compression():
    docs = _docs(3000)
    index = SegmentedIndex()
    index.add_documents(docs)
    seg = index.segments[0]
    lex = LexicalIndex.build(docs)
    for w in ["w1", "w2", "w37", "w399"]:
        if w not in lex.term_ids:
            continue
        t_lex, t_seg = lex.term_ids[w], index.term_ids[w]
        ids, tf = seg.postings(t_seg)
        s, e = lex.col_ptr[t_lex], lex.col_ptr[t_lex + 1]
        assert ids.tolist() == lex.col_docs[s:e].tolist()
    # gaps in 1-2 bytes + a one-byte count: well under the 8 bytes of an id and a weight
    assert (seg.col_bytes.nbytes + seg.col_tf.nbytes) / len(seg.col_tf) < 3.5


@pytest.mark.parametrize("query", [["w1", "w5"], ["w3", "w17", "w40", "w2"], ["w250"]])
def test_segments_rank_like_one_index(query):
    docs = _docs(4000, seed=1)
    lex = LexicalIndex.build(docs)
    seg = SegmentedIndex()
    for s in range(0, 4000, 1000):
        seg.add_documents(docs[s:s + 1000])
    assert seg.n_docs == 4000 and len(seg.segments) == 4
    a = lex.search(query, k=50)
    b = seg.search(query, k=50)
    assert np.allclose(a[1], b[1], rtol=1e-5)
    assert a[0][:10].tolist() == b[0][:10].tolist() or np.allclose(a[1][:10], b[1][:10], rtol=1e-5)


def test_more_like_this_pruned_and_exact_match_one_index():
    docs = _docs(3000, seed=2)
    lex = LexicalIndex.build(docs)
    seg = SegmentedIndex()
    for s in range(0, 3000, 700):
        seg.add_documents(docs[s:s + 700])
    for d in [0, 5, 1234, 2999]:
        q_l, qtf_l = lex.doc_terms(d)
        q_s, qtf_s = seg.doc_terms(d)
        assert sorted(lex.vocab[i] for i in q_l) == sorted(seg.vocab[i] for i in q_s)
        for kw in [{}, dict(max_query_terms=5, rescore=200)]:
            a = lex.search_terms(q_l, qtf_l, k=20, exclude=d, **kw)
            b = seg.search_terms(q_s, qtf_s, k=20, exclude=d, **kw)
            assert np.allclose(a[1], b[1], rtol=1e-5)


def test_maxscore_is_exact(monkeypatch):
    import app.search.segments as segments

    docs = _docs(6000, seed=3, vocab=300)
    seg = SegmentedIndex()
    for s in range(0, 6000, 2000):
        seg.add_documents(docs[s:s + 2000])
    q, qtf = seg.query_vector(["w1", "w2", "w3", "w150", "w77"])
    monkeypatch.setattr(segments, "_MAXSCORE_MIN", 0)
    monkeypatch.setattr(segments, "_PROBE_POSTINGS", 10)
    pruned = seg.search_terms(q, qtf, k=10)
    monkeypatch.setattr(segments, "_MAXSCORE_MIN", 10**12)
    brute = seg.search_terms(q, qtf, k=10)
    assert pruned[0].tolist() == brute[0].tolist()
    assert np.allclose(pruned[1], brute[1])


def test_adds_deletes_and_merges_equal_a_fresh_build(tmp_path):
    docs = _docs(2500, seed=4)
    index = SegmentedIndex(path=tmp_path / "idx")
    index.add_documents(docs[:1000])
    index.add_documents(docs[1000:1500])
    index.add_documents(docs[1500:1510])
    index.delete([3, 1200, 1505])
    index.delete([3])                 # deleting again changes nothing
    index.add_documents(docs[1510:])
    assert index.n_live == 2497 and SegmentedIndex.open(tmp_path / "idx").n_live == 2497
    # deleted documents are never returned, even before the merge
    hits, _ = index.search(docs[3][:8], k=100)
    assert 3 not in hits.tolist()
    kept = index.merge(1, 2)          # a run of segments
    assert len(index.segments) == 3 and index.n_live == 2497
    kept2 = index.merge()             # everything
    assert len(index.segments) == 1 and index.deleted.sum() == 0
    survivors = kept[kept2]
    assert 3 not in survivors.tolist() and 1200 not in survivors.tolist() and len(survivors) == 2497
    fresh = SegmentedIndex()
    fresh.add_documents([docs[i] for i in survivors.tolist()])
    reopened = SegmentedIndex.open(tmp_path / "idx")
    for query in (["w1", "w4"], ["w9", "w33", "w2"], docs[10]):
        a = fresh.search(query, k=30)
        b = reopened.search(query, k=30)
        assert a[0].tolist() == b[0].tolist()
        assert np.allclose(a[1], b[1], rtol=0, atol=1e-12)


def test_reopened_index_is_memory_mapped(tmp_path):
    index = SegmentedIndex(path=tmp_path / "idx")
    index.add_documents(_docs(500, seed=5))
    again = SegmentedIndex.open(tmp_path / "idx")
    seg = again.segments[0]
    assert not seg.col_bytes.flags.owndata and not seg.col_bytes.flags.writeable  # a read-only map
    assert again.search(["w1"], k=5)[0].tolist() == index.search(["w1"], k=5)[0].tolist()


def test_counts_are_capped_and_unknown_terms_have_no_postings():
    seg = PostingsSegment.build(np.array([0, 2]), np.array([0, 1]), np.array([300, 1]), np.array([301]), 2)
    assert seg.postings(0)[1].tolist() == [255]
    assert seg.postings(5)[0].tolist() == []


def test_rows_and_counts_match_one_index():
    docs = _docs(900, seed=6)
    lex = LexicalIndex.build(docs)
    seg = SegmentedIndex()
    for s in range(0, 900, 300):
        seg.add_documents(docs[s:s + 300])
    pick = np.array([899, 3, 450, 3, 0])
    ip_a, t_a, tf_a = lex.rows(pick)
    ip_b, t_b, tf_b = seg.rows(pick)
    assert ip_a.tolist() == ip_b.tolist()
    assert [lex.vocab[i] for i in t_a] == [seg.vocab[i] for i in t_b] and tf_a.tolist() == tf_b.tolist()
    a, b = lex.collection_counts(), seg.collection_counts()
    assert {lex.vocab[i]: a[i] for i in range(len(a))} == {seg.vocab[i]: b[i] for i in range(len(b))}


def test_a_searcher_with_segments_answers_as_with_one_index_and_versions_link_segments(tmp_path):
    """The segmented index is an index part like the in-memory one: a Searcher built with it
    (documents added in two segments) gives the same answers, and a saved version lists it in
    modules.json and hard-links its immutable segment files instead of copying them."""
    import json

    from app.search.doc_table import DocTable, FigureDoc
    from app.search.index_parts import MODULES_FILE
    from app.search.searcher import Searcher
    from app.search.text import analyze

    docs = [FigureDoc(100 + i, 10 + i // 4, f"Figure {i}", " ".join(d), kind="figure")
            for i, d in enumerate(_docs(60, seed=7, vocab=40))]
    one = Searcher.build(docs)
    seg = SegmentedIndex(path=tmp_path / "live")
    analysed = [analyze(d.text) for d in docs]
    seg.add_documents(analysed[:35])
    seg.add_documents(analysed[35:])
    two = Searcher(DocTable.build(docs), seg)

    def answers(s):
        hits = lambda hs: [(h.figure_id, h.score) for h in hs]  # noqa: E731
        return ([hits(s.similar(fid, k=5, scope="all")) for fid in s.figure_ids.tolist()[::7]]
                + [hits(s.search(q, k=5, rerank=False)) for q in ("w1 w2", "w7", "w3 w11 w30")])

    def same(a, b):  # same figures in the same order; scores equal up to float32 weights
        return all([f for f, _ in x] == [f for f, _ in y] and np.allclose([s for _, s in x], [s for _, s in y], rtol=1e-5)
                   for x, y in zip(a, b)) and len(a) == len(b)

    assert same(answers(two), answers(one))
    version = two.save(tmp_path / "index")
    d = tmp_path / "index" / version
    parts = {p["name"]: p["class"] for p in json.loads((d / MODULES_FILE).read_text())["parts"]}
    assert parts["lexical"] == "SegmentedIndex"
    stored = next((d / "lexical" / "segments").iterdir())
    live = tmp_path / "live" / "segments" / stored.name
    assert (stored / "col_bytes.npy").stat().st_ino == (live / "col_bytes.npy").stat().st_ino
    assert same(answers(Searcher.load(tmp_path / "index")), answers(one))


def test_large_collections_get_compressed_postings(monkeypatch):
    from dataclasses import replace

    import app.search.searcher as searcher_module
    from app.search.doc_table import FigureDoc
    from app.search.ranking import RankingConfig
    from app.search.searcher import Searcher

    docs = [FigureDoc(i, i // 3, f"Figure {i}", " ".join(d)) for i, d in enumerate(_docs(30, seed=8))]
    assert isinstance(Searcher.build(docs).lexical(), LexicalIndex)
    monkeypatch.setattr(searcher_module, "SEGMENTED_MIN", 20)
    assert isinstance(Searcher.build(docs).lexical(), SegmentedIndex)
    tfidf = replace(RankingConfig(), first_stage="tfidf")
    assert isinstance(Searcher.build(docs, ranking=tfidf).lexical(), LexicalIndex)


def test_deleted_documents_leave_the_statistics_at_once():
    docs = _docs(1200, seed=8)
    index = SegmentedIndex()
    index.add_documents(docs[:700])
    index.add_documents(docs[700:])
    gone = [2, 5, 699, 700, 1100]
    index.delete(gone)
    live = [i for i in range(1200) if i not in gone]
    fresh = SegmentedIndex()
    fresh.add_documents([docs[i] for i in live])
    assert index.n_live == fresh.n_docs and index.avgdl == pytest.approx(fresh.avgdl)
    for query in (["w1", "w4"], docs[3], docs[701][:6]):
        a_docs, a = fresh.search(query, k=40)
        b_docs, b = index.search(query, k=40)
        assert np.allclose(a, b, rtol=0, atol=1e-12)
        assert [live[i] for i in a_docs.tolist()] == b_docs.tolist()
    counts = fresh.collection_counts()
    assert np.allclose(index.collection_counts()[[index.term_ids[w] for w in fresh.vocab]], counts)


def test_another_index_rows_become_a_segment():
    docs = _docs(800, seed=9)
    lex = LexicalIndex.build(docs[:500])
    index = SegmentedIndex(lex.k1, lex.b, lex.epsilon)
    index.add_counts(lex.row_ptr, lex.row_terms, lex.row_tf, np.rint(lex.doc_len), lex.vocab)
    index.add_documents(docs[500:])
    whole = LexicalIndex.build(docs)
    for query in (["w1", "w9"], docs[12], docs[640]):
        a_docs, a = whole.search(query, k=30)
        b_docs, b = index.search(query, k=30)
        assert np.allclose(a, b, rtol=1e-5)


def test_a_tiny_collection_ranks_as_one_index():
    """With one or two documents every idf is below 0 (rank_bm25's floor of a negative mean):
    the documents are still found, with the in-memory index's scores."""
    for docs in ([["regression", "clicks", "panel"]], [["a", "b"], ["a", "c", "c"]]):
        lex, seg = LexicalIndex.build(docs), SegmentedIndex()
        seg.add_documents(docs)
        for query in (["clicks"], ["a", "c"], ["b"]):
            a_docs, a = lex.search(query, k=5)
            b_docs, b = seg.search(query, k=5)
            assert a_docs.tolist() == b_docs.tolist() and np.allclose(a, b, rtol=1e-5)


def test_tfidf_of_segments_ranks_as_one_index_of_the_live_documents():
    """tf.idf is a comparison method: segments derive it as one index of their live rows."""
    docs = _docs(1200, seed=9)
    gone = [5, 700, 701]
    seg = SegmentedIndex()
    for s in range(0, 1200, 500):
        seg.add_documents(docs[s:s + 500])
    seg.delete(gone)
    tfidf = seg.reweighted("tfidf")
    kept = [d if i not in gone else [] for i, d in enumerate(docs)]
    one = LexicalIndex.build(kept, method="tfidf")
    for query in (["w1", "w7"], ["w3", "w40", "w2"], docs[9][:6]):
        a, b = one.search(query, k=20), tfidf.search(query, k=20)
        assert a[0].tolist() == b[0].tolist() and np.allclose(a[1], b[1])
        assert not set(b[0].tolist()) & set(gone)
    assert seg.reweighted("bm25") is seg


def _plain_norms(index, seg):
    """k1 * (1 - b + b * dl / avgdl) of each of a segment's documents, in float64."""
    dl = np.asarray(seg.doc_len, np.float64)
    return index.k1 * (1.0 - index.b + index.b * dl / index.avgdl)


def _plain_accumulate(index, q, qw, each=None):
    """The first stage's pass over postings written plainly, a list at a time: weights in float64
    when the lists cover over a quarter of the segment (summed in list order), else in float32
    summed per document in float64 from the smallest (as the engine sums them); `each` reduces
    each segment's part."""
    parts = []
    for i, seg in enumerate(index.segments):
        docs_out, scores_out = [], []
        lists = [seg.postings(t) for t in q.tolist()]
        wide = sum(len(ids) for ids, _ in lists) * 4 > seg.n_docs
        dtype = np.float64 if wide else np.float32
        norm = _plain_norms(index, seg).astype(dtype)
        sums = {}
        for (ids, tf), wq in zip(lists, np.asarray(qw, dtype).tolist()):
            tf = tf.astype(dtype)
            w = dtype(wq) * dtype(index.k1 + 1.0) * tf / (tf + norm[ids])
            for d, x in zip(ids.tolist(), w.tolist()):
                sums.setdefault(d, []).append(x)
        for d in sorted(sums):
            if not index.deleted[d + int(index.bases[i])]:
                docs_out.append(d + int(index.bases[i]))
                weights = np.asarray(sums[d], dtype)
                scores_out.append(float(np.cumsum(weights if wide else np.sort(weights).astype(np.float64))[-1]))
        part = np.asarray(docs_out, np.int64), np.asarray(scores_out, np.float64)
        parts.append(part if each is None or not len(docs_out) else each(*part))
    return np.concatenate([d for d, _ in parts]), np.concatenate([s for _, s in parts])


def _plain_score_docs(index, q, qtf, docs):
    """Exact BM25 of chosen documents written plainly, one document at a time."""
    idf = index.idf
    weight = dict(zip(q.tolist(), (np.asarray(qtf, np.float64) * idf[q]).tolist()))
    out = np.zeros(len(docs))
    for j, d in enumerate(docs.tolist()):
        i = index._segment_of(d)
        terms, tf = index.segments[i].row(d - int(index.bases[i]))
        norm = _plain_norms(index, index.segments[i])[d - int(index.bases[i])]
        hit = [(t, float(c)) for t, c in zip(terms.tolist(), tf.tolist()) if weight.get(t, 0.0) != 0]
        w = np.asarray([weight[t] * (index.k1 + 1.0) * c / (c + norm) for t, c in hit])
        out[j] = np.bincount(np.zeros(len(w), np.int64), weights=w, minlength=1)[0]
    return out


def _three_segments_with_deletes(seed: int, deleted: list[int]) -> SegmentedIndex:
    """6,000 documents in three segments of 2,000, some deleted: every path across segments."""
    docs = _docs(6000, seed=seed, vocab=500)
    index = SegmentedIndex()
    for s in range(0, 6000, 2000):
        index.add_documents(docs[s:s + 2000])
    index.delete(deleted)
    return index


def test_first_stage_passes_equal_a_plain_computation(monkeypatch):
    """The vectorised pass over postings and the exact re-scoring give the same numbers, to the
    bit, as the plain computation, so related figures rank exactly as before they were sped up."""
    import app.search.segments as segments

    index = _three_segments_with_deletes(seed=5, deleted=[3, 2500, 4999])
    rng = np.random.default_rng(0)
    q_all, qtf_all = index.query_vector([f"w{i}" for i in range(500)])
    common = q_all[np.argsort(-index.df[q_all])[:3]]     # long lists: the dense branch
    for q in [common, rng.choice(q_all, 12, replace=False), rng.choice(q_all, 40, replace=False)]:
        qtf = rng.integers(1, 4, len(q)).astype(np.float64)
        qw = qtf * index.idf[q]
        got, want = index._accumulate(q, qw), _plain_accumulate(index, q, qw)
        assert np.array_equal(got[0], want[0])
        assert np.array_equal(got[1], want[1])
        cand = np.sort(rng.choice(index.n_docs, 700, replace=False))
        assert np.array_equal(index.score_docs(q, qtf, cand), _plain_score_docs(index, q, qtf, cand))
    for d in [0, 1999, 2000, 4321]:
        q, qtf = index.doc_terms(d)
        for t in q.tolist():
            ids, _ = index.segments[1].postings(t)
            many, _, lens = index.segments[1].postings_of([t, t])
            assert np.array_equal(many, np.r_[ids, ids]) and lens.tolist() == [len(ids)] * 2
        fast = index.search_terms(q, qtf, k=20, exclude=d, max_query_terms=8, rescore=200)
        with monkeypatch.context() as m:
            m.setattr(segments.SegmentedIndex, "_accumulate", _plain_accumulate)
            m.setattr(segments.SegmentedIndex, "score_docs", _plain_score_docs)
            plain = index.search_terms(q, qtf, k=20, exclude=d, max_query_terms=8, rescore=200)
        assert np.array_equal(fast[0], plain[0]) and np.array_equal(fast[1], plain[1])


@pytest.mark.parametrize("threads", [2, 3])
def test_segments_searched_side_by_side_rank_as_one_after_another(threads):
    """With more threads per query the segments' postings are read side by side; every number is
    the same bit as when they are read one after another, so results do not depend on the setting."""
    from app.search.query_threads import query_threads, set_query_threads

    index = _three_segments_with_deletes(seed=7, deleted=[10, 2100, 5999])
    rng = np.random.default_rng(1)
    q_all, _ = index.query_vector([f"w{i}" for i in range(500)])
    before = query_threads()
    try:
        for q in [q_all[np.argsort(-index.df[q_all])[:3]], rng.choice(q_all, 30, replace=False)]:
            qtf = rng.integers(1, 4, len(q)).astype(np.float64)
            cand = np.sort(rng.choice(index.n_docs, 700, replace=False))
            runs = []
            for n in (1, threads):
                set_query_threads(n)
                runs.append((index._accumulate(q, qtf * index.idf[q]), index.score_docs(q, qtf, cand),
                             index.search_terms(q, qtf, k=20, max_query_terms=8, rescore=200)))
            (acc1, s1, top1), (acc2, s2, top2) = runs
            assert all(np.array_equal(a, b) for a, b in zip(acc1 + top1, acc2 + top2))
            assert np.array_equal(s1, s2)
    finally:
        set_query_threads(before)


def test_parts_of_parts_finish_with_one_helper_thread():
    """A part that splits into parts does not wait for the only helper thread while that thread
    waits for it: parts no thread has started are run by the caller."""
    from app.search.query_threads import query_threads, run_parts, set_query_threads

    before = query_threads()
    set_query_threads(2)
    try:
        inner = lambda base: run_parts([lambda: base, lambda: base + 1, lambda: base + 2])
        assert run_parts([lambda: inner(0), lambda: inner(10), lambda: inner(20)]) == [
            [0, 1, 2], [10, 11, 12], [20, 21, 22]]
    finally:
        set_query_threads(before)


def test_the_caller_runs_the_parts_no_thread_has_started_before_it_waits():
    """While the only helper thread is busy with one part, the caller runs the others itself
    instead of waiting for that part and leaving the rest to the helper one at a time; results
    stay in order."""
    import threading

    from app.search.query_threads import query_threads, run_parts, set_query_threads

    before = query_threads()
    set_query_threads(2)
    started, others_done = threading.Event(), threading.Event()
    caller = threading.get_ident()
    ran_by = {}

    def first():  # blocks the helper thread until the caller has run the others (or 10 s)
        started.set()
        ran_by[1] = threading.get_ident()
        return others_done.wait(10)

    def other(i):
        def run():
            ran_by[i] = threading.get_ident()
            if len(ran_by) == 4:  # the helper's part and the three others
                others_done.set()
            return i
        return run

    try:
        out = run_parts([lambda: started.wait(10) and 0, first, other(2), other(3), other(4)])
    finally:
        set_query_threads(before)
    assert out == [0, True, 2, 3, 4]  # True: the helper's part did not wait out its 10 s
    assert ran_by[1] != caller and all(ran_by[i] == caller for i in (2, 3, 4))
