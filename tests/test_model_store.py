"""The model store: versions with meta.json, the data dir over the shipped defaults, repair of a
bad CURRENT, refusal of pickles, and `figsearch models`."""
from __future__ import annotations

import json
import pickle
import time

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from app.model_store import (UnsafeArtifact, at_path, list_artifacts, load_arrays, load_tensors, make_meta,
                             publish, resolve, save_arrays)
from app.model_store import store as store_module


def _fill(value: float):
    def fill(folder):
        save_arrays(folder / "w.safetensors", {"w": np.full(3, value, np.float32)})
    return fill


def _meta(**kw):
    return make_meta("toy", "a toy model", papers=["A" * 64, "b" * 64], data={"description": "toy data"},
                     metrics={"acc": 0.5}, **kw)


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    root = tmp_path / "shipped"
    monkeypatch.setattr(store_module, "SHIPPED", root)
    return root


def test_round_trip_with_meta_and_the_data_dir_over_the_shipped_default(tmp_path, shipped):
    data = tmp_path / "data"
    assert resolve("toy", data) is None
    publish("toy", _fill(1.0), _meta(), root=shipped)
    got = resolve("toy", data)
    assert got.source == "shipped" and load_arrays(got.path / "w.safetensors")["w"].tolist() == [1, 1, 1]
    art = publish("toy", _fill(2.0), _meta(command="figsearch train-toy"), data_dir=data)
    got = resolve("toy", data)
    assert (got.version, got.source, got.path) == (art.version, "data dir", data / "models" / "toy" / art.version)
    assert load_arrays(got.path / "w.safetensors")["w"].tolist() == [2, 2, 2]
    m = got.meta
    assert m["kind"] == "toy" and m["what"] == "a toy model" and m["command"] == "figsearch train-toy"
    assert m["training_data"] == {"description": "toy data", "n_papers": 2, "papers": ["a" * 64, "b" * 64]}
    assert m["metrics"] == {"acc": 0.5} and m["code_version"] and m["created_at"].endswith("Z")
    assert sorted(p.name for p in got.path.iterdir()) == ["manifest.json", "meta.json", "w.safetensors"]
    assert resolve("toy", data, shipped=False).version == art.version
    assert resolve("toy", None).source == "shipped"


def test_a_damaged_version_is_skipped_and_a_dangling_current_repaired(tmp_path, shipped):
    data = tmp_path / "data"
    old = publish("toy", _fill(1.0), _meta(), data_dir=data)
    time.sleep(0.02)
    new = publish("toy", _fill(2.0), _meta(), data_dir=data)
    root = data / "models" / "toy"
    weights = new.path / "w.safetensors"
    raw = bytearray(weights.read_bytes())
    raw[-4:] = np.float32(7.0).tobytes()  # same size, other numbers: only the checksum tells
    weights.write_bytes(bytes(raw))
    got = resolve("toy", data)
    assert got.version == old.version and new.version in got.problem
    assert (root / "CURRENT").read_text().strip() == new.version  # skipped, not forgotten
    (root / "CURRENT").write_text("v20990101T000000-abcdef\n")
    assert resolve("toy", data).version == old.version
    assert (root / "CURRENT").read_text().strip() == old.version  # repaired
    # nothing intact in the data dir: the shipped default serves
    publish("toy", _fill(3.0), _meta(), root=shipped)
    (old.path / "w.safetensors").write_bytes(b"broken")
    assert resolve("toy", data).source == "shipped"


def test_a_version_removed_while_it_is_checked_is_skipped(tmp_path, shipped, monkeypatch):
    """An older version pruned by a concurrent publish while a server checks it: the check says the
    version is not intact (the server serves another) instead of failing with FileNotFoundError."""
    from app.model_store import versions as versions_module

    data = tmp_path / "data"
    old = publish("toy", _fill(1.0), _meta(), data_dir=data)
    time.sleep(0.02)
    new = publish("toy", _fill(2.0), _meta(), data_dir=data)
    real_sha256 = versions_module.file_sha256

    def vanishing(path):  # the file goes between the size check and the read
        if new.version in str(path):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_sha256(path)

    monkeypatch.setattr(versions_module, "file_sha256", vanishing)
    choice = versions_module.choose(data / "models" / "toy")
    assert choice.version == old.version and "removed while it was checked" in choice.problem


def test_pickles_are_refused(tmp_path, shipped):
    data = tmp_path / "data"

    def with_pickle(folder):
        (folder / "model.pkl").write_bytes(pickle.dumps({"w": 1}))
    with pytest.raises(UnsafeArtifact):
        publish("toy", with_pickle, _meta(), data_dir=data)
    assert resolve("toy", data) is None  # nothing was published
    # a pickle slipped into a published version (whatever its name): the version is not served
    art = publish("toy", _fill(1.0), _meta(), data_dir=data)
    (art.path / "extra.bin").write_bytes(pickle.dumps([1, 2, 3]))
    assert resolve("toy", data) is None
    with pytest.raises(UnsafeArtifact):
        at_path("toy", art.path)
    # state dicts: torch's legacy pickle format is refused, its zip format loads with weights_only
    legacy, current = tmp_path / "legacy.pt", tmp_path / "current.pt"
    torch.save({"w": torch.ones(2)}, legacy, _use_new_zipfile_serialization=False)
    torch.save({"w": torch.ones(2)}, current)
    with pytest.raises(UnsafeArtifact):
        load_tensors(legacy)
    assert load_tensors(current)["w"].tolist() == [1.0, 1.0]
    with pytest.raises(UnsafeArtifact):
        load_arrays(tmp_path / "x.pkl")


def test_figsearch_models_lists_every_artifact(tmp_path, shipped):
    from app.cli import cli
    from app.search.doc_table import FigureDoc
    from app.search.searcher import Searcher
    from app.search.ranking import RankingConfig

    data = tmp_path / "data"
    publish("figure-types", _fill(1.0), make_meta("figure-types", "shipped head", metrics={"acc": 0.8}),
            root=shipped)
    publish("fused", _fill(2.0), _meta(command="figsearch train --model fused"), data_dir=data)
    engine = Searcher.build([FigureDoc(i, 1, f"Figure {i}", "recall of a model") for i in (1, 2)])
    engine.ranking = RankingConfig(fitted_for="v1", fitted={"on": "4 judged queries", "held_out": {"ndcg@5": 0.7},
                                                           "command": "figsearch fit", "created": "2026-01-01T00:00:00Z"})
    version = engine.save(data / "index")
    runner = CliRunner()
    out = runner.invoke(cli, ["models", "--data-dir", str(data)])
    assert out.exit_code == 0, out.output
    text = out.output
    assert "figure-types: v" in text and "from the package (shipped default)" in text
    assert "fused: v" in text and "from the data dir" in text and "trained on: 2 papers" in text
    assert f"ranking: {version} from the index version" in text and "ndcg@5=0.7" in text
    assert "central: none in use" in text and "scan-topics: none in use" in text
    rows = {r["name"]: r for r in map(json.loads, runner.invoke(cli, ["models", "--data-dir", str(data),
                                                                      "--json"]).output.splitlines())}
    assert set(rows) >= {"figure-types", "central", "central-weights", "fused", "scan-topics", "ranking"}
    assert rows["fused"]["training_data"]["papers"] == ["a" * 64, "b" * 64]
    assert rows["ranking"]["metrics"] == {"ndcg@5": 0.7} and rows["ranking"]["created_at"] == "2026-01-01T00:00:00Z"
    assert rows["central"]["version"] is None and rows["figure-types"]["source"] == "shipped"
    assert list_artifacts(data) == list(rows.values())


def test_shipped_defaults_are_intact_versions_without_pickles():
    """Every model shipped with the package is a store version that passes its manifest check."""
    names = [p.name for p in store_module.SHIPPED.iterdir() if p.is_dir()]
    assert "figure-types" in names
    for name in names:
        got = resolve(name)
        assert got is not None and got.source == "shipped" and got.problem is None, name
        assert got.meta["kind"] and got.meta["training_data"] and got.meta["command"], name


OFFLINE = """
import socket
def refuse(*a, **k):
    raise OSError("network is off in this test")
socket.socket.connect = refuse
socket.create_connection = refuse
import numpy as np
from app.central.defaults import default_weights
from app.vision.figure_types import type_head
from app.vision.pictures import projection
head, proj = type_head(), projection()
assert head.weight.shape[0] == 14 and proj.dim == 128
assert default_weights()["name"] > 0
print("ok")
"""


def test_shipped_models_load_through_the_store_offline():
    """The shipped figure-type head, picture projection and central weights load with the network
    cut off (sockets refuse to connect)."""
    import os
    import subprocess
    import sys

    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", OFFLINE], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def test_ranking_config_of_an_index_written_before_the_store_still_loads(tmp_path):
    import shutil

    from app.model_store import ranking_artifact
    from app.search.doc_table import FigureDoc
    from app.search.searcher import Searcher
    from app.search.ranking import RankingConfig

    engine = Searcher.build([FigureDoc(1, 1, "Figure 1", "recall")])
    engine.ranking = RankingConfig(candidates=42)
    version = engine.save(tmp_path / "index")
    d = tmp_path / "index" / version
    assert RankingConfig.load(d).candidates == 42 and ranking_artifact(tmp_path).meta["kind"] == "ranking"
    shutil.move(d / "ranking" / "ranking.json", d / "ranking.json")  # the layout before the model store
    shutil.rmtree(d / "ranking")
    assert RankingConfig.load(d).candidates == 42
    assert "before the model store" in ranking_artifact(tmp_path).problem


def test_files_linked_from_the_previous_version_keep_its_checksums(tmp_path, monkeypatch):
    """A version that hard-links the previous version's files does not read them again for its
    manifest, and a linked file damaged since still fails the new version's check."""
    from app.model_store import versions

    root = tmp_path / "index"
    first = versions.publish(root, lambda d: (d.mkdir(), (d / "big.bin").write_bytes(b"x" * 4096)), keep=None)
    hashed = []
    real = versions.file_sha256
    monkeypatch.setattr(versions, "file_sha256", lambda p: hashed.append(p.name) or real(p))

    def fill(d):
        versions.link_tree(root / first, d)
        (d / "new.bin").write_bytes(b"y")
    second = versions.publish(root, fill, keep=None)
    assert hashed == ["new.bin"]
    versions.check_version(root / second)
    with open(root / first / "big.bin", "r+b") as f:  # the same file in both versions
        f.write(b"z")
    with pytest.raises(versions.VersionCorrupt, match="big.bin"):
        versions.check_version(root / second)
