"""Real figure crops labelled by hand, as training examples of the figure-type classifier.

Drawn figures (synth.py) look cleaner than real ones: real crops carry long captions' worth of
text, compound panels, screenshots and scanned-looking pixels. Labels made by looking at crops
(JSON lines: sha256, number, type, types; see tests/data/figure_types_train_recsys.md) are
matched to a collection's figures by paper sha256 and figure number. Targets: 1 for the dominant
type, SECONDARY for the other types the figure shows (so the dominant one ranks first but the
others still pass the "shown" threshold), 0 for the rest; a figure labelled "other" has no
positive type. `augment` varies a crop the way extraction and publishing do (margins, resolution,
JPEG) so the few hundred real crops are not memorised.
"""
from __future__ import annotations

import io
import json
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image
from sqlalchemy import select

from app.db.schema import Figure, Paper
from app.db.session import session_scope
from app.settings import Settings
from app.vision.figure_types import LABELS

SECONDARY = 0.75
KEEP_PX = 448  # crops are kept at most this large: the classifier sees 112 px


@dataclass
class RealCrop:
    image: Image.Image
    target: np.ndarray  # (len(LABELS),) float32
    group: str  # the paper's sha256: cross-validation folds never split a paper
    dominant: str
    types: list[str]


def read_labels(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def target_of(dominant: str, types: list[str]) -> np.ndarray:
    y = np.zeros(len(LABELS), np.float32)
    for t in types:
        if t in LABELS:
            y[LABELS.index(t)] = max(y[LABELS.index(t)], SECONDARY)
    if dominant in LABELS:
        y[LABELS.index(dominant)] = 1.0
    return y


def labelled_crops(settings: Settings, labels: list[dict], exclude: set[str] = frozenset()) -> list[RealCrop]:
    """The collection's crops of the labelled figures (papers in `exclude` left out)."""
    with session_scope(settings.db_url) as s:
        rows = s.execute(select(Paper.sha256, Figure.number, Figure.image_path).join(Paper)
                         .where(Figure.kind == "figure")).all()
    paths = {(sha, num): rel for sha, num, rel in rows if rel}
    out = []
    for lab in labels:
        rel = paths.get((lab["sha256"], lab["number"]))
        if rel is None or lab["sha256"] in exclude:
            continue
        try:
            with Image.open(settings.data_dir / rel) as im:
                im.draft("RGB", (KEEP_PX * 2, KEEP_PX * 2))
                img = im.convert("RGB")
        except (OSError, ValueError):
            continue
        img.thumbnail((KEEP_PX, KEEP_PX), Image.Resampling.LANCZOS)
        types = lab.get("types") or [lab["type"]]
        out.append(RealCrop(img, target_of(lab["type"], types), lab["sha256"], lab["type"], types))
    return out


def augment(img: Image.Image, rng: random.Random) -> Image.Image:
    """A plausible other extraction of the same figure: margins trimmed or padded, rendered at
    another resolution, saved as JPEG."""
    w, h = img.size
    if rng.random() < 0.8:
        box = []
        for extent in (w, h, w, h):
            f = rng.uniform(-0.06, 0.06)  # negative: white margin added, positive: edge trimmed
            box.append(int(round(f * extent)))
        left, top, right, bottom = box
        canvas = Image.new("RGB", (max(8, w - left - right), max(8, h - top - bottom)), "white")
        canvas.paste(img, (-left, -top))
        img = canvas
    if rng.random() < 0.6:
        s = rng.uniform(0.35, 1.0)
        small = img.resize((max(8, round(img.width * s)), max(8, round(img.height * s))), Image.Resampling.BILINEAR)
        img = small.resize(img.size, Image.Resampling.BILINEAR) if rng.random() < 0.5 else small
    if rng.random() < 0.5:
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=rng.randint(30, 90))
        buf.seek(0)
        img = Image.open(buf).convert("RGB")
    return img
