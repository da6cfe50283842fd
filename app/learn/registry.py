"""Trained figure-embedding models in the model store (app/model_store): DATA_DIR/models/<name>/
<version>/ with a CURRENT pointer per name.

A version holds `model/` (weights.pt, a state dict read with weights_only, + meta.json of the
nn.Module), `config.json` (the TrainConfig), `vocab.json` for word-id text branches, `train.json`
(metrics, data hash, excluded papers) and the store's `meta.json` (training papers by SHA-256,
metrics, code version, command). The figures embedded with a version are kept next to it later
(`embeddings.npz`, app/learn/embed.py): derived data, outside its manifest. Not in git (the data
dir is outside the repo).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from app.model_store import make_meta, publish as publish_artifact, resolve

DEFAULT_MODEL = "fused"
KIND = "learned-embeddings"


def current_model_dir(data_dir: Path, name: str = DEFAULT_MODEL) -> Path | None:
    """Folder of the intact version in use, or None when none is trained."""
    found = resolve(name, data_dir, shipped=False)
    return found.path if found is not None else None


def save_result(result, dest: Path, extra: dict | None = None) -> Path:
    """Write a TrainResult into directory `dest` (no pointer handling)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    info = dict(metrics=result.metrics, **(extra or {}))
    result.model.save(dest / "model", config=result.config.to_dict(), **info)
    (dest / "config.json").write_text(json.dumps(result.config.to_dict(), indent=1))
    if result.vocab is not None:
        result.vocab.save(dest / "vocab.json")
    (dest / "train.json").write_text(json.dumps(info, indent=1, default=str))
    return dest


def publish(result, data_dir: Path, name: str = DEFAULT_MODEL, extra: dict | None = None, keep: int = 3,
            papers: Iterable[str] | None = None, command: str | None = None) -> str:
    """Publish a trained model as a new version of `name` (`papers`: SHA-256 of the PDFs whose
    figures it trained on). Returns the version name."""
    metrics = {k: v for k, v in result.metrics.items() if isinstance(v, (int, float, str, type(None)))}
    meta = make_meta(KIND, f"figure-embedding model ({result.config.kind})", command=command, papers=papers,
                     data={"description": "the collection's figures: same paper 1, citing 0.6, random 0",
                           **(extra or {})},
                     metrics=metrics, config=result.config.to_dict())
    return publish_artifact(name, lambda d: save_result(result, d, extra), meta, data_dir=data_dir,
                            keep=keep).version


@dataclass
class LoadedModel:
    name: str
    version: str
    path: Path
    model: object
    config: object
    vocab: object | None
    info: dict


def load_dir(path: Path, name: str = "", version: str = "") -> LoadedModel:
    from app.learn.train import TrainConfig
    from app.learn.vocab import Vocab
    import models.fcc  # noqa: F401  (the model families a version can hold register themselves)
    import models.fusion  # noqa: F401
    from models.base import SavableModule

    path = Path(path)
    cfg = TrainConfig(**json.loads((path / "config.json").read_text()))
    vocab = Vocab.load(path / "vocab.json") if (path / "vocab.json").exists() else None
    info = json.loads((path / "train.json").read_text()) if (path / "train.json").exists() else {}
    model = SavableModule.load(path / "model")
    return LoadedModel(name, version or path.name, path, model, cfg, vocab, info)


_CACHE: dict[str, LoadedModel] = {}


def load_current(data_dir: Path, name: str = DEFAULT_MODEL) -> LoadedModel | None:
    """The version of `name` in use (cached in-process per version), or None if none is trained."""
    found = resolve(name, data_dir, shipped=False)
    if found is None:
        return None
    key = str(found.path)
    if key not in _CACHE:
        _CACHE[key] = load_dir(found.path, name, found.version or found.path.name)
    return _CACHE[key]
