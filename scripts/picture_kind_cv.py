"""Search by picture, cross-fitted: do uploads find figures of their kind in other papers?

Labelled figures made by other people (`--acl DIR`: the ACL labels) and, optionally, hand labels of
a collection's crops (`--data-dir DIR --labels FILE`) are split into folds grouped by paper. For
each fold a type head and picture projection are fitted on the other folds plus drawn figures,
exactly as `figsearch train-types` fits the shipped one (same options); the held-out fold's figures
then form the collection (stored types with their captions' evidence, as ingestion keeps them) and
a rescaled JPEG copy of each of them is the upload (typed by pixels alone). Reported per ranking of
the picture search: the share of the first five results from other papers with the upload's
labelled type (`same_kind_at_5`), and how often the copy finds its own figure first.

The rankings are those of `app/search/picture_rank.py` with the parameters given; `--sweep` tries a
grid and reports each held-out fold with the parameters chosen on the other folds (nested), so the
number printed for the chosen parameters is never in-sample.

With `--fine-tune EPOCHS` (and `--size`) each fold also fine-tunes the backbone's last blocks on
its training folds, as `figsearch train-types --fine-tune` does; the held-out figures and their
copies are encoded by that fold's tuned network.

    python scripts/picture_kind_cv.py --acl ../shared/labelled/aclfig-types-train \
        [--data-dir DIR --labels tests/data/figure_types_train_recsys.jsonl] --cache DIR [--sweep] \
        [--size 320 --fine-tune 6]
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import random
import sys
from pathlib import Path

import numpy as np

from app.search.fusion import SAME_PICTURE_MIN
from app.search.looks import HASH_BYTES, LookIndex, same_picture
from app.search.picture_rank import PictureRanking, rank_by_picture
from app.search.one_thread import one_blas_thread
from app.eval.image_copies import jpeg_copy
from app.stats import cluster_ci, hashed_folds
from app.vision.caption_evidence import with_caption_evidence
from app.vision.figure_types import LABELS, decide, softmax
from app.vision.looks import look_hash
from app.vision.backbone import backbone
from app.vision.fine_tune import tail_features
from app.vision.train_types import (_cached_activations, _cached_features, _concat, _open, acl_examples,
                                    drawn_examples, fit_head, fit_temperature, labelled_examples, tuned)

TUNE: dict = {"size": 224, "epochs": 0}  # set from the command line
COPY_LOOKS = np.zeros((0, HASH_BYTES), np.uint8)  # the uploads' perceptual hashes, by example (set in main)


def _copies(images_of, keys, cache: Path, tag: str) -> np.ndarray:
    """Frozen features of the uploads, or with fine-tuning their activations at the tail's input."""
    if TUNE["epochs"] > 0:
        return _cached_activations(images_of, keys, cache, tag, True, TUNE["size"])[0]
    return _cached_features(images_of, keys, cache, tag, True, TUNE["size"])


def _looks(pairs) -> tuple[np.ndarray, np.ndarray]:
    """Perceptual hashes (app/vision/looks.py) of each (original, its upload copy)."""
    got = [(look_hash(a), look_hash(b)) for a, b in pairs]
    return np.array([a for a, _ in got], np.uint8), np.array([b for _, b in got], np.uint8)


def acl_part(folder: Path, cache: Path):
    rows = [json.loads(line) for line in (folder / "labels.jsonl").read_text().splitlines() if line.strip()]
    ex = acl_examples(folder, cache, progress=True, size=TUNE["size"], tune=TUNE["epochs"] > 0)
    copies = _copies(lambda idx: [jpeg_copy(_open(folder / "images" / rows[i]["image"]), random.Random(i))
                                  for i in idx], [r["image"] for r in rows], cache, "acl-copies")
    looks = _looks((im, jpeg_copy(im, random.Random(i)))
                   for i, im in ((i, _open(folder / "images" / r["image"])) for i, r in enumerate(rows)))
    return ex, copies, [r.get("caption") or "" for r in rows], looks


def labelled_part(data_dir: Path, labels: Path, cache: Path):
    from sqlalchemy import select

    from app.db.schema import Figure, Paper
    from app.db.session import session_scope
    from app.settings import settings_for
    from app.vision.real_crops import labelled_crops, read_labels

    settings = settings_for(data_dir)
    ex = labelled_examples(settings, labels, cache, progress=True, size=TUNE["size"], tune=TUNE["epochs"] > 0)
    labs = read_labels(labels)
    crops = labelled_crops(settings, labs)
    with session_scope(settings.db_url) as s:
        rows = s.execute(select(Paper.sha256, Figure.number, Figure.caption, Figure.image_path).join(Paper)
                         .where(Figure.kind == "figure")).all()
    caption = {(sha, num): cap or "" for sha, num, cap, rel in rows if rel}
    found = [lab for lab in labs if (lab["sha256"], lab["number"]) in caption]
    if len(found) != len(crops):
        raise SystemExit(f"{len(crops)} crops for {len(found)} labels with a stored figure: a crop did not open")
    keys = [f"{c.group}:{i}:{c.dominant}" for i, c in enumerate(crops)]
    copies = _copies(lambda idx: [jpeg_copy(crops[i].image, random.Random(10_000 + i)) for i in idx],
                     keys, cache, "labelled-copies")
    n = len(crops)
    rest = ex.acts[0][n:] if TUNE["epochs"] > 0 else ex.features[n:]
    copies = np.concatenate([copies, rest])  # the page-text crops are never uploaded
    orig, copy = _looks((c.image, jpeg_copy(c.image, random.Random(10_000 + i))) for i, c in enumerate(crops))
    unknown = np.zeros((len(ex.dominant) - n, HASH_BYTES), np.uint8)  # page-text crops: no hash (cosine rule)
    looks = (np.concatenate([orig, unknown]), np.concatenate([copy, unknown]))
    return ex, copies, [caption[(lab["sha256"], lab["number"])] for lab in found] + [""] * (len(ex.dominant) - n), looks


def cross_fit(parts, copies, folds: int, seed: int, opts: dict):
    """Out-of-fold picture vectors and type probabilities of the real examples and their copies."""
    real = _concat([p for k, p in parts.items() if k != "drawn"])
    fold_of = hashed_folds(real.group, folds, seed)
    fold = np.array([fold_of[g] for g in real.group])
    n = len(real.dominant)
    vec, cvec = np.zeros((n, opts["picture_dims"]), np.float32), np.zeros((n, opts["picture_dims"]), np.float32)
    logits, clogits = np.zeros((n, len(LABELS))), np.zeros((n, len(LABELS)))
    for k in range(folds):
        train = _concat([real.subset(fold != k), parts["drawn"]])
        held = fold == k
        held_feats, copy_feats, fc = real.features[held], copies[held], None
        if TUNE["epochs"] > 0:  # as train-types --fine-tune: this fold's tail, its linear layer types
            state, fc, train = tuned(train, TUNE["size"], TUNE["epochs"], seed + k, opts["source_weight"],
                                     opts["balance"], TUNE.get("cache"))
            b = backbone(size=TUNE["size"])
            held_feats, copy_feats = tail_features(b, state, real.acts[0][held]), tail_features(b, state, copy_feats)
        head = fit_head(train, **opts)
        if fc is not None:
            head = dataclasses.replace(head, weight=fc[0], bias=fc[1])
        for feats, v_out, l_out in ((held_feats, vec, logits), (copy_feats, cvec, clogits)):
            v = ((feats - head.center) / head.scale) @ head.projection[:, :opts["picture_dims"]]
            v_out[held] = v / np.linalg.norm(v, axis=1, keepdims=True)
            l_out[held] = head.logits(feats)
        print(f"  fold {k + 1}/{folds} fitted", file=sys.stderr, flush=True)
    y = np.array([LABELS.index(t) for t in real.dominant])
    t = fit_temperature(logits, y)
    return real, fold, vec, cvec, softmax(logits / t), softmax(clogits / t), t


def evaluate(ranking: PictureRanking, data, queries: np.ndarray,
             looks: LookIndex | None = None) -> list[tuple[int, float, bool, float]]:
    """Per upload: (fold, same kind among the first five of other papers, own figure first, the
    same kind when the upload's paper is not in the collection). `looks`: the originals' hashes
    and the uploads' (`copy_looks`), which then tell copies as the served search does."""
    real, fold, vec, cvec, stored, upload = data
    dominant, group = np.array(real.dominant), np.array(real.group)
    out = []

    def ranked_of(rows, q):
        cos = vec[rows] @ cvec[q]
        copies = None if looks is None else same_picture(looks, COPY_LOOKS[q], rows, cos)
        return rows[rank_by_picture(cos, stored[rows], upload[q], ranking, copies=copies)[1]]

    for k in sorted(set(fold.tolist())):
        pool = np.flatnonzero((fold == k) & queries)
        for q in pool:
            ranked = ranked_of(pool, q)
            other = [r for r in ranked if group[r] != group[q]][:5]
            new = ranked_of(pool[group[pool] != group[q]], q)[:5]
            out.append((k, float(np.mean(dominant[other] == dominant[q])), bool(ranked[0] == q),
                        float(np.mean(dominant[new] == dominant[q]))))
    return out


def summary(rows, idx=None) -> dict:
    rows = rows if idx is None else [r for r, keep in zip(rows, idx) if keep]
    return {"n": len(rows), "same_kind_at_5": round(float(np.mean([r[1] for r in rows])), 3),
            "own_first": round(float(np.mean([r[2] for r in rows])), 3),
            "same_kind_at_5_unseen_paper": round(float(np.mean([r[3] for r in rows])), 3)}


GRID = {"type_weight": [0.0, 0.25, 0.5, 1.0, 2.0, 4.0], "agreement": ["cosine", "probability", "dominant"],
        "neighbours": [0, 5, 10], "neighbour_weight": [0.5, 1.0], "copies_first": [False, True],
        "copy_min": [0.85, 0.9, SAME_PICTURE_MIN]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--acl", type=Path, required=True)
    ap.add_argument("--data-dir", type=Path)
    ap.add_argument("--labels", type=Path)
    ap.add_argument("--cache", type=Path, required=True)
    ap.add_argument("--synthetic", type=int, default=1000)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sweep", action="store_true", help="grid of rankings, nested choice per held-out fold")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--own-first-min", type=float,
                    help="--sweep: the share of copies that must find their figure first on the training folds "
                         "(default: as often as the served ranking)")
    ap.add_argument("--copies-by", choices=("hash", "cosine"), default="hash",
                    help="how the search tells copies of the upload: perceptual hashes (served) or the cosine rule")
    # the shipped head's options (its meta.json: figsearch models --json)
    ap.add_argument("--C", type=float, default=0.03)
    ap.add_argument("--balance", type=float, default=0.5)
    ap.add_argument("--discriminant", type=float, default=10.0)
    ap.add_argument("--picture-dims", type=int, default=128)
    ap.add_argument("--weights", default="acl=3,drawn=0.3")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--fine-tune", type=int, default=0, help="epochs of tuning the backbone's tail per fold")
    args = ap.parse_args()
    TUNE.update(size=args.size, epochs=args.fine_tune, cache=args.cache)  # fold tails shared with train-types

    parts, copies, captions = {}, [], []
    ex, c, cap, (orig_looks, copy_looks) = acl_part(args.acl, args.cache)
    parts["acl"], copies, captions = ex, [c], cap
    hashed = [np.ones(len(orig_looks), bool)]
    if args.data_dir and args.labels:
        ex, c, cap, (o, cl) = labelled_part(args.data_dir, args.labels, args.cache)
        parts["labelled"] = ex
        copies.append(c)
        captions += cap
        orig_looks, copy_looks = np.concatenate([orig_looks, o]), np.concatenate([copy_looks, cl])
        hashed.append(np.array([s_ == "labelled" for s_ in ex.source]))
    global COPY_LOOKS
    COPY_LOOKS = copy_looks
    looks = LookIndex(orig_looks, np.concatenate(hashed)) if args.copies_by == "hash" else None
    parts["drawn"] = drawn_examples(args.synthetic, args.seed, args.cache, progress=True, size=args.size,
                                    tune=args.fine_tune > 0)
    opts = dict(c=args.C, balance=args.balance, discriminant=args.discriminant, picture_dims=args.picture_dims,
                source_weight={k: float(v) for k, v in (p.split("=") for p in args.weights.split(",") if p)})
    with one_blas_thread():
        real, fold, vec, cvec, probs, cprobs, t = cross_fit(parts, np.concatenate(copies), args.folds, args.seed, opts)
    # stored types keep the caption's evidence (as ingestion does); uploads have pixels alone
    stored = np.array([[with_caption_evidence(decide(p), cap).scores[t_] for t_ in LABELS]
                       for p, cap in zip(probs, captions)])
    queries = np.array([s in ("acl", "labelled") for s in real.source])
    data = (real, fold, vec, cvec, stored, cprobs)
    src = np.array(real.source)
    report: dict = {"temperature": round(t, 3), "queries": int(queries.sum()),
                    "papers": len({g for g, q in zip(real.group, queries) if q}),
                    "upload_typed_right": round(float(np.mean(cprobs[queries].argmax(1) == np.array(
                        [LABELS.index(d) for d in np.array(real.dominant)[queries]]))), 3),
                    "stored_typed_right": round(float(np.mean(stored[queries].argmax(1) == np.array(
                        [LABELS.index(d) for d in np.array(real.dominant)[queries]]))), 3),
                    "copy_cosine_p1": round(float(np.percentile((vec * cvec).sum(1)[queries], 1)), 3),
                    "same_picture_min": SAME_PICTURE_MIN}
    asked = [q for k in sorted(set(fold.tolist())) for q in np.flatnonzero((fold == k) & queries)]  # evaluate's order
    qsrc = src[asked]

    def per_source(rows):
        return {"all": summary(rows)} | {s: summary(rows, qsrc == s) for s in sorted(set(qsrc))}

    report["vector_only"] = per_source(evaluate(PictureRanking(type_weight=0.0, copies_first=False), data, queries, looks))
    before_rows = evaluate(PictureRanking(type_weight=0.5, agreement="cosine", neighbours=0, copies_first=False),
                           data, queries, looks)
    served_rows = evaluate(PictureRanking(), data, queries, looks)
    # what limits the ranking: the same ranking with the upload's labelled type given (one-hot)
    known = np.eye(len(LABELS))[[LABELS.index(d) for d in real.dominant]]
    report["served_upload_type_known"] = summary(evaluate(PictureRanking(neighbours=0), data[:5] + (known,), queries, looks))
    report["served_before"] = per_source(before_rows)
    report["served"] = per_source(served_rows)
    papers = [real.group[q] for q in asked]
    report["served_minus_before_ci95"] = {  # paper-cluster bootstrap of the per-upload differences
        name: [round(x, 3) for x in cluster_ci(papers, [a[i] - b[i] for a, b in zip(served_rows, before_rows)])]
        for name, i in (("same_kind_at_5", 1), ("own_first", 2), ("same_kind_at_5_unseen_paper", 3))}
    if args.sweep:
        keys = list(GRID)
        results = {}
        for values in itertools.product(*(GRID[k] for k in keys)):
            params = dict(zip(keys, values))
            if params["neighbours"] == 0 and params["neighbour_weight"] != GRID["neighbour_weight"][0]:
                continue
            if not params["copies_first"] and params["copy_min"] != SAME_PICTURE_MIN:
                continue
            results[json.dumps(params)] = evaluate(PictureRanking(**params), data, queries, looks)
        folds_ = sorted(set(fold.tolist()))
        nested, chosen = [], []
        before = results[json.dumps(dict(type_weight=0.5, agreement="cosine", neighbours=0, neighbour_weight=0.5,
                                         copies_first=False, copy_min=SAME_PICTURE_MIN))]
        served = results[json.dumps({k_: getattr(PictureRanking(), k_) for k_ in keys})]
        for k in folds_:
            def score(rows, keep=lambda f: f != k):
                # copies must find themselves first at least as often as with the served ranking
                # (or, with --own-first-min, at least that often)
                got, ref = [r for r in rows if keep(r[0])], [r for r in served if keep(r[0])]
                floor = np.mean([r[2] for r in ref]) if args.own_first_min is None else args.own_first_min
                ok = np.mean([r[2] for r in got]) >= floor
                return np.mean([r[1] for r in got]) if ok else -1.0
            best = max(results, key=lambda key: score(results[key]))
            chosen.append(json.loads(best))
            nested += [r for r in results[best] if r[0] == k]
        report["nested"] = {"held_out": summary(nested), "chosen_per_fold": chosen,
                            "before_held_out": summary(before), "served_held_out": summary(served)}
        nested_papers = [real.group[q] for q in asked]  # evaluate's order, the same in every ranking
        report["nested"]["minus_served_ci95"] = {
            name: [round(x, 3) for x in cluster_ci(nested_papers, [a[i] - b[i] for a, b in zip(nested, served)])]
            for name, i in (("same_kind_at_5", 1), ("own_first", 2))}
        report["grid_top"] = sorted(({"params": json.loads(k)} | summary(v) for k, v in results.items()),
                                    key=lambda d: -d["same_kind_at_5"])[:15]
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
