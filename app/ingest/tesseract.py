"""Tesseract through pytesseract: an image's words with boxes and confidences, grouped into
Tesseract's lines. Used for scanned pages (scanned/ocr.py) and for panel labels that a born-digital
figure shows only as pixels (panel_pixels.py).
"""
from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from dataclasses import dataclass

import numpy as np
from PIL import Image

__all__ = ["MIN_LINE_CONF", "OcrLine", "OcrWord", "otsu_threshold", "read_lines"]

PAGE_OCR_TIMEOUT_S = 120
MIN_LINE_CONF = 30.0
_OMP_LIMIT = "OMP_THREAD_LIMIT"
_omp_lock = threading.Lock()
_omp_users = [0, None]  # Tesseract calls running, the value the variable had before the first


@contextlib.contextmanager
def _one_core_tesseract():
    """One core per Tesseract process (pages run in parallel): pytesseract hands the process
    environment to Tesseract, so OMP_THREAD_LIMIT is set only while Tesseract calls run. Set for the
    whole process, it would cap the OpenMP runtime of libraries loaded later (PyTorch's oneDNN then
    waits forever for threads it was promised)."""
    with _omp_lock:
        if _omp_users[0] == 0:
            _omp_users[1] = os.environ.get(_OMP_LIMIT)
            os.environ[_OMP_LIMIT] = "1"
        _omp_users[0] += 1
    try:
        yield
    finally:
        with _omp_lock:
            _omp_users[0] -= 1
            if _omp_users[0] == 0:
                if _omp_users[1] is None:
                    os.environ.pop(_OMP_LIMIT, None)
                else:
                    os.environ[_OMP_LIMIT] = _omp_users[1]


@dataclass
class OcrWord:
    text: str
    conf: float
    box: tuple[float, float, float, float]  # PDF points, origin top-left


@dataclass
class OcrLine:
    text: str
    box: tuple[float, float, float, float]
    words: list[OcrWord]
    block: int
    par: int

    @property
    def height(self) -> float:
        return self.box[3] - self.box[1]

    @property
    def conf(self) -> float:
        return float(np.mean([w.conf for w in self.words])) if self.words else 0.0


def otsu_threshold(grey: np.ndarray) -> int:
    hist = np.bincount(grey.ravel(), minlength=256).astype(np.float64)
    w = np.cumsum(hist)
    mu = np.cumsum(hist * np.arange(256))
    with np.errstate(divide="ignore", invalid="ignore"):
        between = (mu[-1] * w / w[-1] - mu) ** 2 / (w * (w[-1] - w))
    between[~np.isfinite(between)] = 0
    return int(np.argmax(between))


def read_lines(img: np.ndarray, px_per_pt: float, config: str = "--psm 3") -> list[OcrLine]:
    """Tesseract's words grouped into lines (`config`: Tesseract options; the default reads a page
    of text blocks). The image goes to Tesseract as an uncompressed PGM file: pytesseract's own
    PNG encoding of a 200 dpi page costs about a tenth of its OCR time."""
    import pytesseract

    with tempfile.NamedTemporaryFile(prefix="figsearch-ocr-", suffix=".pgm") as f, _one_core_tesseract():
        Image.fromarray(img).save(f, format="PPM")
        f.flush()
        d = pytesseract.image_to_data(f.name, lang="eng", config=config,
                                      output_type=pytesseract.Output.DICT, timeout=PAGE_OCR_TIMEOUT_S)
    groups: dict[tuple[int, int, int], list[OcrWord]] = {}
    for i, text in enumerate(d["text"]):
        text = (text or "").strip()
        conf = float(d["conf"][i])
        if not text or conf < 0:
            continue
        x, y, w, h = d["left"][i], d["top"][i], d["width"][i], d["height"][i]
        box = (x / px_per_pt, y / px_per_pt, (x + w) / px_per_pt, (y + h) / px_per_pt)
        groups.setdefault((d["block_num"][i], d["par_num"][i], d["line_num"][i]), []).append(OcrWord(text, conf, box))
    lines = []
    for (block, par, _ln), words in groups.items():
        box = (min(w.box[0] for w in words), min(w.box[1] for w in words),
               max(w.box[2] for w in words), max(w.box[3] for w in words))
        line = OcrLine(" ".join(w.text for w in words), box, words, block, par)
        if line.conf < MIN_LINE_CONF or (box[3] - box[1]) > 2 * (box[2] - box[0]):
            continue  # noise, or vertical text (margin stamps) read sideways
        lines.append(line)
    return lines
