"""How the text-layer rule of figure types (app/vision/text_layer.py) is chosen and how it holds on
papers it was not chosen on.

Examples: a collection's hand-labelled figures (labels as for `figsearch train-types --labels`)
and runs of body text cut from their papers' pages (app/vision/page_text.py), each with the words
of its region in the PDF's text layer. Folds grouped by paper: on the other folds the thresholds
(coverage, words per line) are the grid point with the highest recall of text that fires on no
labelled non-text figure; on the held-out fold, how often it fires on text and on the rest.

    PYTHONPATH=. python scripts/text_layer_rule.py --data-dir DIR --labels tests/data/figure_types_train_recsys.jsonl
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import pymupdf
from sqlalchemy import select

from app.db.schema import Figure, Paper
from app.db.session import session_scope
from app.pdfs import stored_pdf
from app.settings import settings_for
from app.stats import paper_folds
from app.vision.page_text import _runs
from app.vision.text_layer import COVERAGE, WORDS_PER_LINE, text_layer

GRID = [(c, w) for c in (0.2, 0.25, 0.3, 0.35, 0.4) for w in (0.0, 1.5, 2.0, 3.0, 4.0)]
NOT_JUDGED = {"table"}  # tables are typed by construction, never by this rule


def examples(data_dir: Path, labels: Path, runs_per_paper: int, seed: int) -> list[dict]:
    settings = settings_for(data_dir)
    with session_scope(settings.db_url) as s:
        rows = s.execute(select(Paper.sha256, Figure.number, Figure.page, Figure.region_bbox, Figure.bbox)
                         .join(Paper).where(Figure.kind == "figure")).all()
    where = {(sha, num): (page, region or bbox) for sha, num, page, region, bbox in rows}
    by_paper: dict[str, list[dict]] = {}
    for line in labels.read_text().splitlines():
        if line.strip():
            lab = json.loads(line)
            if (lab["sha256"], lab["number"]) in where and lab["type"] not in NOT_JUDGED:
                by_paper.setdefault(lab["sha256"], []).append(lab)
    rng = random.Random(seed)
    out = []
    for sha in sorted(by_paper):
        path = stored_pdf(settings.data_dir, sha)
        if path is None:
            continue
        with pymupdf.open(path) as doc:
            for lab in by_paper[sha]:
                page, rect = where[(sha, lab["number"])]
                out.append({"paper": sha, "source": "labelled", "text": lab["type"] == "text",
                            "layer": text_layer(doc[page - 1], rect)})
            for pno in rng.sample(range(doc.page_count), min(runs_per_paper, doc.page_count)):
                for rect in _runs(doc[pno])[:1]:
                    out.append({"paper": sha, "source": "page_text", "text": True, "layer": text_layer(doc[pno], rect)})
    return out


def fires(ex: dict, cov: float, wpl: float) -> bool:
    return ex["layer"].coverage >= cov and ex["layer"].words_per_line >= wpl


def choose(train: list[dict]) -> tuple[float, float]:
    neg = [e for e in train if not e["text"]]
    pos = [e for e in train if e["text"]]
    ok = [(sum(fires(e, c, w) for e in pos), -c, -w) for c, w in GRID if not any(fires(e, c, w) for e in neg)]
    _, c, w = max(ok)
    return -c, -w


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--labels", type=Path, required=True)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--runs-per-paper", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    ex = examples(a.data_dir, a.labels, a.runs_per_paper, a.seed)
    fold = paper_folds((e["paper"] for e in ex), a.folds, random.Random(a.seed).shuffle)
    held = {"labelled_text": [0, 0], "labelled_other": [0, 0], "page_text": [0, 0]}
    chosen = []
    for k in range(a.folds):
        c, w = choose([e for e in ex if fold[e["paper"]] != k])
        chosen.append([c, w])
        for e in ex:
            if fold[e["paper"]] == k:
                key = "page_text" if e["source"] == "page_text" else "labelled_text" if e["text"] else "labelled_other"
                held[key][0] += fires(e, c, w)
                held[key][1] += 1
    print(json.dumps({"papers": len(papers), "chosen_per_fold": chosen,
                      "held_out_fired": {k: f"{f}/{n}" for k, (f, n) in held.items()},
                      "shipped": [COVERAGE, WORDS_PER_LINE], "chosen_on_all": list(choose(ex))}, indent=2))


if __name__ == "__main__":
    main()
