"""Ingest cost of a scanned paper: the first PDF of exactly N pages (default 10) under a folder
is turned into a scan-like, image-only copy (grey 200 dpi, skew, noise, JPEG; no text layer),
then extracted as ingestion does (OCR of every page, figures, captions, mentions). Prints JSON:
seconds wall and CPU, the load average (other jobs slow the run) and what was found.

    python scripts/bench_scanned.py ../shared/corpus/recsys [--pages 10] [--repeats 1]
    python scripts/bench_scanned.py --paper some-paper.pdf  # that paper, whatever its length
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import app.ingest  # noqa: F401  (PyMuPDF set up as ingestion uses it)
import pymupdf

from app.ingest.extract import extract_pdf
from app.ingest.scanned.simulate import scan_like_pdf


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path, nargs="?")
    ap.add_argument("--paper", type=Path, help="bench this PDF instead of the first of --pages pages in folder")
    ap.add_argument("--pages", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    if args.paper is None and args.folder is None:
        ap.error("give a folder or --paper")
    src = args.paper or next(p for p in sorted(args.folder.rglob("*.pdf")) if pymupdf.open(p).page_count == args.pages)
    with pymupdf.open(src) as doc:
        n_pages = doc.page_count
    work = Path(tempfile.mkdtemp(prefix="figsearch-scan-bench-"))
    scan = work / "scan.pdf"
    scan_like_pdf(src, scan, seed=0)
    runs = []
    for _ in range(args.repeats):
        wall, cpu = time.perf_counter(), time.process_time() + sum(os.times()[2:4])
        ex = extract_pdf(scan, work / "data")
        runs.append({"seconds": round(time.perf_counter() - wall, 2),
                     "cpu_seconds_incl_ocr_children": round(time.process_time() + sum(os.times()[2:4]) - cpu, 2),
                     "load_avg_1min": round(os.getloadavg()[0], 2)})
    print(json.dumps({"source": src.name, "pages": n_pages, "status": ex.status, "source_kind": ex.source_kind,
                      "figures": sum(f.kind == "figure" for f in ex.figures),
                      "tables": sum(f.kind == "table" for f in ex.figures), "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
