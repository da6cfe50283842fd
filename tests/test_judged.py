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
