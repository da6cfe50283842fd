"""Trained models on disk: data_dir/models/<name>/<version>/ with a CURRENT pointer per name.

A version directory holds `model/` (weights.pt + meta.json of the nn.Module), `config.json` (the
TrainConfig), `vocab.json` for word-id text branches, and `train.json` (metrics, data hash, excluded
papers). Publishing a version writes it under a temporary name, renames it, then atomically replaces
CURRENT, so readers never see a half-written model. Not in git (data_dir is outside the repo).
"""
from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

CURRENT = "CURRENT"
DEFAULT_MODEL = "fused"


def models_root(data_dir: Path) -> Path:
    return Path(data_dir) / "models"


def current_model_version(data_dir: Path, name: str = DEFAULT_MODEL) -> str | None:
    try:
        v = (models_root(data_dir) / name / CURRENT).read_text().strip()
    except FileNotFoundError:
        return None
    return v or None


def current_model_dir(data_dir: Path, name: str = DEFAULT_MODEL) -> Path | None:
    v = current_model_version(data_dir, name)
    if v is None:
        return None
    d = models_root(data_dir) / name / v
    return d if d.is_dir() else None


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


def publish(result, data_dir: Path, name: str = DEFAULT_MODEL, extra: dict | None = None, keep: int = 3) -> str:
    root = models_root(data_dir) / name
    root.mkdir(parents=True, exist_ok=True)
    version = time.strftime("m%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)
    tmp = root / f".tmp-{version}"
    save_result(result, tmp, extra)
    os.replace(tmp, root / version)
    ptr = root / f".{CURRENT}.{version}.tmp"
    ptr.write_text(version + "\n")
    os.replace(ptr, root / CURRENT)
    olds = sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("m") and p.name != version)
    import shutil

    for p in olds[: max(0, len(olds) - (keep - 1))]:
        shutil.rmtree(p, ignore_errors=True)
    return version


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


_CACHE: dict[tuple[str, str], LoadedModel] = {}


def load_current(data_dir: Path, name: str = DEFAULT_MODEL) -> LoadedModel | None:
    """The CURRENT version of `name` (cached in-process per version), or None if none is trained."""
    v = current_model_version(data_dir, name)
    if v is None:
        return None
    key = (str(models_root(data_dir) / name), v)
    if key not in _CACHE:
        _CACHE[key] = load_dir(models_root(data_dir) / name / v, name, v)
    return _CACHE[key]
