"""A figure whose caption the caption finder misses, or that is drawn inside a picture, is split
off the neighbouring figure's region at that caption."""
from __future__ import annotations

import shutil

import pymupdf
import pytest

from app.ingest.figures import extract_figures
from app.ingest.missed_captions import missing_labels
from app.ingest.layout import build_layout

BODY = ("This is a body paragraph of ordinary running text that discusses the results in detail. "
        "Figure 1 shows the upper plot and Figure 2 the lower one, and the text keeps going for several "
        "lines so that it looks like a real paragraph of a research paper with long lines. ") * 2


def _plot(page, y0: float, y1: float) -> None:
    page.draw_rect(pymupdf.Rect(150, y0, 450, y1), color=(0, 0, 0), width=1)
    page.draw_line((160, y1 - 10), (440, y0 + 10), color=(1, 0, 0), width=1.5)


def _two_figures(path, caption_as_pixels: bool = False) -> None:
    """Two plots stacked in one column. Figure 1's caption follows a long sub-caption line of its
    plot in the same text block (so it reads as that paragraph's next line), or is part of a
    picture (pixels only); Figure 2's caption is ordinary."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    _plot(page, 80, 200)
    text = ("(a) Scores of the first feature value against the second and the third feature values of "
            "the field\nFigure 1. Soft scores in the eighth field.")
    if caption_as_pixels:
        src = pymupdf.open()
        p = src.new_page(width=612, height=792)
        _plot(p, 80, 200)
        p.insert_textbox(pymupdf.Rect(100, 204, 510, 240), text, fontsize=9)
        pix = p.get_pixmap(dpi=200, clip=pymupdf.Rect(100, 75, 510, 240))
        page.insert_image(pymupdf.Rect(100, 75, 510, 240), stream=pix.tobytes("png"))
    else:
        page.insert_textbox(pymupdf.Rect(100, 204, 510, 240), text, fontsize=9)
    _plot(page, 250, 370)
    page.insert_textbox(pymupdf.Rect(72, 380, 540, 400), "Figure 2: Improvements by adding fields.", fontsize=9,
                        align=1)
    page.insert_textbox(pymupdf.Rect(72, 420, 540, 560), BODY, fontsize=10)
    doc.save(path)


def _figures(pdf, out, **kw) -> dict:
    return {f.number: f for f in extract_figures(pymupdf.open(pdf), out, "figures/x", use_layout_model=False, **kw)
            if f.kind == "figure"}


def test_missing_labels_are_the_referred_and_skipped_numbers(tmp_path):
    pdf = tmp_path / "two.pdf"
    _two_figures(pdf)
    st = build_layout(pymupdf.open(pdf))
    assert missing_labels(st, {("figure", 2)}) == [("figure", 1)]
    assert missing_labels(st, {("figure", 1), ("figure", 2)}) == []
    assert missing_labels(st, {("figure", 1), ("figure", 2), ("figure", 4)}) == [("figure", 3)]


def test_caption_inside_the_next_figures_region_splits_it(tmp_path):
    pdf = tmp_path / "two.pdf"
    _two_figures(pdf)
    figs = _figures(pdf, tmp_path / "out")
    assert set(figs) == {1, 2}
    one, two = figs[1], figs[2]
    assert one.caption == "Figure 1. Soft scores in the eighth field."
    assert one.region_bbox[1] <= 81 and 199 <= one.region_bbox[3] < one.caption_bbox[1]  # its plot and sub-caption
    assert two.region_bbox[1] > one.caption_bbox[3] and two.region_bbox[1] >= 249  # only the lower plot
    assert two.region_bbox[3] >= 369


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="needs Debian's tesseract-ocr")
def test_caption_drawn_inside_a_picture_is_read_from_its_pixels(tmp_path):
    pdf = tmp_path / "pixels.pdf"
    _two_figures(pdf, caption_as_pixels=True)
    assert set(_figures(pdf, tmp_path / "unread", read_caption_pixels=False)) == {2}
    figs = _figures(pdf, tmp_path / "read")
    assert set(figs) == {1, 2}
    one, two = figs[1], figs[2]
    assert one.caption.startswith("Figure 1. Soft scores")
    assert one.region_bbox[1] <= 81 and 199 <= one.region_bbox[3] <= one.caption_bbox[1] + 1
    assert two.region_bbox[1] >= one.caption_bbox[3] - 1 and two.region_bbox[3] >= 369  # the picture's rest


def test_table_caption_in_the_block_of_its_last_row_is_found(tmp_path):
    """A table caption a little larger than the rows right above it, in their text block, reads as
    the next line of their paragraph; the body's reference to Table 1 makes it count."""
    pdf = tmp_path / "table.pdf"
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    tw = pymupdf.TextWriter(page.rect)
    rows = ["Model        AUC      LogLoss", "LR           0.71     0.45", "DeepFM       0.80     0.38",
            "Ours         0.83     0.36"]
    for k, row in enumerate(rows):
        tw.append((150, 100 + 11 * k), row, fontsize=8.6)
    tw.append((150, 145), "Table 1: Statistics of the datasets and of the models in", fontsize=9)
    tw.append((150, 156), "each scenario of the test.", fontsize=9)
    tw.write_text(page)
    page.insert_textbox(pymupdf.Rect(72, 300, 540, 420), BODY.replace("Figure 1", "Table 1"), fontsize=10)
    doc.save(pdf)
    found = {(f.kind, f.number): f for f in extract_figures(pymupdf.open(pdf), tmp_path / "out", "figures/x",
                                                             use_layout_model=False)}
    table = found[("table", 1)]
    assert table.caption == "Table 1: Statistics of the datasets and of the models in each scenario of the test."
    assert table.region_bbox[1] <= 94 and 135 <= table.region_bbox[3] <= table.caption_bbox[1]
