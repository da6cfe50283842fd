"""How much an `eval-types` score depends on the labelling conventions: the same predictions (a report
written by `figsearch eval-types --out DIR`), the gold read again under other conventions.

Nothing is predicted or fitted again; the labels' dominant type is replaced by a rule, or some papers
are left out, and dominant / shown accuracy and mean recall are scored as `eval-types` scores them,
with the same paper-bootstrap intervals.

    python scripts/types_conventions.py OUT/report.json GOLD.jsonl \
        [--drop-source PREFIX ...] [--rule 'other+bar_chart=bar_chart' ...]

A rule `GOLD[+SHOWN][~WORD]=NEW` makes NEW the dominant type (the old one stays among the types
shown) of every figure labelled GOLD that also shows SHOWN and whose note holds WORD; the first rule
that matches a figure applies.
"""
from __future__ import annotations

import argparse
import json
import re

import numpy as np

from app.eval.types import mean_recall
from app.stats import cluster_ci, cluster_statistic_ci

RULE = re.compile(r"^(?P<gold>\w+)(?:\+(?P<shown>\w+))?(?:~(?P<word>[\w -]+))?=(?P<new>\w+)$")


def scores(figures: list[dict]) -> dict:
    papers = [f["sha256"] for f in figures]
    dominant = [float(f["gold"] == f["predicted"]) for f in figures]
    shown = [float(f["predicted"] in f["gold_types"]) for f in figures]

    def ci(values):
        return [round(x, 3) for x in cluster_ci(papers, values)]

    return {"n": len(figures), "papers": len(set(papers)),
            "dominant_accuracy": round(float(np.mean(dominant)), 3), "dominant_accuracy_ci95": ci(dominant),
            "shown_accuracy": round(float(np.mean(shown)), 3), "shown_accuracy_ci95": ci(shown),
            "mean_recall": round(mean_recall(figures), 3),
            "mean_recall_ci95": [round(x, 3) for x in cluster_statistic_ci(papers, figures, mean_recall)]}


def relabel(figure: dict, label: dict, rules: list[re.Match]) -> dict:
    for r in rules:
        if (figure["gold"] == r["gold"] and (not r["shown"] or r["shown"] in figure["gold_types"])
                and (not r["word"] or r["word"] in label.get("note", ""))):
            new = r["new"]
            return {**figure, "gold": new, "gold_types": [new] + [t for t in figure["gold_types"] if t != new]}
    return figure


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("report")
    ap.add_argument("gold")
    ap.add_argument("--drop-source", action="append", default=[], help="leave out papers whose source starts so")
    ap.add_argument("--rule", action="append", default=[], help="GOLD[+SHOWN][~WORD]=NEW")
    args = ap.parse_args()
    rules = []
    for text in args.rule:
        m = RULE.match(text)
        if not m:
            ap.error(f"not a rule: {text!r}")
        rules.append(m)
    labels = {(g["sha256"], int(g["number"])): g for g in map(json.loads, open(args.gold)) if g}
    figures = json.load(open(args.report))["per_figure"]
    kept = [f for f in figures
            if not any(labels[(f["sha256"], f["number"])].get("source", "").startswith(p) for p in args.drop_source)]
    changed = [relabel(f, labels[(f["sha256"], f["number"])], rules) for f in kept]
    out = {"as_labelled": scores(figures)}
    if args.drop_source or rules:
        out["read_again"] = {**scores(changed), "relabelled": sum(a["gold"] != b["gold"] for a, b in zip(kept, changed)),
                             "left_out": len(figures) - len(kept)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
