"""Real text crops cut from PDF pages, as `text` examples of the figure-type classifier.

Figures that are text (example prompts, dialogues, model outputs, algorithms) are common in
papers and look like typeset text, not like anything drawn: so runs of a page's own text blocks
are cut out and rendered like a figure crop, some framed or tinted the way prompt boxes are, some
two side by side. Labelled `text` by construction; taken only from the papers a model trains on.
"""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

DPI = 150  # figure crops are rendered at this resolution


def _runs(page) -> list[tuple[float, float, float, float]]:
    """Rectangles of consecutive text blocks of one column, 40-320 pt tall."""
    blocks = [b for b in page.get_text("blocks") if b[6] == 0 and b[2] - b[0] > 90 and len(b[4].strip()) > 20]
    out = []
    for i in range(len(blocks)):
        x0, y0, x1, y1 = blocks[i][:4]
        for b in blocks[i + 1:]:
            if b[0] > x1 or b[2] < x0 or b[1] < y1 - 2 or b[1] - y1 > 20 or b[3] - y0 > 320:
                break
            x0, x1, y1 = min(x0, b[0]), max(x1, b[2]), b[3]
        if y1 - y0 >= 40:
            out.append((x0, y0, x1, y1))
    return out


def _render(page, rect, rng: random.Random) -> Image.Image:
    import pymupdf

    m = rng.uniform(2, 10)
    clip = pymupdf.Rect(rect[0] - m, rect[1] - m, rect[2] + m, rect[3] + m) & page.rect
    pix = page.get_pixmap(matrix=pymupdf.Matrix(DPI / 72, DPI / 72), clip=clip, alpha=False)
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


def _dress(img: Image.Image, rng: random.Random) -> Image.Image:
    """As a prompt box: a tinted background and/or a (rounded) frame."""
    if rng.random() < 0.35:
        tint = np.array([rng.randint(215, 255) for _ in range(3)], np.float32) / 255.0
        img = Image.fromarray((np.asarray(img, np.float32) * tint).astype(np.uint8))
    if rng.random() < 0.5:
        pad = rng.randint(4, 16)
        canvas = Image.new("RGB", (img.width + 2 * pad, img.height + 2 * pad), "white")
        canvas.paste(img, (pad, pad))
        colour = tuple(rng.randint(0, 200) for _ in range(3))
        ImageDraw.Draw(canvas).rounded_rectangle([1, 1, canvas.width - 2, canvas.height - 2],
                                                 radius=rng.choice([0, 6, 14]), outline=colour,
                                                 width=rng.randint(1, 3))
        img = canvas
    return img


def text_crops(pdf: Path, n: int, rng: random.Random) -> list[Image.Image]:
    """Up to n text crops of one PDF (pages chosen at random)."""
    import pymupdf

    out: list[Image.Image] = []
    with pymupdf.open(pdf) as doc:
        pages = list(range(len(doc)))
        rng.shuffle(pages)
        for p in pages[:n * 2]:
            runs = _runs(doc[p])
            if not runs:
                continue
            img = _dress(_render(doc[p], rng.choice(runs), rng), rng)
            if rng.random() < 0.2:  # two panels side by side (input / output, two turns)
                other = _dress(_render(doc[p], rng.choice(runs), rng), rng)
                h = max(img.height, other.height)
                gap = rng.randint(6, 30)
                both = Image.new("RGB", (img.width + gap + other.width, h), "white")
                both.paste(img, (0, 0))
                both.paste(other, (img.width + gap, 0))
                img = both
            out.append(img)
            if len(out) >= n:
                break
    return out
