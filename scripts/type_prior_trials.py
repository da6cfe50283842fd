"""Figure types on other fields: are the head's errors there a shift of how common each type is?

`dump` types the labelled figures of a collection as ingestion does (pixels, then the caption's
evidence), keeping each figure's pixel probabilities for the whole crop and for its two halves
along the long side (55% each). `score` compares, on development label sets, the served decision
with three corrections that need no retraining, each scored where it was not fitted:
- halves: the whole crop's probabilities averaged with its halves' (for crops at least 1.8 or
  1.4 times longer than wide, or all), as panels of a wide figure are typed one by one;
- offsets: one logit offset per type fitted (log-likelihood, L2 .01) on the other sets (each set
  left out in turn), and once on all of them, then checked on `--check` labels (another field);
- per-collection priors: the type frequencies of each set estimated from its own predictions by
  EM (Saerens et al., 2002), no labels used.

    python scripts/type_prior_trials.py dump DATA_DIR LABELS[,LABELS...] OUT.json
    python scripts/type_prior_trials.py score DEV.json [--check CHECK.json] [--data-dir DIR]
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.vision.caption_evidence import with_caption_evidence  # noqa: E402
from app.vision.figure_types import LABELS, decide, type_head  # noqa: E402
from app.vision.pictures import backbone_for, read_crop  # noqa: E402


def dump(data: Path, labels: list[str], out: Path) -> None:
    db = sqlite3.connect(data / "figsearch.db")
    rows = db.execute("select p.sha256, f.number, f.image_path, f.caption from figures f "
                      "join papers p on p.id = f.paper_id where f.kind = 'figure'").fetchall()
    by_key = {(sha, n): (img, cap) for sha, n, img, cap in rows}
    backbone, head = backbone_for(data), type_head(data)
    recs = []
    for path in labels:
        for line in Path(path).read_text().splitlines():
            d = json.loads(line)
            hit = by_key.get((d["sha256"], d["number"]))
            if hit is None:
                continue
            im = read_crop(data / hit[0]).convert("RGB")
            w, h = im.size
            if w >= h:
                c = int(w * 0.55)
                views = [im, im.crop((0, 0, c, h)), im.crop((w - c, 0, w, h))]
            else:
                c = int(h * 0.55)
                views = [im, im.crop((0, 0, w, c)), im.crop((0, h - c, w, h))]
            recs.append({"set": Path(path).stem, "paper": d["sha256"], "gold": d["type"],
                         "types": d.get("types") or [d["type"]], "aspect": max(w / h, h / w),
                         "caption": hit[1], "p": head.probabilities(backbone.features(views)).tolist()})
    out.write_text(json.dumps(recs))
    print(f"{len(recs)} labelled figures -> {out}")


def decided(probs: np.ndarray, caption: str | None, sgd):
    return with_caption_evidence(decide(probs / probs.sum(), sgd), caption).figure_type


def hits(recs, probs_of, sgd) -> np.ndarray:
    """(n, 2): dominant right, dominant among the labelled types."""
    out = []
    for r in recs:
        t = decided(probs_of(r), r["caption"], sgd)
        out.append((t == r["gold"], t in r["types"]))
    return np.array(out, dtype=float)


def fit_offsets(recs) -> np.ndarray:
    lp = np.log(np.array([r["p"][0] for r in recs]) + 1e-9)
    y = np.array([LABELS.index(r["gold"]) for r in recs])

    def loss(b):
        z = lp + b
        z = z - z.max(1, keepdims=True)
        return -(z[np.arange(len(y)), y] - np.log(np.exp(z).sum(1))).mean() + 0.01 * (b ** 2).sum()
    return minimize(loss, np.zeros(len(LABELS)), method="L-BFGS-B").x


def with_offsets(b):
    return lambda r: np.exp(np.log(np.array(r["p"][0]) + 1e-9) + b)


def em_priors(recs, iters: int = 50) -> np.ndarray:
    """The set's type frequencies over a uniform training prior, estimated from its predictions."""
    probs = np.array([r["p"][0] for r in recs])
    pi = np.full(len(LABELS), 1.0 / len(LABELS))
    for _ in range(iters):
        q = probs * pi
        q /= q.sum(1, keepdims=True)
        pi = q.mean(0)
    return pi * len(LABELS)


def halves(min_aspect: float, whole: float):
    def probs(r):
        p = np.array(r["p"])
        return p[0] if r["aspect"] < min_aspect else whole * p[0] + (1 - whole) / 2 * (p[1] + p[2])
    return probs


def paired_ci(recs, a: np.ndarray, b: np.ndarray, rng) -> list:
    papers = np.array([r["paper"] for r in recs])
    uniq = sorted(set(papers))
    d = b - a
    boot = [np.mean(np.concatenate([d[papers == p] for p in rng.choice(uniq, len(uniq))]), 0) for _ in range(1000)]
    return np.percentile(boot, [2.5, 97.5], 0).round(3).T.tolist()


def score(dev_path: Path, check_path: Path | None, data: Path | None) -> None:
    recs = json.loads(dev_path.read_text())
    sgd = type_head(data).shown_given_dominant
    rng = np.random.default_rng(0)
    sets = sorted({r["set"] for r in recs})
    served = hits(recs, lambda r: np.array(r["p"][0]), sgd)
    print(f"development: {len(recs)} figures of {len(sets)} sets; served dominant / shown {served.mean(0).round(3)}")
    for name, fn in [("halves >= 1.8", halves(1.8, .5)), ("halves >= 1.4", halves(1.4, .5)),
                     ("halves, all", halves(1.0, .5)), ("halves >= 1.8, thirds", halves(1.8, 1 / 3))]:
        h = hits(recs, fn, sgd)
        print(f"  {name}: {h.mean(0).round(3)}, difference CI (dominant, shown) {paired_ci(recs, served, h, rng)}")
    left_out = np.zeros_like(served)
    for s in sets:
        idx = [i for i, r in enumerate(recs) if r["set"] == s]
        b = fit_offsets([r for r in recs if r["set"] != s])
        left_out[idx] = hits([recs[i] for i in idx], with_offsets(b), sgd)
        print(f"  offsets fitted without {s}: {served[idx].mean(0).round(3)} -> {left_out[idx].mean(0).round(3)}")
    print(f"  offsets, each set left out: {left_out.mean(0).round(3)}, CI {paired_ci(recs, served, left_out, rng)}")
    for s in sets:
        part = [r for r in recs if r["set"] == s]
        w = em_priors(part)
        print(f"  priors by EM on {s}: {hits(part, lambda r: np.array(r['p'][0]), sgd).mean(0).round(3)} -> "
              f"{hits(part, lambda r: np.array(r['p'][0]) * w, sgd).mean(0).round(3)}")
    if check_path is None:
        return
    b = fit_offsets(recs)
    print("offsets fitted on every development set:", {t: round(float(x), 2) for t, x in zip(LABELS, b)})
    check = json.loads(check_path.read_text())
    before = hits(check, lambda r: np.array(r["p"][0]), sgd)
    after = hits(check, with_offsets(b), sgd)
    print(f"check ({len(check)} figures): {before.mean(0).round(3)} -> {after.mean(0).round(3)}, "
          f"CI {paired_ci(check, before, after, rng)}")
    moved = Counter((r["gold"], decided(np.array(r["p"][0]), r["caption"], sgd), decided(with_offsets(b)(r), r["caption"], sgd))
                    for r in check)
    print("  (labelled, before, after) that changed:", [(k, n) for k, n in moved.most_common() if k[1] != k[2]])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("data_dir", type=Path)
    d.add_argument("labels")
    d.add_argument("out", type=Path)
    s = sub.add_parser("score")
    s.add_argument("dev", type=Path)
    s.add_argument("--check", type=Path)
    s.add_argument("--data-dir", type=Path)
    a = ap.parse_args()
    if a.cmd == "dump":
        dump(a.data_dir, a.labels.split(","), a.out)
    else:
        score(a.dev, a.check, a.data_dir)


if __name__ == "__main__":
    main()
