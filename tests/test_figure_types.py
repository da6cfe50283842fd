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
    from app.ingest.pipeline import prepare_job, run_job_embedded
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
