"""The import layers of pyproject.toml name every package and top-level module of app/, so none
escapes the contract that `make test` checks with lint-imports."""
from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_in_a_layer():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in cfg["contracts"] if c["type"] == "layers")["layers"]
    named = {m.strip() for layer in layers for m in layer.replace(":", "|").split("|")}
    app = ROOT / "app"
    present = {f"app.{p.name}" for p in app.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    present |= {f"app.{p.stem}" for p in app.glob("*.py") if p.stem != "__init__"}
    assert present - named == set(), "add these to a layer in pyproject.toml"
    assert {"workers", "models"} <= named
