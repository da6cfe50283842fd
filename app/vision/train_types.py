"""Training of the figure-type head and the picture projection (app/vision/figure_types.py,
app/vision/pictures.py) on the frozen backbone's features (app/vision/backbone.py).

Examples, each with a dominant type, the types it is accepted as, and its paper (folds never
split a paper):
- labelled figures of ACL papers (`--acl DIR`: labels.jsonl with image, type, types_accepted,
  paper, and the images), labelled by other people;
- hand labels of a collection's crops (`--data-dir` + `--labels`: sha256, number, type, types;
  app/vision/real_crops.py) and text cut from those papers' pages (app/vision/page_text.py);
- figures drawn in every type (app/vision/synth.py), labels known by construction.

Head: features standardised, projected onto their first `components` principal components,
multinomial logistic regression (C); all three folded into one linear layer. Its temperature is
fitted on the out-of-fold scores of paper-grouped cross-validation (`--cv` prints the folds'
accuracies and a reliability table). The same standardisation and projection, scaled to unit
length, are the picture vectors. Features are cached per example under `--cache`.
"""
from __future__ import annotations

import hashlib
import json
import random
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from app.extras import require
from app.model_store import make_meta, publish, save_arrays
from app.vision.backbone import backbone
from app.vision.figure_types import ARTIFACT, HEAD_FILE, LABELS, softmax
from app.vision.pictures import PROJECTION_FILE

COMPONENTS = 256
PICTURE_DIMS = 128  # the picture vector keeps the first principal components (memory at a million figures)
C = 0.1


@dataclass
class Examples:
    features: np.ndarray  # (n, backbone DIM) float32
    dominant: list[str]
    accepted: list[list[str]]
    group: list[str]  # paper id ("" for drawn figures)
    source: list[str]  # acl | labelled | page_text | drawn
    info: dict = field(default_factory=dict)

    def subset(self, keep) -> "Examples":
        idx = np.flatnonzero(keep)
        return Examples(self.features[idx], [self.dominant[i] for i in idx], [self.accepted[i] for i in idx],
                        [self.group[i] for i in idx], [self.source[i] for i in idx])


def _concat(parts: list[Examples]) -> Examples:
    return Examples(np.concatenate([p.features for p in parts]), sum((p.dominant for p in parts), []),
                    sum((p.accepted for p in parts), []), sum((p.group for p in parts), []),
                    sum((p.source for p in parts), []))


def _cached_features(images_of, keys: list[str], cache: Path | None, tag: str, progress: bool) -> np.ndarray:
    """Backbone features of the images, cached under `cache` by backbone and key."""
    b = backbone()
    path = None
    if cache is not None:
        digest = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:12]
        path = cache / f"features-{tag}-{b.name}-{b.size}-{digest}.npy"
        if path.exists():
            return np.load(path)
    out = []
    for i in range(0, len(keys), 32):
        out.append(b.features(images_of(range(i, min(len(keys), i + 32)))))
        if progress:
            print(f"  {tag}: {min(len(keys), i + 32)}/{len(keys)} encoded", flush=True)
    feats = np.concatenate(out) if out else np.zeros((0, 1), np.float32)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, feats)
    return feats


def _open(path: Path) -> Image.Image:
    with Image.open(path) as im:
        im.draft("RGB", (896, 896))
        return im.convert("RGB")


def acl_examples(folder: Path, cache: Path | None, progress: bool = False) -> Examples:
    rows = [json.loads(line) for line in (folder / "labels.jsonl").read_text().splitlines() if line.strip()]
    feats = _cached_features(lambda idx: [_open(folder / "images" / rows[i]["image"]) for i in idx],
                             [r["image"] for r in rows], cache, "acl", progress)
    return Examples(feats, [r["type"] for r in rows], [r.get("types_accepted") or [r["type"]] for r in rows],
                    [r["paper"] for r in rows], ["acl"] * len(rows))


def labelled_examples(settings, labels: Path, cache: Path | None, page_text: int = 2, seed: int = 0,
                      progress: bool = False) -> Examples:
    """Hand-labelled crops of a collection, and `page_text` text crops per labelled paper."""
    from app.pdfs import stored_pdf
    from app.vision.page_text import text_crops
    from app.vision.real_crops import labelled_crops, read_labels

    crops = labelled_crops(settings, read_labels(labels))
    keys = [f"{c.group}:{i}:{c.dominant}" for i, c in enumerate(crops)]
    feats = _cached_features(lambda idx: [crops[i].image for i in idx], keys, cache, "labelled", progress)
    parts = [Examples(feats, [c.dominant for c in crops], [c.types for c in crops], [c.group for c in crops],
                      ["labelled"] * len(crops))]
    rng = random.Random(seed)
    texts, groups = [], []
    for sha in sorted({c.group for c in crops}):
        pdf = stored_pdf(settings.data_dir, sha)
        if pdf is None or page_text <= 0:
            continue
        for img in text_crops(pdf, page_text, rng):
            texts.append(img)
            groups.append(sha)
    if texts:
        tf = _cached_features(lambda idx: [texts[i] for i in idx], [f"{g}:{i}" for i, g in enumerate(groups)],
                              cache, f"page-text-{seed}", progress)
        parts.append(Examples(tf, ["text"] * len(texts), [["text"]] * len(texts), groups, ["page_text"] * len(texts)))
    return _concat(parts)


def _draw(seed: int) -> tuple[Image.Image, list[str]]:
    from app.vision.synth import labels_of, render, sample_types

    rng = random.Random(seed)
    types = sample_types(rng)
    return render(types, rng), labels_of(types)


def drawn_examples(n: int, seed: int, cache: Path | None, workers: int = 2, progress: bool = False) -> Examples:
    if n <= 0:
        return Examples(np.zeros((0, 1), np.float32), [], [], [], [])
    require("matplotlib", "train", "drawing figures to train the figure-type classifier on")
    seeds = [seed * 1_000_003 + i for i in range(n)]
    with ProcessPoolExecutor(workers) as pool:
        drawn = list(pool.map(_draw, seeds, chunksize=8))
    feats = _cached_features(lambda idx: [drawn[i][0] for i in idx], [f"drawn:{s}" for s in seeds], cache,
                             f"drawn-{seed}-{n}", progress)
    return Examples(feats, [d[1][0] for d in drawn], [d[1] for d in drawn], [""] * n, ["drawn"] * n)


@dataclass
class Head:
    weight: np.ndarray  # (len(LABELS), D)
    bias: np.ndarray  # (len(LABELS),)
    center: np.ndarray  # (D,) picture projection: ((x - center) / scale) @ projection
    scale: np.ndarray
    projection: np.ndarray  # (D, components)

    def logits(self, features: np.ndarray) -> np.ndarray:
        return features @ self.weight.T + self.bias


def fit_head(ex: Examples, components: int = COMPONENTS, c: float = C, seed: int = 0,
             source_weight: dict[str, float] | None = None) -> Head:
    """Standardise, project on principal components, multinomial logistic regression (an example
    of source s counts source_weight[s], default 1); folded into one linear map over the raw
    features."""
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression

    x = ex.features.astype(np.float64)
    mu, sd = x.mean(axis=0), x.std(axis=0) + 1e-3
    z = (x - mu) / sd
    pca = PCA(min(components, len(x) - 1, x.shape[1]), random_state=seed).fit(z)
    y = np.array([LABELS.index(t) for t in ex.dominant])
    w = np.array([(source_weight or {}).get(src, 1.0) for src in ex.source])
    lr = LogisticRegression(C=c, max_iter=1000).fit(pca.transform(z), y, sample_weight=w / w.mean())
    a = np.zeros((len(LABELS), x.shape[1]))
    b = np.full(len(LABELS), -30.0)  # a type no example shows is never predicted
    a[lr.classes_] = lr.coef_ @ pca.components_
    b[lr.classes_] = lr.intercept_ - lr.coef_ @ (pca.components_ @ pca.mean_)
    weight = a / sd
    bias = b - weight @ mu
    return Head(weight.astype(np.float32), bias.astype(np.float32), (mu + pca.mean_ * sd).astype(np.float32),
                sd.astype(np.float32), pca.components_.T.astype(np.float32))


def fit_temperature(logits: np.ndarray, y: np.ndarray) -> float:
    """The temperature minimising the negative log-likelihood of the true types."""
    from scipy.optimize import minimize_scalar

    def nll(t):
        p = softmax(logits / t)
        return -float(np.mean(np.log(p[np.arange(len(y)), y] + 1e-12)))

    return float(minimize_scalar(nll, bounds=(0.05, 20.0), method="bounded").x)


def _report(ex: Examples, probs: np.ndarray) -> dict:
    pred = [LABELS[i] for i in probs.argmax(axis=1)]
    recall = {}
    for t in sorted(set(ex.dominant)):
        idx = [i for i, d in enumerate(ex.dominant) if d == t]
        recall[t] = [round(float(np.mean([pred[i] == t for i in idx])), 3), len(idx)]
    return {"n": len(pred), "papers": len(set(ex.group)),
            "dominant_accuracy": round(float(np.mean([p == d for p, d in zip(pred, ex.dominant)])), 3),
            "shown_accuracy": round(float(np.mean([p in a for p, a in zip(pred, ex.accepted)])), 3),
            "mean_recall": round(float(np.mean([r[0] for r in recall.values()])), 3),
            "per_type_recall": recall}


def reliability(probs: np.ndarray, dominant: list[str], bins=(0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 1.01)) -> list[dict]:
    """Per band of the top score: how many figures, their mean score, and how often the top type is
    the labelled dominant type."""
    top, pred = probs.max(axis=1), probs.argmax(axis=1)
    right = np.array([LABELS[p] == d for p, d in zip(pred, dominant)])
    out = []
    for lo, hi in zip(bins[:-1], bins[1:]):
        m = (top >= lo) & (top < hi)
        if m.any():
            out.append({"score": f"{lo:.2f}-{min(hi, 1):.2f}", "n": int(m.sum()),
                        "mean_score": round(float(top[m].mean()), 3), "right": round(float(right[m].mean()), 3)})
    return out


def cross_validate(parts: dict[str, Examples], folds: int = 5, components: int = COMPONENTS, c: float = C,
                   seed: int = 0, source_weight: dict[str, float] | None = None) -> tuple[dict, float]:
    """Paper-grouped folds over the labelled real figures (ACL and collection labels alike); each
    fold's head is trained on every other fold plus all drawn figures. Returns the report (per
    source, before and after temperature) and the fitted temperature."""
    real = _concat([p for k, p in parts.items() if k != "drawn"])
    drawn = parts.get("drawn")
    papers = sorted(set(real.group))
    random.Random(seed).shuffle(papers)
    fold_of = {p: i % folds for i, p in enumerate(papers)}
    fold = np.array([fold_of[g] for g in real.group])
    logits = np.zeros((len(real.dominant), len(LABELS)), np.float32)
    for k in range(folds):
        train = real.subset(fold != k)
        head = fit_head(_concat([train, drawn]) if drawn is not None and len(drawn.dominant) else train,
                        components, c, seed, source_weight)
        logits[fold == k] = head.logits(real.features[fold == k])
    y = np.array([LABELS.index(t) for t in real.dominant])
    temperature = fit_temperature(logits, y)
    report: dict = {"folds": folds, "components": components, "C": c, "source_weight": source_weight or {},
                    "temperature": round(temperature, 3)}
    for src in sorted(set(real.source)):
        keep = np.array([s == src for s in real.source])
        sub = real.subset(keep)
        probs = softmax(logits[keep] / temperature)
        report[src] = _report(sub, probs) | {"reliability": reliability(probs, sub.dominant)}
    report["reliability_all"] = reliability(softmax(logits / temperature), real.dominant)
    return report, temperature


def head_files(head: Head, temperature: float, picture_dims: int = PICTURE_DIMS):
    """What fills a figure-types version: the head (weight, bias, temperature) and the picture
    projection (center, scale, projection), as safetensors."""
    def fill(folder: Path) -> None:
        save_arrays(folder / HEAD_FILE, {"weight": head.weight, "bias": head.bias,
                                         "temperature": np.array([temperature], np.float32)})
        save_arrays(folder / PROJECTION_FILE, {"center": head.center, "scale": head.scale,
                                               "projection": head.projection[:, :picture_dims]})
    return fill


def _metrics(report: dict) -> dict:
    """The cross-validated headline figures per source of real labelled figures."""
    return {src: {k: r[k] for k in ("n", "papers", "dominant_accuracy", "shown_accuracy", "mean_recall") if k in r}
            for src, r in report.items() if isinstance(r, dict) and "dominant_accuracy" in r}


def train_types(parts: dict[str, Examples], store_root: Path, folds: int = 5,
                components: int = COMPONENTS, c: float = C, seed: int = 0, command: str | None = None,
                cv_only: bool = False, source_weight: dict[str, float] | None = None,
                picture_dims: int = PICTURE_DIMS, keep: int | None = 1) -> dict:
    """Cross-validate (the temperature comes from it), then fit on everything and publish a
    figure-types version under the model store root `store_root`. Returns its meta.json."""
    t0 = time.time()
    report, temperature = cross_validate(parts, folds, components, c, seed, source_weight)
    if cv_only:
        return report
    head = fit_head(_concat(list(parts.values())), components, c, seed, source_weight)
    b = backbone()
    examples = {k: {"n": len(p.dominant), "papers": len(set(p.group) - {""}),
                    "by_type": dict(sorted({t: p.dominant.count(t) for t in set(p.dominant)}.items()))}
                for k, p in parts.items()}
    # the collection's labelled papers are named by the SHA-256 of their PDFs; ACL figures by their paper id
    shas = {g for g in parts["labelled"].group if g} if "labelled" in parts else set()
    acl = sorted({g for g in parts["acl"].group if g}) if "acl" in parts else []
    meta = make_meta(ARTIFACT, "figure-type head and picture projection over the pretrained backbone's features",
                     command=command, papers=shas,
                     data={"examples": examples, "acl_paper_ids": acl,
                           "description": "labelled ACL figures, hand-labelled collection crops with text cut "
                                          "from their pages, drawn figures of every type"},
                     metrics=_metrics(report),
                     labels=list(LABELS), backbone=b.name, input_size=b.size, components=components,
                     picture_dims=picture_dims, C=c, source_weight=source_weight or {},
                     temperature=round(temperature, 4), seed=seed, cross_validation=report,
                     seconds=round(time.time() - t0, 1))
    publish(ARTIFACT, head_files(head, temperature, picture_dims), meta, root=store_root, keep=keep)
    return meta
