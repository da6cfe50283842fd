"""Judged metrics of related figures: fills of the top five, nDCG, unjudged slots, agreement."""
import json
from pathlib import Path

import pytest

from app.eval.judged import agreement, kappa, query_metrics, read_judgments

DATA = Path(__file__).parent / "data"


def test_query_metrics_count_grades_and_unjudged_slots():
    grades = {1: 2, 2: 1, 3: 0, 4: 2}
    m = query_metrics([1, 3, 9, 2, 4], grades)
    assert m["close_fill"] == pytest.approx(2 / 5) and m["related_fill"] == pytest.approx(3 / 5)
    assert m["unjudged"] == pytest.approx(1 / 5)
    assert query_metrics([1, 4, 2], grades)["ndcg@5"] == pytest.approx(1.0)  # the ideal order
    assert query_metrics([3], grades)["ndcg@5"] == 0.0
    assert query_metrics([], {})["close_fill"] == 0.0


def test_kappa_and_agreement():
    assert kappa([0, 1, 2, 2], [0, 1, 2, 2]) == pytest.approx(1.0)
    assert kappa([0, 0, 1, 1], [1, 1, 0, 0]) < 0
    q = {"sha256": "a" * 64, "kind": "figure", "number": 1}
    rows = [{"query": q, "candidate": {"sha256": "b" * 64, "kind": "figure", "number": n}, "grade": g, "judge": j}
            for j, gs in (("x", [0, 1, 2, 2]), ("y", [0, 1, 2, 1])) for n, g in enumerate(gs)]
    a = agreement(rows, "x", "y")
    assert a["n_pairs"] == 4 and a["raw_agreement"] == pytest.approx(0.75)
    assert 0 < a["kappa"] < a["kappa_linear"] < 1


def test_the_judged_set_is_well_formed():
    rows = read_judgments(DATA / "related_judgments.jsonl")
    assert len(rows) >= 1000 and len({json.dumps(r["query"], sort_keys=True) for r in rows}) >= 48
    for r in rows:
        assert r["grade"] in (0, 1, 2) and r["judge"]
        assert r["query"]["sha256"] != r["candidate"]["sha256"]  # related figures of *other* papers
        assert len(r["query"]["sha256"]) == 64 and isinstance(r["candidate"]["number"], int)


def test_a_guarded_fit_walks_towards_the_floor():
    """A floor that lexical alone and every single step from it miss is still met: weights below
    it score by how far below, so the search moves towards it instead of returning lexical alone."""
    import numpy as np

    from app.eval.fit import QueryCandidates, fit_on
    from app.eval.judged import Judged

    rng = np.random.default_rng(0)
    cands, grades = {}, {}
    for q in range(4):
        ids = np.arange(100 * q, 100 * q + 12)
        cands[q] = QueryCandidates(ids, ids // 3, {s: rng.random(12) for s in ("lexical", "visual", "paper_body")})
        grades[q] = {int(f): int(g) for f, g in zip(ids, rng.integers(0, 3, 12))}
    judged = Judged(grades, {q: q for q in grades}, 0)

    def shortfall(w):  # met only with two signals at once (as a citation floor above the defaults' own)
        return 0.5 * (w.get("visual", 0) < 1) + 0.5 * (w.get("paper_body", 0) < 3)

    weights = fit_on(cands, judged, list(cands), max_per_paper=3, guard=(shortfall, "two signals at once"))
    assert shortfall(weights) == 0.0
    assert fit_on(cands, judged, list(cands), max_per_paper=3)  # unguarded: still a fit from lexical alone


def test_the_fit_report_says_when_the_floor_is_missed():
    from app.eval.fit import judged_report_md

    row = {"close_fill": .2, "close_fill_ci95": [.1, .3], "related_fill": .7, "related_fill_ci95": [.6, .8],
           "ndcg@5": .5, "unjudged": .1}
    result = {"n_queries": 2, "n_papers": 2, "rankings": {"fitted_held_out": row, "served": row},
              "guard": "citation p@5 >= 1.5 x the defaults'", "guard_shortfall": {"folds": [0.0, 0.1], "final": 0.1}}
    assert "NOT met by 2 of the 3 weight sets" in judged_report_md(result)
    result["guard_shortfall"] = {"folds": [0.0, 0.0], "final": 0.0}
    assert "Met by every weight set" in judged_report_md(result)
