"""Write copies of PDFs in another print state, to test that crops do not move with the page's furniture.

    python scripts/perturb_pdfs.py ../shared/corpus/naacl2024 /tmp/lines --kind linenumbers
    python scripts/perturb_pdfs.py ../shared/corpus/recsys /tmp/recsys --kind none --sample 30

Held-out papers come as review copies, preprints and proceedings. Each kind adds what one of them prints,
over the original page content (left untouched):

- `linenumbers`: a review copy's line-number rulers, small grey three-digit numbers at the body's line pitch
  in both margins beside the text block, the left ruler counting down then the right one, on from page
  to page (as ACL review copies print them);
- `stamp`: a preprint server's identifier set vertically in the left margin of the first page;
- `heads`: a short running head at the top and a page number at the foot of every page;
- `none`: an unchanged copy (to snapshot the same sample of originals).

`--sample N` takes a fixed draw of N PDFs (the same N for every kind), so originals and copies match.
Copies keep their paths relative to the source folder, so `crop_diff.py diff` lines them up.
"""
from __future__ import annotations

import argparse
import pathlib
import random
import shutil
import statistics

import pymupdf

GREY = (0.5, 0.5, 0.5)
KINDS = ("linenumbers", "stamp", "heads", "none")


def pick(root: pathlib.Path, sample: int | None) -> list[pathlib.Path]:
    """Every PDF under root, or a fixed draw of `sample` of them (sorted by path before drawing)."""
    pdfs = sorted(root.rglob("*.pdf"))
    if sample is None or sample >= len(pdfs):
        return pdfs
    return sorted(random.Random(2024).sample(pdfs, sample))


def text_area(doc: pymupdf.Document) -> tuple[float, float, float, float, float]:
    """The body's extent over the document (x0, y0, x1, y1, from lines of 30+ characters) and its line
    pitch, so rulers sit in the margins beside it whatever the page layout."""
    x0s, y0s, x1s, y1s, sizes = [], [], [], [], []
    for page in doc:
        for blk in page.get_text("dict")["blocks"]:
            for ln in blk.get("lines", []):
                text = "".join(s["text"] for s in ln["spans"])
                if ln["dir"] != (1.0, 0.0) or len(text.strip()) < 30:
                    continue
                x0, y0, x1, y1 = ln["bbox"]
                x0s.append(x0)
                y0s.append(y0)
                x1s.append(x1)
                y1s.append(y1)
                sizes.append(round(max(s["size"] for s in ln["spans"]), 1))
    if not x0s:
        w, h = doc[0].rect.width, doc[0].rect.height
        return 0.1 * w, 0.1 * h, 0.9 * w, 0.9 * h, 12.0
    q = statistics.quantiles
    return (q(x0s, n=20)[0], q(y0s, n=50)[0], q(x1s, n=20)[-1], q(y1s, n=50)[-1],
            1.22 * statistics.mode(sizes))


def add_line_numbers(doc: pymupdf.Document) -> None:
    x0, y0, x1, y1, pitch = text_area(doc)
    n = 0
    for page in doc:
        for side in ("left", "right"):
            y = y0 + pitch * 0.75
            while y <= y1:
                label = f"{n:03d}"
                w = pymupdf.get_text_length(label, fontname="helv", fontsize=5.5)
                x = x0 - 12 - w if side == "left" else x1 + 12
                page.insert_text((x, y), label, fontname="helv", fontsize=5.5, color=GREY)
                n += 1
                y += pitch


def add_stamp(doc: pymupdf.Document) -> None:
    page = doc[0]
    label = "arXiv:2403.01234v2  [cs.CL]  14 Mar 2024"
    w = pymupdf.get_text_length(label, fontname="tiro", fontsize=20)
    # rotate=90 writes upwards from the insertion point, the glyphs left of it: start low, centred vertically
    page.insert_text((36, (page.rect.height + w) / 2), label, fontname="tiro", fontsize=20, color=GREY, rotate=90)


def add_heads(doc: pymupdf.Document) -> None:
    for i, page in enumerate(doc):
        r = page.rect
        head = "Preprint. Under review."
        w = pymupdf.get_text_length(head, fontname="tiro", fontsize=9)
        page.insert_text(((r.width - w) / 2, 0.045 * r.height), head, fontname="tiro", fontsize=9)
        num = str(i + 1)
        w = pymupdf.get_text_length(num, fontname="tiro", fontsize=9)
        x, y = (r.width - w) / 2, 0.955 * r.height
        if page.get_text("text", clip=pymupdf.Rect(x - 4, y - 10, x + w + 4, y + 3)).strip():
            y = r.height - 8  # a first page's own foot (proceedings, licence) sits there: go below it
        page.insert_text((x, y), num, fontname="tiro", fontsize=9)


def perturb(src: pathlib.Path, dst: pathlib.Path, kind: str) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if kind == "none":
        shutil.copyfile(src, dst)
        return
    doc = pymupdf.open(src)
    if doc.needs_pass or doc.page_count == 0:
        shutil.copyfile(src, dst)
        return
    {"linenumbers": add_line_numbers, "stamp": add_stamp, "heads": add_heads}[kind](doc)
    doc.save(dst, garbage=0, deflate=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=pathlib.Path)
    ap.add_argument("out", type=pathlib.Path)
    ap.add_argument("--kind", choices=KINDS, required=True)
    ap.add_argument("--sample", type=int, default=None, help="a fixed draw of this many PDFs")
    args = ap.parse_args()
    pdfs = pick(args.root, args.sample)
    for src in pdfs:
        perturb(src, args.out / src.relative_to(args.root), args.kind)
    print(f"{len(pdfs)} PDFs ({args.kind}) -> {args.out}")


if __name__ == "__main__":
    main()
