"""Rendering a figure crop and its thumbnail to PNG, within a pixel budget, and cutting a panel
out of a rendered crop."""
from __future__ import annotations

import io
import math
import pathlib
from typing import Sequence

from dataclasses import dataclass

import pymupdf
from PIL import Image, ImageDraw

__all__ = ["CROP_PADDING", "MAX_CROP_PIXELS", "RenderedCrop", "crop_zoom", "cut_panel", "panel_box", "render_crop"]

# A crop never exceeds this many pixels: a huge figure (a poster page, a 10,000-pt wide plot) is
# rendered at a lower resolution instead of producing a 250-megapixel image.
MAX_CROP_PIXELS = 4_000_000
CROP_PADDING = 2.0  # points around the region, so strokes on its edge are not cut


def crop_zoom(rect: pymupdf.Rect, dpi: int, max_pixels: int = MAX_CROP_PIXELS) -> float:
    """Scale from points to pixels: `dpi`, lowered when the crop would exceed `max_pixels`."""
    zoom = dpi / 72.0
    area = max(rect.width, 1.0) * max(rect.height, 1.0)
    if area * zoom * zoom > max_pixels:
        zoom = math.sqrt(max_pixels / area)
    return zoom


@dataclass
class RenderedCrop:
    image_path: str  # relative paths of the crop and its thumbnail
    thumbnail_path: str
    width: int
    height: int
    pixels: Image.Image  # the crop as rendered (for reading what its text layer lacks)
    origin: tuple[float, float]  # PDF point at the crop's top-left pixel
    px_per_pt: float


def render_crop(page: pymupdf.Page, dl, rect, out_dir: pathlib.Path, rel_prefix: str, stem: str,
                dpi: int, thumb_px: int, max_pixels: int = MAX_CROP_PIXELS,
                keep_out: Sequence[Sequence[float]] = ()) -> RenderedCrop:
    """Write the crop and its thumbnail. `dl` is the page's display list (shared by the crops of
    one page). Where the padding around the region overlaps a box of `keep_out` (the caption
    printed right under a figure), the padding is left blank, so the crop shows no sliver of
    the caption's first line; the crop's geometry stays the same."""
    region = pymupdf.Rect(rect)
    r = region + (-CROP_PADDING, -CROP_PADDING, CROP_PADDING, CROP_PADDING)
    r &= page.rect
    if r.is_empty or r.width < 1 or r.height < 1:
        r = page.rect
    zoom = crop_zoom(r, dpi, max_pixels)
    pix = dl.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=r, alpha=False)
    if pix.n != 3:
        pix = pymupdf.Pixmap(pymupdf.csRGB, pix)
    img_name, thumb_name = f"{stem}.png", f"{stem}.thumb.png"
    im = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    _blank_padding(im, r, region, zoom, keep_out)
    im.save(out_dir / img_name, compress_level=1)
    thumb = im.copy()
    thumb.thumbnail((thumb_px, thumb_px), Image.BILINEAR, reducing_gap=2.0)
    thumb.save(out_dir / thumb_name, compress_level=3)
    prefix = rel_prefix.rstrip("/")
    return RenderedCrop(f"{prefix}/{img_name}", f"{prefix}/{thumb_name}", pix.width, pix.height, im,
                        (r.x0, r.y0), zoom)


def _blank_padding(im: Image.Image, crop: pymupdf.Rect, region: pymupdf.Rect, zoom: float,
                   keep_out: Sequence[Sequence[float]]) -> None:
    """Paint white the parts of the padding strips (crop minus region) that fall inside a
    keep-out box."""
    if not keep_out:
        return
    strips = [pymupdf.Rect(crop.x0, crop.y0, crop.x1, region.y0), pymupdf.Rect(crop.x0, region.y1, crop.x1, crop.y1),
              pymupdf.Rect(crop.x0, crop.y0, region.x0, crop.y1), pymupdf.Rect(region.x1, crop.y0, crop.x1, crop.y1)]
    draw = ImageDraw.Draw(im)
    for box in keep_out:
        for strip in strips:
            part = strip & pymupdf.Rect(box)
            if part.is_empty:
                continue
            x0, y0 = math.floor((part.x0 - crop.x0) * zoom), math.floor((part.y0 - crop.y0) * zoom)
            x1, y1 = math.ceil((part.x1 - crop.x0) * zoom), math.ceil((part.y1 - crop.y0) * zoom)
            draw.rectangle([x0, y0, x1 - 1, y1 - 1], fill=(255, 255, 255))


def panel_box(size: tuple[int, int], region: Sequence[float], panel: Sequence[float]) -> tuple[int, int, int, int]:
    """The pixel box of a panel (PDF points) in its figure's rendered crop of `size` (width,
    height), which shows `region` padded by CROP_PADDING; the whole crop when the box is empty."""
    width, height = size
    x0, y0 = region[0] - CROP_PADDING, region[1] - CROP_PADDING
    sx = width / max(region[2] - region[0] + 2 * CROP_PADDING, 1.0)
    sy = height / max(region[3] - region[1] + 2 * CROP_PADDING, 1.0)
    box = (max(0, round((panel[0] - x0) * sx)), max(0, round((panel[1] - y0) * sy)),
           min(width, round((panel[2] - x0) * sx)), min(height, round((panel[3] - y0) * sy)))
    if box[2] <= box[0] or box[3] <= box[1]:
        return (0, 0, width, height)
    return box


def cut_panel(crop_png: pathlib.Path, region: Sequence[float], panel: Sequence[float]) -> bytes:
    """A panel (PDF points) cut out of its figure's rendered crop (PNG bytes)."""
    with Image.open(crop_png) as im:
        out = io.BytesIO()
        im.crop(panel_box(im.size, region, panel)).save(out, format="PNG")
    return out.getvalue()
