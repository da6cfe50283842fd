"""`figsearch bench --only lexical` builds the benchmark's lexical segments and nothing else."""
import numpy as np

from app.eval.bench import build_lexical_only, collection_docs, synthetic_collection
from app.search.segments import SegmentedIndex


def test_only_lexical_builds_the_benchmarks_documents_in_segments(tmp_path):
    res = build_lexical_only(2_500, tmp_path, seed=3, segment_docs=1_000, add_figures=100, verbose=False)
    assert res["lexical_segments"] == 3 and not (tmp_path / "captions.bin").exists()
    lex = SegmentedIndex.open(tmp_path / "lexical")
    assert len(lex) == 2_500 and [s.n_docs for s in lex.segments] == [1_000, 1_000, 500]
    # the same documents as the collection the whole benchmark draws (which includes the added figures)
    docs = collection_docs(synthetic_collection(2_600, seed=3, tokens=False), 0, 2_500)
    for d in (0, 999, 1_000, 2_499):
        terms, tf = lex.doc_terms(d)
        got = sorted((lex.vocab[t], int(c)) for t, c in zip(terms.tolist(), tf.tolist()))
        words, counts = np.unique(docs[d], return_counts=True)
        assert got == sorted(zip(words.tolist(), counts.tolist()))
