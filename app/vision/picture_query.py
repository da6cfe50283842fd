"""What an uploaded picture is searched by when it comes without a caption: its visual fingerprint
(app/vision/fingerprint.py) and the pixel classifier's score of every figure type
(app/vision/figure_types.py), so similar pictures of the same kind come first
(`SearchEngine.by_picture`)."""
from __future__ import annotations

import numpy as np
from PIL import Image

from app.vision.figure_types import TypeScores, classifier
from app.vision.fingerprint import embed_images


def picture_query(img: Image.Image) -> tuple[np.ndarray, TypeScores | None]:
    """(fingerprint vector, the picture's figure types, or None when no classifier weights are
    installed)."""
    rgb = img.convert("RGB")
    model = classifier()
    return embed_images([rgb])[0], (model.classify([rgb])[0] if model is not None else None)
