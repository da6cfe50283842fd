"""Figure pixels for the models: fixed-size RGB arrays, grayscale thumbnails, and SSIM.

`load_image` pads the crop to a square on white (aspect ratio is a style cue) and resizes it to
`size` x `size`; arrays are uint8 (3, size, size). `ssim_pairs` is the standard SSIM (Wang et al.
2004; 7x7 uniform window, K1 = 0.01, K2 = 0.03, data range 1) averaged over the image, computed
for many pairs at once on small grayscale thumbnails with scipy (no scikit-image dependency).
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

DEFAULT_SIZE = 64
THUMB = 32


def _shrink(img: Image.Image, side: int) -> Image.Image:
    """Downscale (keeping the aspect ratio) before any full-resolution colour work."""
    if max(img.size) > side:
        if img.mode not in ("RGB", "RGBA", "L", "LA"):
            img = img.convert("RGBA")
        img = img.copy()
        img.thumbnail((side, side), Image.BILINEAR)
    return img


def to_square(img: Image.Image, size: int) -> Image.Image:
    img = _shrink(img, 2 * size).convert("RGBA")
    bg = Image.new("RGBA", img.size, (255, 255, 255, 255))
    img = Image.alpha_composite(bg, img).convert("RGB")
    w, h = img.size
    side = max(w, h, 1)
    canvas = Image.new("RGB", (side, side), (255, 255, 255))
    canvas.paste(img, ((side - w) // 2, (side - h) // 2))
    return canvas.resize((size, size), Image.BILINEAR)


def open_image(source: str | Path | bytes | Image.Image) -> Image.Image | None:
    try:
        if isinstance(source, Image.Image):
            img = source
        elif isinstance(source, (bytes, bytearray)):
            img = Image.open(io.BytesIO(source))
        else:
            img = Image.open(source)
        img.load()
        return img
    except Exception:
        return None


def figure_inputs(source, size: int = DEFAULT_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """(load_image, image_stats) of one figure, decoding the file once."""
    img = open_image(source)
    if img is None:
        return np.full((3, size, size), 255, np.uint8), np.zeros(STATS_DIM, np.float32)
    return load_image(img, size), image_stats(img)


def load_image(source: str | Path | bytes | Image.Image, size: int = DEFAULT_SIZE) -> np.ndarray:
    """uint8 (3, size, size); a missing/unreadable file gives a white image."""
    img = open_image(source)
    if img is None:
        return np.full((3, size, size), 255, np.uint8)
    return np.asarray(to_square(img, size), dtype=np.uint8).transpose(2, 0, 1).copy()


STATS_DIM = 64 + 8 + 4


def image_stats(source) -> np.ndarray:
    """Global style statistics of a figure, independent of its pixel resolution: colour histogram
    of the non-white pixels (4 levels per channel, 64 bins), grey-level histogram (8 bins), ink
    fraction, coloured-pixel fraction, log aspect ratio, dark-pixel fraction. float32 (76,)."""
    img = open_image(source)
    out = np.zeros(STATS_DIM, np.float32)
    if img is None:
        return out
    w, h = img.size
    img = to_rgb(_shrink(img, 256))
    a = np.asarray(img, dtype=np.int32).reshape(-1, 3)
    ink = a.min(axis=1) < 235
    if ink.any():
        q = a[ink] // 64
        hist = np.bincount(q[:, 0] * 16 + q[:, 1] * 4 + q[:, 2], minlength=64).astype(np.float32)
        out[:64] = np.sqrt(hist / hist.sum())
    grey = a.mean(axis=1)
    gh = np.bincount(np.minimum(grey // 32, 7).astype(np.int64), minlength=8).astype(np.float32)
    out[64:72] = np.sqrt(gh / max(gh.sum(), 1))
    sat = a.max(axis=1) - a.min(axis=1)
    out[72] = ink.mean()
    out[73] = (sat > 40).mean()
    out[74] = np.log(max(w, 1) / max(h, 1))
    out[75] = (grey < 80).mean()
    return out


def to_rgb(img: Image.Image) -> Image.Image:
    img = img.convert("RGBA")
    bg = Image.new("RGBA", img.size, (255, 255, 255, 255))
    return Image.alpha_composite(bg, img).convert("RGB")


def thumbnails(images: np.ndarray, size: int = THUMB) -> np.ndarray:
    """uint8 (n, 3, s, s) -> float32 grayscale (n, size, size) in [0, 1]."""
    gray = images.astype(np.float32).mean(axis=1) / 255.0
    n, s, _ = gray.shape
    if s % size == 0:
        f = s // size
        return gray.reshape(n, size, f, size, f).mean(axis=(2, 4))
    out = np.stack([np.asarray(Image.fromarray(g).resize((size, size), Image.BILINEAR)) for g in gray])
    return out.astype(np.float32)


C1, C2 = 0.01 ** 2, 0.03 ** 2


def _filt(x: np.ndarray, win: int) -> np.ndarray:
    from scipy.ndimage import uniform_filter

    return uniform_filter(x, size=(1, win, win), mode="reflect")


class SSIMStats:
    """Per-image local means/variances precomputed once, so a pair costs one filter pass."""

    def __init__(self, thumbs: np.ndarray, win: int = 7):
        self.x = np.asarray(thumbs, np.float32)
        self.win = win
        self.mu = _filt(self.x, win)
        self.cov_norm = win * win / (win * win - 1)
        self.var = self.cov_norm * (_filt(self.x * self.x, win) - self.mu ** 2)

    def pairs(self, ia, ib) -> np.ndarray:
        ia, ib = np.asarray(ia), np.asarray(ib)
        if len(ia) == 0:
            return np.zeros(0, np.float32)
        mu_a, mu_b = self.mu[ia], self.mu[ib]
        cab = self.cov_norm * (_filt(self.x[ia] * self.x[ib], self.win) - mu_a * mu_b)
        s = ((2 * mu_a * mu_b + C1) * (2 * cab + C2)) / ((mu_a ** 2 + mu_b ** 2 + C1) * (self.var[ia] + self.var[ib] + C2))
        pad = self.win // 2
        if s.shape[1] > 2 * pad:
            s = s[:, pad:-pad, pad:-pad]
        return s.mean(axis=(1, 2)).astype(np.float32)


def ssim_pairs(a: np.ndarray, b: np.ndarray, win: int = 7) -> np.ndarray:
    """Mean SSIM of a[k] vs b[k]; a, b float (n, h, w) in [0, 1]."""
    a = np.asarray(a, np.float32)
    b = np.asarray(b, np.float32)
    if a.ndim == 2:
        a, b = a[None], b[None]
    st = SSIMStats(np.concatenate([a, b]), win)
    n = len(a)
    return st.pairs(np.arange(n), np.arange(n, 2 * n))
