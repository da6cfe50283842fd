"""Help label figure boxes by looking, with raw PyMuPDF only (no figsearch code, so the labels do
not inherit the extractor's view).

    python scripts/label_pages.py render PDF OUTDIR         # pages with a caption line, grid every 25 pt
    python scripts/label_pages.py tighten PDF PAGE X0 Y0 X1 Y1  # hand box -> union of the PDF's objects in it
    python scripts/label_pages.py draw PDF PAGE OUT.png X0 Y0 X1 Y1 [...]   # boxes drawn back on the page

`render` writes one PNG per page (110 dpi) whose first line starts "Figure N" / "Fig. N" / "Table N",
with grid lines every 25 pt (labelled every 50 pt). `tighten` prints the union of the words, images
and non-white vector paths whose centre lies inside the hand box and that reach at most 6 pt past it
(raster images whole).
"""
from __future__ import annotations

import re
import sys

import pymupdf

CAP = re.compile(r"^\s*(Figure|Fig\.|Table)\s*\d+", re.I)


def render(pdf: str, out: str) -> None:
    doc = pymupdf.open(pdf)
    for pno, page in enumerate(doc):
        lines = [" ".join(s["text"] for s in ln["spans"]) for b in page.get_text("dict")["blocks"]
                 for ln in b.get("lines", [])]
        caps = [t[:60] for t in lines if CAP.match(t)]
        if not caps:
            continue
        W, H = page.rect.width, page.rect.height
        for v in range(0, int(max(W, H)) + 1, 25):
            w = 0.6 if v % 50 == 0 else 0.25
            col = (1, 0, 0) if v % 50 == 0 else (0.2, 0.6, 1)
            if v <= W:
                page.draw_line((v, 0), (v, H), color=col, width=w)
            if v <= H:
                page.draw_line((0, v), (W, v), color=col, width=w)
            if v % 50 == 0:
                if v <= W:
                    page.insert_text((v + 1, 8), str(v), fontsize=6, color=(1, 0, 0))
                if v <= H:
                    page.insert_text((1, v - 1), str(v), fontsize=6, color=(1, 0, 0))
        page.get_pixmap(dpi=110).save(f"{out}/p{pno + 1:02d}.png")
        print(pno + 1, caps)


def objects(page: pymupdf.Page) -> list[tuple]:
    """(x0, y0, x1, y1, is_image) of the page's words, raster images and non-white vector paths."""
    rects = [tuple(w[:4]) + (False,) for w in page.get_text("words")]
    rects += [tuple(i["bbox"]) + (True,) for i in page.get_image_info()]
    for d in page.get_drawings():
        fill, stroke = d.get("fill"), d.get("color")
        white = all(c is None or min(c) > 0.97 for c in (fill, stroke))
        if not white:
            rects.append(tuple(d["rect"]) + (False,))
    return rects


def tighten(page: pymupdf.Page, box: tuple) -> tuple:
    x0, y0, x1, y1 = box
    # raster images keep their placed rectangle, white margins included
    got = [r for r in objects(page) if x0 <= (r[0] + r[2]) / 2 <= x1 and y0 <= (r[1] + r[3]) / 2 <= y1
           and (r[4] or (r[0] >= x0 - 6 and r[1] >= y0 - 6 and r[2] <= x1 + 6 and r[3] <= y1 + 6))]
    return (round(min(r[0] for r in got), 1), round(min(r[1] for r in got), 1),
            round(max(r[2] for r in got), 1), round(max(r[3] for r in got), 1))


def main() -> None:
    cmd, pdf = sys.argv[1], sys.argv[2]
    if cmd == "render":
        render(pdf, sys.argv[3])
        return
    page = pymupdf.open(pdf)[int(sys.argv[3]) - 1]
    if cmd == "tighten":
        print(list(tighten(page, tuple(map(float, sys.argv[4:8])))))
    elif cmd == "draw":
        nums = list(map(float, sys.argv[5:]))
        for i in range(0, len(nums), 4):
            page.draw_rect(pymupdf.Rect(nums[i:i + 4]), color=(0, 0.7, 0) if i else (1, 0, 0), width=1)
        page.get_pixmap(dpi=110).save(sys.argv[4])


if __name__ == "__main__":
    main()
