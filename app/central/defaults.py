"""Default weights of the combined central-figure score (features: see scoring.py).

Where they come from: fitted on the 24 papers of the first hand-labelled gold set
(tests/data/central_gold.jsonl) with a content model that never trained on those papers:

    figsearch train-central --data-dir DIR --exclude-papers GOLD_SHAS
    figsearch eval-central --data-dir DIR --gold tests/data/central_gold.jsonl --out OUT
    # report.json info.weights_fitted_on_all_gold -> DEFAULT_WEIGHTS

(softmax over a paper's figures against the graded gold labels, L2 pull towards zero; see
scoring.fit_weights). So they are held-out numbers only on papers outside that set: the second gold
set (tests/data/central_gold_v2.jsonl) checks them; on the first set the evaluation reports weights
fitted leave-one-paper-out instead. DEFAULT_WEIGHTS_NO_MODEL drops the model feature (the
fallback when no model is trained; its fitted weight is small). `panels` is 0 because no figure of
the collection had panels recorded when they were fitted.
"""
from __future__ import annotations

FITTED_ON = "tests/data/central_gold.jsonl"

DEFAULT_WEIGHTS: dict[str, float] = {  # the bi-encoder trained excluding both gold sets; see README
    "model": 0.0187, "tfidf": 0.3078, "first": -0.1421, "order": -0.4067, "page": -0.4231, "area": -0.0213,
    "caption_kind": 0.1488, "mentions": 0.0945, "name": 0.4993, "diagram": 0.3725, "early_diagram": 0.16,
    "panels": 0.0,
}
DEFAULT_WEIGHTS_NO_MODEL: dict[str, float] = {**DEFAULT_WEIGHTS, "model": 0.0}
