"""Decoding an uploaded query image safely: the pixel count is read from the header and checked
before any pixel is decoded (a 400 KB PNG can declare 144 megapixels), the image is decoded once,
at a reduced scale when the format allows it (the route runs it in the bounded render pool,
app/api/heavy.py), and a truncated or undecodable file is an error rather than a blank picture."""
from __future__ import annotations

import io
import warnings

from fastapi import HTTPException
from PIL import Image

# The image models look at 64-128 px squares and colour statistics at 256 px: decode no larger.
QUERY_SIDE = 512


def decode_query_image(body: bytes, max_megapixels: float) -> Image.Image:
    """A decoded PNG/JPEG no larger than QUERY_SIDE; HTTPException 413 when its header declares
    more than `max_megapixels`, 422 when it cannot be decoded."""
    try:
        with warnings.catch_warnings():  # the budget below is ours; PIL's own warning is noise here
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(body), formats=["PNG", "JPEG"])  # reads the header only
    except Image.DecompressionBombError as exc:
        raise HTTPException(413, f"image refused: {exc}")
    except Exception:
        raise HTTPException(422, "cannot read the image: not a valid PNG or JPEG file")
    w, h = img.size
    if w * h > max_megapixels * 1e6:
        raise HTTPException(413, f"image of {w} x {h} pixels ({w * h / 1e6:.1f} megapixels) is over the "
                                 f"{max_megapixels:g} megapixel limit; send a smaller image")
    if w < 1 or h < 1:
        raise HTTPException(422, "the image has no pixels")
    try:
        if img.format == "JPEG":
            img.draft("RGB", (QUERY_SIDE, QUERY_SIDE))  # DCT scaling: decodes at 1/2..1/8 size
        img.load()
    except MemoryError:
        raise HTTPException(413, "image too large to decode")
    except Exception as exc:
        raise HTTPException(422, f"the image is truncated or corrupt ({exc}); send the complete file")
    if max(img.size) > QUERY_SIDE:
        img.thumbnail((QUERY_SIDE, QUERY_SIDE), Image.BILINEAR)
    return img
