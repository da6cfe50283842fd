"""Figure types and picture vectors from the pretrained backbone: offline loading of the packaged
weights, the shipped head, the decision rule and the ingest stage."""
from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from app.model_store import resolve
from app.vision.figure_types import ARTIFACT, LABELS, SHOWN, decide, type_head
from app.vision.synth import DRAWN, labels_of, render
from app.vision.vocabulary import TYPES


def test_labels_are_the_vocabulary():
    assert LABELS == TYPES
    assert set(DRAWN) == set(LABELS) - {"other"}


def test_decide_dominant_first_then_types_shown():
    p = np.full(len(LABELS), 0.01)
    p[LABELS.index("bar_chart")] = 0.6
    p[LABELS.index("line_chart")] = SHOWN + 0.05
    p[LABELS.index("heatmap")] = SHOWN - 0.05
    r = decide(p / p.sum())
    assert r.figure_type == "bar_chart"
    assert [t["type"] for t in r.figure_types] == ["bar_chart", "line_chart"]


def test_dominant_type_by_what_the_figure_most_likely_shows():
    """A figure torn between bar chart (.45) and line chart (.40), where bar-chart figures often
    show lines too but line-chart figures never bars: it shows a line chart either way (.74), a
    bar chart only if it is one (.45)."""
    from app.vision.train_types import shown_given_dominant

    dominant = ["bar_chart"] * 4 + ["line_chart"] * 4
    accepted = [["bar_chart", "line_chart"]] * 3 + [["bar_chart"]] + [["line_chart"]] * 4
    rates = shown_given_dominant(dominant, accepted)
    line, bar = LABELS.index("line_chart"), LABELS.index("bar_chart")
    assert rates[bar, line] == 0.75 and rates[line, bar] == 0 and rates[line, line] == 1
    assert np.allclose(shown_given_dominant(dominant, accepted, 0.0), np.eye(len(LABELS)))
    p = np.full(len(LABELS), 0.15 / (len(LABELS) - 2))
    p[bar], p[line] = 0.45, 0.40
    assert decide(p).figure_type == "bar_chart"
    r = decide(p, rates)
    assert r.figure_type == "line_chart"
    assert [t["type"] for t in r.figure_types] == ["line_chart", "bar_chart"]


def test_labels_of_puts_the_most_frequent_panel_type_first():
    assert labels_of(["line_chart", "bar_chart", "bar_chart"]) == ["bar_chart", "line_chart"]


OFFLINE = """
import socket, sys
def refuse(*a, **k):
    raise OSError("network is off in this test")
socket.socket.connect = refuse
socket.create_connection = refuse
import numpy as np
from PIL import Image
from app.vision.backbone import LOADERS, NAME, Backbone
for name in LOADERS:
    b = Backbone(name, 64)
    f = b.features([Image.new("RGB", (90, 60), "white")])
    assert f.shape == (1, 2560) and np.isfinite(f).all(), name
    assert b.runtime == "onnx" or name != NAME, name  # the served backbone runs in ONNX Runtime
assert "torchvision" not in sys.modules
print("ok")
"""


def test_backbones_load_offline_from_installed_packages():
    """Both packaged ImageNet backbones load with the network cut off (sockets refuse to connect,
    hub downloads switched off), and neither pulls in torchvision."""
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    import os

    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    out = subprocess.run([sys.executable, "-c", OFFLINE], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


@pytest.fixture(scope="module")
def head():
    shipped = resolve(ARTIFACT)
    if shipped is None or shipped.source != "shipped":
        pytest.fail("the figure-type head must ship with the package (app/model_store/shipped/figure-types)")
    return type_head()


def test_shipped_head_names_fresh_drawings(head):
    """Drawings from a seed the head never saw: most get their type, and scores are probabilities."""
    from app.vision.pictures import encode_pictures

    rng = random.Random(987654)
    images, truth = [], []
    for t in DRAWN:
        for _ in range(2):
            images.append(render([t], rng))
            truth.append(t)
    got = encode_pictures(images)
    acc = np.mean([r.figure_type == t for r, t in zip(got.types, truth)])
    assert acc >= 0.7, [(t, r.figure_type) for r, t in zip(got.types, truth)]
    for r in got.types:
        assert abs(sum(r.scores.values()) - 1.0) < 0.02
    assert np.allclose(np.linalg.norm(got.vectors, axis=1), 1.0, atol=1e-4)


def test_picture_vectors_find_a_rescaled_copy():
    """A rescaled JPEG copy of a drawing is nearer to it than to other drawings."""
    import io

    from app.vision.pictures import encode_pictures

    rng = random.Random(5)
    originals = [render([rng.choice(DRAWN)], rng) for _ in range(8)]
    copies = []
    for im in originals:
        buf = io.BytesIO()
        im.resize((int(im.width * 0.6), int(im.height * 0.6))).save(buf, "JPEG", quality=60)
        copies.append(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))
    a, b = encode_pictures(originals).vectors, encode_pictures(copies).vectors
    assert (np.argmax(b @ a.T, axis=1) == np.arange(len(originals))).mean() >= 0.85


def test_ingest_stores_types_and_picture_vectors(tmp_path, demo_pdfs):
    """After an ingest job (which refreshes the index) every figure has a type, tables are `table`,
    and the picture vectors computed while typing are kept for the index."""
    from sqlalchemy import select

    from app.db.schema import Figure
    from app.db.session import session_scope
    from app.pipeline.ingest_jobs import prepare_job, run_job_embedded
    from app.settings import Settings
    from app.vision.picture_store import PictureStore
    from app.vision.pictures import picture_model_name

    pdfs = demo_pdfs[:1]
    settings = Settings(data_dir=tmp_path / "data", database_url="", broker_url="", auto_index=True, dense=False)
    job = prepare_job(pdfs, settings)
    run_job_embedded(settings, job, workers=1)
    with session_scope(settings.db_url) as s:
        rows = s.execute(select(Figure.id, Figure.kind, Figure.figure_type, Figure.figure_types)).all()
    assert rows
    for _, kind, ftype, ftypes in rows:
        assert ftype in TYPES and ftypes and ftypes[0]["type"] == ftype
        if kind == "table":
            assert ftype == "table"
    store = PictureStore(settings.data_dir, picture_model_name())
    figures = [fid for fid, kind, _, _ in rows if kind == "figure"]
    assert set(figures) <= set(store.vectors)
    assert store.get(figures).shape[1] >= 64


def test_page_text_crops_are_text_runs(tmp_path):
    import pymupdf

    from app.vision.page_text import text_crops

    doc = pymupdf.open()
    page = doc.new_page()
    para = "The model ranks items by their predicted click rate and the user reads them. " * 6
    for i in range(4):
        page.insert_textbox(pymupdf.Rect(72, 72 + i * 120, 520, 180 + i * 120), para, fontsize=10)
    doc.save(tmp_path / "p.pdf")
    crops = text_crops(tmp_path / "p.pdf", 3, random.Random(0))
    assert crops
    for im in crops:
        ink = (np.asarray(im.convert("L")) < 128).mean()
        assert im.width > 300 and 0.01 < ink < 0.4


def test_folded_head_equals_its_parts():
    """The shipped head is one linear map: standardisation, projection and regression folded
    together give the same logits as applying them in turn."""
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression

    from app.vision.train_types import C, Examples, fit_head

    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 40)).astype(np.float32)
    y = np.array([i % 3 for i in range(60)])
    x[:, :5] += y[:, None] * 2.0
    types = [LABELS[i] for i in y]
    head = fit_head(Examples(x, types, [[t] for t in types], ["p"] * 60, ["acl"] * 60), components=10)
    z = (x - x.mean(0)) / (x.std(0) + 1e-3)
    pca = PCA(10, random_state=0).fit(z)
    lr = LogisticRegression(C=C, max_iter=1000).fit(pca.transform(z), y)
    assert np.allclose(head.logits(x)[:, :3], lr.decision_function(pca.transform(z)), atol=1e-3)
    assert (head.logits(x).argmax(axis=1) == y).mean() > 0.9
    manual = ((x - head.center) / head.scale) @ head.projection
    assert np.allclose(manual, pca.transform(z), atol=1e-3)


def test_train_types_publishes_a_store_version_that_a_data_dir_uses(tmp_path):
    """train-types writes a figure-types version (the tensor names the loaders read, meta.json with
    the collection papers' SHA-256); a data dir holding one uses it instead of the shipped head."""
    from app.model_store import load_arrays
    from app.vision.pictures import projection
    from app.vision.train_types import Examples, train_types

    rng = np.random.default_rng(0)
    kinds = ["bar_chart", "line_chart", "diagram"]
    n = 60
    dominant = [kinds[i % 3] for i in range(n)]
    feats = rng.normal(size=(n, 32)).astype(np.float32) + np.array([kinds.index(t) for t in dominant])[:, None]
    group = [f"{i % 10:064x}" for i in range(n)]
    parts = {"labelled": Examples(feats, dominant, [[t] for t in dominant], group, ["labelled"] * n)}
    data = tmp_path / "data"
    meta = train_types(parts, data / "models", folds=2, components=8, picture_dims=4, command="figsearch train-types")
    found = resolve(ARTIFACT, data)
    assert found.source == "data dir" and found.meta["command"] == "figsearch train-types"
    assert found.meta["training_data"]["n_papers"] == 10 and meta["temperature"] > 0
    assert set(load_arrays(found.path / "figure_types.safetensors")) == {"weight", "bias", "temperature"}
    assert set(load_arrays(found.path / "pictures.safetensors")) == {"center", "scale", "projection"}
    head = type_head(data)
    assert head.weight.shape == (len(LABELS), 32) and head is not type_head()
    assert projection(data).dim == 4 and projection().dim == 128
    probs = head.probabilities(feats)
    assert np.mean([LABELS[i] == t for i, t in zip(probs.argmax(1), dominant)]) > 0.8
    train_types(parts, data / "models", folds=2, components=8, picture_dims=4, dominant_by_shown=1.0)
    rates = load_arrays(resolve(ARTIFACT, data).path / "figure_types.safetensors")["shown_given_dominant"]
    assert np.allclose(rates, np.eye(len(LABELS)))  # every figure shows its dominant type only
    assert type_head(data).shown_given_dominant is not None


def test_an_added_labels_source_keeps_the_folds_and_takes_its_weight():
    """Cross-validation with a second labels source added (weighted by its own name) holds the first
    source's figures in the folds they had without it, so the two recipes compare figure by figure;
    the added source is reported under its name."""
    from app.vision.train_types import Examples, cross_validate, example_weights

    rng = np.random.default_rng(3)

    def part(n, source, prefix):
        dominant = [("bar_chart", "line_chart")[i % 2] for i in range(n)]
        x = rng.normal(size=(n, 12)).astype(np.float32) + np.array([i % 2 for i in range(n)])[:, None]
        return Examples(x, dominant, [[t] for t in dominant], [f"{prefix}{i % 15}" for i in range(n)], [source] * n)

    base = {"labelled": part(60, "labelled", "r")}
    with_field = base | {"field": part(40, "field", "s")}
    rows_a, rows_b = [], []
    cross_validate(base, folds=3, components=6, picture_dims=4, predictions=rows_a)
    report, _ = cross_validate(with_field, folds=3, components=6, picture_dims=4, predictions=rows_b,
                               source_weight={"field": 0.5})
    assert [(r["paper"], r["fold"]) for r in rows_b if r["source"] == "labelled"] == [(r["paper"], r["fold"]) for r in rows_a]
    assert report["field"]["n"] == 40
    _, w_all = example_weights(Examples(np.zeros((100, 1)), ["bar_chart"] * 100, [["bar_chart"]] * 100, [""] * 100,
                                        ["labelled"] * 60 + ["field"] * 40), {"field": 0.5}, 0.0)
    assert np.allclose(w_all[60:] / w_all[0], 0.5)


def test_labels_option_names_a_source(tmp_path):
    """`train-types --labels FILE[:SOURCE]`: the source a labels file's figures count as in --weights."""
    import typer

    from app.cli.vision import labels_source

    f = tmp_path / "stats.jsonl"
    f.write_text("")
    assert labels_source(str(f)) == (f, "labelled")
    assert labels_source(f"{f}:field") == (f, "field")
    for bad in (f"{f}:drawn", f"{f}.missing:field"):
        with pytest.raises(typer.BadParameter):
            labels_source(bad)


def test_discriminant_picture_axes_bring_same_kind_pictures_closer():
    """Where the types differ along axes of little variance, the principal axes alone miss them;
    the type-discriminant axes of the picture projection find them (nearest pictures of other
    papers more often of the same kind)."""
    from app.vision.train_types import Examples, fit_head, picture_same_kind

    rng = np.random.default_rng(1)
    n, d = 240, 60
    y = np.array([i % 3 for i in range(n)])
    x = rng.normal(size=(n, 12)) * 4.0 @ rng.normal(size=(12, d)) + rng.normal(size=(n, d))  # strong nuisance factors
    x[:, -3] += y * 1.5  # the types differ only along one quiet axis
    types = [LABELS[i] for i in y]
    ex = Examples(x.astype(np.float32), types, [[t] for t in types], [f"p{i // 2}" for i in range(n)], ["acl"] * n)

    def same_kind(discriminant):
        head = fit_head(ex, components=20, picture_dims=8, discriminant=discriminant)
        assert head.projection.shape == (d, 8)
        v = ((ex.features - head.center) / head.scale) @ head.projection
        return np.mean(picture_same_kind(v / np.linalg.norm(v, axis=1, keepdims=True), ex))

    plain, typed = same_kind(0.0), same_kind(10.0)
    assert typed > plain + 0.1


def test_balance_lifts_the_recall_of_a_rare_type():
    """With few examples of one type among many of another, weighting the rare type up finds more
    of it."""
    from app.vision.train_types import Examples, fit_head

    rng = np.random.default_rng(2)
    y = np.array([0] * 300 + [2] * 300 + [1] * 15)
    x = rng.normal(size=(len(y), 10)) + (y == 1)[:, None] * 1.2 + (y == 2)[:, None] * -3.0
    types = [LABELS[i] for i in y]
    ex = Examples(x.astype(np.float32), types, [[t] for t in types], ["p"] * len(y), ["acl"] * len(y))
    test_x = (rng.normal(size=(200, 10)) + 1.2).astype(np.float32)  # all of the rare type

    def rare_recall(balance):
        return (fit_head(ex, components=10, balance=balance).logits(test_x).argmax(axis=1) == 1).mean()

    assert rare_recall(1.0) > rare_recall(0.0) + 0.2


def _drawn_crops() -> list[Image.Image]:
    from PIL import ImageDraw

    out = []
    for k in range(3):
        im = Image.new("RGB", (120 + 30 * k, 90), "white")
        d = ImageDraw.Draw(im)
        d.line([(10, 80), (60, 20 + 10 * k), (110, 40)], fill=(200, 30, 30), width=3)
        d.rectangle([20, 50, 40 + 20 * k, 85], outline="black")
        out.append(im)
    return out


def test_onnx_runtime_gives_the_features_of_the_torch_module():
    from app.vision.backbone import Backbone

    fast, ref = Backbone("mobilenet_v2", 96), Backbone("mobilenet_v2", 96, runtime="torch")
    assert (fast.runtime, ref.runtime) == ("onnx", "torch")
    a, b = fast.features(_drawn_crops()), ref.features(_drawn_crops())
    assert a.shape == b.shape == (3, 2560)
    np.testing.assert_allclose(a, b, atol=2e-3, rtol=1e-3)


def test_a_failed_export_leaves_the_torch_module_in_charge(monkeypatch, tmp_path):
    import torch

    from app.vision.backbone import Backbone

    def fail(*a, **k):
        raise RuntimeError("exporter missing")

    monkeypatch.setenv("FIGSEARCH_CACHE_DIR", str(tmp_path))  # an empty cache of exports: it must export
    monkeypatch.setattr(torch.onnx, "export", fail)
    b = Backbone("mobilenet_v2", 64)
    assert b.runtime == "torch"
    assert np.isfinite(b.features(_drawn_crops())).all()
