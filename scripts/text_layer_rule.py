"""The text-layer rule of figure types, how it was chosen and how it holds on papers it was not
chosen on. No longer applied when figures are typed (app/pipeline/classify.py): since the pixel
head learnt text figures it turned 7 right types wrong and 2 wrong ones right on six labelled sets
(`scripts/caption_evidence_rule.py`, which imports the rule from here to measure it again).

The rule: figures that are text (prompts, chats, worked examples, model outputs) carry their words
in the PDF's text layer, densely and in lines of several words; charts and diagrams hold a few
short labels. Words covering at least COVERAGE of the figure's region, in lines of at least
WORDS_PER_LINE words on average, make `text` the dominant type with probability TEXT_RIGHT (or the
pixels' own when higher); the other types keep their pixel probabilities in proportion, so a
diagram around the text stays listed. Two real text figures are all the evidence of its precision,
so TEXT_RIGHT is their rule-of-succession estimate, (2 + 1) / (2 + 2).

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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pymupdf
from sqlalchemy import select

from app.db.schema import Figure, Paper
from app.db.session import session_scope
from app.pdfs import stored_pdf
from app.settings import settings_for
from app.stats import paper_folds
from app.vision.figure_types import LABELS, TypeScores, decide
from app.vision.page_text import _runs

COVERAGE = 0.30  # share of the region's area inside word boxes
WORDS_PER_LINE = 1.5
TEXT_RIGHT = 3 / 4

GRID = [(c, w) for c in (0.2, 0.25, 0.3, 0.35, 0.4) for w in (0.0, 1.5, 2.0, 3.0, 4.0)]
NOT_JUDGED = {"table"}  # tables are typed by construction, never by this rule


@dataclass(frozen=True)
class TextLayer:
    words: int
    lines: int
    coverage: float  # summed word-box area / region area

    @property
    def words_per_line(self) -> float:
        return self.words / max(self.lines, 1)

    @property
    def is_text(self) -> bool:
        return self.coverage >= COVERAGE and self.words_per_line >= WORDS_PER_LINE


def text_layer(page, rect) -> TextLayer:
    """The words of a PyMuPDF page inside `rect` (PDF points): count, lines and area covered."""
    r = pymupdf.Rect(rect)
    words = page.get_text("words", clip=r)
    area = max(r.width * r.height, 1.0)
    covered = sum((w[2] - w[0]) * (w[3] - w[1]) for w in words)
    return TextLayer(len(words), len({(w[5], w[6]) for w in words}), covered / area)


def made_dominant(result: TypeScores, label: str, right: float) -> TypeScores:
    """`result` with `label` the dominant type at probability `right` (or its own when higher), the
    other types scaled to share the rest in proportion: how evidence other than the pixels (a
    caption, a text layer) overrode them without hiding the other types the figure shows."""
    probs = np.array([float(result.scores.get(t, 0.0)) for t in LABELS])
    i = LABELS.index(label)
    p = max(probs[i], right)
    rest = probs.sum() - probs[i]
    probs = probs * ((1.0 - p) / rest if rest > 0 else 0.0)
    probs[i] = p
    return decide(probs)


def with_text_layer_evidence(result: TypeScores, layer: TextLayer | None) -> TypeScores:
    """`result` of the pixel classifier, with `text` made dominant when the text layer says so."""
    if layer is None or not layer.is_text or "text" not in LABELS:
        return result
    return made_dominant(result, "text", TEXT_RIGHT)


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
    print(json.dumps({"papers": len({e["paper"] for e in ex}), "chosen_per_fold": chosen,
                      "held_out_fired": {k: f"{f}/{n}" for k, (f, n) in held.items()},
                      "shipped": [COVERAGE, WORDS_PER_LINE], "chosen_on_all": list(choose(ex))}, indent=2))


if __name__ == "__main__":
    main()
