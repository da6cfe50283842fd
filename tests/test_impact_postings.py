"""Impact-ordered postings: the same lists in another order, a ladder that says where each
level ends, and a first stage that reads only their heads (exact when it may read everything)."""
import numpy as np

from app.search.postings import IMPACT_LEVELS, PostingsSegment
from app.search.segments import SegmentedIndex


def _docs(n, seed=0, vocab=3000, topics=40):
    """Zipfian general words plus a topic's words, so that a document's neighbours share a topic."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        m = int(rng.integers(20, 120))
        topic = int(rng.integers(0, topics))
        words = [f"w{int(i) % vocab}" for i in rng.zipf(1.2, m)]
        words += [f"t{topic}_{int(j)}" for j in rng.integers(0, 25, m // 3)]
        out.append(words)
    return out


def _recall(index, doc, got_scores, k=100):
    """Tie-aware recall of the exact top k: a returned document counts if its exact score reaches
    the exact k-th."""
    q, qtf = index.doc_terms(doc)
    _, exact = index.search_terms(q, qtf, k=k, exclude=doc)
    return min(1.0, float((got_scores >= exact[-1] * (1 - 1e-9)).sum()) / len(exact))


def test_impact_lists_reorder_each_list_by_saturation_and_the_ladder_counts_its_levels():
    index = SegmentedIndex(impacts=True)
    index.add_documents(_docs(3000, seed=1))
    seg = index.segments[0]
    lens = seg.doc_len.astype(np.float64)
    avgdl = lens.mean()
    for t in range(0, seg.n_terms, 97):
        s, e = int(seg.col_ptr[t]), int(seg.col_ptr[t + 1])
        ids, tf = seg.postings(t)
        imp_ids, imp_tf = seg.imp_docs[s:e], seg.imp_tf[s:e]
        assert sorted(imp_ids.tolist()) == ids.tolist()                      # the same postings
        assert dict(zip(imp_ids.tolist(), imp_tf.tolist())) == dict(zip(ids.tolist(), tf.tolist()))
        x = imp_tf.astype(np.float64)
        sat = x / (x + index.k1 * (1 - index.b + index.b * lens[imp_ids] / avgdl))
        assert (np.diff(sat) <= 1e-6).all()                                   # best first
        level = np.minimum((sat * IMPACT_LEVELS).astype(int), IMPACT_LEVELS - 1)
        ladder = seg.imp_ladder[t]
        assert ladder[0] == e - s
        for lvl in (0, 10, 30, 40, 63):
            assert ladder[lvl] == int((level >= lvl).sum())                  # a prefix of the list


def test_impact_search_is_exact_when_it_may_read_everything_and_close_with_a_small_budget():
    docs = _docs(20_000, seed=2)
    index = SegmentedIndex(impacts=True)
    for s in range(0, 20_000, 5_000):
        index.add_documents(docs[s:s + 5_000])
    rng = np.random.default_rng(3)
    small = []
    for doc in rng.integers(0, 20_000, 20).tolist():
        q, qtf = index.doc_terms(doc)
        exact = index.search_terms(q, qtf, k=50, exclude=doc)
        everything = index.impact_search(q, qtf, k=50, exclude=doc, postings=10**9)
        assert everything[0].tolist() == exact[0].tolist() and np.allclose(everything[1], exact[1])
        got_docs, got = index.impact_search(q, qtf, k=100, exclude=doc, postings=20_000, rescore=1000)
        assert doc not in got_docs.tolist()
        assert np.allclose(got, index.score_docs(q, qtf, got_docs))           # returned scores are exact
        small.append(_recall(index, doc, got))
    assert np.mean(small) >= 0.95
    # the heads were really cut: far fewer postings than the query's lists hold
    q, qtf = index.doc_terms(7)
    depth = index._impact_depths(q, qtf * index.idf[q], 20_000)
    assert depth.sum() <= 20_000 < int(index.df[q].sum())


def test_segments_written_without_impacts_get_them_and_answer_the_same(tmp_path):
    docs = _docs(4000, seed=4)
    index = SegmentedIndex(path=tmp_path / "idx", impacts=True)
    index.add_documents(docs[:2500])
    index.add_documents(docs[2500:])
    # an index written before impact order: drop its files, it still answers (exactly)
    for d in (tmp_path / "idx" / "segments").iterdir():
        for name in ("imp_docs", "imp_tf", "imp_ladder"):
            (d / f"{name}.npy").unlink()
    old = SegmentedIndex.open(tmp_path / "idx")
    assert not old.has_impacts
    q, qtf = old.doc_terms(11)
    assert old.impact_search(q, qtf, k=30, exclude=11, postings=100)[0].tolist() == \
        old.search_terms(q, qtf, k=30, exclude=11)[0].tolist()
    assert old.add_impacts() == 2 and old.has_impacts
    again = SegmentedIndex.open(tmp_path / "idx")                             # stored, memory-mapped
    assert again.has_impacts and not again.segments[0].imp_docs.flags.writeable
    built = SegmentedIndex(impacts=True)
    built.add_documents(docs[:2500])
    built.add_documents(docs[2500:])
    for a, b in zip(again.segments, built.segments):
        assert np.array_equal(a.imp_docs, b.imp_docs) and np.array_equal(a.imp_ladder, b.imp_ladder)
    for doc in (11, 3000):
        q, qtf = again.doc_terms(doc)
        assert again.impact_search(q, qtf, k=30, exclude=doc, postings=2000)[0].tolist() == \
            built.impact_search(q, qtf, k=30, exclude=doc, postings=2000)[0].tolist()


def test_impact_search_after_adds_deletes_and_merges_ranks_as_a_fresh_build(tmp_path):
    docs = _docs(6000, seed=5)
    index = SegmentedIndex(path=tmp_path / "idx", impacts=True)
    index.add_documents(docs[:3000])
    index.add_documents(docs[3000:4500])
    index.add_documents(docs[4500:])
    gone = [4, 3001, 4600]
    index.delete(gone + [4])
    assert index.n_live == 6000 - 3 == SegmentedIndex.open(tmp_path / "idx").n_live   # counted once each
    q, qtf = index.doc_terms(10)
    hits = index.impact_search(q, qtf, k=200, exclude=10, postings=5000)[0].tolist()
    assert not set(hits) & set(gone)                                          # tombstones are never returned
    kept = index.merge(1, 2)
    survivors = kept[index.merge()]
    assert len(index.segments) == 1 and index.segments[0].has_impacts
    fresh = SegmentedIndex(impacts=True)
    fresh.add_documents([docs[i] for i in survivors.tolist()])
    reopened = SegmentedIndex.open(tmp_path / "idx")
    for doc in (10, 2000, 5000):
        a = fresh.impact_search(*fresh.doc_terms(doc), k=50, exclude=doc, postings=4000)
        b = reopened.impact_search(*reopened.doc_terms(doc), k=50, exclude=doc, postings=4000)
        assert a[0].tolist() == b[0].tolist() and np.allclose(a[1], b[1], rtol=0, atol=1e-12)


def test_a_segment_without_documents_of_a_term_has_an_empty_head():
    seg = PostingsSegment.build(np.array([0, 2, 3]), np.array([0, 2, 2]), np.array([3, 1, 1]), np.array([4, 1]), 3,
                                impacts=True)
    ids, tf, owner = seg.impact_heads(np.array([1, 2, 0, 7]), np.array([5, 5, 5, 5]))
    assert ids.tolist() == [1, 0, 0] and owner.tolist() == [1, 1, 2]          # shorter document first
    assert seg.ladders(np.array([7]))[0].sum() == 0
