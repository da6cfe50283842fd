"""Fine-tuning the last blocks of the backbone (app/vision/backbone.py) on labelled figures.

ImageNet features of a network's late layers describe objects; charts, tables and diagrams differ
in thin lines, marks and layout, which those layers were never asked to tell apart. Retraining only
the tail (MobileNetV2 from block TAIL_START on: three inverted-residual blocks and the final 1x1
conv, about 1.5M weights) is cheap on two CPU cores because the frozen part runs once per image
and view: its activations at the tail's input are kept (float16, cached on disk by the caller) and
every epoch runs the tail only. Views: the crop padded to a square as at inference, and a copy
shrunk to a random share of the square at a random place (crops cut with more or less margin).

The tail is trained with a linear layer over its pooled output (mean and max, as the backbone
pools), cross-entropy on the dominant type with label smoothing, each example weighted as the head
weights it (source weight, rare types up). Batch-norm statistics stay those of ImageNet (batches
of 32 are too small to estimate them); their scales and shifts are trained. That linear layer is
the type head afterwards (on paper-grouped folds it typed better than a head fitted again on the
tuned features); the picture projection is fitted on the tuned features (app/vision/train_types.py).
"""
from __future__ import annotations

import copy
import random

import numpy as np
from PIL import Image

from app.vision.backbone import MEAN, STD, TAIL_START, Backbone, to_square

EPOCHS = 6
LR = 3e-4  # the tail's; the linear layer learns 10 times faster (it starts from zero)
SMOOTH = 0.1
BATCH = 32
VIEWS = 2  # padded as at inference; shrunk to a random place


def shrunk(img: Image.Image, size: int, rng: random.Random) -> np.ndarray:
    """(size, size, 3) uint8: the image scaled to 65-95 % of the square, at a random place on white."""
    rgb = img.convert("RGB")
    w, h = rgb.size
    s = size * rng.uniform(0.65, 0.95) / max(w, h, 1)
    small = rgb.resize((max(1, round(w * s)), max(1, round(h * s))), Image.Resampling.BILINEAR, reducing_gap=2.0)
    canvas = Image.new("RGB", (size, size), "white")
    canvas.paste(small, (rng.randint(0, size - small.width), rng.randint(0, size - small.height)))
    return np.asarray(canvas, dtype=np.uint8)


def trunk_activations(b: Backbone, images: list[Image.Image], seeds: list[int]) -> list[np.ndarray]:
    """Per view, (n, C, h, w) float16: the frozen network's activations at the tail's input."""
    torch = b.torch
    trunk = b.module[:TAIL_START]
    out = []
    for view in range(VIEWS):
        arrays = np.stack([to_square(im, b.size) if view == 0 else shrunk(im, b.size, random.Random(s))
                           for im, s in zip(images, seeds)])
        x = torch.from_numpy(arrays).float().div_(255.0)
        x = ((x - torch.from_numpy(MEAN)) / torch.from_numpy(STD)).permute(0, 3, 1, 2).contiguous()
        with torch.inference_mode():
            out.append(trunk(x).half().numpy())
    return out


def _pooled(tail, a):
    import torch

    f = tail(a)
    return torch.cat([f.mean(dim=(2, 3)), f.amax(dim=(2, 3))], dim=1)


def train_tail(b: Backbone, views: list[np.ndarray], y: np.ndarray, weight: np.ndarray, n_types: int,
               epochs: int = EPOCHS, lr: float = LR, seed: int = 0) -> tuple[dict[str, np.ndarray], np.ndarray,
                                                                             np.ndarray]:
    """After training on the activations `views` (each (n, C, h, w), one view drawn per example and
    epoch): the tail's weights (state-dict keys relative to the tail, float16-rounded, as shipped)
    and the linear layer's weight (n_types, 2 * channels) and bias over the pooled features."""
    import torch

    torch.manual_seed(seed)
    tail = copy.deepcopy(b.module[TAIL_START:]).to(memory_format=torch.contiguous_format)
    channels = tail[-1][0].out_channels
    fc = torch.nn.Linear(2 * channels, n_types)
    torch.nn.init.zeros_(fc.weight)
    torch.nn.init.zeros_(fc.bias)
    for p in tail.parameters():
        p.requires_grad_(True)
    opt = torch.optim.AdamW([{"params": tail.parameters(), "lr": lr}, {"params": fc.parameters(), "lr": lr * 10}],
                            weight_decay=1e-4)
    n = len(y)
    steps = max(1, epochs * ((n + BATCH - 1) // BATCH))
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=[lr, lr * 10], total_steps=steps, pct_start=0.15)
    yt, wt = torch.from_numpy(np.asarray(y, np.int64)), torch.from_numpy(np.asarray(weight, np.float32))
    rng = np.random.default_rng(seed)
    tail.train()
    for m in tail.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.eval()  # ImageNet statistics kept
    for _ in range(epochs):
        order, which = rng.permutation(n), rng.integers(0, len(views), n)
        for i in range(0, n, BATCH):
            idx = order[i:i + BATCH]
            a = torch.from_numpy(np.stack([views[which[j]][j] for j in idx])).float()
            loss = torch.nn.functional.cross_entropy(fc(_pooled(tail, a)), yt[idx], reduction="none",
                                                     label_smoothing=SMOOTH)
            loss = (loss * wt[idx]).sum() / wt[idx].sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    state = {k: v.detach().numpy().astype(np.float16) for k, v in tail.state_dict().items()}
    return state, fc.weight.detach().numpy().astype(np.float32), fc.bias.detach().numpy().astype(np.float32)


def tail_features(b: Backbone, state: dict[str, np.ndarray] | None, acts: np.ndarray, batch: int = 64) -> np.ndarray:
    """(n, 2 * channels) float32 pooled features of the activations through the tail with weights
    `state` (the backbone's own tail when None)."""
    import torch

    tail = b.module[TAIL_START:]
    if state is not None:
        tail = copy.deepcopy(tail)
        tail.load_state_dict({k: torch.from_numpy(v.astype(np.float32)) for k, v in state.items()})
    tail.eval()
    out = []
    with torch.inference_mode():
        for i in range(0, len(acts), batch):
            out.append(_pooled(tail, torch.from_numpy(acts[i:i + batch]).float()).numpy())
    return np.concatenate(out).astype(np.float32) if out else np.zeros((0, 1), np.float32)
