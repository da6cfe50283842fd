"""Default weights of the combined central-figure score (features: see scoring.py), shipped as
the model store's `central-weights` default (app/model_store/shipped/central-weights, its
meta.json names the gold papers by SHA-256); `eval-central --save-weights` publishes a data dir's
own, which then overrides them.

Where they come from: fitted on the 24 papers of the first hand-labelled gold set
(tests/data/central_gold.jsonl) with a content model that never trained on those papers:

    figsearch train-central --data-dir DIR --exclude-papers GOLD_SHAS
    figsearch eval-central --data-dir DIR --gold tests/data/central_gold.jsonl --out OUT
    # report.json info.weights_fitted_on_all_gold -> the shipped central-weights

(softmax over a paper's figures against the graded gold labels, L2 pull towards zero; see
scoring.fit_weights). So they are held-out numbers only on papers outside that set: the second gold
set (tests/data/central_gold_v2.jsonl) checks them; on the first set the evaluation reports weights
fitted leave-one-paper-out instead. Without a trained model the scorer drops the model feature
(its fitted weight is small). `panels` is 0 because no figure of the collection had panels
recorded when they were fitted.
"""
from __future__ import annotations

import json
import threading

from app.model_store import resolve

FITTED_ON = "tests/data/central_gold.jsonl"
WEIGHTS_ARTIFACT = "central-weights"  # the model store's name of the combined-score weights
WEIGHTS_FILE = "combined.json"

_lock = threading.Lock()
_shipped: dict[str, float] = {}


def default_weights() -> dict[str, float]:
    """The shipped weights (a copy; read once per process)."""
    with _lock:
        if not _shipped:
            found = resolve(WEIGHTS_ARTIFACT, None)
            if found is None:
                raise FileNotFoundError("the shipped central-weights model is missing: reinstall figsearch")
            _shipped.update(json.loads((found.path / WEIGHTS_FILE).read_text())["weights"])
        return dict(_shipped)
