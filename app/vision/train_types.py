"""Training of the figure-type classifier (app/vision/figure_types.py).

Examples: figures drawn by app/vision/synth.py in every type (labels known by construction) and,
when a data dir is given, real crops whose caption names a type ("heat map", "t-SNE",
"architecture" -> the vocabulary's everyday names; weak labels: the named type is positive, the
others unknown). Papers listed in `exclude` (sha256 per line) never give examples, so labelled
checks stay held out. CPU minutes; the drawn examples are cached between runs.

    figsearch train-types [--data-dir DIR] [--exclude-papers FILE] [--synthetic 4000] [--out PATH]
"""
from __future__ import annotations

import json
import logging
import random
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image
from sqlalchemy import select

from app.db.schema import Figure, Paper, PaperStatus
from app.db.session import session_scope
from app.settings import Settings
from app.vision.figure_types import LABELS, SIZE, WEIGHTS, aspect_of, build_net, to_array
from app.vision.synth import labels_of, render, sample_types
from app.vision.vocabulary import types_named_in

log = logging.getLogger(__name__)
WEAK_TYPES = set(LABELS) - {"table"}  # a figure whose caption says "table" is rarely a table picture


def _draw(seed: int) -> tuple[np.ndarray, float, np.ndarray]:
    rng = random.Random(seed)
    types = sample_types(rng)
    img = render(types, rng)
    y = np.zeros(len(LABELS), np.float32)
    for t in labels_of(types):
        y[LABELS.index(t)] = 1.0
    return to_array(img), aspect_of(img), y


CHUNK = 1000


def synthetic_set(n: int, seed: int, cache: Path | None, workers: int = 2, progress: bool = False):
    """n drawn figures as (x uint8 (n,3,S,S), aspect (n,), y multi-hot (n, L)), drawn in chunks
    of CHUNK that are cached as .npz (a larger set reuses the chunks of a smaller one)."""
    parts = [_chunk(i, min(CHUNK, n - i * CHUNK), seed, cache, workers, progress) for i in range((n + CHUNK - 1) // CHUNK)]
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(3))


def _chunk(index: int, n: int, seed: int, cache: Path | None, workers: int, progress: bool):
    path = cache / f"synthetic-{seed}-{index}-{n}-{SIZE}.npz" if cache else None
    if path and path.exists():
        z = np.load(path)
        return z["x"], z["a"], z["y"]
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
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, x=x, a=a, y=y)
    return x, a, y


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


def train_types(settings: Settings | None = None, exclude: set[str] | None = None, n_synthetic: int = 4000,
                epochs: int = 12, seed: int = 0, out: Path = WEIGHTS, cache: Path | None = None,
                progress: bool = False) -> dict:
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    t0 = time.time()
    xs, a_s, ys = synthetic_set(n_synthetic, seed, cache, progress=progress)
    ms = np.ones_like(ys)
    n_weak = 0
    weak_counts: dict[str, int] = {}
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
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=1e-4)
    n = len(xs)
    steps = epochs * ((n + 63) // 64)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps)
    X, A, Y, M = (torch.from_numpy(v) for v in (xs, a_s, ys, ms))
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
    net.train()
    for ep in range(epochs):
        order = torch.from_numpy(rng.permutation(n))
        total = 0.0
        for i in range(0, n, 64):
            idx = order[i:i + 64]
            x = X[idx]
            if np.random.random() < 0.5:  # charts stay charts when mirrored left-right
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
    meta = {"labels": list(LABELS), "size": SIZE, "synthetic": n_synthetic, "weak_real": n_weak,
            "weak_real_by_type": weak_counts, "epochs": epochs, "seed": seed,
            "excluded_papers": len(exclude or ()), "seconds": round(time.time() - t0, 1),
            "drawing_seconds": round(drawn_s, 1)}
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": net.state_dict(), "meta": meta}, out)
    out.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta
