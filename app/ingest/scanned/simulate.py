"""Born-digital PDF -> scan-like, image-only PDF (for evaluation and tests).

Each page is rendered in grey at the scan resolution, rotated by a small random skew, given
speckle and sensor noise, JPEG-compressed and placed as the page's only content (no text layer).
Options make bad scans too: colour at 600 dpi, upside-down pages, blank pages.
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image


@dataclass
class ScanStyle:
    dpi: int = 200
    max_skew_deg: float = 1.5
    noise_sigma: float = 10.0  # grey levels of Gaussian sensor noise
    speckle: float = 0.0015  # share of pixels turned into dark or light specks
    jpeg_quality: int = 60
    colour: bool = False
    upside_down: bool = False


def scan_page_image(page, style: ScanStyle, rng: np.random.Generator, skew: float | None = None) -> Image.Image:
    """One scanned sheet; `skew` (degrees) fixed by the caller, else drawn up to the style's maximum."""
    import pymupdf

    cs = pymupdf.csRGB if style.colour else pymupdf.csGRAY
    pix = page.get_pixmap(dpi=style.dpi, colorspace=cs, alpha=False, annots=False)
    mode = "RGB" if style.colour else "L"
    im = Image.frombytes(mode, (pix.width, pix.height), pix.samples)
    if skew is None:
        skew = float(rng.uniform(-style.max_skew_deg, style.max_skew_deg))
    im = im.rotate(skew, resample=Image.BILINEAR, fillcolor=(255, 255, 255) if style.colour else 255)
    if style.upside_down:
        im = im.rotate(180)
    a = np.asarray(im).astype(np.float32)
    a += rng.normal(0.0, style.noise_sigma, a.shape).astype(np.float32)
    specks = rng.random(a.shape[:2])
    a[specks < style.speckle / 2] = 0
    a[specks > 1 - style.speckle / 2] = 255
    return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8), mode)


def scan_like_pdf(src: str | Path, dst: str | Path, style: ScanStyle | None = None, seed: int = 0,
                  max_pages: int | None = None, blank_pages: tuple[int, ...] = ()) -> int:
    """Write an image-only copy of `src` to `dst`; returns the number of pages written.
    `blank_pages` (0-based) become empty scanned sheets (noise only)."""
    import pymupdf

    style = style or ScanStyle()
    rng = np.random.default_rng(seed)
    with pymupdf.open(src) as doc, pymupdf.open() as out:
        n = doc.page_count if max_pages is None else min(doc.page_count, max_pages)
        for i in range(n):
            page = doc[i]
            if i in blank_pages:
                with pymupdf.open() as empty:
                    empty.new_page(width=page.rect.width, height=page.rect.height)
                    im = scan_page_image(empty[0], style, rng)
            else:
                im = scan_page_image(page, style, rng)
            buf = io.BytesIO()
            im.save(buf, format="JPEG", quality=style.jpeg_quality)
            new = out.new_page(width=page.rect.width, height=page.rect.height)
            new.insert_image(new.rect, stream=buf.getvalue())
        out.save(dst, garbage=3, deflate=True)
        return n
