"""eval-crops scoring: a perfect extraction scores 1, and each kind of error lowers its own number."""
from __future__ import annotations

import copy

import pytest

from app.eval.crops import caption_ratio, iou, score

SHA_A, SHA_B = "a" * 64, "b" * 64
GOLD = [
    {"sha256": SHA_A, "file": "a.pdf", "page": 2, "label": "Figure 1", "kind": "figure",
     "bbox": [100, 100, 300, 250], "caption_start": "Figure 1: The architecture of the model."},
    {"sha256": SHA_A, "file": "a.pdf", "page": 3, "label": "Table 1", "kind": "table",
     "bbox": [60, 60, 550, 200], "caption_start": "Table 1: Statistics of the data sets."},
    {"sha256": SHA_B, "file": "b.pdf", "page": 1, "label": "Figure 1", "kind": "figure",
     "bbox": [320, 80, 560, 300], "caption_start": "Fig. 1. Responses of three cells to a stimulus."},
    {"sha256": SHA_B, "file": "b.pdf", "page": 4, "label": "Figure 2", "kind": "figure",
     "bbox": [50, 400, 300, 700], "caption_start": "Fig. 2. Schematic model of the waves."},
]
PAPERS = {SHA_A: {"source": "a.pdf", "status": "ok"}, SHA_B: {"source": "b.pdf", "status": "ok"}}


def perfect() -> dict[str, list[dict]]:
    items: dict[str, list[dict]] = {SHA_A: [], SHA_B: []}
    for g in GOLD:
        items[g["sha256"]].append({"kind": g["kind"], "number": int(g["label"].split()[-1]), "page": g["page"],
                                   "caption": g["caption_start"] + " More caption text follows here.",
                                   "box": list(g["bbox"]), "has_region": True})
    return items


def test_iou_and_caption_ratio():
    assert iou([0, 0, 10, 10], [0, 0, 10, 10]) == 1.0
    assert iou([0, 0, 10, 10], [5, 0, 15, 10]) == pytest.approx(50 / 150)
    assert iou([0, 0, 10, 10], [20, 20, 30, 30]) == 0.0
    assert iou([0, 0, 10, 10], None) == 0.0
    assert caption_ratio("Figure 1: A model.", "Figure 1: A model. And more.") == 1.0
    assert caption_ratio("Figure 1: A model.", "Results of the second experiment") < 0.5


def test_perfect_extraction_scores_one():
    o = score(GOLD, PAPERS, perfect())["overall"]
    assert (o["recall"], o["caption_match"], o["iou_mean"], o["iou_ge_0.8"], o["spurious_share"]) == (1, 1, 1, 1, 0)
    assert o["recall_ci"] == [1.0, 1.0]


def test_shifted_box_lowers_iou_only():
    items = perfect()
    items[SHA_A][0]["box"] = [150, 100, 350, 250]  # a quarter of the width off: IoU 0.6
    o = score(GOLD, PAPERS, items)["overall"]
    assert o["recall"] == 1 and o["caption_match"] == 1
    assert o["iou_mean"] == pytest.approx((3 + 0.6) / 4, abs=1e-3)
    assert o["iou_ge_0.8"] == 0.75 and o["iou_ge_0.5"] == 1.0


def test_missing_figure_lowers_recall_caption_and_iou():
    items = perfect()
    del items[SHA_B][1]
    rep = score(GOLD, PAPERS, items)
    assert rep["overall"]["recall"] == 0.75
    assert rep["overall"]["caption_match"] == 0.75
    assert rep["overall"]["iou_mean"] == 0.75
    assert rep["per_paper"]["b.pdf"]["recall"] == 0.5 and rep["per_paper"]["a.pdf"]["recall"] == 1.0
    assert rep["overall"]["recall_ci"][0] < 1.0  # resampling papers sees the paper that lost one


def test_wrong_caption_and_wrong_page():
    items = perfect()
    items[SHA_A][1]["caption"] = "Table 2: Results on the test set, averaged over ten runs."
    items[SHA_B][0]["page"] = 2  # right box, wrong page
    o = score(GOLD, PAPERS, items)["overall"]
    assert o["caption_match"] == 0.75
    assert o["iou_mean"] == 0.75 and o["recall"] == 1


def test_spurious_items_and_papers_absent_from_the_data_dir():
    items = perfect()
    items[SHA_A].append({"kind": "figure", "number": 7, "page": 5, "caption": "Figure 7: x", "box": [0, 0, 9, 9],
                         "has_region": False})
    gold = copy.deepcopy(GOLD) + [{"sha256": "c" * 64, "file": "c.pdf", "page": None, "label": None, "kind": None,
                                    "bbox": None, "caption_start": None}]
    rep = score(gold, PAPERS, items)
    assert rep["overall"]["n_spurious"] == 1 and rep["overall"]["spurious_share"] == pytest.approx(1 / 5)
    assert rep["spurious"][0]["number"] == 7
    assert rep["papers_not_in_data_dir"] == ["c.pdf"]
    assert rep["gold_items"] == 4
