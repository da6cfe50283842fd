"""Figure types from pixels: the shipped classifier, the decision rule and the ingest stage."""
from __future__ import annotations

import random

import numpy as np
import pytest
from PIL import Image

from app.vision.figure_types import LABELS, OTHER, SHOWN, WEIGHTS, classifier, decide, to_array
from app.vision.synth import DRAWN, labels_of, render
from app.vision.vocabulary import TYPES


def test_labels_are_the_vocabulary_without_other():
    assert set(LABELS) | {"other"} == set(TYPES) and "other" not in LABELS
    assert set(DRAWN) == set(LABELS)


def test_decide_dominant_first_and_other_when_nothing_scores():
    s = np.zeros(len(LABELS), np.float32)
    s[LABELS.index("bar_chart")] = 0.9
    s[LABELS.index("line_chart")] = SHOWN + 0.1
    s[LABELS.index("heatmap")] = SHOWN - 0.1
    r = decide(s)
    assert r.figure_type == "bar_chart"
    assert [t["type"] for t in r.figure_types] == ["bar_chart", "line_chart"]
    low = np.full(len(LABELS), OTHER / 2, np.float32)
    assert decide(low).figure_type == "other"


def test_to_array_keeps_aspect_on_white():
    wide = Image.new("RGB", (400, 100), "black")
    a = to_array(wide)
    assert a.shape == (3, 112, 112)
    assert a[:, 0, :].min() == 255 and a[:, 56, :].max() == 0  # white bands above, ink in the middle


def test_labels_of_puts_the_most_frequent_panel_type_first():
    assert labels_of(["line_chart", "bar_chart", "bar_chart"]) == ["bar_chart", "line_chart"]


@pytest.fixture(scope="module")
def model():
    if not WEIGHTS.exists():
        pytest.fail(f"the figure-type weights must ship with the package ({WEIGHTS})")
    return classifier()


def test_shipped_classifier_names_fresh_drawings(model):
    """Drawings from a seed the weights never saw: most get their type."""
    rng = random.Random(987654)
    images, truth = [], []
    for t in DRAWN:
        for _ in range(3):
            images.append(render([t], rng))
            truth.append(t)
    got = [r.figure_type for r in model.classify(images)]
    acc = np.mean([g == t for g, t in zip(got, truth)])
    assert acc >= 0.75, list(zip(truth, got))


def test_ingest_stores_types(tmp_path):
    """After an ingest job (which refreshes the index) every figure has a type and tables are `table`."""
    from sqlalchemy import select

    from app.db.schema import Figure
    from app.db.session import session_scope
    from app.demo.generate import generate_collection
    from app.pipeline.ingest_jobs import prepare_job, run_job_embedded
    from app.settings import Settings

    pdfs = generate_collection(tmp_path / "pdfs", n_papers=1, seed=3)
    settings = Settings(data_dir=tmp_path / "data", database_url="", broker_url="", auto_index=True, dense=False)
    job = prepare_job(pdfs, settings)
    run_job_embedded(settings, job, workers=1)
    with session_scope(settings.db_url) as s:
        rows = s.execute(select(Figure.kind, Figure.figure_type, Figure.figure_types)).all()
    assert rows
    for kind, ftype, ftypes in rows:
        assert ftype in TYPES and ftypes and ftypes[0]["type"] == ftype
        if kind == "table":
            assert ftype == "table"


def test_target_dominant_first_secondary_shown_other_empty():
    from app.vision.real_crops import SECONDARY, target_of

    y = target_of("diagram", ["diagram", "line_chart"])
    assert y[LABELS.index("diagram")] == 1.0 and y[LABELS.index("line_chart")] == SECONDARY
    assert SHOWN < SECONDARY < 1.0 and y.sum() == 1.0 + SECONDARY
    assert decide(y).figure_type == "diagram" and [t["type"] for t in decide(y).figure_types] == ["diagram", "line_chart"]
    assert target_of("other", ["other"]).sum() == 0


def test_augment_keeps_a_similar_crop():
    from app.vision.real_crops import augment

    img = Image.new("RGB", (300, 200), "white")
    img.paste((0, 0, 0), (100, 50, 200, 150))
    rng = random.Random(0)
    for _ in range(20):
        out = augment(img, rng)
        assert out.mode == "RGB" and 0.3 < out.width / 300 < 1.2 and 0.3 < out.height / 200 < 1.2
        ink = (np.asarray(out.convert("L")) < 128).mean()
        assert 0.08 < ink < 0.3  # the black square is still there, about a sixth of the crop


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


def test_head_shape_is_read_from_the_weights(tmp_path):
    import torch

    from app.vision.figure_types import TypeClassifier, build_net

    net = build_net((3, 4), 16)
    torch.save({"model": net.state_dict(), "meta": {"head": {"taps": [3, 4], "hidden": 16}}}, tmp_path / "w.pt")
    r = TypeClassifier(tmp_path / "w.pt").classify([Image.new("RGB", (120, 80), "white")])
    assert r[0].figure_type in TYPES


def test_head_columns_select_the_tapped_blocks():
    from app.vision.figure_types import WIDTHS
    from app.vision.train_types import HEAD_TAPS, _columns

    full = sum(WIDTHS[t] for t in HEAD_TAPS) * 2 + 1
    assert list(_columns(HEAD_TAPS)) == list(range(full))
    last = _columns((4,))
    assert len(last) == WIDTHS[4] * 2 + 1 and last[-1] == full - 1 and last[0] == WIDTHS[3] * 2


def _text_block(w=420, h=220, line=14):
    from PIL import ImageDraw

    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    words = "the user reads ranked items and the model predicts each click from the query".split()
    rng = random.Random(1)
    for y in range(8, h - line, line):
        d.text((8, y), " ".join(rng.choice(words) for _ in range(9)), fill="black")
    return img


def _colour_grid(w=300, h=300, cells=10):
    import matplotlib

    cmap = matplotlib.colormaps["viridis"]
    a = np.zeros((h, w, 3), np.uint8)
    rng = np.random.default_rng(0)
    vals = np.cumsum(rng.normal(0, 0.08, (cells, cells)), axis=1)
    vals = (vals - vals.min()) / np.ptp(vals)
    for i in range(cells):
        for j in range(cells):
            a[i * h // cells:(i + 1) * h // cells, j * w // cells:(j + 1) * w // cells] = np.array(cmap(vals[i, j])[:3]) * 255
    return Image.fromarray(a)


def test_pixel_features_tell_text_lines_and_colour_scales():
    from app.vision.pixel_features import COUNT, NAMES, pixel_features

    text, grid = pixel_features(_text_block()), pixel_features(_colour_grid())
    blank = pixel_features(Image.new("RGB", (200, 100), "white"))
    assert text.shape == (COUNT,) and text.dtype == np.float32 and np.isfinite(text).all()
    f = lambda v, name: v[NAMES.index(name)]  # noqa: E731
    assert f(text, "text_lines") >= 10 and f(grid, "text_lines") == 0 and f(blank, "text_lines") == 0
    assert f(text, "glyph_share") > 0.5 and f(text, "saturated") == 0
    assert f(grid, "ramp_cells") > 0.05 and f(text, "ramp_cells") == 0
    assert f(grid, "flat_colour_blocks") > 0.5 and f(blank, "ink_any") == 0


def test_pixel_features_hardly_change_with_resolution():
    """Crops come at any resolution: shares and relative sizes stay close when the crop is rendered larger."""
    from app.vision.pixel_features import FEATURE_PX, NAMES, pixel_features

    small = _text_block()
    big = small.resize((small.width * 3, small.height * 3), Image.Resampling.NEAREST)
    assert max(big.size) > FEATURE_PX
    a, b = pixel_features(small), pixel_features(big)
    for name in ("ink_mid", "saturated", "glyph_share", "ink_spread_x", "log_aspect"):
        i = NAMES.index(name)
        assert abs(a[i] - b[i]) < 0.15 * max(abs(a[i]), 0.05), (name, a[i], b[i])
