"""An index that grows by segments ranks as a full rebuild: a generated collection indexed in
two steps (and then with a paper deleted, a figure changed, the segments merged) answers
`search`, `similar` and `by_picture` with the figures and scores of a full build of the same
papers."""
from __future__ import annotations

import json
import shutil
import zlib

import numpy as np
import pytest

from app.db.schema import Figure, Paper
from app.db.session import session_scope
from app.model_store.versions import check_version
from app.pipeline.classify import classify_figures
from app.pipeline.indexing import build_index, index_root
from app.pipeline.ingest_jobs import prepare_job, run_job_embedded
from app.search.searcher import Searcher
from app.search.segments import SegmentedIndex
from app.search.text import analyze
from app.search.vector_segments import SegmentedVectors
from app.settings import Settings


def words_encoder(texts):
    """A stand-in text encoder: the sum of one fixed random vector per word, so texts sharing
    words are near (the same vectors in every process)."""
    out = np.zeros((len(texts), 32), np.float32)
    for i, t in enumerate(texts):
        for w in analyze(t) or ["empty"]:
            out[i] += np.random.default_rng(zlib.crc32(w.encode())).standard_normal(32)
    return out


def test_segmented_vectors_search_as_one_index_of_the_live_rows(tmp_path):
    from app.search.vectors import VectorIndex

    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((300, 16)).astype(np.float32)
    first = VectorIndex(16, kind="flat")
    first.add(np.arange(200), vecs[:200])
    first.save(tmp_path / "first")
    part = SegmentedVectors.of(VectorIndex.load(tmp_path / "first"), tmp_path / "first")
    assert part.add(vecs[200:], kind="flat") == range(200, 300)
    gone = [0, 7, 150, 201, 299]
    part.delete(gone)
    part.save(tmp_path / "v")
    part = SegmentedVectors.load(tmp_path / "v")
    live = np.setdiff1d(np.arange(300), gone)
    one = VectorIndex(16, kind="flat")
    one.add(np.arange(len(live)), vecs[live])
    queries = np.r_[vecs[[0, 7, 3, 250]], rng.standard_normal((3, 16)).astype(np.float32)]
    a_ids, a = one.search(queries, 20)
    b_ids, b = part.search(queries, 20)
    assert (live[a_ids] == b_ids).all() and np.allclose(a, b, atol=1e-6)
    assert np.allclose(part.vectors_for([3, 250]), one.vectors_for(np.searchsorted(live, [3, 250])), atol=1e-6)
    merged = part.merged(live, kind="flat")
    assert np.array_equal(merged.search(queries, 20)[0], a_ids)
    # more neighbours asked for than live rows: the rest is padding
    ids, _ = part.search(queries[:1], 400)
    assert (ids[0][:len(live)] >= 0).all() and (ids[0][len(live):] == -1).all()


def test_the_step_after_an_ingest_grows_the_index(tmp_path, demo_pdfs):
    pdfs = demo_pdfs[:3]
    settings = Settings(data_dir=tmp_path / "data", database_url="", broker_url="", dense=False)
    _ingest(settings, pdfs[:2])
    first = Searcher.load_current(index_root(settings))
    assert not isinstance(first.lexical(), SegmentedIndex)
    _ingest(settings, pdfs[2:])
    grown = Searcher.load_current(index_root(settings))
    assert grown.version != first.version and len(grown.lexical().segments) == 2
    assert sorted(grown.figure_ids.tolist()) == sorted(set(grown.figure_ids.tolist()) | set(first.figure_ids.tolist()))


def _build(settings, mode="auto"):
    classify_figures(settings)
    return build_index(settings, encoder=words_encoder, encoder_name="words", mode=mode)


def _ingest(settings, pdfs):
    run_job_embedded(settings, prepare_job(pdfs, settings), workers=2)


def _settings(data_dir):
    return Settings(data_dir=data_dir, database_url="", broker_url="", auto_index=False)


@pytest.fixture(scope="module")
def grown(tmp_path_factory, demo_pdfs):
    root = tmp_path_factory.mktemp("growth")
    pdfs = demo_pdfs  # the session's generated papers (read only)
    settings = _settings(root / "data")
    _ingest(settings, pdfs[:4])
    assert _build(settings, "full").how == "full"
    _ingest(settings, pdfs[4:])
    return settings, root


def _full_copy(settings, root, name):
    """A copy of the data dir indexed from scratch."""
    other = _settings(shutil.copytree(settings.data_dir, root / name))
    assert _build(other, "full").how == "full"
    return other


def _engine(settings):
    return Searcher.load_current(index_root(settings), encoder=words_encoder)


def _same_ranking(a, b, what):
    """Same figures with the same scores, in the same order up to figures whose scores tie."""
    assert len(a) == len(b), what
    sa = np.array([h.score for h in a])
    sb = np.array([h.score for h in b])
    assert np.allclose(sa, sb, rtol=1e-4, atol=1e-6), what
    # group figures by (near-)equal score: within a group the order is the rows', which differ
    groups_a, groups_b = [], []
    for hits, groups in ((a, groups_a), (b, groups_b)):
        for h in hits:
            if groups and abs(groups[-1][0] - h.score) <= 1e-4 * max(1.0, abs(h.score)):
                groups[-1][1].add(h.figure_id)
            else:
                groups.append((h.score, {h.figure_id}))
    assert [g for _, g in groups_a] == [g for _, g in groups_b], what


def _compare(settings, full_settings):
    mine, full = _engine(settings), _engine(full_settings)
    live = mine.figure_ids[~mine.docs.deleted]
    assert sorted(live.tolist()) == sorted(full.figure_ids.tolist())
    for fid in live.tolist():
        for scope in ("other_papers", "same_paper", "all"):
            _same_ranking(mine.similar(fid, k=200, scope=scope), full.similar(fid, k=200, scope=scope),
                          f"similar {fid} {scope}")
        row = mine.row_of(fid)
        picture = mine.visual.vectors_for([row])[0]
        assert np.allclose(picture, full.visual.vectors_for([full.row_of(fid)])[0], atol=1e-6)
        scores = {"plot": 0.6, "table": 0.3}
        _same_ranking(mine.by_picture(picture, k=200, kind="both", type_scores=scores),
                      full.by_picture(picture, k=200, kind="both", type_scores=scores), f"picture {fid}")
    # words of the figures on both sides, and of the deleted figures (unknown to the full build)
    captions = list(full.captions) + [mine.captions[r] for r in np.flatnonzero(mine.docs.deleted)]
    queries = {w for c in captions for w in c.split()[:4]} | {"accuracy of the model", "zzzqx"}
    for q in sorted(queries):
        for kind in ("figure", "both"):
            _same_ranking(mine.search(q, k=200, kind=kind), full.search(q, k=200, kind=kind), f"search {q!r}")
    return mine


def test_a_grown_index_ranks_as_a_full_build(grown):
    settings, root = grown
    rep = _build(settings)
    assert rep.how == "grown" and rep.n_segments == 2
    version = index_root(settings) / rep.version
    check_version(version)
    mine = _compare(settings, _full_copy(settings, root, "full-added"))
    assert isinstance(mine.lexical(), SegmentedIndex) and isinstance(mine.vectors, SegmentedVectors)
    assert mine.docs.deleted.sum() == 0
    # the first segment is the previous version's files, hard-linked, not written again
    first, added = json.loads((version / "vectors" / "state.json").read_text())["segments"]
    assert all(f.stat().st_nlink == 2 for f in (version / "vectors" / "segments" / first).iterdir())
    assert all(f.stat().st_nlink == 1 for f in (version / "vectors" / "segments" / added).iterdir())


def test_deleted_and_changed_figures_then_a_merge(grown):
    settings, root = grown
    _build(settings)
    with session_scope(settings.db_url) as s:
        gone = s.get(Paper, min(s.query(Paper.id).all())[0])
        n_gone = len(gone.figures)
        s.delete(gone)
        changed = s.query(Figure).order_by(Figure.id.desc()).first()
        changed.caption = changed.caption + " with a different ending about ablation"
        changed_id = changed.id
    rep = _build(settings)
    assert rep.how == "grown" and rep.n_segments == 3  # the changed figure: a segment of one row
    full_settings = _full_copy(settings, root, "full-deleted")
    mine = _compare(settings, full_settings)
    assert mine.docs.deleted.sum() == n_gone + 1
    full = _engine(full_settings)
    assert (mine.count("figure"), mine.count("table")) == (full.count("figure"), full.count("table"))
    assert "ablation" in mine.captions[mine.row_of(changed_id)]
    # deleting the previous versions never breaks the current one
    for v in index_root(settings).iterdir():
        if v.is_dir() and v.name != rep.version and v.name.startswith("v"):
            shutil.rmtree(v)
    check_version(index_root(settings) / rep.version)
    merged = _build(settings, "merge")
    assert merged.how == "merged" and merged.n_segments == 1
    mine = _compare(settings, _full_copy(settings, root, "full-merged"))
    assert mine.docs.deleted.sum() == 0 and len(mine) == len(mine.figure_ids) == mine.lexical().n_live
