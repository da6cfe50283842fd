"""Vector index: ANN kinds, exact vector store, persistence, GPU selection."""
import numpy as np
import pytest

from app.search.vectors import VectorIndex, gpu_available


def _data(n=4000, dim=32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_flat_is_exact_and_ids_are_ours():
    x = _data(500)
    ids = np.arange(500) * 7 + 1000
    vi = VectorIndex(32, kind="flat", gpu="off")
    vi.add(ids[:200], x[:200])
    vi.add(ids[200:], x[200:] * 3.0)           # add() normalises
    got, sc = vi.search(x[:5], 3)
    assert got[:, 0].tolist() == ids[:5].tolist()
    np.testing.assert_allclose(sc[:, 0], 1.0, atol=1e-3)       # added as float16: ~1e-4 error
    np.testing.assert_allclose(vi.vectors_for(ids[[3, 250]]), x[[3, 250]], atol=2e-3)  # read back from the index
    with pytest.raises(KeyError):
        vi.vectors_for([5])


def test_hnsw_recall_vs_flat():
    x = _data(4000)
    q = _data(50, seed=1)
    flat = VectorIndex(32, kind="flat", gpu="off")
    hnsw = VectorIndex(32, kind="hnsw", gpu="off")
    for v in (flat, hnsw):
        v.add(np.arange(4000), x)
    f, _ = flat.search(q, 10)
    h, _ = hnsw.search(q, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(f.tolist(), h.tolist())])
    assert recall >= 0.9, recall


def test_ivf_and_auto_kind():
    x = _data(3000)
    ivf = VectorIndex(32, kind="ivf", gpu="off", nlist=16, nprobe=16)
    ivf.add(np.arange(3000), x)
    got, _ = ivf.search(x[:10], 1)
    assert got[:, 0].tolist() == list(range(10))   # nprobe = nlist: exhaustive
    auto = VectorIndex(32)
    auto.add(np.arange(100), x[:100])
    auto.build()
    assert auto._built_kind == "flat" and auto.effective_kind(10**6) == "ivfpq"


def test_ivf_reads_vectors_back_from_its_codes():
    """No second copy: an IVF index gives each row back from its 8-bit codes, close enough that
    cosines keep their order."""
    x = _data(3000)
    ivf = VectorIndex(32, kind="ivf", gpu="off", nlist=16, nprobe=4)
    ivf.add(np.arange(3000) + 10, x)
    back = ivf.vectors_for(np.arange(3000) + 10)
    assert np.abs(back - x).max() < 0.02
    cos_exact, cos_back = x[1:200] @ x[0], back[1:200] @ back[0]
    assert np.abs(cos_exact - cos_back).max() < 0.01
    assert np.corrcoef(cos_exact, cos_back)[0, 1] > 0.999
    ivf.add([5], x[:1])                              # adds after a build are indexed on demand
    np.testing.assert_allclose(ivf.vectors_for([5]), back[:1], atol=0.02)


def test_auto_rebuild_keeps_every_vector(monkeypatch):
    import app.search.vectors as V

    x = _data(3000)
    vi = VectorIndex(32, gpu="off")
    vi.add(np.arange(2000), x[:2000])
    vi.build()
    assert vi._built_kind == "flat"
    monkeypatch.setattr(V, "FLAT_MAX", 2500)
    vi.add(np.arange(2000, 3000), x[2000:])
    np.testing.assert_allclose(vi.vectors_for([0, 2999]), x[[0, 2999]], atol=2e-3)  # float16 rows
    assert vi._built_kind == "ivfpq" and len(vi) == 3000


def _clustered(n, dim=64, seed=0, topics=20):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((topics, dim)).astype(np.float32)
    x = centres[rng.integers(0, topics, n)] + rng.standard_normal((n, dim)).astype(np.float32) * 0.5
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_ivfpq_rescored_from_disk_matches_exact_search(tmp_path):
    """Compressed codes choose the candidates, 8-bit rows on disk give the order: the top 10 are
    those of exact search, and the rows are read from a memory map after loading."""
    x = _clustered(6_000)
    q = _clustered(30, seed=1)
    flat = VectorIndex(64, kind="flat", gpu="off")
    pq = VectorIndex(64, kind="ivfpq", gpu="off", store_dir=tmp_path / "build", rescore=400, pq_nprobe=64)
    for v in (flat, pq):
        v.add(np.arange(6_000) + 7, x)
    f, fs = flat.search(q, 10)
    p, ps = pq.search(q, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(f.tolist(), p.tolist())])
    assert recall >= 0.95, recall
    exact = {(r, i): s for r in range(len(q)) for i, s in zip(f[r].tolist(), fs[r].tolist())}
    both = [(exact[r, i], s) for r in range(len(q)) for i, s in zip(p[r].tolist(), ps[r].tolist()) if (r, i) in exact]
    np.testing.assert_allclose(*zip(*both), atol=4e-3)  # cosines of the 8-bit rows (64-d), not code estimates
    assert (tmp_path / "build" / "vectors.i8").stat().st_size == 6_000 * (64 + 4)  # a byte a value, a scale a row
    assert not (tmp_path / "build" / "pending.f16").exists()
    pq.save(tmp_path / "saved")
    back = VectorIndex.load(tmp_path / "saved", gpu="off")
    assert back._ann.store.path is not None and not back._ann.store._mem  # read from the file, not loaded
    b, bs = back.search(q, 10)
    assert b.tolist() == p.tolist()
    back.add([1], q[:1])                                 # grows without retraining
    assert back.search(q[:1], 1)[0][0, 0] == 1
    np.testing.assert_allclose(back.vectors_for([1]), q[:1], atol=2e-3)


def test_nearest_candidates_rescore_few_rows(tmp_path, monkeypatch):
    """Candidates for a re-ranking re-score CANDIDATE_RESCORE rows per wanted neighbour, not the
    index's `rescore`, and still carry exact cosines; a flat index answers them exactly."""
    from app.search import ann
    from app.search.vector_segments import SegmentedVectors

    x = _clustered(6_000)
    q = _clustered(5, seed=1)
    pq = VectorIndex(64, kind="ivfpq", gpu="off", store_dir=tmp_path, rescore=400, pq_nprobe=64)
    pq.add(np.arange(6_000), x)
    pq.build()
    read = []
    original = ann.RowStore.rows
    monkeypatch.setattr(ann.RowStore, "rows", lambda self, rows: read.append(len(rows)) or original(self, rows))
    ids, sims = pq.nearest_candidates(q[:1], 10)
    assert read == [40] and (ids >= 0).all()
    np.testing.assert_allclose(sims[0], pq.vectors_for(ids[0]) @ (q[0] / np.linalg.norm(q[0])), atol=1e-5)
    read.clear()
    pq.search(q[:1], 10)
    assert read == [400]
    flat = VectorIndex(64, kind="flat", gpu="off")
    flat.add(np.arange(6_000), x)
    parts = SegmentedVectors.of(flat)
    assert parts.nearest_candidates(q, 10)[0].tolist() == flat.search(q, 10)[0].tolist()


def test_loads_an_index_saved_with_a_vector_copy(tmp_path):
    """Indexes written by earlier versions kept a float16 copy beside the index: still readable."""
    import json

    x = _data(500)
    vi = VectorIndex(32, kind="flat", gpu="off")
    vi.add(np.arange(500), x)
    vi.save(tmp_path)
    np.save(tmp_path / "vectors.npy", (x * 0.5).astype(np.float16))  # a copy that differs, to see it is used
    meta = json.loads((tmp_path / "meta.json").read_text())
    (tmp_path / "meta.json").write_text(json.dumps({**meta, "format": 1}))
    back = VectorIndex.load(tmp_path, gpu="off", mmap=True)
    np.testing.assert_allclose(back.vectors_for([3]), x[[3]] * 0.5, atol=2e-3)
    back.add([900], x[:1])
    np.testing.assert_allclose(back.vectors_for([900]), x[:1], atol=2e-3)


def test_save_load(tmp_path):
    x = _data(1000)
    for kind in ("flat", "hnsw", "ivf", "ivfpq"):
        vi = VectorIndex(32, kind=kind, gpu="off", nlist=8)
        vi.add(np.arange(1000) + 5, x)
        a, sa = vi.search(x[:20], 5)
        vi.save(tmp_path / kind)
        back = VectorIndex.load(tmp_path / kind, gpu="off")
        b, sb = back.search(x[:20], 5)
        assert a.tolist() == b.tolist()
        np.testing.assert_allclose(sa, sb, atol=1e-6)
        np.testing.assert_array_equal(back.vectors_for([5, 6]), vi.vectors_for([5, 6]))


def test_gpu_selection():
    if gpu_available():
        pytest.skip("a GPU is visible: the CPU-only checks below do not apply")
    with pytest.raises(RuntimeError, match="gpu='on'"):
        VectorIndex(32, gpu="on")
    vi = VectorIndex(32, gpu="auto")
    assert vi.use_gpu is False
    assert VectorIndex(32, gpu="off").use_gpu is False
    with pytest.raises(ValueError):
        VectorIndex(32, gpu="maybe")


def test_empty_and_padding():
    vi = VectorIndex(8, kind="flat", gpu="off")
    ids, sc = vi.search(np.ones((1, 8)), 3)
    assert ids.tolist() == [[-1, -1, -1]]
    vi.add([1, 2], np.eye(8)[:2])
    ids, _ = vi.search(np.eye(8)[:1], 4)
    assert ids[0, :2].tolist() == [1, 2] and ids[0, 2:].tolist() == [-1, -1]


def test_row_store_reads_the_same_rows_mapped_or_by_pread(tmp_path):
    """A small row file is read through a map, a large one a row at a time: same rows either way,
    in the order asked, repeats included."""
    from app.search.ann import RowStore

    rng = np.random.default_rng(3)
    data = rng.standard_normal((500, 24)).astype(np.float16)
    store = RowStore(24, tmp_path / "rows.f16")
    store.append(data[:300])
    store.append(data[300:])
    ask = np.array([499, 3, 3, 250, 0, 17])
    mapped = store.rows(ask)
    assert store._mapped() and store._fd is None
    store.MAP_MAX_BYTES = 1000
    store._map = None
    assert not store._mapped()
    by_pread = store.rows(ask)
    assert store._fd is not None
    np.testing.assert_array_equal(mapped, data[ask].astype(np.float32))
    np.testing.assert_array_equal(by_pread, mapped)
    with pytest.raises(IndexError):
        store.rows([500])


def test_candidate_searches_probe_fewer_cells(tmp_path, monkeypatch):
    """Candidates for a re-ranking come from CANDIDATE_NPROBE cells of an IVF or IVF-PQ index,
    full searches from the index's own number: with one cell the candidates are those of a
    one-cell search, which differ from a full search's."""
    from app.search import vectors

    monkeypatch.setattr(vectors, "CANDIDATE_NPROBE", 1)
    x = _clustered(6_000)
    q = _clustered(20, seed=1)
    ivf = VectorIndex(64, kind="ivf", gpu="off", nlist=32, nprobe=32)
    pq = VectorIndex(64, kind="ivfpq", gpu="off", store_dir=tmp_path, rescore=400, pq_nprobe=64)
    for index in (ivf, pq):
        index.add(np.arange(6_000), x)
        index.build()
        one = index.search(q, 10, rescore=40, nprobe=1)[0]
        assert index.nearest_candidates(q, 10)[0].tolist() == one.tolist()
        assert one.tolist() != index.search(q, 10, rescore=40)[0].tolist()


def test_eight_bit_rows_keep_cosines_and_earlier_float16_files_still_load(tmp_path):
    """8-bit rows (a scale each) read back within a rounding step of each value, so cosines of
    384-d unit vectors move by well under .005; an index saved by an earlier version with float16
    rows (vectors.f16) loads and answers from them."""
    from app.search.ann import LEGACY_STORE_FILE, STORE_FILE, RowStore

    rng = np.random.default_rng(5)
    x = rng.standard_normal((400, 384)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    store = RowStore(384, tmp_path / "rows.i8")
    assert store.bits == 8
    store.append(x)
    back = store.rows(np.arange(400))
    step = np.abs(x).max(axis=1, keepdims=True) / 127
    assert (np.abs(back - x) <= step / 2 + 1e-7).all()
    cos = (back @ back[0]) / np.linalg.norm(back, axis=1) / np.linalg.norm(back[0])
    assert np.abs(cos - x @ x[0]).max() < 5e-3
    zero = RowStore(384, bits=8)
    zero.append(np.zeros((1, 384), np.float32))
    assert not zero.rows([0]).any()

    data = _clustered(3_000)
    pq = VectorIndex(64, kind="ivfpq", gpu="off", rescore=300, pq_nprobe=64)
    pq.add(np.arange(3_000), data)
    pq.save(tmp_path / "v")
    rows = RowStore(64, tmp_path / "v" / STORE_FILE).read(0, 3_000)
    RowStore(64, tmp_path / "v" / LEGACY_STORE_FILE).append(rows)
    (tmp_path / "v" / STORE_FILE).unlink()
    old = VectorIndex.load(tmp_path / "v", gpu="off")
    assert old._ann.store.bits == 16
    np.testing.assert_allclose(old.vectors_for([5, 7]), rows[[5, 7]], atol=1e-3)
    assert old.search(data[:3], 1)[0][:, 0].tolist() == [0, 1, 2]
