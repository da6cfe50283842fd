"""Scanned (or partly scanned) PDF -> the same records as the born-digital extraction.

Pages that need it are OCR'd (in parallel: Tesseract runs as separate processes), their lines
are written into a text-only stand-in document that the born-digital parser reads for title,
abstract, body sentences and references, and their captions and figure regions are found in
the OCR lines and page pixels (and, next to the layout model's graphics, in a second reading of
the page where the first missed a caption). Born-digital pages of a mixed document keep the born-digital
figure extraction.
"""
from __future__ import annotations

import logging
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path

import pymupdf

from app.ingest.captions import facing_page_caption
from app.ingest.scanned import detect, image_layout
from app.ingest.scanned.captions import OcrCaption, find_captions
from app.ingest.scanned.ocr import OcrPage, layer_page, ocr_image, page_grey
from app.ingest.scanned.reread import reread_captions
from app.ingest.scanned.regions import doc_layout, find_regions, graphic_sides, save_crop
from app.ingest.scanned.text_only import text_only
from app.ingest.scanned.textlayer import add_page
from app.ingest.types import ExtractedFigure, ParsedPaper

log = logging.getLogger(__name__)

MIN_READ_CHARS = 200  # less than this over the whole paper: nothing readable


@dataclass
class ScannedResult:
    paper: ParsedPaper
    figures: list[ExtractedFigure] = field(default_factory=list)
    source_kind: str = "scanned"
    status: str = "ok"  # ok | no_text
    error: str = ""
    pages: list[OcrPage | None] = field(default_factory=list)  # per page; None for born-digital pages


def ocr_pages(doc, kinds: list[str], threads: int = 2) -> list[OcrPage | None]:
    """OCR the `image` pages, read the `ocr_layer` pages' own text; None for `text` pages.
    Pages are rendered here (PyMuPDF is not thread-safe) a page or two ahead of the readers."""
    out: list[OcrPage | None] = [None] * len(kinds)
    todo = [i for i, k in enumerate(kinds) if k == detect.IMAGE]
    for i, k in enumerate(kinds):
        if k == detect.OCR_LAYER:
            out[i] = layer_page(doc[i])
    window = max(1, threads) + 1  # pages rendered ahead: no reader waits for a whole batch to end
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        jobs: dict = {}
        for i in todo:
            while len(jobs) >= window:
                done, _ = wait(jobs, return_when=FIRST_COMPLETED)
                for fut in done:
                    out[jobs.pop(fut)] = fut.result()
            try:
                grey, px_per_pt = page_grey(doc[i])
            except Exception as exc:  # noqa: BLE001
                out[i] = OcrPage(width=doc[i].rect.width, height=doc[i].rect.height,
                                 error=f"render failed: {type(exc).__name__}: {exc}")
                continue
            jobs[pool.submit(ocr_image, grey, px_per_pt, doc[i].rect.width, doc[i].rect.height)] = i
        for fut, i in jobs.items():
            out[i] = fut.result()
    return out


def _figures_from_pages(pages: list[OcrPage | None], out_dir: Path, rel: str, thumb_px: int,
                        skip: set[tuple[str, int]]) -> tuple[list[ExtractedFigure], dict[int, list[tuple]]]:
    """Figures of the OCR'd pages, and per page the graphic regions (their text is not prose)."""
    real = [p for p in pages if p is not None]
    graphics: dict[int, list[tuple]] = {}
    if not real:
        return [], graphics
    lay = doc_layout(real)
    captioned: dict[int, tuple[list[OcrCaption], list]] = {}
    for pno, page in enumerate(pages):
        if page is None or not page.lines:
            continue
        caps = find_captions(page.lines)
        # the model's boxes shape the regions of captions, and next to them a lost caption is read
        # again; a captionless page of text lines alone has neither to offer
        looked = page.image is not None and (caps or not text_only(page))
        boxes = image_layout.image_boxes(page.image, page.px_per_pt) if looked else []
        caps = caps + reread_captions(page, caps, boxes, lay.body_h)
        if caps:
            captioned[pno] = (caps, boxes)
    lay.graphics_above = graphic_sides(list(captioned.values()), lay)
    best: dict[tuple[str, int], tuple[float, int, OcrCaption, tuple | None]] = {}
    texts: dict[tuple[str, int], list[tuple[int, str]]] = {}
    for pno, (caps, boxes) in captioned.items():
        page = pages[pno]
        for cap, region in find_regions(page, caps, lay, boxes):
            if region is not None:
                graphics.setdefault(pno, []).append(region)
            key = (cap.kind, cap.number)
            if key in skip:
                continue
            texts.setdefault(key, []).append((pno, cap.text))
            score = cap.score + (3.0 if region is not None else 0.0)
            if key not in best or score > best[key][0]:
                best[key] = (score, pno, cap, region)
    for key, (score, pno, cap, region) in best.items():
        text = facing_page_caption(cap.text, pno, texts[key])
        best[key] = (score, pno, cap if text == cap.text else replace(cap, text=text), region)
    figures = []
    if best:
        out_dir.mkdir(parents=True, exist_ok=True)
    for (kind, number), (_score, pno, cap, region) in sorted(best.items(), key=lambda kv: (kv[1][1], kv[1][2].box[1])):
        page = pages[pno]
        crop = region if region is not None else cap.box
        stem = f"{'fig' if kind == 'figure' else 'tab'}-{number}"
        try:
            img, thumb, w, h = save_crop(page, crop, out_dir, rel, stem, thumb_px)
        except Exception:  # noqa: BLE001
            log.warning("crop of %s %d failed", kind, number, exc_info=True)
            continue
        cb = cap.box
        full = (min(crop[0], cb[0]), min(crop[1], cb[1]), max(crop[2], cb[2]), max(crop[3], cb[3]))
        figures.append(ExtractedFigure(
            kind=kind, label=f"{'Figure' if kind == 'figure' else 'Table'} {number}", number=number,
            caption=cap.text, page=pno + 1, bbox=[round(v, 2) for v in full], image_path=img,
            thumbnail_path=thumb, width=w, height=h, caption_bbox=[round(v, 2) for v in cb],
            region_bbox=[round(v, 2) for v in crop], text_source="ocr"))
    return figures, graphics


def _page_notes(kinds: list[str], pages: list[OcrPage | None]) -> str:
    notes = []
    blank = [i + 1 for i, p in enumerate(pages) if p is not None and not p.lines and not p.error]
    flipped = [i + 1 for i, p in enumerate(pages) if p is not None and p.upside_down]
    failed = [f"{i + 1} ({p.error})" for i, p in enumerate(pages) if p is not None and p.error]
    n_ocr = sum(1 for k in kinds if k == detect.IMAGE)
    if n_ocr:
        notes.append(f"{n_ocr} scanned page{'s' if n_ocr > 1 else ''} read by OCR")
    if blank:
        notes.append(f"no readable text on {_pages(blank)}")
    if flipped:
        notes.append(f"{_pages(flipped)} {'were' if len(flipped) > 1 else 'was'} upside down (turned)")
    if failed:
        notes.append(f"OCR failed on page{'s' if len(failed) > 1 else ''} " + ", ".join(failed[:5]))
    return "; ".join(notes)


def _pages(nums: list[int]) -> str:
    """"page 3" or "pages 3, 4" (the first ten)."""
    listed = ", ".join(map(str, nums[:10])) + (" ..." if len(nums) > 10 else "")
    return f"page{'s' if len(nums) > 1 else ''} {listed}"


def extract_scanned(doc, kinds: list[str], out_dir: Path, rel: str, *, dpi: int = 150, thumb_px: int = 256,
                    max_pages: int | None = None, threads: int = 2) -> ScannedResult:
    """Text and figures of a document some of whose pages need the scanned path."""
    from app.ingest.figures import extract_figures
    from app.ingest.parse import caption_boxes, parse_pdf

    pages = ocr_pages(doc, kinds, threads)
    born: list[ExtractedFigure] = []
    if detect.TEXT in kinds:
        born = extract_figures(doc, out_dir, rel, dpi=dpi, thumb_px=thumb_px, max_pages=max_pages)
    scanned, graphics = _figures_from_pages(pages, out_dir, rel, thumb_px, {(f.kind, f.number) for f in born})
    with pymupdf.open() as stand_in:
        for i, kind in enumerate(kinds):
            if kind == detect.TEXT:
                stand_in.insert_pdf(doc, from_page=i, to_page=i)
            else:
                add_page(stand_in, pages[i], exclude=graphics.get(i, []))
        paper = parse_pdf(stand_in, max_pages=max_pages, captions=caption_boxes(born + scanned))
    paper.n_pages = doc.page_count
    paper.has_text_layer = detect.IMAGE not in kinds
    result = ScannedResult(paper=paper, source_kind=detect.source_kind(kinds), pages=pages)
    result.figures = sorted(born + scanned, key=lambda f: (f.page, f.bbox[1]))
    read = sum(len(p.text) for p in pages if p is not None)
    notes = _page_notes(kinds, pages)
    if read < MIN_READ_CHARS and detect.TEXT not in kinds:
        result.status = "no_text"
        result.error = ("scanned PDF without readable text (blank or unreadable pages)"
                        + (f": {notes}" if notes else ""))
        result.figures = []
    else:
        result.error = notes
    return result
