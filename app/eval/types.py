"""`figsearch eval-types`: the stored figure types against labels made by looking at the crops.

- dominant accuracy: the predicted dominant type is the labelled dominant type;
- shown accuracy: the predicted dominant type is one the figure shows (any labelled type);
- per-type precision / recall of the dominant type, mean recall over the labelled types (each
  type counts once, however many figures it has), the confusion matrix (labelled -> predicted
  dominant type), and paper-cluster bootstrap intervals;
- type-name queries: each type's everyday name searched with the served keyword search,
  restricted to the labelled figures so every result is judged by a label: the share of the top 5
  that shows the type (precision@5) and whether the top 5 holds one (hit@5).
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from sqlalchemy import select

from app.stats import cluster_ci, cluster_statistic_ci
from app.db.schema import Figure, Paper
from app.db.session import session_scope
from app.pipeline.classify import classify_figures
from app.pipeline.indexing import build_index, index_root
from app.pipeline.searching import open_searcher
from app.settings import Settings

# the everyday name a researcher types for each type
QUERIES = {"line_chart": "line chart", "bar_chart": "bar chart", "scatter_plot": "scatter plot",
           "heatmap": "heatmap", "box_plot": "box plot", "pie_chart": "pie chart",
           "network_graph": "network graph", "diagram": "architecture diagram", "photo": "photo",
           "screenshot": "screenshot", "text": "algorithm", "map": "map"}
# queries naming a kind of figure the way researchers do (judged by the type that kind is)
KIND_QUERIES = {"t-SNE": "scatter_plot", "confusion matrix": "heatmap", "attention heatmap": "heatmap",
                "training curve": "line_chart", "ablation bar chart": "bar_chart"}


def read_gold(path: Path) -> list[dict]:
    return [json.loads(l) for l in Path(path).read_text().splitlines() if l.strip()]


def _paper_ci(values_by_paper: dict[str, list[float]]) -> list[float]:
    """95% interval of the mean when whole papers are resampled (app.stats.cluster_ci)."""
    papers = [p for p, vals in values_by_paper.items() for _ in vals]
    values = [v for vals in values_by_paper.values() for v in vals]
    return [round(x, 3) for x in cluster_ci(papers, values)]


def mean_recall(per_figure: list[dict]) -> float:
    """Recall of the dominant type averaged over the labelled dominant types."""
    hits: dict[str, list[bool]] = defaultdict(list)
    for p in per_figure:
        hits[p["gold"]].append(p["predicted"] == p["gold"])
    return float(np.mean([np.mean(h) for h in hits.values()])) if hits else float("nan")


def evaluate_types(settings: Settings, gold_path: Path, reclassify: bool = False, captions: bool = True) -> dict:
    """`reclassify` types every figure again first (`captions=False`: by pixels alone)."""
    gold = read_gold(gold_path)
    if reclassify:
        classify_figures(settings, redo=True, progress=True, captions=captions)
        build_index(settings, dense=settings.dense, progress=True)
    with session_scope(settings.db_url) as s:
        rows = s.execute(select(Figure.id, Paper.sha256, Figure.number, Figure.figure_type, Figure.figure_types)
                         .join(Paper).where(Figure.kind == "figure")).all()
    by_key = {(sha, num): (fid, ftype, ftypes) for fid, sha, num, ftype, ftypes in rows}
    per_figure, dom_by_paper, shown_by_paper = [], defaultdict(list), defaultdict(list)
    missing = 0
    for g in gold:
        hit = by_key.get((g["sha256"], g["number"]))
        if hit is None:
            missing += 1
            continue
        fid, ftype, ftypes = hit
        gtypes = g.get("types") or [g["type"]]
        dom_ok = float(ftype == g["type"])
        shown_ok = float(ftype in gtypes)
        dom_by_paper[g["sha256"]].append(dom_ok)
        shown_by_paper[g["sha256"]].append(shown_ok)
        per_figure.append({"figure_id": fid, "sha256": g["sha256"], "number": g["number"], "gold": g["type"],
                           "gold_types": gtypes, "predicted": ftype,
                           "predicted_types": [t["type"] for t in (ftypes or [])], "bad_crop": bool(g.get("bad_crop"))})
    n = len(per_figure)
    if not n:
        raise ValueError("no labelled figure is in this collection (labels are matched by paper sha256 and number)")
    good = [p for p in per_figure if not p["bad_crop"]]
    per_type = {}
    for t in sorted({p["gold"] for p in per_figure} | {p["predicted"] for p in per_figure if p["predicted"]}):
        tp = sum(p["gold"] == t and p["predicted"] == t for p in per_figure)
        n_gold = sum(p["gold"] == t for p in per_figure)
        n_pred = sum(p["predicted"] == t for p in per_figure)
        per_type[t] = {"n_gold": n_gold, "n_predicted": n_pred, "recall": round(tp / n_gold, 3) if n_gold else None,
                       "precision": round(tp / n_pred, 3) if n_pred else None}
    report = {
        "n_labelled": len(gold), "n_matched": n, "n_missing": missing, "n_papers": len(dom_by_paper),
        "dominant_accuracy": round(float(np.mean([p["gold"] == p["predicted"] for p in per_figure])), 3),
        "dominant_accuracy_ci95": _paper_ci(dom_by_paper),
        "shown_accuracy": round(float(np.mean([p["predicted"] in p["gold_types"] for p in per_figure])), 3),
        "shown_accuracy_ci95": _paper_ci(shown_by_paper),
        "mean_recall": round(mean_recall(per_figure), 3),
        "mean_recall_ci95": [round(x, 3) for x in cluster_statistic_ci([p["sha256"] for p in per_figure], per_figure,
                                                                          mean_recall)],
        "good_crops": {"n": len(good),
                       "dominant_accuracy": round(float(np.mean([p["gold"] == p["predicted"] for p in good])), 3) if good else None,
                       "shown_accuracy": round(float(np.mean([p["predicted"] in p["gold_types"] for p in good])), 3) if good else None},
        "gold_distribution": dict(Counter(p["gold"] for p in per_figure).most_common()),
        "confusions": dict(Counter(f"{p['gold']} -> {p['predicted']}" for p in per_figure
                                   if p["gold"] != p["predicted"]).most_common(15)),
        "per_type": per_type,
        "confusion_matrix": {g: dict(Counter(p["predicted"] for p in per_figure if p["gold"] == g).most_common())
                             for g in sorted({p["gold"] for p in per_figure})},
        "per_figure": per_figure,
    }
    report.update(_type_queries(settings, per_figure))
    return report


def _type_queries(settings: Settings, per_figure: list[dict]) -> dict:
    """Every type with at least 5 labelled figures: its everyday name searched over the labelled
    figures (the served search with MiniLM and type match)."""
    from app.learn.embed import text_query_encoder  # the served query encoder (CLI and API alike)

    encoder = text_query_encoder(settings.data_dir) if settings.dense else None
    try:
        engine = open_searcher(index_root(settings), encoder=encoder)
    except FileNotFoundError:
        return {"queries": [], "type_query_precision_at_5": None}
    labelled = {p["figure_id"]: p for p in per_figure}
    allowed = np.array([fid in labelled for fid in engine.figure_ids], dtype=bool)
    counts = Counter(t for p in per_figure for t in p["gold_types"])

    def top5(pairs: list[tuple[str, str]]):
        """Per (query, type): its first five labelled figures and, for each, whether it shows the type."""
        found = engine.batch_search([q for q, _ in pairs], 5, rerank=encoder is not None, allowed_rows=allowed)
        return [(hits, [t in labelled[h.figure_id]["gold_types"] for h in hits]) for hits, (_, t) in zip(found, pairs)]

    type_pairs = [(t, q) for t, q in QUERIES.items() if counts.get(t, 0) >= 5]
    out = []
    for (t, q), (hits, shows) in zip(type_pairs, top5([(q, t) for t, q in type_pairs])):
        out.append({"type": t, "query": q, "n_labelled_of_type": counts[t], "returned": len(hits),
                    "precision_at_5": round(sum(shows) / 5, 3), "hit_at_5": bool(any(shows)),
                    "top5": [{"figure_id": h.figure_id, "gold_types": labelled[h.figure_id]["gold_types"]} for h in hits]})
    kind_pairs = [(q, t) for q, t in KIND_QUERIES.items() if counts.get(t, 0) >= 5]
    kinds = []
    for (q, t), (hits, shows) in zip(kind_pairs, top5(kind_pairs)):
        kinds.append({"query": q, "type": t, "returned": len(hits), "precision_at_5": round(sum(shows) / 5, 3)})
    return {"queries": out, "kind_queries": kinds,
            "kind_query_precision_at_5": round(float(np.mean([q["precision_at_5"] for q in kinds])), 3) if kinds else None,
            "type_query_precision_at_5": round(float(np.mean([q["precision_at_5"] for q in out])), 3) if out else None,
            "type_query_hit_at_5": round(float(np.mean([q["hit_at_5"] for q in out])), 3) if out else None}
