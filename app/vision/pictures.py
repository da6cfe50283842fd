"""What every pixel signal reads, from one pass of the backbone (app/vision/backbone.py) per
picture: its picture vector (search by picture, "similar picture" between figures) and its
figure types (app/vision/figure_types.py).

A picture vector is the backbone's pooled features, standardised and projected onto their
leading principal components and the axes that best separate the figure types (fitted by
`figsearch train-types` and kept with the head in the model store's `figure-types` artifact),
then scaled to unit length: compact enough to keep a million figures in memory, compared by
cosine, and nearest for pictures of the same kind. The same artifact says which backbone its head
and projection read: the input size (meta.json `input_size`) and, when it holds one, the
fine-tuned tail of the network (TAIL_FILE); without one the frozen ImageNet network is used.
"""
from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
from PIL import Image

from app.model_store import load_arrays, resolve
from app.vision.backbone import NAME, SIZE, Backbone, backbone
from app.vision.figure_types import ARTIFACT, TypeScores, type_head
from app.vision.looks import look_hash

PROJECTION_FILE = "pictures.safetensors"
TAIL_FILE = "backbone_tail.safetensors"  # fine-tuned last blocks of the backbone (optional)


class Projection:
    def __init__(self, path: Path):
        state = load_arrays(path)
        self.center = state["center"].astype(np.float32)
        self.scale = state["scale"].astype(np.float32)
        self.matrix = state["projection"].astype(np.float32)  # (backbone DIM, picture DIM)
        self.tag = hashlib.sha256(path.read_bytes()).hexdigest()[:10]

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])

    def __call__(self, features: np.ndarray) -> np.ndarray:
        v = ((features - self.center) / self.scale) @ self.matrix
        n = np.linalg.norm(v, axis=1, keepdims=True)
        return (v / np.where(n > 0, n, 1.0)).astype(np.float32)


_lock = threading.Lock()
_projections: dict[str, Projection] = {}


def projection(data_dir: Path | None = None) -> Projection:
    """The projection in use (the data dir's figure-types version, else the shipped one), loaded
    once per version and process."""
    found = resolve(ARTIFACT, data_dir)
    if found is None:
        raise FileNotFoundError("no figure-types model installed (the package ships one: reinstall it)")
    path = found.path / PROJECTION_FILE
    with _lock:
        if str(path) not in _projections:
            _projections[str(path)] = Projection(path)
        return _projections[str(path)]


def _backbone_spec(data_dir: Path | None) -> tuple[int, Path | None]:
    """(input size, fine-tuned tail file or None) of the figure-types version in use."""
    found = resolve(ARTIFACT, data_dir)
    if found is None:
        return SIZE, None
    tail = found.path / TAIL_FILE
    return int(found.meta.get("input_size", SIZE)), tail if tail.exists() else None


def backbone_for(data_dir: Path | None = None) -> Backbone:
    """The backbone the figure-types version in use reads: its input size, its fine-tuned tail if
    it has one."""
    size, tail = _backbone_spec(data_dir)
    return backbone(size=size, tail=tail)


def _tail_tag(data_dir: Path | None) -> str:
    found = resolve(ARTIFACT, data_dir)
    tail = found.path / TAIL_FILE if found is not None else None
    if tail is None or not tail.exists():
        return ""
    with _lock:
        if str(tail) not in _tail_tags:
            _tail_tags[str(tail)] = "-tuned" + hashlib.sha256(tail.read_bytes()).hexdigest()[:10]
        return _tail_tags[str(tail)]


_tail_tags: dict[str, str] = {}


def picture_model_name(data_dir: Path | None = None) -> str:
    """Names the vectors `encode_pictures` makes (backbone, input size, fine-tuned tail, projection),
    so stored vectors of another model are never mixed with new ones. Read from the model store
    without loading the network: an index build whose vectors are all stored never needs it."""
    size, _ = _backbone_spec(data_dir)
    return f"{NAME}-{size}{_tail_tag(data_dir)}-{projection(data_dir).tag}"


def read_crop(path: Path) -> Image.Image:
    """A stored crop as the encoder reads it: RGB, decoded at a reduced size where the format
    allows (the backbone reads far fewer pixels); a missing or unreadable crop is a blank picture,
    so one bad file never stops a batch."""
    try:
        with Image.open(path) as im:
            im.draft("RGB", (448, 448))
            return im.convert("RGB")
    except (OSError, ValueError):
        return Image.new("RGB", (8, 8), "white")


@dataclass
class Pictures:
    vectors: np.ndarray  # (n, DIM) float32 unit rows
    types: list[TypeScores] | None  # None when no type head is installed


def encode_pictures(images: list[Image.Image], batch: int = 32, data_dir: Path | None = None) -> Pictures:
    """Picture vectors and figure types of the images (one backbone pass each), with the models
    in use for the data dir."""
    feats = backbone_for(data_dir).features(images, batch=batch)
    head = type_head(data_dir)
    return Pictures(projection(data_dir)(feats), head.classify(feats) if head is not None else None)


class PictureQuery(NamedTuple):
    """What search by picture reads of an uploaded picture."""

    vector: np.ndarray          # its picture vector
    types: TypeScores | None    # its figure types by pixels (None: no type head installed)
    look: np.ndarray            # its perceptual hashes (app/vision/looks.py): find copies of it


def picture_query(img: Image.Image, data_dir: Path | None = None) -> PictureQuery:
    """An uploaded picture's vector, figure types and perceptual hashes."""
    rgb = img.convert("RGB")
    got = encode_pictures([rgb], data_dir=data_dir)
    return PictureQuery(got.vectors[0], got.types[0] if got.types else None, look_hash(rgb))
