"""Query-time products on one BLAS thread: the limit holds while a query runs, is lifted after,
and the rankings are the same bits as with the machine's threads."""
import numpy as np
from threadpoolctl import threadpool_info

from app.search.doc_table import FigureDoc
from app.search.one_thread import one_thread
from app.search.searcher import Searcher


def _blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_limit_holds_inside_and_is_restored():
    before = _blas_threads()
    seen = one_thread(_blas_threads)()
    assert seen and all(n == 1 for n in seen)
    assert _blas_threads() == before


def test_rankings_equal_those_computed_with_every_thread(tmp_path):
    rng = np.random.default_rng(0)
    n, dim = 4_000, 64  # 2,000 re-scored candidates of 64 numbers: large enough for OpenBLAS to use threads
    words = [f"w{i}" for i in range(400)]
    docs = [FigureDoc(figure_id=i, paper_id=i // 6, caption=f"c{i}",
                      text=" ".join(rng.choice(words, size=30).tolist())) for i in range(n)]
    emb = rng.standard_normal((n, dim)).astype(np.float32)
    eng = Searcher.build(docs, embeddings=emb, visual_embeddings=emb[:, :32], vector_kind="ivfpq", gpu="off")
    eng.encoder = lambda q: emb[:1] + 0.1
    for row in (0, 77, 3210):
        limited = eng.rank_rows(row, scope="other_papers", union_dense=60)
        free = Searcher.rank_rows.__wrapped__(eng, row, scope="other_papers", union_dense=60)
        for a, b in zip(limited, free):
            if isinstance(a, dict):
                assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a if a[k] is not None)
            else:
                assert np.array_equal(a, b)
    q = " ".join(words[:3])
    assert eng.rank_text(q, qvec=emb[5] / np.linalg.norm(emb[5])) == Searcher.rank_text.__wrapped__(
        eng, q, qvec=emb[5] / np.linalg.norm(emb[5]))
    assert eng.by_picture(emb[9, :32]) == Searcher.by_picture.__wrapped__(eng, emb[9, :32])
