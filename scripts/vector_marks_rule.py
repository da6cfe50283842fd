"""How the vector-marks rule of figure types (app/vision/vector_marks.py) is chosen and how it
holds on papers it was not chosen on.

Examples: hand-labelled figures of one or more collections (labels as for `figsearch train-types
--labels`), each with the statistics of the vector paths of its region in the stored PDF and the
type stored for it now. Folds grouped by paper: on the other folds the grid point (marks, share on
lines, step from one mark to the next; the rule overrides line charts only) is the one that turns the most labelled scatter plots into scatter plots while firing on no
other labelled figure (ties: the stricter); on the held-out fold, how often it fires, by true type,
and how many dominant types it makes right or wrong.

    PYTHONPATH=. python scripts/vector_marks_rule.py --set DIR LABELS [--set DIR LABELS ...]
"""
from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from pathlib import Path

import pymupdf
from sqlalchemy import select

from app.db.schema import Figure, Paper
from app.db.session import session_scope
from app.pdfs import stored_pdf
from app.settings import settings_for
from app.stats import paper_folds
from app.vision import vector_marks as vm

NOT_CHARTS = {"diagram", "photo", "screenshot", "text", "map", "heatmap", "scatter_plot"}
GATES = {"line_chart": lambda t: t == "line_chart"}
GRID = [(m, s, g, st) for m in (10, 20, 30, 40, 60, 80, 100, 150) for s in (0.1, 0.25, 0.4) for g in GATES
        for st in (0.0, 0.05, 0.075, 0.1, 0.15)]


def examples(data_dir: Path, labels: Path) -> tuple[list[dict], float, int]:
    """Labelled figures with their region statistics; seconds spent reading drawings, figures read."""
    settings = settings_for(data_dir)
    with session_scope(settings.db_url) as s:
        rows = s.execute(select(Paper.sha256, Figure.number, Figure.page, Figure.region_bbox, Figure.bbox,
                                Figure.figure_type).join(Paper).where(Figure.kind == "figure")).all()
    where = {(sha, num): (page, region or bbox, ftype) for sha, num, page, region, bbox, ftype in rows}
    by_paper: dict[str, list[dict]] = {}
    for line in labels.read_text().splitlines():
        if line.strip():
            lab = json.loads(line)
            if (lab["sha256"], lab["number"]) in where and lab["type"] != "table":
                by_paper.setdefault(lab["sha256"], []).append(lab)
    out, spent, n = [], 0.0, 0
    for sha in sorted(by_paper):
        path = stored_pdf(settings.data_dir, sha)
        if path is None:
            continue
        with pymupdf.open(path) as doc:
            pages: dict[int, list] = {}
            for lab in by_paper[sha]:
                page, rect, ftype = where[(sha, lab["number"])]
                if not rect or not 1 <= page <= doc.page_count:
                    continue
                t0 = time.perf_counter()
                if page not in pages:
                    pages[page] = vm.page_paths(doc[page - 1])
                marks = vm.vector_marks(pages[page], rect)
                spent += time.perf_counter() - t0
                n += 1
                out.append({"paper": sha, "number": lab["number"], "source": lab.get("source", ""), "page": page,
                            "rect": rect, "gold": lab["type"], "stored": ftype, "marks": marks})
    return out, spent, n


def fires(ex: dict, m: int, s: float, g: str, st: float) -> bool:
    k = ex["marks"]
    return k.marks >= m and k.on_lines <= s and k.lattice <= vm.LATTICE and k.step >= st and GATES[g](ex["stored"])


def choose(train: list[dict]) -> tuple:
    neg = [e for e in train if e["gold"] != "scatter_plot"]
    pos = [e for e in train if e["gold"] == "scatter_plot"]
    ok = [(sum(fires(e, *p) for e in pos), p[0], -p[1], p[3], p) for p in GRID if not any(fires(e, *p) for e in neg)]
    return max(ok)[-1]


def tally(exs: list[dict], p: tuple) -> dict:
    fired = [e for e in exs if fires(e, *p)]
    return {"figures": len(exs), "fires": len(fired),
            "fires_by_true_type": dict(Counter(e["gold"] for e in fired).most_common()),
            "scatter_recall_rule": f"{sum(e['gold'] == 'scatter_plot' for e in fired)}"
                                   f"/{sum(e['gold'] == 'scatter_plot' for e in exs)}",
            "made_right": sum(e["gold"] == "scatter_plot" and e["stored"] != "scatter_plot" for e in fired),
            "made_wrong": sum(e["gold"] != "scatter_plot" and e["stored"] == e["gold"] for e in fired),
            "stored_scatter_recall": f"{sum(e['gold'] == 'scatter_plot' == e['stored'] for e in exs)}"
                                     f"/{sum(e['gold'] == 'scatter_plot' for e in exs)}"}


def describe(p: tuple) -> str:
    return f"marks >= {p[0]}, on lines <= {p[1]}, over {p[2]}, step >= {p[3]}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", nargs=2, action="append", metavar=("DATA_DIR", "LABELS"), required=True)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dump", type=Path, help="write every example's statistics here (JSON lines)")
    args = ap.parse_args()
    exs, spent, n = [], 0.0, 0
    for data_dir, labels in args.set:
        e, t, k = examples(Path(data_dir), Path(labels))
        exs += e
        spent += t
        n += k
    print(f"drawings read for {n} figures in {spent:.1f} s ({1000 * spent / max(n, 1):.1f} ms per figure)")
    if args.dump:
        args.dump.write_text("".join(json.dumps({**{k: v for k, v in e.items() if k != "marks"},
                                                 **vars(e["marks"])}) + "\n" for e in exs))
    fold = paper_folds([e["paper"] for e in exs], args.folds, random.Random(args.seed).shuffle)
    held = []
    for f in range(args.folds):
        p = choose([e for e in exs if fold[e["paper"]] != f])
        test = [e for e in exs if fold[e["paper"]] == f]
        held += [dict(e, fired=fires(e, *p)) for e in test]
        print(f"fold {f}: chosen {describe(p)}: {json.dumps(tally(test, p))}")
    fired = [e for e in held if e["fired"]]
    print("held out, all folds:", json.dumps({
        "figures": len(held), "fires": len(fired),
        "fires_by_true_type": dict(Counter(e["gold"] for e in fired).most_common()),
        "made_right": sum(e["gold"] == "scatter_plot" and e["stored"] != "scatter_plot" for e in fired),
        "made_wrong": sum(e["gold"] != "scatter_plot" and e["stored"] == e["gold"] for e in fired)}))
    p = choose(exs)
    print(f"on all papers: {describe(p)}: {json.dumps(tally(exs, p))}")


if __name__ == "__main__":
    main()
