"""Figure types from pixels: a linear head over the pretrained backbone's features
(app/vision/backbone.py) gives a probability per type of the fixed vocabulary
(app/vision/vocabulary.py), softmax with a temperature fitted by paper-grouped cross-validation,
so a score of .9 is right about 9 times in 10. The head is trained by the project
(`figsearch train-types`, app/vision/train_types.py) and is kept in the model store
(app/model_store) as the `figure-types` artifact: safetensors with a meta.json naming the command
and data that made it. A default ships with the package; a data dir's own version overrides it.
Only the crop's pixels are used, never the PDF, so uploaded images are typed the same way as
figures cut from papers.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.model_store import load_arrays, resolve
from app.vision.vocabulary import TYPES

LABELS: tuple[str, ...] = TYPES
ARTIFACT = "figure-types"  # the model store's name of the head + picture projection
HEAD_FILE = "figure_types.safetensors"
SHOWN = 0.2  # another type the figure shows: its probability passes this


@dataclass
class TypeScores:
    figure_type: str  # the dominant type
    figure_types: list[dict]  # [{"type", "score"}], dominant first, every type the figure shows
    scores: dict[str, float]  # every type's score


def decide(probs: np.ndarray, shown_given_dominant: np.ndarray | None = None) -> TypeScores:
    """Probabilities (one per LABELS) -> dominant type and the list of types shown (the dominant
    one, the most probable one, every other from SHOWN on). The dominant type is the most probable
    one, or with `shown_given_dominant` (row d: how often a figure of dominant type d shows each
    type) the one scoring highest by probs @ shown_given_dominant: a figure torn between two
    types, one of which usually comes with the other, is named by the one it shows either way."""
    order = np.argsort(-probs, kind="stable")
    dominant = int(order[0]) if shown_given_dominant is None else int(np.argmax(probs @ shown_given_dominant))
    every = {t: round(float(s), 3) for t, s in zip(LABELS, probs)}
    shown = [dominant] + [int(i) for k, i in enumerate(order) if i != dominant and (k == 0 or probs[i] >= SHOWN)]
    return TypeScores(LABELS[dominant], [{"type": LABELS[i], "score": every[LABELS[i]]} for i in shown], every)


SCORE_FLOOR = 1e-6  # a stored score of 0 (rounded to three decimals) still lets evidence move it


def reweighed(result: TypeScores, label: str, weight: float) -> TypeScores:
    """`result` with the odds of `label` multiplied by `weight` (a likelihood ratio) and the scores
    renormalised: evidence other than the pixels (a caption) that decides where the pixels are
    unsure, but not against a confident pixel answer."""
    probs = np.array([float(result.scores.get(t, 0.0)) for t in LABELS]) + SCORE_FLOOR
    probs[LABELS.index(label)] *= weight
    return decide(probs / probs.sum())


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


class TypeHead:
    """logits = features @ weight.T + bias (standardisation folded in), divided by the fitted
    temperature; the dominant type chosen with the version's shown_given_dominant when it has one
    (see decide)."""

    def __init__(self, weights: Path):
        state = load_arrays(weights)
        self.weight = state["weight"].astype(np.float32)
        self.bias = state["bias"].astype(np.float32)
        self.temperature = float(state["temperature"].reshape(-1)[0])
        self.shown_given_dominant = state.get("shown_given_dominant")
        if self.weight.shape[0] != len(LABELS):
            raise ValueError(f"{weights}: {self.weight.shape[0]} types, the vocabulary has {len(LABELS)}")

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        return softmax((features @ self.weight.T + self.bias) / self.temperature)

    def classify(self, features: np.ndarray) -> list[TypeScores]:
        return [decide(p, self.shown_given_dominant) for p in self.probabilities(features)]


_lock = threading.Lock()
_loaded: dict[str, TypeHead | None] = {}


def type_head(data_dir: Path | None = None) -> TypeHead | None:
    """The head in use (the data dir's figure-types version, else the shipped one), loaded once
    per version and process; None when none is installed."""
    found = resolve(ARTIFACT, data_dir)
    if found is None:
        return None
    weights = found.path / HEAD_FILE
    key = str(weights)
    with _lock:
        if key not in _loaded:
            _loaded[key] = TypeHead(weights) if weights.exists() else None
        return _loaded[key]
