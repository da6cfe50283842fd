"""Fine-tuning the backbone's last blocks: the tuned tail ships inside the figure-types version,
loads without the network and is what the head and picture vectors read afterwards."""
from __future__ import annotations

import json
import random
import socket

import numpy as np
import pytest

from app.model_store import load_arrays, resolve
from app.vision.backbone import Backbone
from app.vision.figure_types import ARTIFACT, type_head
from app.vision.fine_tune import shrunk, tail_features
from app.vision.pictures import TAIL_FILE, backbone_for, encode_pictures, picture_model_name
from app.vision.synth import render
from app.vision.train_types import acl_examples, train_types


@pytest.fixture(scope="module")
def tuned_dir(tmp_path_factory):
    """A data dir whose figure-types version was trained with a fine-tuned tail (small input, few
    drawings: only the plumbing is under test here)."""
    tmp = tmp_path_factory.mktemp("tuned")
    rng = random.Random(0)
    kinds = ["bar_chart", "line_chart", "table"]
    folder = tmp / "acl"
    (folder / "images").mkdir(parents=True)
    rows = []
    for i in range(24):
        t = kinds[i % 3]
        render([t], rng).save(folder / "images" / f"{i}.png")
        rows.append({"image": f"{i}.png", "type": t, "types_accepted": [t], "paper": f"paper{i % 6}"})
    (folder / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    parts = {"acl": acl_examples(folder, tmp / "cache", size=64, tune=True)}
    data = tmp / "data"
    meta = train_types(parts, data / "models", folds=2, components=8, picture_dims=4, size=64, tune_epochs=8)
    return data, folder, parts, meta


def test_tuned_tail_ships_loads_offline_and_changes_the_features(tuned_dir, monkeypatch):
    data, folder, parts, meta = tuned_dir

    def refuse(*a, **k):
        raise OSError("network is off in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    found = resolve(ARTIFACT, data)
    assert (found.path / TAIL_FILE).exists() and found.meta["input_size"] == 64
    assert meta["fine_tuned_tail"]["epochs"] == 8 and meta["cross_validation"]["tune_epochs"] == 8
    from PIL import Image

    images = [Image.open(folder / "images" / f"{i}.png").convert("RGB") for i in range(4)]
    tuned = backbone_for(data)
    assert tuned.size == 64
    frozen = Backbone("mobilenet_v2", 64)
    f_tuned, f_frozen = tuned.features(images), frozen.features(images)
    assert not np.allclose(f_tuned, f_frozen, rtol=0.05, atol=0.05)
    # the loaded network gives the features the head was fitted on (the cached activations through the tail)
    state = load_arrays(found.path / TAIL_FILE)
    again = tail_features(frozen, state, parts["acl"].acts[0][:4])
    assert np.allclose(f_tuned, again, rtol=0.02, atol=0.02)
    # stored picture vectors of the frozen model are never mixed with the tuned one's
    assert "tuned" in picture_model_name(data) and picture_model_name(data) != picture_model_name()
    assert picture_model_name(data).startswith(f"{tuned.name}-{tuned.size}-tuned")  # names the network it reads
    got = encode_pictures(images, data_dir=data)
    head = type_head(data)
    assert np.allclose([max(t.scores.values()) for t in got.types],
                       head.probabilities(f_tuned).max(axis=1), atol=2e-3)


def test_the_shipped_model_reads_its_tuned_tail():
    """The shipped figure-types version holds a tuned tail; the picture encoder uses it at the
    model's input size, and it changes the features of the frozen network."""
    found = resolve(ARTIFACT)
    assert found.source == "shipped" and (found.path / TAIL_FILE).exists()
    b = backbone_for()
    assert b.size == found.meta["input_size"]
    img = [render(["line_chart"], random.Random(3))]
    assert not np.allclose(b.features(img), Backbone("mobilenet_v2", b.size).features(img), rtol=0.05, atol=0.05)


def test_naming_the_picture_vectors_loads_no_network(monkeypatch):
    """An index build whose picture vectors are all stored reads their model's name only."""
    import app.vision.backbone as backbone_module

    monkeypatch.setattr(backbone_module, "_loaded", {})
    name = picture_model_name()
    assert backbone_module._loaded == {}
    b = backbone_for()
    assert name.startswith(f"{b.name}-{b.size}") and len(backbone_module._loaded) == 1


def test_shrunk_view_keeps_the_whole_figure_inside_the_square():
    img = render(["bar_chart"], random.Random(1))
    arr = shrunk(img, 96, random.Random(2))
    ink = np.asarray(arr).min(axis=2) < 250
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    assert arr.shape == (96, 96, 3)
    # 65-95 % of the square: white margin on at least one side of each axis
    assert rows[-1] - rows[0] < 96 * 0.96 and cols[-1] - cols[0] < 96 * 0.96


def test_a_cached_tail_is_reused_not_trained_again(tuned_dir, tmp_path, monkeypatch):
    from app.vision import train_types as tt

    ex = tuned_dir[2]["acl"]
    first = tt.tuned(ex, 64, 2, 0, None, 0.0, tmp_path)
    assert len(list(tmp_path.glob("tail-*.npz"))) == 1

    def refuse(*a, **k):
        raise AssertionError("trained again")

    monkeypatch.setattr(tt, "train_tail", refuse)
    again = tt.tuned(ex, 64, 2, 0, None, 0.0, tmp_path)
    assert all(np.array_equal(first[0][k], again[0][k]) for k in first[0])
    assert np.array_equal(first[1][0], again[1][0]) and np.array_equal(first[2].features, again[2].features)
    with pytest.raises(AssertionError):
        tt.tuned(ex, 64, 2, 1, None, 0.0, tmp_path)  # another seed is another tail
