"""app.learn: weak-supervision pairs (labels, exclusion, SSIM filter), images, a tiny training run on
a generated collection, the model registry, learned index vectors, image-only queries, tasks."""
from __future__ import annotations

import io
import shutil

import numpy as np
import pytest
from PIL import Image

from app.learn.images import SSIMStats, image_stats, load_image, ssim_pairs, thumbnails
from app.learn.pairs import CITING, RANDOM, SAME, Pair, PairBuilder, ssim_filter, ssim_mask
from app.settings import Settings

# ------------------------------------------------------------------ pairs
PAPER_OF = [10, 10, 10, 20, 20, 30, 30, 40, 40, 40]
NEIGH = {10: {20}, 20: {10}, 30: set(), 40: set()}


def test_pair_labels_and_matrix():
    b = PairBuilder(PAPER_OF, NEIGH, seed=0)
    assert b.label(0, 1) == SAME == 1.0
    assert b.label(0, 3) == CITING == 0.6 and b.label(3, 0) == CITING
    assert b.label(0, 5) == RANDOM == 0.0
    r = b.label_matrix(np.array([0, 1, 3, 5]))
    assert r.tolist() == [[1, 1, 0.6000000238418579, 0], [1, 1, 0.6000000238418579, 0],
                          [0.6000000238418579, 0.6000000238418579, 1, 0], [0, 0, 0, 1]]


def test_pairs_exclude_papers():
    b = PairBuilder(PAPER_OF, NEIGH, exclude_papers={20, 40}, seed=0)
    pairs = b.sample(n_per_figure=3)
    assert pairs
    papers = {PAPER_OF[p.a] for p in pairs} | {PAPER_OF[p.b] for p in pairs}
    assert papers <= {10, 30}
    assert {p.r for p in pairs} <= {SAME, RANDOM}  # 10's only neighbour (20) is excluded
    for _ in range(20):
        rows = b.batch_rows(4, 3)
        assert set(np.asarray(PAPER_OF)[rows].tolist()) <= {10, 30}
    with pytest.raises(ValueError):
        b.label(0, 3)
    with pytest.raises(ValueError):
        b.label_matrix(np.array([0, 7]))
    # every kind of pair is produced without exclusions
    kinds = {p.r for p in PairBuilder(PAPER_OF, NEIGH, seed=1).sample(2)}
    assert kinds == {SAME, CITING, RANDOM}


def test_ssim_and_filter():
    rng = np.random.default_rng(0)
    x = rng.random((4, 16, 16)).astype(np.float32)
    same = ssim_pairs(x, x)
    assert np.allclose(same, 1.0, atol=1e-4)
    other = ssim_pairs(x, x[::-1])
    assert (other < 0.3).all()
    thumbs = np.stack([x[0], x[0], x[1], x[2]])  # 0 and 1 identical
    pairs = [Pair(0, 1, 1.0), Pair(0, 2, 0.6), Pair(0, 3, 0.0), Pair(1, 0, 0.0)]
    kept = ssim_filter(pairs, thumbs)
    # positive with identical images kept; dissimilar positive dropped; dissimilar negative kept;
    # a "negative" that looks identical is dropped
    assert [(p.a, p.b, p.r) for p in kept] == [(0, 1, 1.0), (0, 3, 0.0)]
    keep, lab = ssim_mask(np.arange(4), np.array([[1, 1, .6, 0], [1, 1, .6, 0], [.6, .6, 1, 0], [0, 0, 0, 1]],
                                                 np.float32), SSIMStats(thumbs))
    assert keep[0, 1] and not keep[0, 2] and keep[0, 3] and not keep[0, 0]
    assert lab[0, 2] == 1 and lab[0, 3] == 0


def _png(color=(200, 30, 30), size=(60, 40)) -> bytes:
    img = Image.new("RGB", size, (255, 255, 255))
    for x in range(5, 50):
        img.putpixel((x, 20), color)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def test_images():
    a = load_image(_png(), 32)
    assert a.shape == (3, 32, 32) and a.dtype == np.uint8
    assert load_image(b"not an image", 16).min() == 255  # unreadable -> white
    st = image_stats(_png())
    assert st.shape == (76,) and st[74] > 0  # wider than high
    assert thumbnails(np.stack([a, a]), 16).shape == (2, 16, 16)


# ------------------------------------------------------------- tiny run
@pytest.fixture(scope="module")
def collection(tmp_path_factory, demo_pdfs):
    from app.pipeline.ingest_jobs import prepare_job, run_job_embedded

    root = tmp_path_factory.mktemp("learn")
    settings = Settings(data_dir=root / "data", database_url="", broker_url="", auto_index=False)
    job = prepare_job(demo_pdfs[:4], settings)  # four of the session's generated papers (read only)
    run_job_embedded(settings, job, workers=2)
    return settings


TINY = dict(epochs=1, steps_per_epoch=3, image_size=32, batch_papers=4, per_paper=3, dim=16)


def test_tiny_training_registry_index_and_image_queries(collection, tmp_path):
    from app.learn.variants import config_for
    from app.learn.data import load_learn_data
    from app.learn.embed import FigureEmbeddings, TextQueryEncoder, text_query_encoder
    from app.learn.image_search import image_model, search_by_image
    from app.learn.registry import load_current, publish
    from app.model_store import resolve
    from app.learn.train import train
    from app.search.searcher import Searcher
    from app.search.embeddings import read_dense_info
    from app.pipeline.indexing import build_index, index_root

    settings = Settings(data_dir=shutil.copytree(collection.data_dir, tmp_path / "data"), database_url="",
                        broker_url="", auto_index=False)
    data = load_learn_data(settings)
    assert len(data) >= 8 and len(set(data.paper_of.tolist())) == 4
    # exclusion: one paper's figures are in no training batch
    excluded = {int(data.paper_of[0])}
    res = train(data, config_for("fused", **TINY), excluded, progress=False)
    assert res.metrics["n_excluded_papers"] == 1
    assert res.metrics["n_train_figures"] <= int((data.paper_of != data.paper_of[0]).sum())
    # seeded: the same run gives the same weights
    res2 = train(data, config_for("fused", **TINY), excluded, progress=False)
    for (k, v), (_, v2) in zip(res.model.state_dict().items(), res2.model.state_dict().items()):
        assert np.allclose(v.numpy(), v2.numpy()), k
    assert read_dense_info(index_root(settings))["kind"] != "learned"  # no model published yet
    assert resolve("fused", settings.data_dir) is None
    version = publish(res, settings.data_dir, "fused", {"data_hash": data.data_hash(excluded)},
                      papers=data.papers_trained_on(excluded))
    found = resolve("fused", settings.data_dir)
    assert found.version == version and found.source == "data dir"
    # meta.json: what trained it (the papers' SHA-256, not the excluded one), metrics, code version
    assert found.meta["kind"] == "learned-embeddings" and found.meta["code_version"]
    assert found.meta["training_data"]["n_papers"] == 3
    assert data.sha_of_paper[int(data.paper_of[0])] not in found.meta["training_data"]["papers"]
    assert "val_acc" in found.meta["metrics"]
    loaded = load_current(settings.data_dir)
    assert loaded.info["data_hash"] and loaded.config.dim == 16
    # indexing uses the trained model's fused vectors
    rep = build_index(settings)
    assert read_dense_info(index_root(settings))["kind"] == "learned"
    eng = Searcher.load_current(index_root(settings))
    assert eng.vectors.dim == 16 and len(eng) == rep.n_figures
    store = FigureEmbeddings.load(loaded.path)
    assert len(store.ids) == len(data) and store.image.shape == (len(data), loaded.model.branch_dim)
    # incremental: nothing new to embed on the next build
    assert build_index(settings).n_encoded == 0
    # free-text queries in the learned space
    enc = text_query_encoder(settings.data_dir)
    assert isinstance(enc.current(), TextQueryEncoder) and enc(["accuracy"]).shape == (1, 16)
    eng.encoder = enc
    assert eng.search("accuracy", k=3)
    # image-only query: a figure's own crop finds itself first
    lm = image_model(settings.data_dir)
    assert lm is not None
    img = data.resolve(data.image_paths[0]).read_bytes()
    hits = search_by_image(lm, eng, img, k=5)
    assert len(hits) == 5 and hits[0].figure_id == data.docs[0].figure_id
    assert hits[0].score >= hits[-1].score
    assert all(eng.types.kind_of_row(eng.row_of(h.figure_id)) == "figure" for h in hits)
    # tables asked for: never figures (the image branch embeds the figures it was trained on, so none here)
    assert eng.types.count("table") and not search_by_image(lm, eng, img, k=5, kind="table")


def test_by_image_endpoint_and_tasks(collection, tmp_path):
    from fastapi.testclient import TestClient

    from app.api.main import create_app
    from app.learn.variants import config_for
    from app.learn.data import load_learn_data
    from app.learn.registry import publish
    from app.learn.train import train
    from workers import tasks

    data_dir = shutil.copytree(collection.data_dir, tmp_path / "data")
    settings = Settings(data_dir=data_dir, database_url="", broker_url="", auto_index=False)
    cfg = {"data_dir": str(data_dir), "database_url": ""}
    assert tasks.embed_new_figures(cfg)["embedded"] == 0  # no model yet
    data = load_learn_data(settings)
    publish(train(data, config_for("fused", **TINY), progress=False), data_dir)
    out = tasks.reembed_all(cfg)  # the embedded mode runs the task functions in-process
    assert out["embedded"] == len(data) and out["index_version"]
    assert tasks.embed_new_figures(cfg)["embedded"] == 0
    client = TestClient(create_app(Settings(data_dir=data_dir, database_url="", broker_url="",
                                            admin_token="t0k3n-for-tests-0123456789abcdef", warm_encoder=False)))
    client.app.state.engine_holder.refresh(block=True)
    png = data.resolve(data.image_paths[1]).read_bytes()
    r = client.post("/api/v1/search/by-image", files={"image": ("f.png", png, "image/png")}, params={"k": 4})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["mode"] == "image" and len(body["items"]) == 4
    assert body["items"][0]["figure_id"] == data.docs[1].figure_id
