"""Training of the figure-type classifier (app/vision/figure_types.py).

Two stages. From scratch: figures drawn by app/vision/synth.py in every type (labels known by
construction) and, when a data dir is given, real crops whose caption names a type (weak labels:
the named type positive, the others unknown). Then fine-tuning on real crops labelled by hand
(app/vision/real_crops.py, augmented every epoch) plus text cut from the same papers' pages
(app/vision/page_text.py), mixed with drawn figures so no type is forgotten; that head may also
read pixel statistics of each full-resolution crop (app/vision/pixel_features.py, `--pixels`). `cross_validate`
compares fine-tuning variants on the hand labels, never splitting a paper between training and
scoring. Papers listed in `exclude` (sha256 per line) never give examples, so labelled checks
stay held out. The drawn examples are cached between runs.

    figsearch train-types [--data-dir DIR] [--exclude-papers FILE] [--synthetic 4000] [--out PATH]
    figsearch train-types --data-dir DIR --labels FILE --init BASE.pt [--cv] ...
"""
from __future__ import annotations

import hashlib
import json
import logging
import random
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image
from sqlalchemy import select

from app.db.schema import Figure, Paper, PaperStatus
from app.db.session import session_scope
from app.settings import Settings
from app.pdfs import stored_pdf
from app.vision.figure_types import (LABELS, SIZE, WEIGHTS, WIDTHS, TypeClassifier, aspect_of, build_net, decide,
                                     run_batches, to_array)
from app.vision.pixel_features import COUNT as PIXEL_COUNT, pixel_features
from app.vision.page_text import text_crops
from app.vision.real_crops import KEEP_PX, RealCrop, augment, labelled_crops, read_labels, target_of
from app.vision.synth import labels_of, render, sample_types
from app.vision.vocabulary import types_named_in

log = logging.getLogger(__name__)
WEAK_TYPES = set(LABELS) - {"table"}  # a figure whose caption says "table" is rarely a table picture


def _draw(seed: int) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    rng = random.Random(seed)
    types = sample_types(rng)
    img = render(types, rng)
    y = np.zeros(len(LABELS), np.float32)
    for t in labels_of(types):
        y[LABELS.index(t)] = 1.0
    return to_array(img), aspect_of(img), y, pixel_features(img)


CHUNK = 1000


def synthetic_set(n: int, seed: int, cache: Path | None, workers: int = 2, progress: bool = False):
    """n drawn figures as (x uint8 (n,3,S,S), aspect (n,), y multi-hot (n, L), pixel statistics
    (n, PIXEL_COUNT)), drawn in chunks of CHUNK that are cached as .npz (a larger set reuses the
    chunks of a smaller one)."""
    parts = [_chunk(i, min(CHUNK, n - i * CHUNK), seed, cache, workers, progress) for i in range((n + CHUNK - 1) // CHUNK)]
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))


def _chunk(index: int, n: int, seed: int, cache: Path | None, workers: int, progress: bool):
    path = cache / f"synthetic-{seed}-{index}-{n}-{SIZE}-px{PIXEL_COUNT}.npz" if cache else None
    if path and path.exists():
        z = np.load(path)
        return z["x"], z["a"], z["y"], z["p"]
    seeds = [seed * 1_000_003 + index * CHUNK + i for i in range(n)]
    with ProcessPoolExecutor(workers) as pool:
        rows = []
        for i, r in enumerate(pool.map(_draw, seeds, chunksize=16)):
            rows.append(r)
            if progress and (i + 1) % 250 == 0:
                print(f"  chunk {index}: drawn {i + 1}/{n}", flush=True)
    x = np.stack([r[0] for r in rows])
    a = np.array([r[1] for r in rows], np.float32)
    y = np.stack([r[2] for r in rows])
    p = np.stack([r[3] for r in rows])
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, x=x, a=a, y=y, p=p)
    return x, a, y, p


def weak_set(settings: Settings, exclude: set[str]):
    """Real crops whose caption names exactly one type: (x, aspect, y, mask). The mask marks the
    label entries that are known (the named type positive, "other" types unknown) -- except that
    a named chart type also rules out the other chart types."""
    xs, aspects, ys, masks = [], [], [], []
    with session_scope(settings.db_url) as s:
        rows = s.execute(select(Figure.caption, Figure.image_path, Paper.sha256).join(Paper)
                         .where(Paper.status == PaperStatus.OK, Figure.kind == "figure",
                                Figure.crop_quality == "ok")).all()
    for caption, rel, sha in rows:
        if sha in exclude or not rel:
            continue
        named = [t for t in types_named_in(caption.split(".")[0] if caption else "") if t in WEAK_TYPES]
        if len(named) != 1:
            continue
        try:
            with Image.open(settings.data_dir / rel) as im:
                im.load()
                xs.append(to_array(im))
                aspects.append(aspect_of(im))
        except (OSError, ValueError):
            continue
        y = np.zeros(len(LABELS), np.float32)
        y[LABELS.index(named[0])] = 1.0
        m = np.zeros(len(LABELS), np.float32)
        m[LABELS.index(named[0])] = 1.0
        ys.append(y)
        masks.append(m)
    if not xs:
        z = np.zeros((0, len(LABELS)), np.float32)
        return np.zeros((0, 3, SIZE, SIZE), np.uint8), np.zeros(0, np.float32), z, z
    return np.stack(xs), np.array(aspects, np.float32), np.stack(ys), np.stack(masks)


def _fit(net, xs, a_s, ys, ms, epochs: int, seed: int, progress: bool, max_lr: float = 3e-3) -> None:
    """Train on drawn figures (and weak labels) from scratch."""
    import torch

    rng = np.random.default_rng(seed)
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=1e-4)
    n = len(xs)
    steps = epochs * ((n + 63) // 64)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=max_lr, total_steps=steps)
    X, A, Y, M = (torch.from_numpy(v) for v in (xs, a_s, ys, ms))
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
    net.train()
    for ep in range(epochs):
        order = torch.from_numpy(rng.permutation(n))
        total = 0.0
        for i in range(0, n, 64):
            idx = order[i:i + 64]
            x = X[idx]
            if rng.random() < 0.5:  # charts stay charts when mirrored left-right
                x = torch.flip(x, dims=[3])
            logits = net(x, A[idx])
            loss = (loss_fn(logits, Y[idx]) * M[idx]).sum() / M[idx].sum().clamp(min=1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        if progress:
            print(f"  epoch {ep + 1}/{epochs}: loss {total / n:.4f}", flush=True)
    net.eval()


HEAD_TAPS = (3, 4)  # the blocks whose pooled features a retrained head may read


@dataclass
class Encoded:
    """Pooled features of examples under the frozen conv blocks, with their targets."""
    f: np.ndarray  # (n, D) float32: mean and max of blocks HEAD_TAPS, then the log aspect ratio
    p: np.ndarray  # (n, PIXEL_COUNT) float32: full-resolution pixel statistics
    y: np.ndarray  # (n, len(LABELS))
    group: np.ndarray  # (n,) paper sha256 ("" for drawn figures)
    copy: np.ndarray  # (n,) 0 = the crop as extracted, 1.. = augmented copies
    real: np.ndarray  # (n,) bool


def _load(path: Path, taps=(4,), hidden: int = 0, pixels: bool = False):
    """A net whose conv blocks come from `path` (its head too when it has the same shape)."""
    import torch

    net = build_net(taps, hidden, pixels)
    state = torch.load(path, map_location="cpu", weights_only=True)["model"]
    mine = net.state_dict()
    heads = [k for k in mine if not k.startswith("features.")]
    same_head = all(k in state and state[k].shape == mine[k].shape for k in heads) and \
        not any(k not in mine for k in state if not k.startswith("features."))
    net.load_state_dict({k: v for k, v in state.items() if k.startswith("features.") or same_head}, strict=False)
    net.eval()
    return net


def _pool(net, images: list[Image.Image], batch: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """Pooled conv features and pixel statistics of each image."""
    import torch

    width = sum(WIDTHS[t] for t in HEAD_TAPS) * 2 + 1
    both = run_batches(lambda x, a, p: torch.cat([net.pooled(x, a, taps=HEAD_TAPS), p], dim=1), images,
                       width + PIXEL_COUNT, batch, pixels=True)
    return both[:, :width], both[:, width:]


def encode_crops(net, crops: list[RealCrop], copies: int, seed: int) -> Encoded:
    """Each real crop as extracted plus `copies` - 1 augmented versions."""
    rng = random.Random(seed)
    images, ys, groups, cps = [], [], [], []
    for c in crops:
        for k in range(copies):
            images.append(c.image if k == 0 else augment(c.image, rng))
            ys.append(c.target)
            groups.append(c.group)
            cps.append(k)
    if not images:
        return Encoded(*_pool(net, []), np.zeros((0, len(LABELS)), np.float32), np.array([], str),
                       np.zeros(0, int), np.zeros(0, bool))
    return Encoded(*_pool(net, images), np.stack(ys), np.array(groups), np.array(cps), np.ones(len(ys), bool))


def encode_drawn(net, drawn) -> Encoded:
    import torch

    xd, ad, yd, pd = drawn
    out = [np.zeros((0, sum(WIDTHS[t] for t in HEAD_TAPS) * 2 + 1), np.float32)]
    with torch.inference_mode():
        for i in range(0, len(xd), 32):
            out.append(net.pooled(torch.from_numpy(xd[i:i + 32]), torch.from_numpy(ad[i:i + 32]), taps=HEAD_TAPS).numpy())
    n = len(xd)
    return Encoded(np.concatenate(out), pd, yd, np.array([""] * n), np.zeros(n, int), np.zeros(n, bool))


def _columns(taps) -> np.ndarray:
    """Columns of an Encoded.f that a head reading blocks `taps` uses."""
    cols, start = [], 0
    for t in HEAD_TAPS:
        width = WIDTHS[t] * 2
        if t in taps:
            cols += range(start, start + width)
        start += width
    return np.array(cols + [start])


def _head_input(net, enc: Encoded, taps):
    import torch

    with torch.no_grad():
        return net.head_input(torch.from_numpy(enc.f[:, _columns(taps)].astype(np.float32)),
                              torch.from_numpy(enc.p.astype(np.float32)))


def fit_head(net, enc: Encoded, taps, real_weight: float = 3.0, epochs: int = 60, lr: float = 2e-3,
             seed: int = 0) -> None:
    """Train the head of `net` (built with `taps`) on encoded examples; the conv blocks stay as
    they are. A real crop counts `real_weight` times a drawing. A head reading pixel statistics
    standardises them by these examples' mean and spread."""
    import torch

    torch.manual_seed(seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny steps: a second thread costs more than it gives
    rng = np.random.default_rng(seed)
    if net.pixels:
        net.pixel_mean.copy_(torch.from_numpy(enc.p.mean(axis=0)))
        net.pixel_std.copy_(torch.from_numpy(enc.p.std(axis=0) + 1e-3))
    X = _head_input(net, enc, taps)
    Y = torch.from_numpy(enc.y.astype(np.float32))
    W = torch.from_numpy(np.where(enc.real, real_weight, 1.0).astype(np.float32))
    opt = torch.optim.AdamW(net.head.parameters(), lr=lr, weight_decay=1e-3)
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
    net.head.train()
    for _ in range(epochs):
        order = torch.from_numpy(rng.permutation(len(X)))
        for i in range(0, len(X), 256):
            idx = order[i:i + 256]
            loss = (loss_fn(net.head(X[idx]), Y[idx]).mean(dim=1) * W[idx]).sum() / W[idx].sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    net.eval()
    torch.set_num_threads(threads)


def _predict(net, enc: Encoded, taps) -> list[str]:
    import torch

    with torch.inference_mode():
        s = torch.sigmoid(net.head(_head_input(net, enc, taps))).numpy()
    return [decide(r).figure_type for r in s]


def _subset(enc: Encoded, keep: np.ndarray) -> Encoded:
    return Encoded(enc.f[keep], enc.p[keep], enc.y[keep], enc.group[keep], enc.copy[keep], enc.real[keep])


def _concat(parts: list[Encoded]) -> Encoded:
    return Encoded(*(np.concatenate([getattr(p, k) for p in parts]) for k in ("f", "p", "y", "group", "copy", "real")))


def _page_text(settings: Settings, papers: list[str], per_paper: int, seed: int) -> list[RealCrop]:
    """`text` examples cut from the pages of the given papers (their stored PDFs)."""
    rng = random.Random(seed)
    target = target_of("text", ["text"])
    out = []
    for sha in papers:
        pdf = stored_pdf(settings.data_dir, sha)
        if pdf is None or per_paper <= 0:
            continue
        for img in text_crops(pdf, per_paper, rng):
            img.thumbnail((KEEP_PX, KEEP_PX))
            out.append(RealCrop(img, target, sha, "text", ["text"]))
    return out


def variants(real_weight: float, epochs: int) -> dict[str, dict]:
    """The heads `figsearch train-types --cv` compares (all with page text)."""
    out = {}
    for taps, hidden, head in (((4,), 0, "linear head on block 5"), ((3, 4), 128, "128-unit head on blocks 4+5")):
        for pixels in (False, True):
            name = f"{head}, real weight {real_weight:g}" + (", pixel statistics" if pixels else "")
            out[name] = {"taps": taps, "hidden": hidden, "pixels": pixels, "real_weight": real_weight,
                         "page_text": True, "epochs": epochs}
    for hidden in (64, 256):
        out[f"{hidden}-unit head on blocks 4+5, real weight {real_weight:g}, pixel statistics"] = {
            "taps": (3, 4), "hidden": hidden, "pixels": True, "real_weight": real_weight, "page_text": True, "epochs": epochs}
    out["128-unit head on blocks 4+5, real weight 1, pixel statistics"] = {
        "taps": (3, 4), "hidden": 128, "pixels": True, "real_weight": 1.0, "page_text": True, "epochs": epochs}
    return out


def cross_validate(settings: Settings, labels: list[dict], init: Path, drawn, variants: dict[str, dict],
                   folds: int = 4, seed: int = 0, copies: int = 3, page_text: int = 2,
                   exclude: set[str] | None = None, progress: bool = False) -> dict:
    """Each variant (taps, hidden, real_weight, page_text on/off, epochs) trained `folds` times,
    each time without one group of papers, and scored on that group's hand-labelled crops as
    extracted: the share whose predicted dominant type is the labelled one, and the share whose
    prediction is a type the figure shows. The `init` net as saved gets scored the same way (in
    sample if its head was trained on these labels)."""
    t0 = time.time()
    crops = labelled_crops(settings, labels, exclude or set())
    papers = sorted({c.group for c in crops})
    base = _load(init)
    enc = encode_crops(base, crops, copies, seed)
    text = encode_crops(base, _page_text(settings, papers, page_text, seed), copies, seed + 1)
    enc_drawn = encode_drawn(base, drawn)
    if progress:
        print(f"  encoded {len(enc.f)} real, {len(text.f)} page-text, {len(enc_drawn.f)} drawn examples "
              f"({time.time() - t0:.0f} s)", flush=True)
    order = papers[:]
    random.Random(seed).shuffle(order)
    fold_of = {p: i % folds for i, p in enumerate(order)}
    fold = lambda e: np.array([fold_of.get(g, -1) for g in e.group])  # noqa: E731
    enc_fold, text_fold = fold(enc), fold(text)
    test_all = _subset(enc, enc.copy == 0)
    crop_list = crops  # test_all holds each crop once, in this order
    saved = TypeClassifier(init)
    base_pred = [r.figure_type for r in saved.classify([c.image for c in crops])]
    results = {"init as saved": _cv_report(crop_list, base_pred, None)}
    if progress:
        r = results["init as saved"]
        print(f"  init as saved: dominant {r['dominant_accuracy']} shown {r['shown_accuracy']}", flush=True)
    for name, params in variants.items():
        preds = [None] * len(crop_list)
        for k in range(folds):
            train = [_subset(enc, enc_fold != k), enc_drawn]
            if params.get("page_text"):
                train.append(_subset(text, text_fold != k))
            net = _load(init, params["taps"], params["hidden"], params.get("pixels", False))
            fit_head(net, _concat(train), params["taps"], params["real_weight"], params["epochs"], seed=seed + k)
            test_idx = np.flatnonzero(fold(test_all) == k)
            for i, p in zip(test_idx, _predict(net, _subset(test_all, test_idx), params["taps"])):
                preds[i] = p
        results[name] = _cv_report(crop_list, preds, params)
        if progress:
            r = results[name]
            print(f"  {name}: dominant {r['dominant_accuracy']} shown {r['shown_accuracy']}", flush=True)
    return {"folds": folds, "papers": len(papers), "figures": len(crops), "copies": copies,
            "page_text_per_paper": page_text, "drawn": len(enc_drawn.f), "variants": results,
            "seconds": round(time.time() - t0, 1)}


def _cv_report(crops: list[RealCrop], preds: list[str], params) -> dict:
    by_type: dict[str, list[float]] = {}
    for c, p in zip(crops, preds):
        by_type.setdefault(c.dominant, []).append(float(p == c.dominant))
    return {"params": params, "dominant_accuracy": round(float(np.mean([p == c.dominant for c, p in zip(crops, preds)])), 3),
            "shown_accuracy": round(float(np.mean([p in c.types for c, p in zip(crops, preds)])), 3),
            "per_type_recall": {t: [round(float(np.mean(v)), 3), len(v)] for t, v in sorted(by_type.items())}}


def train_types(settings: Settings | None = None, exclude: set[str] | None = None, n_synthetic: int = 4000,
                epochs: int = 12, seed: int = 0, out: Path = WEIGHTS, cache: Path | None = None,
                progress: bool = False, labels: Path | None = None, init: Path | None = None,
                real_weight: float = 3.0, page_text: int = 0, copies: int = 3, taps: tuple[int, ...] = (4,),
                hidden: int = 0, pixels: bool = False, command: str | None = None) -> dict:
    """Without `labels`: a net trained from scratch on drawn figures (+ weak caption labels of
    the data dir). With `labels` (hand labels of the data dir's figures): the conv blocks of the
    `init` net under a new head (reading blocks `taps`, `hidden` units) trained on those real
    crops in `copies` versions (+ `page_text` text crops per labelled paper) and drawn ones; with
    `pixels` the head also reads the crops' full-resolution pixel statistics."""
    import torch

    torch.manual_seed(seed)
    t0 = time.time()
    xs, a_s, ys, ps = synthetic_set(n_synthetic, seed, cache, progress=progress)
    meta: dict = {"labels": list(LABELS), "size": SIZE, "synthetic": n_synthetic, "epochs": epochs, "seed": seed,
                  "excluded_papers": len(exclude or ())}
    if labels is not None:
        if settings is None or init is None:
            raise ValueError("hand labels need the data dir holding their figures and the net to start from")
        crops = labelled_crops(settings, read_labels(labels), exclude or set())
        extra = _page_text(settings, sorted({c.group for c in crops}), page_text, seed)
        drawn_s = time.time() - t0
        base = _load(init)
        enc = _concat([encode_crops(base, crops, copies, seed), encode_crops(base, extra, copies, seed + 1),
                       encode_drawn(base, (xs, a_s, ys, ps))])
        net = _load(init, taps, hidden, pixels)
        fit_head(net, enc, taps, real_weight, epochs, seed=seed)
        counts: dict[str, int] = {}
        for c in crops:
            counts[c.dominant] = counts.get(c.dominant, 0) + 1
        init_meta = torch.load(init, map_location="cpu", weights_only=True).get("meta", {})
        meta.update({"head": {"taps": list(taps), "hidden": hidden, "pixels": pixels},
                     "init": Path(init).name, "init_meta": init_meta, "init_sha256": hashlib.sha256(Path(init).read_bytes()).hexdigest(),
                     "hand_labels": Path(labels).name, "hand_labelled_real": len(crops),
                     "hand_labelled_papers": len({c.group for c in crops}),
                     "hand_labelled_by_type": counts, "page_text_crops": len(extra), "augmented_copies": copies,
                     "real_weight": real_weight})
    else:
        ms = np.ones_like(ys)
        weak_counts: dict[str, int] = {}
        n_weak = 0
        if settings is not None:
            xw, aw, yw, mw = weak_set(settings, exclude or set())
            n_weak = len(xw)
            for row in yw:
                t = LABELS[int(row.argmax())]
                weak_counts[t] = weak_counts.get(t, 0) + 1
            reps = 3  # real crops are few and worth more than drawn ones
            xs = np.concatenate([xs] + [xw] * reps)
            a_s = np.concatenate([a_s] + [aw] * reps)
            ys = np.concatenate([ys] + [yw] * reps)
            ms = np.concatenate([ms] + [mw] * reps)
        drawn_s = time.time() - t0
        net = build_net()
        _fit(net, xs, a_s, ys, ms, epochs, seed, progress)
        meta.update({"weak_real": n_weak, "weak_real_by_type": weak_counts})
    meta.update({"seconds": round(time.time() - t0, 1), "drawing_seconds": round(drawn_s, 1)})
    if command:
        meta["command"] = command
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": net.state_dict(), "meta": meta}, out)
    out.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta
