"""Figure types from pixels: a small CNN over the figure's crop gives a score per type of the fixed
vocabulary (app/vision/vocabulary.py). Its weights are trained by the project itself
(`figsearch train-types`, app/vision/train_types.py): conv blocks on figures it draws
(app/vision/synth.py), then a head on real crops labelled by looking (app/vision/real_crops.py)
and text cut from papers' pages; they ship with the package, so a default install classifies
figures without downloading anything. The head's shape is stored with the weights; a head may
also read statistics of the full-resolution crop (app/vision/pixel_features.py: text lines,
rules, colours), which the 112 px view loses. Only the crop's pixels are used, never the PDF,
so uploaded images are classified the same way as figures cut from papers.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from app.vision.pixel_features import COUNT as PIXEL_COUNT, pixel_features
from app.vision.vocabulary import TYPES

SIZE = 112
LABELS: tuple[str, ...] = tuple(t for t in TYPES if t != "other")  # "other" = no type scores high enough
WEIGHTS = Path(__file__).with_name("weights") / "figure_types.pt"
SHOWN = 0.5  # a type the figure shows: its score passes this
OTHER = 0.25  # below this for every type, the figure is "other"


def to_array(img: Image.Image) -> np.ndarray:
    """(3, SIZE, SIZE) uint8: the crop scaled to fit, centred on white (the aspect ratio is kept:
    tables and text are wide, diagrams often tall)."""
    rgb = img.convert("RGB")
    rgb.draft("RGB", (SIZE * 2, SIZE * 2))
    w, h = rgb.size
    s = SIZE / max(w, h, 1)
    small = rgb.resize((max(1, round(w * s)), max(1, round(h * s))), Image.Resampling.BOX)
    canvas = Image.new("RGB", (SIZE, SIZE), "white")
    canvas.paste(small, ((SIZE - small.width) // 2, (SIZE - small.height) // 2))
    return np.asarray(canvas, dtype=np.uint8).transpose(2, 0, 1).copy()


def aspect_of(img: Image.Image) -> float:
    w, h = img.size
    return float(np.log(max(w, 1) / max(h, 1)))


def run_batches(fn, images: list[Image.Image], width: int, batch: int = 64, pixels: bool = False) -> np.ndarray:
    """`fn(pixels, aspects)` over `images` in batches, as the classifier sees them (to_array,
    aspect_of); with `pixels`, `fn(pixels, aspects, features)` also gets each crop's
    full-resolution statistics (app/vision/pixel_features.py). One row of `width` numbers per image."""
    import torch

    out = []
    with torch.inference_mode():
        for i in range(0, len(images), batch):
            part = images[i:i + batch]
            x = torch.from_numpy(np.stack([to_array(im) for im in part]))
            a = torch.tensor([aspect_of(im) for im in part], dtype=torch.float32)
            if pixels:
                p = torch.from_numpy(np.stack([pixel_features(im) for im in part]))
                out.append(fn(x, a, p).numpy())
            else:
                out.append(fn(x, a).numpy())
    return np.concatenate(out) if out else np.zeros((0, width), np.float32)


WIDTHS = (24, 48, 64, 96, 128)  # channels of the five conv blocks


def build_net(taps: tuple[int, ...] = (4,), hidden: int = 0, pixels: bool = False):
    """Five conv blocks; the mean and max of the blocks listed in `taps` (4 = the last) and the
    log aspect ratio go through the head: one linear layer, or a hidden layer of `hidden` units.
    With `pixels` the head also reads the crop's full-resolution statistics (pixel_features),
    standardised by the mean and spread of its training examples (kept with the weights)."""
    import torch
    from torch import nn

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                             nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                             nn.MaxPool2d(2))

    dims = sum(WIDTHS[t] for t in taps) * 2 + 1 + (PIXEL_COUNT if pixels else 0)

    class TypeNet(nn.Module):
        def __init__(self):
            super().__init__()
            chans = (4,) + WIDTHS  # RGB + an ink channel in
            self.features = nn.Sequential(*(block(chans[i], chans[i + 1]) for i in range(len(WIDTHS))))
            if hidden:
                self.head = nn.Sequential(nn.Dropout(0.2), nn.Linear(dims, hidden), nn.ReLU(inplace=True),
                                          nn.Dropout(0.2), nn.Linear(hidden, len(LABELS)))
            else:
                self.head = nn.Sequential(nn.Dropout(0.2), nn.Linear(dims, len(LABELS)))
            if pixels:
                self.register_buffer("pixel_mean", torch.zeros(PIXEL_COUNT))
                self.register_buffer("pixel_std", torch.ones(PIXEL_COUNT))

        def pooled(self, x, aspect, taps=taps):
            x = x.float() / 255.0
            ink = 1.0 - x.mean(dim=1, keepdim=True)  # an explicit ink channel: figures are mostly white
            h = torch.cat([x - 0.5, ink], dim=1)
            out = []
            for i, blk in enumerate(self.features[:max(taps) + 1]):
                h = blk(h)
                if i in taps:
                    out += [h.mean(dim=(2, 3)), h.amax(dim=(2, 3))]
            return torch.cat(out + [aspect[:, None]], dim=1)

        def head_input(self, pooled, features=None):
            """What the head reads: pooled conv features, then the standardised pixel statistics."""
            if not pixels:
                return pooled
            return torch.cat([pooled, (features - self.pixel_mean) / self.pixel_std], dim=1)

        def forward(self, x, aspect, features=None):
            return self.head(self.head_input(self.pooled(x, aspect), features))

    TypeNet.pixels = pixels

    return TypeNet()


@dataclass
class TypeScores:
    figure_type: str  # the dominant type
    figure_types: list[dict]  # [{"type", "score"}], dominant first, every type the figure shows
    scores: dict[str, float]  # every type's score


def decide(scores: np.ndarray) -> TypeScores:
    """Scores (sigmoid, one per LABELS) -> dominant type and the list of types shown."""
    order = np.argsort(-scores)
    top = int(order[0])
    every = {t: round(float(s), 3) for t, s in zip(LABELS, scores)}
    if scores[top] < OTHER:
        return TypeScores("other", [{"type": "other", "score": round(float(1 - scores[top]), 3)}], every)
    shown = [int(i) for i in order if scores[i] >= SHOWN or i == top]
    return TypeScores(LABELS[top], [{"type": LABELS[i], "score": every[LABELS[i]]} for i in shown], every)


class TypeClassifier:
    def __init__(self, weights: Path = WEIGHTS):
        import torch

        self.torch = torch
        state = torch.load(weights, map_location="cpu", weights_only=True)
        head = state.get("meta", {}).get("head", {})
        self.net = build_net(tuple(head.get("taps", (4,))), int(head.get("hidden", 0)), bool(head.get("pixels", False)))
        self.net.load_state_dict(state["model"])
        self.net.eval()

    def scores(self, images: list[Image.Image], batch: int = 64) -> np.ndarray:
        return run_batches(lambda x, a, p=None: self.torch.sigmoid(self.net(x, a, p)), images, len(LABELS), batch,
                           pixels=self.net.pixels)

    def classify(self, images: list[Image.Image]) -> list[TypeScores]:
        return [decide(s) for s in self.scores(images)]


_lock = threading.Lock()
_loaded: dict[str, TypeClassifier | None] = {}


def classifier(weights: Path = WEIGHTS) -> TypeClassifier | None:
    """The shipped classifier, loaded once per process; None when no weights are installed."""
    key = str(weights)
    with _lock:
        if key not in _loaded:
            _loaded[key] = TypeClassifier(weights) if weights.exists() else None
        return _loaded[key]
