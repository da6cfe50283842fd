"""Training of the figure-type head and the picture projection (app/vision/figure_types.py,
app/vision/pictures.py) on the frozen backbone's features (app/vision/backbone.py).

Examples, each with a dominant type, the types it is accepted as, and its paper (folds never
split a paper):
- labelled figures of ACL papers (`--acl DIR`: labels.jsonl with image, type, types_accepted,
  paper, and the images), labelled by other people;
- hand labels of a collection's crops (`--data-dir` + `--labels`: sha256, number, type, types;
  app/vision/real_crops.py) and text cut from those papers' pages (app/vision/page_text.py); each
  labels file is a source of its own name (default `labelled`), so a field's labels can count less;
- figures drawn in every type (app/vision/synth.py), labels known by construction.

Head: features standardised, projected onto their first `components` principal components,
multinomial logistic regression (C); all three folded into one linear layer. Its temperature is
fitted on the out-of-fold scores of paper-grouped cross-validation (`--cv` prints the folds'
accuracies and a reliability table). The same standardisation and projection, scaled to unit
length, are the picture vectors. Features are cached per example under `--cache`.

With `tune_epochs` > 0 the backbone's last blocks are fine-tuned first (app/vision/fine_tune.py):
the linear layer trained with them is the type head, and the picture projection is fitted on the
tuned features; in cross-validation every fold's tail is trained on the other folds (and the drawn
figures) only, so no held-out figure is typed by a network that saw it. The tuned tail ships in
the figure-types version beside the head.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from app.extras import require
from app.model_store import make_meta, publish, save_arrays
from app.search.one_thread import one_blas_thread
from app.stats import hashed_folds
from app.vision.backbone import SIZE, TAIL_START, backbone
from app.vision.figure_types import ARTIFACT, HEAD_FILE, LABELS, softmax
from app.vision.fine_tune import LR, VIEWS, tail_features, train_tail, trunk_activations
from app.vision.pictures import PROJECTION_FILE, TAIL_FILE

COMPONENTS = 256
PICTURE_DIMS = 128  # the picture vector's length (memory at a million figures)
DISCRIMINANT = 0.0  # weight of the type-discriminant axes of the picture vector (0: principal axes only)
BALANCE = 0.0  # how far examples of rare types are weighted up (0: not at all, 1: every type counts the same)
C = 0.1
NOT_LABELLED = ("page_text", "drawn")  # every other source holds figures labelled by looking


@dataclass
class Examples:
    features: np.ndarray  # (n, backbone DIM) float32
    dominant: list[str]
    accepted: list[list[str]]
    group: list[str]  # paper id ("" for drawn figures)
    source: list[str]  # acl | labelled (or a labels file's own name) | page_text | drawn
    info: dict = field(default_factory=dict)
    acts: list[np.ndarray] | None = None  # per view, the frozen network's activations at the tail's input

    def subset(self, keep) -> "Examples":
        idx = np.flatnonzero(keep)
        return Examples(self.features[idx], [self.dominant[i] for i in idx], [self.accepted[i] for i in idx],
                        [self.group[i] for i in idx], [self.source[i] for i in idx],
                        acts=[a[idx] for a in self.acts] if self.acts is not None else None)


def _concat(parts: list[Examples]) -> Examples:
    acts = None
    if parts and all(p.acts is not None for p in parts):
        acts = [np.concatenate([p.acts[v] for p in parts]) for v in range(len(parts[0].acts))]
    return Examples(np.concatenate([p.features for p in parts]), sum((p.dominant for p in parts), []),
                    sum((p.accepted for p in parts), []), sum((p.group for p in parts), []),
                    sum((p.source for p in parts), []), acts=acts)


def _encoded(images_of, keys: list[str], cache: Path | None, tag: str, progress: bool, size: int = SIZE,
             tune: bool = False) -> tuple[np.ndarray, list[np.ndarray] | None]:
    """(frozen backbone features, None), or with `tune` (the frozen tail's features, the
    activations at the tail's input per view)."""
    if not tune:
        return _cached_features(images_of, keys, cache, tag, progress, size), None
    acts = _cached_activations(images_of, keys, cache, tag, progress, size)
    return tail_features(backbone(size=size), None, acts[0]), acts


def _cache_file(cache: Path | None, keys: list[str], stem: str, suffix: str) -> Path | None:
    """Where an encoding of the images `keys` is cached (None: no cache): the digest of the keys
    tells apart two image sets encoded with the same settings."""
    if cache is None:
        return None
    digest = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:12]
    return cache / f"{stem}-{digest}{suffix}"


def _cached_activations(images_of, keys: list[str], cache: Path | None, tag: str, progress: bool,
                        size: int) -> list[np.ndarray]:
    """Per view, the frozen network's activations at the tail's input, cached like features."""
    b = backbone(size=size)
    path = _cache_file(cache, keys, f"acts-{tag}-{b.name}-{size}-{TAIL_START}-{VIEWS}", ".npz")
    if path is not None and path.exists():
        with np.load(path) as z:
            return [z[f"view{v}"] for v in range(VIEWS)]
    parts: list[list[np.ndarray]] = [[] for _ in range(VIEWS)]
    for i in range(0, len(keys), 32):
        idx = range(i, min(len(keys), i + 32))
        for v, a in enumerate(trunk_activations(b, images_of(idx), [zlib.crc32(keys[j].encode()) for j in idx])):
            parts[v].append(a)
        if progress:
            print(f"  {tag}: {idx.stop}/{len(keys)} encoded up to the tail", flush=True)
    acts = [np.concatenate(p) for p in parts]
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **{f"view{v}": a for v, a in enumerate(acts)})
    return acts


def _cached_features(images_of, keys: list[str], cache: Path | None, tag: str, progress: bool,
                     size: int = SIZE) -> np.ndarray:
    """Frozen backbone features of the images, cached under `cache` by backbone and key."""
    b = backbone(size=size)
    path = _cache_file(cache, keys, f"features-{tag}-{b.name}-{b.size}", ".npy")
    if path is not None and path.exists():
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


def acl_examples(folder: Path, cache: Path | None, progress: bool = False, size: int = SIZE,
                 tune: bool = False) -> Examples:
    rows = [json.loads(line) for line in (folder / "labels.jsonl").read_text().splitlines() if line.strip()]
    feats, acts = _encoded(lambda idx: [_open(folder / "images" / rows[i]["image"]) for i in idx],
                           [r["image"] for r in rows], cache, "acl", progress, size, tune)
    return Examples(feats, [r["type"] for r in rows], [r.get("types_accepted") or [r["type"]] for r in rows],
                    [r["paper"] for r in rows], ["acl"] * len(rows), acts=acts)


def labelled_examples(settings, labels: Path, cache: Path | None, page_text: int = 2, seed: int = 0,
                      progress: bool = False, size: int = SIZE, tune: bool = False,
                      source: str = "labelled") -> Examples:
    """Hand-labelled crops of a collection (as `source`), and `page_text` text crops per labelled
    paper (as `page_text`)."""
    from app.pdfs import stored_pdf
    from app.vision.page_text import text_crops
    from app.vision.real_crops import labelled_crops, read_labels

    crops = labelled_crops(settings, read_labels(labels))
    keys = [f"{c.group}:{i}:{c.dominant}" for i, c in enumerate(crops)]
    feats, acts = _encoded(lambda idx: [crops[i].image for i in idx], keys, cache, "labelled", progress, size, tune)
    parts = [Examples(feats, [c.dominant for c in crops], [c.types for c in crops], [c.group for c in crops],
                      [source] * len(crops), acts=acts)]
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
        tf, tacts = _encoded(lambda idx: [texts[i] for i in idx], [f"{g}:{i}" for i, g in enumerate(groups)],
                             cache, f"page-text-{seed}", progress, size, tune)
        parts.append(Examples(tf, ["text"] * len(texts), [["text"]] * len(texts), groups, ["page_text"] * len(texts),
                              acts=tacts))
    return _concat(parts)


def _drawn_types(seed: int) -> list[str]:
    from app.vision.synth import sample_types

    return sample_types(random.Random(seed))


def _draw(seed: int) -> Image.Image:
    from app.vision.synth import render, sample_types

    rng = random.Random(seed)
    return render(sample_types(rng), rng)


def drawn_examples(n: int, seed: int, cache: Path | None, workers: int = 2, progress: bool = False,
                   size: int = SIZE, tune: bool = False) -> Examples:
    """Drawn figures; drawing is the slow part, so it happens only when their features are not
    cached (a drawing's types come from its seed alone)."""
    from app.vision.synth import labels_of

    if n <= 0:
        return Examples(np.zeros((0, 1), np.float32), [], [], [], [])
    require("matplotlib", "train", "drawing figures to train the figure-type classifier on")
    seeds = [seed * 1_000_003 + i for i in range(n)]
    labels = [labels_of(_drawn_types(s)) for s in seeds]
    drawn: list[Image.Image] = []

    def images_of(idx):
        if not drawn:
            with ProcessPoolExecutor(workers) as pool:
                drawn.extend(pool.map(_draw, seeds, chunksize=8))
        return [drawn[i] for i in idx]

    feats, acts = _encoded(images_of, [f"drawn:{s}" for s in seeds], cache, f"drawn-{seed}-{n}", progress, size, tune)
    return Examples(feats, [lab[0] for lab in labels], labels, [""] * n, ["drawn"] * n, acts=acts)


@dataclass
class Head:
    weight: np.ndarray  # (len(LABELS), D)
    bias: np.ndarray  # (len(LABELS),)
    center: np.ndarray  # (D,) picture projection: ((x - center) / scale) @ projection
    scale: np.ndarray
    projection: np.ndarray  # (D, picture dims)

    def logits(self, features: np.ndarray) -> np.ndarray:
        return features @ self.weight.T + self.bias


def example_weights(ex: Examples, source_weight: dict[str, float] | None, balance: float):
    """(type index per example, weight per example with mean 1): source weight times (its type's
    share of the examples x the number of types) ** -balance."""
    y = np.array([LABELS.index(t) for t in ex.dominant])
    share = np.bincount(y, minlength=len(LABELS)) / len(y) * len(LABELS)
    w = np.array([(source_weight or {}).get(src, 1.0) for src in ex.source]) * share[y] ** -balance
    return y, w / w.mean()


def tuned(ex: Examples, size: int, epochs: int, seed: int, source_weight: dict[str, float] | None,
          balance: float, cache: Path | None = None) -> tuple[dict[str, np.ndarray], tuple[np.ndarray, np.ndarray],
                                                              Examples]:
    """Fine-tune the backbone's tail on `ex` (weighted as the head weights it); returns the tail's
    weights, the (weight, bias) of the linear layer trained with it, and `ex` with its features
    from the tuned tail. Under `cache` a tail is kept by a digest of everything it was trained
    from, so another evaluation on the same folds does not train it again."""
    b = backbone(size=size)
    y, w = example_weights(ex, source_weight, balance)
    path = None
    if cache is not None:
        h = hashlib.sha256(json.dumps([b.name, size, TAIL_START, VIEWS, epochs, LR, seed]).encode())
        for part in (y, w, *ex.acts):
            h.update(np.ascontiguousarray(part).tobytes())
        path = cache / f"tail-{b.name}-{size}-{epochs}-{h.hexdigest()[:16]}.npz"
    if path is not None and path.exists():
        with np.load(path) as z:
            state = {k[len("tail."):]: z[k] for k in z.files if k.startswith("tail.")}
            fc_weight, fc_bias = z["fc_weight"], z["fc_bias"]
    else:
        state, fc_weight, fc_bias = train_tail(b, ex.acts, y, w, len(LABELS), epochs, LR, seed)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(path, fc_weight=fc_weight, fc_bias=fc_bias, **{f"tail.{k}": v for k, v in state.items()})
    return state, (fc_weight, fc_bias), dataclasses.replace(ex, features=tail_features(b, state, ex.acts[0]))


def fit_head(ex: Examples, components: int = COMPONENTS, c: float = C, seed: int = 0,
             source_weight: dict[str, float] | None = None, picture_dims: int = PICTURE_DIMS,
             discriminant: float = DISCRIMINANT, balance: float = BALANCE) -> Head:
    """Standardise, project on principal components, multinomial logistic regression (an example
    of source s counts source_weight[s], default 1, times (its type's share of the examples x
    the number of types) ** -balance, so rare types such as box plots are not drowned by common
    ones); folded into one linear map over the raw features. The picture projection: the first
    principal components, and with `discriminant` > 0 the last of them replaced by the directions
    that best separate the types (linear discriminant analysis), weighted `discriminant` times the
    variance of the components they replace, so the nearest pictures are more often of the same
    kind."""
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression

    x = ex.features.astype(np.float64)
    mu, sd = x.mean(axis=0), x.std(axis=0) + 1e-3
    z = (x - mu) / sd
    pca = PCA(min(components, len(x) - 1, x.shape[1]), random_state=seed).fit(z)
    zp = pca.transform(z)
    y, w = example_weights(ex, source_weight, balance)
    lr = LogisticRegression(C=c, max_iter=1000).fit(zp, y, sample_weight=w)
    a = np.zeros((len(LABELS), x.shape[1]))
    b = np.full(len(LABELS), -30.0)  # a type no example shows is never predicted
    a[lr.classes_] = lr.coef_ @ pca.components_
    b[lr.classes_] = lr.intercept_ - lr.coef_ @ (pca.components_ @ pca.mean_)
    weight = a / sd
    bias = b - weight @ mu
    return Head(weight.astype(np.float32), bias.astype(np.float32), (mu + pca.mean_ * sd).astype(np.float32),
                sd.astype(np.float32), _picture_projection(pca, zp, y, picture_dims, discriminant).astype(np.float32))


def _picture_projection(pca, zp: np.ndarray, y: np.ndarray, dims: int, discriminant: float) -> np.ndarray:
    """(D, dims): principal axes, the last of them replaced by type-discriminant axes (see fit_head)."""
    base = pca.components_.T
    dims = min(dims, base.shape[1])
    if discriminant <= 0 or len(set(y)) < 2:
        return base[:, :dims]
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    lda = LinearDiscriminantAnalysis(solver="eigen", shrinkage="auto").fit(zp, y)
    axes = lda.scalings_[:, :min(len(set(y)) - 1, dims // 2)]
    kept = dims - axes.shape[1]
    scale = np.sqrt(zp[:, kept:dims].var(axis=0).sum() / (zp @ axes).var(axis=0).sum())
    return np.concatenate([base[:, :kept], discriminant * scale * (base @ axes)], axis=1)


def shown_given_dominant(dominant: list[str], accepted: list[list[str]], mix: float = 1.0) -> np.ndarray:
    """(types, types): row d, how often a labelled figure of dominant type d shows each type
    (1 on the diagonal; the identity row for a type no figure has as dominant), mixed with the
    identity: (1 - mix) I + mix x those rates. With it the dominant type is the one most likely
    among the types shown (app/vision/figure_types.decide); mix 0 keeps the most probable type."""
    n = len(LABELS)
    counts, rows = np.zeros((n, n)), np.zeros(n)
    for d, acc in zip(dominant, accepted):
        i = LABELS.index(d)
        rows[i] += 1
        for t in set(acc) | {d}:
            counts[i, LABELS.index(t)] += 1
    rates = np.eye(n)
    seen = rows > 0
    rates[seen] = counts[seen] / rows[seen, None]
    return (1.0 - mix) * np.eye(n) + mix * rates


def fit_temperature(logits: np.ndarray, y: np.ndarray) -> float:
    """The temperature minimising the negative log-likelihood of the true types."""
    from scipy.optimize import minimize_scalar

    def nll(t):
        p = softmax(logits / t)
        return -float(np.mean(np.log(p[np.arange(len(y)), y] + 1e-12)))

    return float(minimize_scalar(nll, bounds=(0.05, 20.0), method="bounded").x)


def _report(ex: Examples, pred: list[str]) -> dict:
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
    the labelled dominant type (what the temperature is fitted for)."""
    top, pred = probs.max(axis=1), probs.argmax(axis=1)
    right = np.array([LABELS[p] == d for p, d in zip(pred, dominant)])
    out = []
    for lo, hi in zip(bins[:-1], bins[1:]):
        m = (top >= lo) & (top < hi)
        if m.any():
            out.append({"score": f"{lo:.2f}-{min(hi, 1):.2f}", "n": int(m.sum()),
                        "mean_score": round(float(top[m].mean()), 3), "right": round(float(right[m].mean()), 3)})
    return out


def picture_same_kind(vectors: np.ndarray, ex: Examples, k: int = 5) -> list[float]:
    """Per example: the share of its `k` nearest picture vectors from other papers (among `ex`)
    with its dominant type."""
    sims = vectors @ vectors.T
    group, dominant = np.array(ex.group), np.array(ex.dominant)
    out = []
    for i in range(len(group)):
        other = np.flatnonzero(group != group[i])
        top = other[np.argsort(-sims[i, other], kind="stable")[:k]]
        out.append(float(np.mean(dominant[top] == dominant[i])))
    return out


def cross_validate(parts: dict[str, Examples], folds: int = 5, components: int = COMPONENTS, c: float = C,
                   seed: int = 0, source_weight: dict[str, float] | None = None, picture_dims: int = PICTURE_DIMS,
                   discriminant: float = DISCRIMINANT, balance: float = BALANCE, size: int = SIZE,
                   tune_epochs: int = 0, progress: bool = False,
                   predictions: list | None = None, cache: Path | None = None,
                   dominant_by_shown: float = 0.0) -> tuple[dict, float]:
    """Paper-grouped folds over the labelled real figures (ACL and collection labels alike); each
    fold's head is trained on every other fold plus all drawn figures. Returns the report (per
    source, before and after temperature; and how often a held-out figure's nearest pictures among
    the other held-out papers' are of its kind) and the fitted temperature. `predictions`, when
    given, receives each real figure's held-out type probabilities, so two training recipes can be
    compared figure by figure on the same folds. `dominant_by_shown`: the mix of
    shown_given_dominant the dominant type is chosen with, its rates counted on each fold's
    training figures. A paper's fold depends on its id and the seed alone, so adding a source's
    papers leaves the others' folds as they were (recipes with and without it are paired)."""
    real = _concat([p for k, p in parts.items() if k != "drawn"])
    drawn = parts.get("drawn")
    fold_of = hashed_folds(real.group, folds, seed)
    fold = np.array([fold_of[g] for g in real.group])
    logits = np.zeros((len(real.dominant), len(LABELS)), np.float32)
    same_kind = np.zeros(len(real.dominant))
    rates = np.zeros((len(real.dominant), len(LABELS), len(LABELS)))  # per figure, its fold's
    for k in range(folds):
        train = real.subset(fold != k)
        train = _concat([train, drawn]) if drawn is not None and len(drawn.dominant) else train
        held = fold == k
        held_features, fc = real.features[held], None
        if tune_epochs > 0:  # this fold's tail never sees its held-out papers
            state, fc, train = tuned(train, size, tune_epochs, seed + k, source_weight, balance, cache)
            held_features = tail_features(backbone(size=size), state, real.acts[0][held])
            if progress:
                print(f"  fold {k + 1}/{folds}: tail tuned", flush=True)
        head = fit_head(train, components, c, seed, source_weight, picture_dims, discriminant, balance)
        if fc is not None:  # the layer trained with the tail types; the fit above gives the projection
            head = dataclasses.replace(head, weight=fc[0], bias=fc[1])
        logits[held] = head.logits(held_features)
        labelled = [i for i in np.flatnonzero(fold != k) if real.source[i] not in NOT_LABELLED]
        rates[held] = shown_given_dominant([real.dominant[i] for i in labelled], [real.accepted[i] for i in labelled],
                                           dominant_by_shown)
        v = ((held_features - head.center) / head.scale) @ head.projection
        same_kind[held] = picture_same_kind(v / np.linalg.norm(v, axis=1, keepdims=True), real.subset(held))
    y = np.array([LABELS.index(t) for t in real.dominant])
    temperature = fit_temperature(logits, y)
    probs_all = softmax(logits / temperature)
    if predictions is not None:
        predictions.extend({"source": src, "paper": g, "fold": int(f), "dominant": d, "accepted": a,
                            "probs": [round(float(p), 5) for p in row]}
                           for src, g, f, d, a, row in zip(real.source, real.group, fold, real.dominant,
                                                           real.accepted, probs_all))
    report: dict = {"folds": folds, "components": components, "C": c, "source_weight": source_weight or {},
                    "balance": balance, "picture_dims": picture_dims, "discriminant": discriminant,
                    "input_size": size, "tune_epochs": tune_epochs, "temperature": round(temperature, 3)}
    pred = [LABELS[i] for i in np.einsum("nt,nts->ns", probs_all, rates).argmax(axis=1)]
    for src in sorted(set(real.source)):
        keep = np.array([s == src for s in real.source])
        sub = real.subset(keep)
        report[src] = _report(sub, [p for p, k in zip(pred, keep) if k]) | {
            "picture_same_kind_at_5": round(float(same_kind[keep].mean()), 3),
            "reliability": reliability(probs_all[keep], sub.dominant)}
    report["reliability_all"] = reliability(probs_all, real.dominant)
    return report, temperature


def head_files(head: Head, temperature: float, picture_dims: int = PICTURE_DIMS,
               tail: dict[str, np.ndarray] | None = None, dominant_rates: np.ndarray | None = None):
    """What fills a figure-types version: the head (weight, bias, temperature, and
    shown_given_dominant when the dominant type is chosen with it), the picture projection
    (center, scale, projection) and the fine-tuned tail of the backbone if any, as safetensors."""
    def fill(folder: Path) -> None:
        if tail is not None:
            save_arrays(folder / TAIL_FILE, tail)
        arrays = {"weight": head.weight, "bias": head.bias, "temperature": np.array([temperature], np.float32)}
        if dominant_rates is not None:
            arrays["shown_given_dominant"] = dominant_rates.astype(np.float32)
        save_arrays(folder / HEAD_FILE, arrays)
        save_arrays(folder / PROJECTION_FILE, {"center": head.center, "scale": head.scale,
                                               "projection": np.ascontiguousarray(head.projection[:, :picture_dims])})
    return fill


def _metrics(report: dict) -> dict:
    """The cross-validated headline figures per source of real labelled figures."""
    return {src: {k: r[k] for k in ("n", "papers", "dominant_accuracy", "shown_accuracy", "mean_recall") if k in r}
            for src, r in report.items() if isinstance(r, dict) and "dominant_accuracy" in r}


def train_types(parts: dict[str, Examples], store_root: Path, folds: int = 5,
                components: int = COMPONENTS, c: float = C, seed: int = 0, command: str | None = None,
                cv_only: bool = False, source_weight: dict[str, float] | None = None,
                picture_dims: int = PICTURE_DIMS, discriminant: float = DISCRIMINANT, balance: float = BALANCE,
                keep: int | None = 1, size: int = SIZE, tune_epochs: int = 0, progress: bool = False,
                predictions_path: Path | None = None, cache: Path | None = None,
                dominant_by_shown: float = 0.0) -> dict:
    """Cross-validate (the temperature comes from it), then fit on everything and publish a
    figure-types version under the model store root `store_root`. Returns its meta.json.
    `predictions_path`: JSON lines of every labelled figure's held-out type probabilities.
    `dominant_by_shown` > 0: the version chooses the dominant type with shown_given_dominant of
    that mix, counted on every labelled figure."""
    t0 = time.time()
    predictions: list | None = [] if predictions_path is not None else None
    # one BLAS thread: these fits are small, and threads fighting over two busy cores made them ~40x slower
    with one_blas_thread():
        report, temperature = cross_validate(parts, folds, components, c, seed, source_weight, picture_dims,
                                             discriminant, balance, size, tune_epochs, progress, predictions,
                                             cache, dominant_by_shown)
        if predictions_path is not None:
            Path(predictions_path).write_text("".join(json.dumps(p) + "\n" for p in predictions))
        if cv_only:
            return report
        every, tail, fc = _concat([p for p in parts.values() if len(p.dominant)]), None, None
        if tune_epochs > 0:
            tail, fc, every = tuned(every, size, tune_epochs, seed, source_weight, balance, cache)
        head = fit_head(every, components, c, seed, source_weight, picture_dims, discriminant, balance)
        if fc is not None:
            head = dataclasses.replace(head, weight=fc[0], bias=fc[1])
    b = backbone(size=size)
    examples = {k: {"n": len(p.dominant), "papers": len(set(p.group) - {""}),
                    "by_type": dict(sorted({t: p.dominant.count(t) for t in set(p.dominant)}.items()))}
                for k, p in parts.items()}
    # the collection's labelled papers are named by the SHA-256 of their PDFs; ACL figures by their paper id
    shas = {g for k, p in parts.items() if k not in ("acl", "drawn") for g in p.group if g}
    acl = sorted({g for g in parts["acl"].group if g}) if "acl" in parts else []
    what = "figure-type head and picture projection over the pretrained backbone's features"
    if tail is not None:
        what += f", with the backbone's last blocks (from {TAIL_START} on) fine-tuned on the same figures"
    meta = make_meta(ARTIFACT, what,
                     command=command, papers=shas,
                     data={"examples": examples, "acl_paper_ids": acl,
                           "description": "labelled ACL figures, hand-labelled collection crops with text cut "
                                          "from their pages, drawn figures of every type"},
                     metrics=_metrics(report),
                     labels=list(LABELS), backbone=b.name, input_size=b.size, components=components,
                     fine_tuned_tail={"from_block": TAIL_START, "epochs": tune_epochs, "lr": LR} if tail else None,
                     picture_dims=picture_dims, discriminant=discriminant, balance=balance, C=c,
                     dominant_by_shown=dominant_by_shown,
                     source_weight=source_weight or {},
                     temperature=round(temperature, 4), seed=seed, cross_validation=report,
                     seconds=round(time.time() - t0, 1))
    rates = None
    if dominant_by_shown > 0:
        labelled = [i for i, src in enumerate(every.source) if src not in NOT_LABELLED]
        rates = shown_given_dominant([every.dominant[i] for i in labelled], [every.accepted[i] for i in labelled],
                                     dominant_by_shown)
    publish(ARTIFACT, head_files(head, temperature, picture_dims, tail, rates), meta, root=store_root, keep=keep)
    return meta
