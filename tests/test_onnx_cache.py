"""The on-disk cache of ONNX exports: keyed by what was exported, checked on every read, never
in the way (damaged or unwritable: exported again), and the backbone it serves gives the same
features from a cached export as from a fresh one."""
from __future__ import annotations

import os

import numpy as np
import pytest
from PIL import Image, ImageDraw

from app.vision import onnx_cache


def test_round_trip_and_damaged_files_are_ignored(tmp_path):
    assert onnx_cache.load("k", tmp_path) is None
    path = onnx_cache.save("k", b"model bytes", tmp_path)
    assert path is not None and path.parent == tmp_path
    assert onnx_cache.load("k", tmp_path) == b"model bytes"
    assert onnx_cache.load("other", tmp_path) is None
    path.write_bytes(b"model bytez")  # same length, one byte changed
    assert onnx_cache.load("k", tmp_path) is None
    onnx_cache.discard("k", tmp_path)
    assert not list(tmp_path.glob("k-*"))


def test_unwritable_folder_is_no_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert onnx_cache.save("k", b"x", blocker / "onnx") is None
    assert onnx_cache.load("k", blocker / "onnx") is None


def test_least_recently_used_beyond_keep_are_removed(tmp_path):
    paths = [onnx_cache.save(f"k{i}", bytes([i]), tmp_path) for i in range(onnx_cache.KEEP)]
    for i, p in enumerate(paths):
        os.utime(p, (1e9 + i, 1e9 + i))  # k0 oldest
    assert onnx_cache.load("k0", tmp_path) == bytes([0])  # used now: the newest
    onnx_cache.save("new1", b"1", tmp_path)
    onnx_cache.save("new2", b"2", tmp_path)
    kept = {p.name.split("-")[0] for p in tmp_path.glob("*.onnx")}
    assert len(kept) == onnx_cache.KEEP
    assert {"k0", "new1", "new2"} <= kept and "k1" not in kept and "k2" not in kept


def test_setting_names_the_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("FIGSEARCH_CACHE_DIR", str(tmp_path / "c"))
    assert onnx_cache.cache_dir() == tmp_path / "c" / "onnx"
    monkeypatch.delenv("FIGSEARCH_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert onnx_cache.cache_dir() == tmp_path / "xdg" / "figsearch" / "onnx"


def _crops() -> list[Image.Image]:
    out = []
    for i in range(3):
        im = Image.new("RGB", (240 + 40 * i, 160), "white")
        d = ImageDraw.Draw(im)
        d.line([(10, 150), (60 + 50 * i, 20 + 30 * i), (220, 140 - 20 * i)], fill="black", width=3)
        d.rectangle([20, 20, 60 + 10 * i, 60], outline="blue", width=2)
        out.append(im)
    return out


def test_backbone_reads_its_export_from_the_cache(monkeypatch, tmp_path):
    pytest.importorskip("onnxruntime")
    torch = pytest.importorskip("torch")
    from app.vision import backbone as bb

    monkeypatch.setenv("FIGSEARCH_CACHE_DIR", str(tmp_path))
    export = torch.onnx.export
    crops = _crops()
    first = bb.Backbone()
    assert first.runtime == "onnx"
    files = list((tmp_path / "onnx").glob("*.onnx"))
    assert len(files) == 1
    expected = first.features(crops)

    def no_export(*a, **k):
        raise AssertionError("exported again although the cache holds the export")

    with monkeypatch.context() as m:
        m.setattr(torch.onnx, "export", no_export)
        second = bb.Backbone()
    assert second.runtime == "onnx"
    np.testing.assert_array_equal(second.features(crops), expected)

    intact = files[0].read_bytes()
    files[0].write_bytes(intact[:-100])  # damaged: exported again (and cached again), same features
    exports = []
    with monkeypatch.context() as m:
        m.setattr(torch.onnx, "export", lambda *a, **k: exports.append(1) or export(*a, **k))
        third = bb.Backbone()
    assert third.runtime == "onnx" and exports == [1]
    np.testing.assert_array_equal(third.features(crops), expected)
    assert len(list((tmp_path / "onnx").glob("*.onnx"))) == 1  # the damaged file replaced
    assert onnx_cache.load(bb.export_key(third.module, bb.SIZE)) is not None


def test_key_follows_weights_and_size():
    pytest.importorskip("torch")
    from app.vision import backbone as bb

    net = bb.Backbone(runtime="torch").module
    key = bb.export_key(net, bb.SIZE)
    assert bb.export_key(net, bb.SIZE) == key
    assert bb.export_key(net, 320) != key
    tail = {k: v.numpy().copy() for k, v in net[bb.TAIL_START:].state_dict().items()}
    first = next(k for k in tail if k.endswith("weight"))
    tail[first][(0,) * tail[first].ndim] += 1e-3
    bb.load_tail(net, tail)
    assert bb.export_key(net, bb.SIZE) != key
