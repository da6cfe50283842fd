"""Packages used only by the evaluation, the benchmark, the demo-paper generator and the drawing of
training figures are extras: a plain install lacks them, and code that needs one says which
extra to install."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from app.extras import MissingExtra, require

ROOT = Path(__file__).resolve().parents[1]


def test_require_names_the_extra_to_install():
    assert require("json", "eval", "reading").dumps([1]) == "[1]"
    with pytest.raises(MissingExtra, match=r"'no_such_package_xyz' package.*'eval' extra.*\.\[eval\]"):
        require("no_such_package_xyz.sub", "eval", "the plots")


def test_test_benchmark_and_demo_packages_are_not_runtime_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = " ".join(project["dependencies"])
    assert not any(name in runtime for name in ("matplotlib", "rank-bm25", "redis>="))
    assert "celery[redis]" in runtime  # the broker (and the redis client) stay
    extras = project["optional-dependencies"]
    assert any("rank-bm25" in r for r in extras["eval"]) and any("matplotlib" in r for r in extras["demo"])
    assert any("eval" in r and "demo" in r and "train" in r for r in extras["dev"])


@pytest.mark.parametrize("code, extra", [
    ("import app.demo.generate", "demo"),
    ("from app.eval.bench import _oracle_comparison; _oracle_comparison({}, 1, 1, 1, 0)", "eval"),
    ("from app.vision.train_types import drawn_examples; drawn_examples(1, 0, None)", "train"),
])
def test_code_needing_a_missing_extra_says_which(code, extra):
    blocked = "import sys; sys.modules['matplotlib'] = None; sys.modules['rank_bm25'] = None; "
    r = subprocess.run([sys.executable, "-c", blocked + code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "MissingExtra" in r.stderr and f"'{extra}' extra" in r.stderr, r.stderr[-800:]
