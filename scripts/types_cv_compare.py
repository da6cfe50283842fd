"""Figure-type recipes compared figure by figure on the same paper-grouped folds, and the rule that
lists the types a figure shows chosen on those folds.

Input: the held-out type probabilities `figsearch train-types --cv-predictions FILE` writes (one
line per labelled figure: source, paper, fold, dominant, accepted types, probabilities).

    python scripts/types_cv_compare.py compare A.jsonl B.jsonl   # B - A, paper bootstrap 95% CI
    python scripts/types_cv_compare.py shown A.jsonl             # the listing threshold, nested
    python scripts/types_cv_compare.py gold A.json B.json        # two `eval-types --out` reports

`gold`: two `figsearch eval-types` reports on the same labels (two models, or one before and
after a rule), dominant and shown accuracy figure by figure, B - A with its paper bootstrap 95% CI.

`compare`: per source, dominant accuracy, shown accuracy (the dominant type is one the figure
shows) and mean recall over types of both files, and the paired difference with its paper-cluster
bootstrap interval (the two files must hold the same ACL and collection figures on the same folds;
figures of a source only one file has, e.g. a field's labels added to B, are left out).

`shown`: a figure's type list is its dominant type and every other type scoring at least the
threshold. For each fold the threshold is chosen on the other folds (micro F1 of the listed types
against the labelled ones) and scored on the fold, so the printed figures are held out. It also
scores a second way to pick the dominant type: the type most likely to be among those the figure
shows (its probability plus the others' times how often, on the other folds' labels, a figure of
that dominant type also shows it), against the most probable dominant type, and a mix of the
two scores (weight of the "shown" score chosen per fold on the other folds, by dominant plus shown
accuracy).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from app.stats import cluster_ci
from app.vision.figure_types import LABELS
from app.vision.train_types import shown_given_dominant

MIX = [0.0, 0.25, 0.5, 0.75, 1.0]  # weight of "most likely shown" against "most probable"
GRID = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5]
REAL = ("acl", "labelled")  # the figures labelled by looking (page-text crops are cut, not labelled)


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _scores(rows: list[dict], pred: list[str]) -> dict:
    dom = [float(p == r["dominant"]) for p, r in zip(pred, rows)]
    shown = [float(p in r["accepted"]) for p, r in zip(pred, rows)]
    recall = [np.mean([d for d, r in zip(dom, rows) if r["dominant"] == t])
              for t in sorted({r["dominant"] for r in rows})]
    return {"n": len(rows), "dominant": round(float(np.mean(dom)), 3), "shown": round(float(np.mean(shown)), 3),
            "mean_recall": round(float(np.mean(recall)), 3)}, dom, shown


def argmax_types(rows: list[dict]) -> list[str]:
    return [LABELS[int(np.argmax(r["probs"]))] for r in rows]


def compare(a_rows: list[dict], b_rows: list[dict]) -> dict:
    a_rows, b_rows = [r for r in a_rows if r["source"] in REAL], [r for r in b_rows if r["source"] in REAL]
    if [(r["paper"], r["dominant"], r["fold"]) for r in a_rows] != [(r["paper"], r["dominant"], r["fold"]) for r in b_rows]:
        raise SystemExit("the two files hold different figures or folds")
    out = {}
    for src in REAL + ("real",):
        keep = [i for i, r in enumerate(a_rows) if r["source"] == src or (src == "real" and r["source"] in REAL)]
        a, b = [a_rows[i] for i in keep], [b_rows[i] for i in keep]
        (sa, da, ha), (sb, db, hb) = _scores(a, argmax_types(a)), _scores(b, argmax_types(b))
        papers = [r["paper"] for r in a]
        out[src] = {"A": sa, "B": sb,
                    "dominant_B_minus_A": round(sb["dominant"] - sa["dominant"], 3),
                    "dominant_ci95": cluster_ci(papers, [y - x for x, y in zip(da, db)], digits=3),
                    "shown_B_minus_A": round(sb["shown"] - sa["shown"], 3),
                    "shown_ci95": cluster_ci(papers, [y - x for x, y in zip(ha, hb)], digits=3)}
    return out


def listed(probs: np.ndarray, threshold: float) -> list[set[int]]:
    top = probs.argmax(axis=1)
    return [{int(t)} | set(np.flatnonzero(p >= threshold).tolist()) for t, p in zip(top, probs)]


def list_quality(rows: list[dict], probs: np.ndarray, threshold: float) -> dict:
    tp = fp = fn = 0
    for r, got in zip(rows, listed(probs, threshold)):
        want = {LABELS.index(t) for t in r["accepted"]}
        tp, fp, fn = tp + len(got & want), fp + len(got - want), fn + len(want - got)
    p, rc = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
    return {"precision": round(p, 3), "recall": round(rc, 3), "f1": round(2 * p * rc / max(p + rc, 1e-9), 3),
            "types_listed_per_figure": round((tp + fp) / max(len(rows), 1), 3)}


def mixed_dominant(probs: np.ndarray, train_rows: list[dict], mix: float) -> np.ndarray:
    """Per figure, the index of its dominant type chosen with shown_given_dominant of that mix,
    counted on `train_rows`."""
    rates = shown_given_dominant([r["dominant"] for r in train_rows], [r["accepted"] for r in train_rows], mix)
    return np.argmax(probs @ rates, axis=1)


def shown(rows: list[dict]) -> dict:
    rows = [r for r in rows if r["source"] in REAL]
    probs = np.array([r["probs"] for r in rows])
    fold = np.array([r["fold"] for r in rows])
    chosen, nested_pred, by_shown_pred = {}, [None] * len(rows), [None] * len(rows)
    mix_chosen, mix_pred = {}, [None] * len(rows)
    held_lists: list[tuple[int, set[int]]] = []
    for k in sorted(set(fold.tolist())):
        train, held = np.flatnonzero(fold != k), np.flatnonzero(fold == k)
        tr_rows = [rows[i] for i in train]
        best = max(GRID, key=lambda t: (list_quality(tr_rows, probs[train], t)["f1"], -t))
        chosen[k] = best
        for i, got in zip(held, listed(probs[held], best)):
            held_lists.append((int(i), got))
        for i, j in zip(held, mixed_dominant(probs[held], tr_rows, 1.0)):
            nested_pred[i] = LABELS[int(np.argmax(probs[i]))]
            by_shown_pred[i] = LABELS[int(j)]

        def both(mix: float) -> float:
            s, _, _ = _scores(tr_rows, [LABELS[j] for j in mixed_dominant(probs[train], tr_rows, mix)])
            return s["dominant"] + s["shown"]

        mix_chosen[k] = max(MIX, key=lambda a: (both(a), -a))
        for i, j in zip(held, mixed_dominant(probs[held], tr_rows, mix_chosen[k])):
            mix_pred[i] = LABELS[int(j)]
    tp = fp = fn = 0
    for i, got in held_lists:
        want = {LABELS.index(t) for t in rows[i]["accepted"]}
        tp, fp, fn = tp + len(got & want), fp + len(got - want), fn + len(want - got)
    p, rc = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
    papers = [r["paper"] for r in rows]
    s_arg, d_arg, h_arg = _scores(rows, nested_pred)
    s_sh, d_sh, h_sh = _scores(rows, by_shown_pred)
    s_mix, d_mix, h_mix = _scores(rows, mix_pred)
    return {"n": len(rows),
            "threshold_per_fold": chosen,
            "held_out_list": {"precision": round(p, 3), "recall": round(rc, 3),
                              "f1": round(2 * p * rc / max(p + rc, 1e-9), 3),
                              "types_listed_per_figure": round((tp + fp) / len(rows), 3)},
            "every_threshold_all_folds": {str(t): list_quality(rows, probs, t) for t in GRID},
            "dominant_most_probable": s_arg,
            "dominant_most_likely_shown": s_sh,
            "most_likely_shown_minus_most_probable": {
                "dominant_ci95": cluster_ci(papers, [b - a for a, b in zip(d_arg, d_sh)], digits=3),
                "shown_ci95": cluster_ci(papers, [b - a for a, b in zip(h_arg, h_sh)], digits=3)},
            "mix_per_fold": mix_chosen,
            "dominant_mixed": s_mix,
            "mixed_minus_most_probable": {
                "dominant_ci95": cluster_ci(papers, [b - a for a, b in zip(d_arg, d_mix)], digits=3),
                "shown_ci95": cluster_ci(papers, [b - a for a, b in zip(h_arg, h_mix)], digits=3)}}


def gold(a_report: dict, b_report: dict) -> dict:
    key = lambda p: (p["sha256"], p["number"])
    a = {key(p): p for p in a_report["per_figure"]}
    both = [(a[key(p)], p) for p in b_report["per_figure"] if key(p) in a]
    papers = [x["sha256"] for x, _ in both]
    out = {"n": len(both), "papers": len(set(papers))}
    for name, right in (("dominant", lambda p: p["predicted"] == p["gold"]),
                        ("shown", lambda p: p["predicted"] in p["gold_types"])):
        ra, rb = [float(right(x)) for x, _ in both], [float(right(y)) for _, y in both]
        out[name] = {"A": round(float(np.mean(ra)), 3), "B": round(float(np.mean(rb)), 3),
                     "B_minus_A": round(float(np.mean(rb) - np.mean(ra)), 3),
                     "ci95": cluster_ci(papers, [y - x for x, y in zip(ra, rb)], digits=3),
                     "only_A_right": int(sum(x > y for x, y in zip(ra, rb))),
                     "only_B_right": int(sum(y > x for x, y in zip(ra, rb)))}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    s = sub.add_parser("shown")
    s.add_argument("predictions", type=Path)
    g = sub.add_parser("gold")
    g.add_argument("a", type=Path)
    g.add_argument("b", type=Path)
    args = ap.parse_args()
    if args.cmd == "compare":
        report = compare(read(args.a), read(args.b))
    elif args.cmd == "gold":
        report = gold(json.loads(args.a.read_text()), json.loads(args.b.read_text()))
    else:
        report = shown(read(args.predictions))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
