"""Shared plumbing for the neural models: save/load with a metadata file, seeding, device choice.

Every model component is an `nn.Module` subclass of `SavableModule`. `save(dir)` writes
`weights.pt` (state dict) + `meta.json` (class, constructor hyper-parameters, free-form metadata such
as the training-data hash and metrics); `SavableModule.load(dir)` rebuilds the same class from the
recorded hyper-parameters and loads the weights. Subclasses record their constructor arguments by
calling `self._remember(locals())` first thing in `__init__`.
"""
from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
import torch
from torch import nn

WEIGHTS = "weights.pt"
META = "meta.json"
_REGISTRY: dict[str, type["SavableModule"]] = {}


def seed_everything(seed: int) -> torch.Generator:
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def pick_device(device: str | None = None) -> torch.device:
    if device:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SavableModule(nn.Module):
    """nn.Module with `hparams`, `meta`, save(path) and load(path)."""

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        _REGISTRY[cls.__name__] = cls

    def _remember(self, args: dict) -> None:
        nn.Module.__init__(self)
        self.hparams = {k: v for k, v in args.items() if k not in ("self", "__class__")}
        self.meta: dict = {}

    def save(self, path: str | Path, **meta) -> Path:
        d = Path(path)
        d.mkdir(parents=True, exist_ok=True)
        self.meta.update(meta)
        tmp = d / f".{WEIGHTS}.{os.getpid()}.tmp"
        torch.save(self.state_dict(), tmp)
        os.replace(tmp, d / WEIGHTS)
        (d / META).write_text(json.dumps({"class": type(self).__name__, "hparams": self.hparams,
                                          "meta": self.meta}, indent=1, default=str))
        return d

    @classmethod
    def load(cls, path: str | Path, map_location: str | torch.device = "cpu") -> "SavableModule":
        d = Path(path)
        info = json.loads((d / META).read_text())
        if info["class"] not in _REGISTRY and cls is SavableModule:
            raise TypeError(f"{d} holds a {info['class']}: import the module that defines it before loading")
        klass = _REGISTRY.get(info["class"], cls)
        if cls is not SavableModule and not issubclass(klass, cls):
            raise TypeError(f"{d} holds a {info['class']}, not a {cls.__name__}")
        model = klass(**info["hparams"])
        state = torch.load(d / WEIGHTS, map_location=map_location, weights_only=True)
        model.load_state_dict(state)
        model.meta = info.get("meta", {})
        model.eval()
        return model
