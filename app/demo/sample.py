"""The demo's sample collection: real papers shipped in `app/demo/papers/` (NAACL 2024, CC BY 4.0;
each paper, its authors and licence in NOTICE.md), one of them ingested only as a scan-like copy
made here by the scan simulator, so the demo shows a paper read by OCR beside born-digital ones."""
from __future__ import annotations

import shutil
from pathlib import Path

PAPERS_DIR = Path(__file__).resolve().parent / "papers"
# Ingested as a scan only (its born-digital copy would make the scan a same-title duplicate).
SCANNED = "data-partitioning-morphological-segmentation.pdf"
SCAN_PAGES = 7  # the pages with its figures and its first tables (OCR is most of the first start's time)


def shipped_papers() -> list[Path]:
    """The shipped PDFs, by name."""
    return sorted(PAPERS_DIR.glob("*.pdf"))


def prepare_sample(dest: Path, seed: int = 0) -> list[Path]:
    """Copy the born-digital sample papers into `dest` and write the scan-like copy under
    `dest/scanned/`; returns the files to ingest."""
    from app.ingest.scanned.simulate import scan_like_pdf

    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for pdf in shipped_papers():
        if pdf.name == SCANNED:
            continue
        target = dest / pdf.name
        shutil.copyfile(pdf, target)
        out.append(target)
    scan = dest / "scanned" / f"{Path(SCANNED).stem}-scan.pdf"
    scan.parent.mkdir(exist_ok=True)
    scan_like_pdf(PAPERS_DIR / SCANNED, scan, seed=seed, max_pages=SCAN_PAGES)
    out.append(scan)
    return out
