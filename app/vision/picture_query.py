"""What an uploaded picture is searched by when it comes without a caption: its visual fingerprint
(app/vision/fingerprint.py) and the pixel classifier's score of every figure type
(app/vision/figure_types.py), so similar pictures of the same kind come first
(`SearchEngine.by_picture`)."""
from __future__ import annotations

import numpy as np
from PIL import Image

from app.vision.figure_types import LABELS, classifier, decide
from app.vision.fingerprint import embed_images


def picture_query(img: Image.Image) -> tuple[np.ndarray, dict[str, float] | None]:
    """(fingerprint vector, {type: score} or None when no classifier weights are installed)."""
    rgb = img.convert("RGB")
    model = classifier()
    return embed_images([rgb])[0], (model.classify([rgb])[0].scores if model is not None else None)


def types_shown(scores: dict[str, float] | None) -> list[dict]:
    """The types a picture shows, dominant first, with scores (as stored for collection figures)."""
    if not scores:
        return []
    return decide(np.array([float(scores.get(t, 0.0)) for t in LABELS], dtype=np.float32)).figure_types
