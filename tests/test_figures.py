"""Figure/table extraction: a synthetic PDF with known geometry plus two real papers."""
from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from app.ingest.figures import CAPTION_RE, extract_figures, find_captions

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "recsys"
REAL = [
    ("00_Basics/2016 (Microsoft) (CVPR) [ResNet] Deep Residual Learning for Image Recognition.pdf", range(1, 8)),
    ("02_Rank/CTR_Prediction/2017 (Huawei) [DeepFM] A Factorization-Machine based Neural Network for CTR Prediction.pdf",
     [1, 2, 3, 5, 6, 7, 8, 9, 10, 11]),
]
BODY = ("This is a body paragraph of ordinary running text that discusses the results in detail. "
        "Figure 1 shows the plot above and the text keeps going for several lines so that it looks "
        "like a real paragraph of a research paper with long lines of normal body font. ") * 2


def _synthetic(path: Path) -> None:
    """One page: plot (drawings) + caption below, body paragraph, table caption above table text."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.draw_rect(pymupdf.Rect(150, 80, 450, 260), color=(0, 0, 0), width=1)
    page.draw_line((160, 250), (440, 90), color=(1, 0, 0), width=1.5)
    page.draw_line((160, 200), (440, 180), color=(0, 0, 1), width=1.5)
    page.insert_text((290, 275), "epoch", fontsize=7)
    page.insert_textbox(pymupdf.Rect(72, 290, 540, 320), "Figure 1: A plot.", fontsize=9, align=1)
    page.insert_textbox(pymupdf.Rect(72, 340, 540, 460), BODY, fontsize=10)
    page.insert_textbox(pymupdf.Rect(72, 480, 540, 500), "Table 1: Numbers.", fontsize=9, align=1)
    for k, row in enumerate(["Model     AUC     LogLoss", "LR        0.71    0.45", "DeepFM    0.80    0.38"]):
        page.insert_text((220, 520 + 14 * k), row, fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 600, 540, 720), BODY, fontsize=10)
    doc.save(path)


def test_caption_regex_variants():
    for s in ["Figure 3: x", "Fig. 3. x", "FIGURE 3 x", "Fig 3 | x", "Figure 3 - x", "Table 2: y", "TABLE 2. y"]:
        assert CAPTION_RE.match(s), s
    assert CAPTION_RE.match("Figure 3.5 shows") is None


def test_synthetic_page(tmp_path):
    pdf = tmp_path / "synthetic.pdf"
    _synthetic(pdf)
    doc = pymupdf.open(pdf)
    figs = extract_figures(doc, tmp_path / "out", "figures/abc")
    by_key = {(f.kind, f.number): f for f in figs}
    assert [f for f in figs if f.kind == "figure"] == [by_key[("figure", 1)]]
    fig = by_key[("figure", 1)]
    assert fig.label == "Figure 1" and fig.caption.startswith("Figure 1: A plot")
    x0, y0, x1, y1 = fig.bbox
    assert x0 <= 151 and y0 <= 81 and x1 >= 449 and y1 >= 259  # covers the drawing
    assert y1 < 340  # but not the paragraph below
    assert fig.page == 1 and fig.image_path == "figures/abc/fig-1.png"
    assert fig.thumbnail_path == "figures/abc/fig-1.thumb.png"
    assert (tmp_path / "out" / "fig-1.png").stat().st_size > 0
    assert fig.caption_bbox is not None and fig.caption_bbox[1] >= 285
    tab = by_key[("table", 1)]
    assert tab.kind == "table" and tab.label == "Table 1" and tab.image_path.endswith("tab-1.png")
    assert tab.bbox[3] < 600  # table region stops before the next paragraph
    caps = find_captions(doc[0])
    assert sorted((c.kind, c.number) for c in caps) == [("figure", 1), ("table", 1)]


@pytest.mark.parametrize("rel,mentioned", REAL, ids=["resnet", "deepfm"])
def test_real_paper(tmp_path, rel, mentioned):
    pdf = CORPUS / rel
    if not pdf.is_file():
        pytest.skip("shared corpus not present")
    doc = pymupdf.open(pdf)
    figs = extract_figures(doc, tmp_path / "out", "figures/x")
    figures = {f.number: f for f in figs if f.kind == "figure"}
    for n in mentioned:
        assert n in figures, f"Figure {n} missing"
        assert figures[n].caption.lower().startswith(("fig", "figure")), figures[n].caption
    assert len({(f.kind, f.number) for f in figs}) == len(figs)
    for f in figs:
        assert not (f.kind == "figure" and f.caption.lower().startswith("tab"))
        assert f.label.startswith("Figure" if f.kind == "figure" else "Table")
        page = doc[f.page - 1].rect
        x0, y0, x1, y1 = f.bbox
        assert -1 <= x0 < x1 <= page.width + 1 and -1 <= y0 < y1 <= page.height + 1
        out = tmp_path / "out" / Path(f.image_path).name
        assert out.stat().st_size > 0 and f.width > 0 and f.height > 0
        assert (tmp_path / "out" / Path(f.thumbnail_path).name).stat().st_size > 0


def test_margin_watermark_does_not_join_a_figure(tmp_path):
    """A publisher watermark in the top margin (white box + glyphs drawn as paths) and the title
    block under it stay out of the first figure's crop (was: CVPR open-access papers)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.draw_rect(pymupdf.Rect(48, 6, 564, 58), color=None, fill=(1, 1, 1))  # invisible white box
    page.draw_rect(pymupdf.Rect(132, 20, 480, 41), color=None, fill=(0, 0, 0))  # watermark "text"
    page.insert_textbox(pymupdf.Rect(72, 90, 540, 120), "A Title Of The Paper", fontsize=16, align=1)
    page.draw_rect(pymupdf.Rect(330, 200, 540, 330), color=(0, 0, 0), width=1)
    page.draw_line((340, 320), (530, 210), color=(1, 0, 0), width=1.5)
    page.insert_textbox(pymupdf.Rect(320, 340, 545, 370), "Figure 1: Training error of two networks.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 200, 290, 700), BODY, fontsize=10)
    figs = [f for f in extract_figures(_saved(doc, tmp_path / "wm.pdf"), tmp_path / "out", "f") if f.kind == "figure"]
    assert [f.number for f in figs] == [1]
    x0, y0, x1, y1 = figs[0].bbox
    assert y0 >= 190 and x0 >= 300 and y1 <= 372


def test_row_pieces_join_into_one_caption_line():
    """PyMuPDF may report "Fig." "2." "Feasible" ... of one justified row as separate lines."""
    from app.ingest.layout import Line, _merge_row_pieces

    def piece(x0, x1, text, size=9.0, idx=0):
        return Line(x0, 262, x1, 270, text, size, [{"text": text, "size": size, "bbox": (x0, 262, x1, 270),
                                                     "font": "Times", "flags": 0}], 7, idx)

    merged = _merge_row_pieces([piece(315, 328, "Fig.", 8.0), piece(338, 344, "2.", 8.0, 1),
                                piece(352, 383, "Feasible", idx=2), piece(394, 456, "welfare-revenue", idx=3),
                                piece(520, 560, "far", idx=4)])
    assert [m.text for m in merged] == ["Fig. 2. Feasible welfare-revenue", "far"]
    assert CAPTION_RE.match(merged[0].text) and merged[0].size == 9.0


def test_label_on_its_own_line_keeps_its_caption(tmp_path):
    pdf = CORPUS / "03_Ad_Strategy" / "Auction" / "2013 (Microsoft) Ranking and Tradeoffs in Sponsored Search Auctions.pdf"
    if not pdf.is_file():
        pdf = next((p for p in CORPUS.rglob("*Tradeoffs in Sponsored Search*")), None) if CORPUS.is_dir() else None
    if pdf is None or not pdf.is_file():
        pytest.skip("shared corpus not present")
    figs = [f for f in extract_figures(pymupdf.open(pdf), tmp_path / "out", "f") if f.kind == "figure"]
    assert sorted(f.number for f in figs) == list(range(1, 10))
    assert all(len(f.caption.split()) >= 6 for f in figs), [f.caption for f in figs]


def _side_caption_page(path: Path) -> None:
    """Nature-style page: a narrow caption at the top left, its figure beside it on the right (with
    tick labels level with the caption's lines), a body paragraph under both, and a later line
    that refers to a range of supplementary figures."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((50, 70), "Figure 2 Subthreshold field", fontsize=7.5, fontname="hebo")
    cap_lines = ["entrainment. (a) Traces of one neuron for", "three stimulation regimes. (b) Amplitude",
                 "and phase of the deflection for stimulation", "frequencies of 1-100 Hz. Shown for all",
                 "neurons in Supplementary", "Figures 5, 7 and 9."]
    for k, t in enumerate(cap_lines):
        page.insert_text((50, 80 + 9.5 * k), t, fontsize=7.5)
    page.draw_rect(pymupdf.Rect(230, 62, 560, 200), color=(0, 0, 0), width=1)
    page.draw_line((240, 190), (550, 70), color=(1, 0, 0), width=1.5)
    for k in range(5):  # tick labels level with the caption lines
        page.insert_text((215, 75 + 25 * k), f"0.{k}", fontsize=6)
    page.insert_textbox(pymupdf.Rect(50, 230, 300, 700), BODY, fontsize=9)
    page.insert_textbox(pymupdf.Rect(310, 230, 560, 600), BODY, fontsize=9)
    page.insert_text((310, 620), "Figures 11-13. The peak of the phase histogram is attributed", fontsize=9)
    page.insert_textbox(pymupdf.Rect(310, 630, 560, 720), BODY, fontsize=9)
    doc.save(path)


def test_side_caption_takes_the_graphic_beside_it(tmp_path):
    pdf = tmp_path / "side.pdf"
    _side_caption_page(pdf)
    figs = [f for f in extract_figures(pymupdf.open(pdf), tmp_path / "out", "f") if f.kind == "figure"]
    assert [f.number for f in figs] == [2]  # no "Figure 11" from the range reference
    f = figs[0]
    assert f.caption.rstrip().endswith("Figures 5, 7 and 9."), f.caption  # the caption's own lines, not the ticks
    x0, y0, x1, y1 = f.bbox  # graphic + caption
    assert x1 >= 559 and y0 <= 63 and y1 >= 199 and y1 < 230
    assert f.width * 72 / 150 <= x1 - f.caption_bbox[2] + 6  # the crop is the graphic beside the caption


def test_side_captioned_real_paper(tmp_path):
    pdf = CORPUS.parent / "misc" / "f63cb20759fab2514802c3ef2a743c76bf9dc9f1.pdf"
    if not pdf.is_file():
        pytest.skip("shared corpus not present")
    figs = [f for f in extract_figures(pymupdf.open(pdf), tmp_path / "out", "f") if f.kind == "figure"]
    assert sorted(f.number for f in figs) == [1, 2, 3, 4]
    for f in figs:  # the crop is the graphic beside the caption, not the caption itself
        crop_w, crop_h = f.width * 72 / 150, f.height * 72 / 150
        assert crop_w <= f.bbox[2] - f.caption_bbox[2] + 6, (f.number, crop_w, f.bbox, f.caption_bbox)
        assert crop_w > 200 and crop_h > 150


def test_crop_quality_flags_page_numbers_tiny_and_body_text():
    from app.ingest.layout import DocumentLayout, Line, PageLayout
    from app.ingest.regions import crop_quality

    def line(x0, y0, x1, y1, text, body=False):
        return Line(x0, y0, x1, y1, text, 10.0, [{"text": text, "size": 10.0, "bbox": (x0, y0, x1, y1),
                                                  "font": "Times", "flags": 0}], 0, 0, body=body)

    page = PageLayout(0, 612, 792, {}, [line(300, 750, 310, 760, "7"),
                                        line(72, 100, 300, 110, "ordinary body text " * 3, body=True),
                                        line(72, 112, 300, 122, "ordinary body text " * 3, body=True)])
    st = DocumentLayout(pages=[page])
    assert crop_quality("table", (298, 748, 312, 762), False, page, st) == "page_number"
    assert crop_quality("table", (72, 300, 300, 315), False, page, st) == "tiny"
    # a short wide table: a header (one line: its cells set close) over a row of cells is whole,
    # one row alone is not
    page.lines += [line(80, 400, 260, 410, "Metric  CTR  CVR")]
    page.lines += [line(80 + 60 * k, 411, 120 + 60 * k, 421, cell) for k, cell in enumerate(["Gain", "0.12%", "1.27%"])]
    assert crop_quality("table", (78, 398, 262, 422), False, page, st) == "ok"
    assert crop_quality("table", (78, 398, 262, 411), False, page, st) == "tiny"
    # a cell centred beside the two wrapped lines of the next cell (level with neither): a slice of a taller table
    page.lines += [line(80, 505.5, 150, 515.5, "Publisher info"), line(160, 500, 300, 510, "ad section, site, layout"),
                   line(160, 511, 300, 521, "ad size, supply, position")]
    assert crop_quality("table", (78, 498, 302, 522), False, page, st) == "tiny"
    assert crop_quality("figure", (70, 98, 302, 124), False, page, st) == "text_only"
    assert crop_quality("figure", (70, 98, 302, 124), True, page, st) == "ok"
    assert crop_quality("figure", None, False, page, st) == "caption_only"


def test_huge_crops_are_rendered_within_the_pixel_budget():
    from app.ingest.render import MAX_CROP_PIXELS, crop_zoom

    big = pymupdf.Rect(0, 0, 10_000, 10_000)
    z = crop_zoom(big, 150)
    assert (big.width * z) * (big.height * z) <= MAX_CROP_PIXELS * 1.001
    assert crop_zoom(pymupdf.Rect(0, 0, 300, 200), 150) == 150 / 72


def _saved(doc, pdf):
    """The document written to `pdf` and opened again, as ingestion reads it."""
    doc.save(pdf)
    return pymupdf.open(pdf)


def _figures(doc, tmp_path) -> dict:
    """Figures by number, rendered at 72 dpi so a crop's pixel size is its size in points (+4)."""
    return {f.number: f for f in extract_figures(doc, tmp_path / "out", "f", dpi=72) if f.kind == "figure"}


def test_clipped_drawing_does_not_pull_the_region_across_the_page(tmp_path):
    """A path painted through a clip (the hatching of a bar, drawn as a page-wide pattern cut to
    the bar) counts only where it is painted: the figure stays in its column."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.draw_rect(pymupdf.Rect(80, 80, 290, 240), color=(0, 0, 0), width=1)
    page.insert_textbox(pymupdf.Rect(72, 250, 295, 280), "Figure 1: Bars with hatching.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 300, 295, 700), BODY, fontsize=10)
    page.insert_textbox(pymupdf.Rect(320, 60, 540, 700), BODY, fontsize=10)
    # the hatch: a fill covering the whole page top (in PDF coordinates, y up), clipped to one bar
    xref = doc.get_new_xref()
    doc.update_object(xref, "<<>>")
    doc.update_stream(xref, b"q 120 562 40 80 re W n 0 0 1 rg 20 552 570 170 re f Q")
    doc.xref_set_key(page.xref, "Contents", "[" + " ".join(f"{x} 0 R" for x in page.get_contents() + [xref]) + "]")
    f = _figures(_saved(doc, tmp_path / "clip.pdf"), tmp_path)[1]
    x0, y0, x1, y1 = f.bbox
    assert x0 >= 70 and x1 <= 300 and y0 >= 70, f.bbox
    assert f.height - 4 >= 155  # the whole frame


def test_graphic_reaching_under_its_caption_is_kept(tmp_path):
    """A raster image whose white margin runs a little under the caption's first line is still
    the caption's graphic (was: a caption-only crop)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 60, 40), False)
    pix.set_rect(pix.irect, (255, 255, 255))
    pix.set_rect(pymupdf.IRect(5, 5, 55, 30), (200, 30, 30))
    page.insert_image(pymupdf.Rect(80, 80, 290, 204), pixmap=pix)
    page.insert_textbox(pymupdf.Rect(72, 200, 295, 240), "Figure 1: Log-likelihood of two models.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 260, 295, 700), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "img.pdf"), tmp_path)[1]
    assert f.crop_quality == "ok" and f.bbox[1] <= 81
    assert f.height - 4 >= 110  # the image, not the caption


def test_side_by_side_captions_keep_their_own_lines(tmp_path):
    """Two figures side by side, each with a two-line caption whose lines nearly touch the other
    caption's: each caption keeps its lines and its crop stays on its side."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    for x0, n, rest in ((72, 4, "greedy sampling."), (302, 5, "nucleus sampling.")):  # an 8-pt gutter
        page.draw_rect(pymupdf.Rect(x0 + 10, 80, x0 + 210, 200), color=(0, 0, 0), width=1)
        page.insert_textbox(pymupdf.Rect(x0, 210, x0 + 222, 260),
                            f"Figure {n}: Generation speed of speculative decoding with different draft "
                            f"tokens, {rest}", fontsize=10, align=pymupdf.TEXT_ALIGN_JUSTIFY)
    page.insert_textbox(pymupdf.Rect(72, 270, 540, 700), BODY, fontsize=10)
    figs = _figures(_saved(doc, tmp_path / "pair.pdf"), tmp_path)
    assert figs[4].caption.endswith("greedy sampling."), figs[4].caption
    assert figs[5].caption.endswith("nucleus sampling."), figs[5].caption
    assert "nucleus" not in figs[4].caption
    assert figs[4].bbox[2] < 300 and figs[5].bbox[0] > 295


def test_axis_title_between_plot_and_caption_is_kept(tmp_path):
    """An x-axis title set a line below the tick labels (more than the usual label gap) lies
    between the plot and its caption, so it is part of the figure."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.draw_rect(pymupdf.Rect(100, 80, 280, 200), color=(0, 0, 0), width=1)
    for k in range(4):
        page.insert_text((110 + 50 * k, 209), str(2 * k + 2), fontsize=7)
    page.insert_text((160, 226), "Number of Views", fontsize=8)
    page.insert_textbox(pymupdf.Rect(72, 240, 295, 280), "Figure 1: Accuracy with fewer views.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 300, 295, 700), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "axis.pdf"), tmp_path)[1]
    assert f.height - 4 >= 226 - 80 - 1, f.height  # down to the axis title's baseline


def test_caption_row_split_by_a_taller_glyph_keeps_its_text():
    """"Figure 1: 1" then an enclosed number drawn taller, which PyMuPDF reports as a new line of
    the same row: the caption goes on over the rest of the row and the full-width lines below
    (was: a caption of just "Figure 1: 1")."""
    from app.ingest.captions import captions_from_lines
    from app.ingest.layout import DocumentLayout, Line

    def line(x0, y0, x1, y1, text, idx):
        return Line(x0, y0, x1, y1, text, 10.0, [{"text": text, "size": 10.0, "bbox": (x0, y0, x1, y1),
                                                  "font": "Times-Roman", "flags": 0}], 0, idx)

    lines = [line(71, 317, 120, 330, "Figure 1: 1", 0),
             line(111, 317, 524, 335, "\u20dd Closing the knowledge gap at scale. LLMs and novice tutors", 1),
             line(71, 329, 524, 341, "engage with student mistakes, yet they are readily available", 2),
             line(71, 341, 299, 354, "have the pedagogical knowledge.", 3)]
    st = DocumentLayout(pages=[], body_size=10.0, two_column=True, text_x0=71, text_x1=526, page_w=595)
    (cap,) = captions_from_lines(lines, st)
    assert cap.text.endswith("have the pedagogical knowledge."), cap.text
    assert "Closing the knowledge gap" in cap.text


def test_block_beyond_an_empty_band_stays_out_of_the_figure(tmp_path):
    """An uncaptioned block (an algorithm between rules) sits above a figure with three empty
    body lines between them: the figure's crop starts at its own panels."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.draw_line((72, 70), (540, 70), color=(0, 0, 0), width=1)
    for k in range(8):
        page.insert_text((90, 90 + 12 * k), f"x{k} <- update(x{k - 1}, M)", fontsize=9)
    page.draw_line((72, 190), (540, 190), color=(0, 0, 0), width=1)
    for x0 in (80, 250, 420):  # three panels, 40 pt below the block
        page.draw_rect(pymupdf.Rect(x0, 230, x0 + 120, 330), color=(0, 0, 0), width=1)
    page.insert_textbox(pymupdf.Rect(72, 340, 540, 370), "Figure 5: Effect of the rank on three models.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 390, 540, 700), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "algo.pdf"), tmp_path)[5]
    assert f.bbox[1] >= 200, f.bbox
    assert f.height - 4 >= 99


def test_caption_line_starting_with_a_reference_continues_the_caption():
    """"... under different distortions (see" / "Fig. 7 for details).": the second line starts
    like a label but continues an unfinished sentence (was: the caption lost its last line)."""
    from app.ingest.captions import captions_from_lines
    from app.ingest.layout import DocumentLayout, Line

    def line(x0, y0, x1, y1, text, idx):
        return Line(x0, y0, x1, y1, text, 10.0, [{"text": text, "size": 10.0, "bbox": (x0, y0, x1, y1),
                                                  "font": "Times-Roman", "flags": 0}], 0, idx)

    lines = [line(71, 713, 524, 725, "Figure 15: t-SNE visualization of the same utterance under distortions (see", 0),
             line(71, 725, 140, 737, "Fig. 7 for details).", 1)]
    st = DocumentLayout(pages=[], body_size=10.0, two_column=False, text_x0=71, text_x1=526, page_w=595)
    (cap,) = captions_from_lines(lines, st)
    assert cap.text.endswith("(see Fig. 7 for details)."), cap.text


def test_panels_drawn_as_text_join_the_panel_with_a_graphic(tmp_path):
    """A grid of scatter plots drawn as text labels (no paths), with a legend box in the last
    panel: the panels level with it, inside the caption's column span, belong to the figure."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    for x0 in (80, 250, 420):
        for k in range(6):
            page.insert_text((x0 + 7 * k, 240 + 11 * k), "ay ih", fontsize=6)
        page.insert_text((x0 + 30, 320), "(a) Layer", fontsize=8)
    page.draw_rect(pymupdf.Rect(500, 280, 530, 300), color=(0, 0, 0), width=0.5)  # the legend
    page.insert_textbox(pymupdf.Rect(72, 340, 540, 370), "Figure 3: t-SNE of the representations.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 390, 540, 700), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "tsne.pdf"), tmp_path)[3]
    assert f.bbox[0] <= 81 and f.width - 4 >= 530 - 81, (f.bbox, f.width)


def test_image_running_under_its_caption_stays_with_it(tmp_path):
    """Two boxes stacked in one column, each with its caption below; the first is a raster image
    whose blank lower part runs under its caption and a little past it. Each caption keeps its
    own box (was: the first caption took the top of the second box, the second its bottom)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 80, 100), False)
    pix.set_rect(pix.irect, (255, 255, 255))
    pix.set_rect(pymupdf.IRect(4, 4, 76, 68), (210, 240, 210))
    page.insert_image(pymupdf.Rect(100, 70, 500, 410), pixmap=pix)  # box drawn 70-288, blank below
    page.insert_textbox(pymupdf.Rect(72, 314, 540, 344), "Figure 2: An example of the prompt we used to determine "
                        "the summary of a user from the profile, the meta-data and the posts.", fontsize=9)
    page.draw_rect(pymupdf.Rect(100, 345, 500, 540), color=(0.4, 0.7, 0.4), fill=(0.85, 0.95, 0.85))
    for k in range(6):
        page.insert_text((120, 370 + 22 * k), "User 1 Summary: this user is discussing the news.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 549, 540, 579), "Figure 3: An example of the output shown when the model "
                        "was given the summaries of three users and asked which of them agree.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 600, 540, 740), BODY, fontsize=10)
    figs = _figures(_saved(doc, tmp_path / "stacked.pdf"), tmp_path)
    assert figs[2].bbox[1] <= 71 and figs[2].bbox[3] <= 342, figs[2].bbox
    assert figs[3].bbox[1] <= 346 and figs[3].height - 4 >= 190, (figs[3].bbox, figs[3].height)


def test_small_panel_titles_a_line_above_the_graphic_are_kept(tmp_path):
    """"Step 1: ..." titles in small type set a body line above their boxes belong to the figure."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    for k, x0 in enumerate((80, 250, 420)):
        page.insert_text((x0, 82), f"Step {k + 1}: Retrieve", fontsize=8)
        page.draw_rect(pymupdf.Rect(x0, 94, x0 + 110, 200), color=(0, 0, 0), width=1)
    page.insert_textbox(pymupdf.Rect(72, 215, 540, 245), "Figure 1: Overview of the method.", fontsize=10)
    page.insert_textbox(pymupdf.Rect(72, 260, 540, 700), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "steps.pdf"), tmp_path)[1]
    assert f.bbox[1] <= 76, f.bbox


def test_full_page_figure_takes_its_caption_from_the_facing_page(tmp_path):
    """A figure filling its page (a raster image inside the margins, larger than most page
    backgrounds) with only "Fig. 1." under it; its caption text is printed on the page before."""
    doc = pymupdf.open()
    p1 = doc.new_page(width=612, height=792)
    p1.insert_textbox(pymupdf.Rect(60, 70, 550, 500), BODY * 2, fontsize=10)
    p1.insert_textbox(pymupdf.Rect(60, 560, 550, 620), "Fig. 1. A: Mechanically induced calcium wave. Panels show "
                      "the wave spreading from the stimulated cell to its neighbours.", fontsize=9)
    p2 = doc.new_page(width=612, height=792)
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 44, 60), False)  # the rect's aspect
    pix.set_rect(pix.irect, (30, 60, 200))
    p2.insert_image(pymupdf.Rect(64, 78, 548, 740), pixmap=pix)
    p2.insert_text((299, 760), "Fig. 1.", fontsize=9)
    f = _figures(_saved(doc, tmp_path / "fullpage.pdf"), tmp_path)[1]
    assert f.page == 2 and f.crop_quality == "ok"
    assert f.caption.startswith("Fig. 1. A: Mechanically induced"), f.caption
    assert f.height - 4 >= 660


def test_text_beside_a_column_figure_stays_out(tmp_path):
    """Two columns: a figure in the left column, and beside it in the right column equation
    pieces a few points from the graphic's edge; and a one-column page whose figure has body text
    wrapped around it. Neither text joins the crop."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(54, 60, 300, 300), BODY, fontsize=10)
    page.insert_textbox(pymupdf.Rect(312, 60, 558, 300), BODY, fontsize=10)
    page.draw_rect(pymupdf.Rect(80, 320, 303, 450), color=(0, 0, 0), width=1)
    page.insert_text((308, 380), "(s, 2), ..., ET", fontsize=8)
    page.insert_text((540, 380), "(4)", fontsize=8)
    page.insert_textbox(pymupdf.Rect(54, 460, 300, 490), "Figure 4: Customized gate control model.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(54, 500, 300, 740), BODY, fontsize=10)
    page.insert_textbox(pymupdf.Rect(312, 500, 558, 740), BODY, fontsize=10)
    assert _figures(_saved(doc, tmp_path / "beside.pdf"), tmp_path)[4].bbox[2] <= 305
    doc = pymupdf.open()  # one column
    wrap = doc.new_page(width=612, height=792)
    wrap.insert_textbox(pymupdf.Rect(72, 60, 540, 200), BODY, fontsize=10)
    for k in range(9):  # body text wrapped to the left of the plot
        wrap.insert_text((72, 230 + 12 * k), "dropout, classification experiments were done", fontsize=10)
    wrap.draw_rect(pymupdf.Rect(330, 220, 540, 330), color=(0, 0, 0), width=1)
    wrap.insert_textbox(pymupdf.Rect(330, 340, 540, 370), "Figure 10: Effect of varying data set size.", fontsize=9)
    wrap.insert_textbox(pymupdf.Rect(72, 380, 540, 700), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "wrap.pdf"), tmp_path)[10]
    assert f.bbox[0] >= 320, f.bbox


def test_table_caption_stops_at_the_header_row(tmp_path):
    """A table caption above its table ends with its sentence; the header row of separate cells
    right under it is not caption text."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 200), BODY, fontsize=10)
    page.insert_text((200, 220), "Table 2: Performance on CTR prediction.", fontsize=9)
    for k, cells in enumerate((("Company", "Criteo"), ("AUC", "LogLoss", "AUC", "LogLoss"),
                               ("0.8640", "0.02648", "0.7686", "0.47762"))):
        for j, c in enumerate(cells):
            page.insert_text((200 + 60 * j, 231 + 11 * k), c, fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 300, 540, 600), BODY, fontsize=10)
    (tab,) = [f for f in extract_figures(_saved(doc, tmp_path / "tab.pdf"), tmp_path / "out", "f") if f.kind == "table"]
    assert tab.caption == "Table 2: Performance on CTR prediction.", tab.caption


def _half_transparent_image(page, rect) -> None:
    """An image whose left half is transparent: its rect reaches past what it paints."""
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 80, 40), True)
    pix.set_rect(pix.irect, (0, 0, 0, 0))
    pix.set_rect(pymupdf.IRect(40, 0, 80, 40), (200, 30, 30, 255))
    page.insert_image(rect, pixmap=pix)


def test_region_never_crosses_into_the_text_column_beside_it(tmp_path):
    """Two columns; the left one starts with an abstract set a point smaller than the body. A
    figure in the right column is an image whose transparent half runs over the abstract: the
    crop stays in the right column (was: it took the abstract's lines in)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 80, 295, 300), BODY, fontsize=10)  # the abstract
    page.insert_textbox(pymupdf.Rect(72, 320, 295, 740), BODY * 2, fontsize=11)
    _half_transparent_image(page, pymupdf.Rect(130, 100, 540, 300))
    page.insert_textbox(pymupdf.Rect(317, 310, 540, 350), "Figure 1: Overview of the benchmark.", fontsize=10)
    page.insert_textbox(pymupdf.Rect(317, 360, 540, 740), BODY * 2, fontsize=11)
    f = _figures(_saved(doc, tmp_path / "abstract.pdf"), tmp_path)[1]
    assert f.region_bbox[0] >= 300 and f.bbox[0] >= 300, f.region_bbox
    assert f.region_bbox[3] >= 298  # the whole painted half



def test_text_framed_by_rules_next_to_its_caption_is_the_content(tmp_path):
    """A prompt printed as a table: paragraphs in the body font between two rules, the caption
    under the lower rule. The framed text is the table (was: taken for running text, a
    caption-only crop); a grid of ruled rows goes on to its top."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 190), BODY, fontsize=10)
    page.draw_line((72, 210), (540, 210), color=(0, 0, 0), width=0.5)
    page.insert_textbox(pymupdf.Rect(78, 214, 534, 330), BODY, fontsize=10)  # five lines, down to 287
    page.draw_line((72, 292), (540, 292), color=(0, 0, 0), width=0.5)
    page.insert_text((180, 308), "Table 3: The prompt given to the model.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 380, 540, 480), BODY, fontsize=10)
    for y in (500, 560, 620):  # three ruled rows of a grid, a paragraph in each cell
        page.draw_line((72, y), (540, y), color=(0, 0, 0), width=0.5)
        page.draw_line((150, y), (150, y + 60), color=(0, 0, 0), width=0.5)
        page.insert_text((80, y + 14), "P17", fontsize=10)
        page.insert_textbox(pymupdf.Rect(156, y + 3, 534, y + 58), BODY[:240], fontsize=10)
    page.draw_line((72, 680), (540, 680), color=(0, 0, 0), width=0.5)
    page.insert_text((180, 696), "Table 4: Relations and their prompts.", fontsize=9)
    tabs = {f.number: f for f in extract_figures(_saved(doc, tmp_path / "framed.pdf"), tmp_path / "out", "f", dpi=72)
            if f.kind == "table"}
    assert tabs[3].crop_quality == "ok" and tabs[3].region_bbox is not None, tabs[3]
    assert tabs[3].region_bbox[1] <= 216 and tabs[3].region_bbox[3] >= 286, tabs[3].region_bbox
    assert tabs[4].region_bbox is not None and tabs[4].region_bbox[1] <= 502, tabs[4].region_bbox


def test_label_alone_centred_over_its_title_starts_a_table_caption(tmp_path):
    """A two-column page in the style of IEEE journals: the running head, then "TABLE 2" alone on a
    line centred on the page and the title centred under it, then the table. The label starts a
    caption that takes in the title (was: a label with nothing after it was never a caption), and
    the running head is not part of the crop."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((48, 36), "JOURNAL OF CLASS FILES, VOL. 14, NO. 8, AUGUST 2015", fontsize=7)
    page.insert_text((290.5, 60), "TABLE 2", fontsize=8)
    page.insert_text((200, 71), "Main characteristics of the compared methods", fontsize=8)
    for k, row in enumerate((("Method", "Type", "Complexity"), ("SAE", "AE", "O(M)"), ("DNGR", "AE", "O(N)"))):
        for j, cell in enumerate(row):
            page.insert_text((120 + 150 * j, 92 + 11 * k), cell, fontsize=8)
    page.insert_textbox(pymupdf.Rect(48, 140, 300, 740), BODY * 2, fontsize=10)
    page.insert_textbox(pymupdf.Rect(312, 140, 564, 740), BODY * 2, fontsize=10)
    tabs = {f.number: f for f in extract_figures(_saved(doc, tmp_path / "ieee.pdf"), tmp_path / "out", "f", dpi=72)
            if f.kind == "table"}
    assert 2 in tabs, tabs
    assert tabs[2].caption == "TABLE 2 Main characteristics of the compared methods", tabs[2].caption
    assert tabs[2].region_bbox is not None and tabs[2].region_bbox[1] >= 40, tabs[2].region_bbox
    assert tabs[2].region_bbox[3] >= 112, tabs[2].region_bbox


def test_rows_above_a_figure_do_not_pull_it_into_the_next_column(tmp_path):
    """A full-width table under its caption, then body text in the left column and a figure in
    the right one. The figure's region reaches up to the table, whose rows start in the left
    column: they do not pull the crop across into the left column's text."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((100, 72), "Table 2: Results of the compared models on the two datasets, relative to the "
                     "best one.", fontsize=9)
    page.draw_line((54, 84), (558, 84), color=(0, 0, 0), width=0.5)
    for k in range(5):
        page.insert_text((250, 96 + 11 * k), "Model%d  0.8012  0.7012  0.6012  0.5012  0.4012  0.3012  0.2012" % k,
                         fontsize=8)
    page.draw_line((54, 150), (558, 150), color=(0, 0, 0), width=0.5)
    page.insert_textbox(pymupdf.Rect(54, 166, 295, 740), BODY * 3, fontsize=10)
    page.draw_rect(pymupdf.Rect(330, 172, 550, 270), color=(0, 0, 0), width=1)
    page.insert_text((400, 282), "(a) Effect of the margin", fontsize=7)
    page.insert_textbox(pymupdf.Rect(318, 292, 558, 320), "Figure 4: The effect of the margin parameter.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(318, 330, 558, 740), BODY * 2, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "cut.pdf"), tmp_path)[4]
    assert f.region_bbox[0] >= 296 and f.region_bbox[1] >= 148, f.region_bbox
    assert f.region_bbox[3] >= 282, f.region_bbox


PROMPT = ("You are a helpful assistant. Read the passage below and answer the question that follows it "
          "with a short span copied from the passage. If the passage does not contain the answer, say so. ")


def test_two_framed_boxes_set_far_apart_are_one_figure(tmp_path):
    """Two prompt boxes of one width stacked over their caption, four lines apart: one figure
    (was: the empty band between them ended the region, so only the lower box was kept)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(54, 60, 295, 160), BODY, fontsize=10)
    for y in (175, 310):
        page.draw_rect(pymupdf.Rect(54, y, 295, y + 85), color=(0, 0, 0), width=0.8)
        page.insert_textbox(pymupdf.Rect(60, y + 5, 290, y + 83), PROMPT, fontsize=10)
    page.insert_textbox(pymupdf.Rect(54, 405, 295, 430), "Figure 1: The two prompts given to the model.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(54, 440, 295, 740), BODY * 2, fontsize=10)
    page.insert_textbox(pymupdf.Rect(317, 60, 558, 740), BODY * 4, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "boxes.pdf"), tmp_path)[1]
    assert f.region_bbox[1] <= 176 and f.region_bbox[3] >= 394, f.region_bbox
    assert f.region_bbox[1] >= 160, f.region_bbox  # not the paragraph above


def _legend_apart(path: Path) -> None:
    """A plot under a legend row set three and a half lines above it, running text above both."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 150), BODY, fontsize=10)
    for k, name in enumerate(("baseline", "ours", "oracle")):
        page.draw_rect(pymupdf.Rect(200 + 90 * k, 187, 210 + 90 * k, 195), color=None, fill=(0.2 * k, 0.3, 0.8))
        page.insert_text((214 + 90 * k, 195), name, fontsize=7)
    page.draw_rect(pymupdf.Rect(150, 230, 450, 380), color=(0, 0, 0), width=1)
    page.draw_line((160, 370), (440, 240), color=(1, 0, 0), width=1.5)
    page.insert_textbox(pymupdf.Rect(72, 392, 540, 420), "Figure 1: Accuracy of the three methods.", fontsize=9,
                        align=1)
    page.insert_textbox(pymupdf.Rect(72, 430, 540, 700), BODY * 2, fontsize=10)
    doc.save(path)


def test_layout_model_grows_a_doubtful_region_with_the_ink_inside_its_picture(tmp_path, monkeypatch):
    """A legend set apart above its plot: the geometry stops at the empty band and keeps only the
    plot; ink left next to the region makes it doubtful, so the layout model is asked about that
    page, and its picture box over legend and plot brings the legend in, cut to the ink (not the
    model's box edges). A model box reaching over running text adds nothing."""
    from app.ingest import layout_model

    pdf = tmp_path / "legend.pdf"
    _legend_apart(pdf)
    asked = []

    def boxes(picture):
        def page_boxes(page):
            asked.append(page.number)
            return [layout_model.LayoutBox("picture", picture)]
        return page_boxes

    plain = _figures(pymupdf.open(pdf), tmp_path)[1]
    monkeypatch.setattr(layout_model, "page_boxes", boxes((140, 165, 460, 385)))
    alone = {f.number: f for f in extract_figures(pymupdf.open(pdf), tmp_path / "o1", "f", dpi=72,
                                                  use_layout_model=False)}[1]
    assert alone.region_bbox == plain.region_bbox or asked == [0]
    assert alone.region_bbox[1] >= 228, alone.region_bbox  # the geometry alone misses the legend
    fused = _figures(pymupdf.open(pdf), tmp_path)[1]
    assert asked == [0]
    assert 185 <= fused.region_bbox[1] <= 188 and fused.region_bbox[3] >= 379, fused.region_bbox
    assert fused.region_bbox[0] >= 149 and fused.region_bbox[2] <= 451, fused.region_bbox
    monkeypatch.setattr(layout_model, "page_boxes", boxes((60, 60, 550, 385)))
    over_text = _figures(pymupdf.open(pdf), tmp_path)[1]
    assert over_text.region_bbox[1] >= 185, over_text.region_bbox


def test_layout_model_is_not_asked_about_sure_regions(tmp_path, monkeypatch):
    from app.ingest import layout_model

    asked = []
    monkeypatch.setattr(layout_model, "page_boxes", lambda page: asked.append(page.number) or [])
    pdf = tmp_path / "synthetic.pdf"
    _synthetic(pdf)
    figs = extract_figures(pymupdf.open(pdf), tmp_path / "out", "f", dpi=72)
    assert {(f.kind, f.number) for f in figs} == {("figure", 1), ("table", 1)} and asked == []


def test_layout_model_loads_offline_from_the_installed_wheel(tmp_path):
    """pymupdf-layout's ONNX model ships in its wheel: boxes of a page with no network."""
    from app.ingest import layout_model

    assert layout_model.available()
    pdf = tmp_path / "synthetic.pdf"
    _synthetic(pdf)
    boxes = layout_model.page_boxes(pymupdf.open(pdf)[0])
    assert any(b.kind == "caption" and b.rect[1] >= 280 and b.rect[3] <= 325 for b in boxes), boxes


def test_figures_captioned_in_two_columns_are_cut_at_the_gutter(tmp_path):
    """A right-column figure whose picture is placed with a blank part reaching into the left
    column, over a left-column figure of two rows of pictures: each keeps its own column (was:
    the right figure took the left one's top row, which kept only its bottom labels)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    for y in (72, 147):  # the left figure: two rows of two pictures
        for x in (54, 170):
            page.draw_rect(pymupdf.Rect(x, y, x + 113, y + 56), color=None, fill=(0.3, 0.5, 0.7))
    page.insert_text((70, 218), "(c) vectors", fontsize=7)
    page.insert_textbox(pymupdf.Rect(50, 236, 286, 290), "Figure 3: Instance centroid regression method.", fontsize=9)
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 176, 88), False)
    pix.set_rect(pix.irect, (255, 255, 255))
    pix.set_rect(pymupdf.IRect(60, 0, 176, 88), (150, 80, 80))
    page.insert_image(pymupdf.Rect(250, 55, 426, 143), pixmap=pix)  # a raster with a blank left part
    page.draw_rect(pymupdf.Rect(430, 55, 544, 143), color=None, fill=(0.6, 0.6, 0.3))
    page.insert_textbox(pymupdf.Rect(309, 155, 545, 220), "Figure 4: Two cars occluded by trees.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(50, 300, 286, 740), BODY * 2, fontsize=10)
    page.insert_textbox(pymupdf.Rect(309, 235, 545, 740), BODY * 2, fontsize=10)
    figs = _figures(_saved(doc, tmp_path / "cols.pdf"), tmp_path)
    assert figs[3].region_bbox[1] <= 73 and figs[3].region_bbox[0] <= 55 and figs[3].region_bbox[2] <= 300, figs[3]
    assert figs[4].region_bbox[0] >= 284 and figs[4].region_bbox[2] >= 543, figs[4].region_bbox


def test_boxes_of_two_widths_stacked_far_apart_are_one_figure(tmp_path):
    """A prompt box over a narrower answer box centred under it, four lines apart, over their
    caption: one figure (was: only the lower box; the empty band ended the region)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(54, 60, 558, 120), BODY, fontsize=10)
    page.draw_rect(pymupdf.Rect(100, 140, 510, 260), color=(0.2, 0.3, 0.6), width=1)
    page.insert_textbox(pymupdf.Rect(106, 144, 504, 258), PROMPT * 2, fontsize=10)
    page.draw_rect(pymupdf.Rect(130, 300, 480, 390), color=(0.2, 0.3, 0.6), width=1)
    page.insert_textbox(pymupdf.Rect(136, 304, 474, 388), PROMPT * 2, fontsize=10)
    page.insert_textbox(pymupdf.Rect(54, 400, 558, 430), "Figure 3: The prompt and the answer.", fontsize=9, align=1)
    page.insert_textbox(pymupdf.Rect(54, 440, 558, 740), BODY * 3, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "boxes.pdf"), tmp_path)[3]
    assert f.region_bbox[1] <= 141 and f.region_bbox[3] >= 389, f.region_bbox
    assert f.region_bbox[1] >= 121, f.region_bbox  # not the paragraph above


def test_text_overrunning_a_tight_frame_is_inside_it(tmp_path):
    """A prompt in the body font whose frame is drawn a few points inside the text's width: the
    text is the figure's content, not running text that ends the region (was: caption only)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(54, 60, 558, 110), BODY[:400], fontsize=10)
    page.insert_textbox(pymupdf.Rect(100, 130, 510, 200), PROMPT, fontsize=10)
    page.draw_rect(pymupdf.Rect(103, 131, 507, 250), color=(0.2, 0.3, 0.6), width=1)
    page.insert_textbox(pymupdf.Rect(106, 205, 504, 248), "Answer: the short span.", fontsize=10)
    page.insert_textbox(pymupdf.Rect(54, 262, 558, 290), "Figure 3: The prompt.", fontsize=9, align=1)
    page.insert_textbox(pymupdf.Rect(54, 300, 558, 740), BODY * 3, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "tight.pdf"), tmp_path)[3]
    assert f.crop_quality == "ok" and f.region_bbox is not None
    assert f.region_bbox[1] <= 132 and f.region_bbox[3] >= 249, f.region_bbox


def _parse_tree(page, sentence: str, base: float, x0: float) -> None:
    """A sentence in the body font with dependency arcs above it and, for every other word, below."""
    xs, x = [], x0
    for w in sentence.split():
        xs.append(x + pymupdf.get_text_length(w, fontsize=10) / 2)
        page.insert_text((x, base), w, fontsize=10)
        x += pymupdf.get_text_length(w + " ", fontsize=10)
    for a in range(len(xs) - 1):
        b = min(len(xs) - 1, a + 1 + a % 3)
        h = 10 + 9 * (b - a)
        page.draw_bezier((xs[a], base - 10), (xs[a], base - 10 - h), (xs[b], base - 10 - h), (xs[b], base - 10),
                         color=(0, 0, 0), width=0.6)
        if a % 2 == 0:
            page.draw_bezier((xs[a], base + 3), (xs[a], base + 3 + h), (xs[b], base + 3 + h), (xs[b], base + 3),
                             color=(0.8, 0, 0), width=0.6)


def test_parse_tree_sentence_between_its_arcs_is_figure_text(tmp_path):
    """A parse tree over its caption whose sentence, in the body font, spans the column: the
    sentence sits between the tree's arcs, so it is figure text and the crop holds the arcs above
    it too (was: a strip of the lowest arcs under the sentence)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(54, 60, 295, 150), BODY[:300], fontsize=10)
    _parse_tree(page, "The committee approved the new budget for next year", 230, 56)
    page.insert_textbox(pymupdf.Rect(54, 290, 295, 320), "Figure 1: Gold (above) and predicted (below) parses.",
                        fontsize=9)
    page.insert_textbox(pymupdf.Rect(54, 330, 295, 740), BODY * 2, fontsize=10)
    page.insert_textbox(pymupdf.Rect(317, 60, 558, 740), BODY * 4, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "parse.pdf"), tmp_path)[1]
    assert f.region_bbox[1] <= 185 and f.region_bbox[3] >= 265, f.region_bbox
    assert f.region_bbox[1] >= 130 and f.region_bbox[2] <= 300, f.region_bbox  # not the text above or beside


def _dendrogram(page, x_leaf: float, y0: float, n: int, step: float) -> None:
    """Leaves on the right at x_leaf, pairs joined level by level towards the root on the left."""
    nodes = [(x_leaf, y0 + 12 * i) for i in range(n)]
    for i, (_, y) in enumerate(nodes):
        page.insert_text((x_leaf + 5, y + 3), f"item {i}", fontsize=7)
    x = x_leaf
    while len(nodes) > 1:
        x -= step
        joined = []
        for k in range(0, len(nodes), 2):
            (xa, ya), (xb, yb) = nodes[k], nodes[k + 1]
            page.draw_line((xa, ya), (x, ya), color=(0, 0, 0), width=0.6)
            page.draw_line((xb, yb), (x, yb), color=(0, 0, 0), width=0.6)
            page.draw_line((x, ya), (x, yb), color=(0, 0, 0), width=0.6)
            joined.append((x, (ya + yb) / 2))
        nodes = joined


def test_region_cut_through_a_drawing_grows_along_it(tmp_path):
    """A region whose edge cuts the branches of a dendrogram grows to the whole connected drawing
    and its leaf labels, never into running text or another caption."""
    from app.ingest.captions import captions_from_lines
    from app.ingest.layout import build_layout
    from app.ingest.regions import Candidate, extend_cut_drawing

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(54, 60, 558, 120), BODY, fontsize=10)
    _dendrogram(page, 460, 140, 16, 60)  # root at x = 220
    page.insert_textbox(pymupdf.Rect(54, 345, 558, 375), "Figure 2: Clustering of the items.", fontsize=9, align=1)
    page.insert_textbox(pymupdf.Rect(54, 385, 558, 740), BODY * 3, fontsize=10)
    doc = _saved(doc, tmp_path / "dendro.pdf")
    st = build_layout(doc)
    pl = st.pages[0]
    st.mark_body(pl)
    cap = captions_from_lines(pl.lines, st)[0]
    cut = Candidate(cap, 0, (370.0, 135.0, 500.0, 330.0), True, 1.0)  # the right half only
    grown = extend_cut_drawing(cut, pl, st, pl.graphics(), [], [cut.region])
    assert grown is not None and grown[0] <= 221 and grown[2] >= 485, grown
    assert grown[1] >= 130 and grown[3] <= 340, grown
    whole = Candidate(cap, 0, grown, True, 1.0)
    assert extend_cut_drawing(whole, pl, st, pl.graphics(), [], [grown]) is None  # nothing left to grow
    # the grown region would overlap another figure's region: no growth
    assert extend_cut_drawing(cut, pl, st, pl.graphics(), [], [cut.region, (200.0, 200.0, 300.0, 300.0)]) is None


def test_side_caption_in_the_body_font_takes_the_plot_beside_it(tmp_path):
    """A figure across both columns with its caption at the plot's right, set in the body font:
    the crop is the plot (was: the caption alone, its lines taken for running text)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(54, 60, 295, 200), BODY[:500], fontsize=10)
    page.insert_textbox(pymupdf.Rect(317, 60, 558, 200), BODY[:500], fontsize=10)
    page.draw_rect(pymupdf.Rect(60, 215, 330, 380), color=(0, 0, 0), width=1)
    page.draw_line((70, 370), (320, 230), color=(1, 0, 0), width=1.5)
    page.insert_text((150, 392), "number of epochs", fontsize=7)
    page.insert_textbox(pymupdf.Rect(345, 250, 558, 380), "Figure 2: Accuracy over training for the three models; the "
                        "dashed line is the baseline and the shaded band the spread over five runs of each model.",
                        fontsize=10)
    page.insert_textbox(pymupdf.Rect(54, 410, 295, 740), BODY * 2, fontsize=10)
    page.insert_textbox(pymupdf.Rect(317, 410, 558, 740), BODY * 2, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "side.pdf"), tmp_path)[2]
    assert f.crop_quality == "ok" and f.region_bbox is not None
    assert f.region_bbox[0] <= 61 and f.region_bbox[2] <= 340 and f.region_bbox[3] >= 390, f.region_bbox


def test_layout_picture_level_with_a_lone_caption_becomes_its_region(tmp_path):
    """A caption with no region takes the layout model's picture box at its side (level with it),
    cut to the ink inside; a picture far from it adds nothing."""
    from app.ingest.captions import captions_from_lines
    from app.ingest.layout import build_layout
    from app.ingest.layout_model import LayoutBox
    from app.ingest.regions import Candidate, fuse_layout

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.draw_rect(pymupdf.Rect(60, 215, 330, 380), color=(0, 0, 0), width=1)
    page.insert_textbox(pymupdf.Rect(345, 250, 558, 380), "Figure 2: Accuracy over training.", fontsize=10)
    page.insert_textbox(pymupdf.Rect(54, 410, 558, 740), BODY * 2, fontsize=10)
    doc = _saved(doc, tmp_path / "lone.pdf")
    st = build_layout(doc)
    pl = st.pages[0]
    st.mark_body(pl)
    cap = captions_from_lines(pl.lines, st)[0]
    lone = Candidate(cap, 0, None, False, 1.0)
    fused = fuse_layout(lone, [LayoutBox("picture", (55, 210, 335, 385))], pl, st, pl.graphics(), [])
    assert fused is not None and abs(fused[0] - 60) < 2 and abs(fused[3] - 380) < 2, fused
    assert fuse_layout(lone, [LayoutBox("picture", (55, 500, 335, 600))], pl, st, pl.graphics(), []) is None


def test_boxes_stacked_off_centre_far_apart_are_one_figure(tmp_path):
    """A prompt box over a narrower box set off to its right, five lines apart, neither edge nor
    centre aligned: one figure (was: only the lower box)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(54, 60, 558, 120), BODY, fontsize=10)
    page.draw_rect(pymupdf.Rect(80, 140, 450, 240), color=(0.2, 0.5, 0.2), width=1)
    page.insert_textbox(pymupdf.Rect(86, 144, 444, 238), PROMPT * 2, fontsize=10)
    page.draw_rect(pymupdf.Rect(200, 290, 540, 380), color=(0.2, 0.3, 0.6), width=1)
    page.insert_textbox(pymupdf.Rect(206, 294, 534, 378), PROMPT * 2, fontsize=10)
    page.insert_textbox(pymupdf.Rect(54, 392, 558, 420), "Figure 3: The prompt and the answer.", fontsize=9, align=1)
    page.insert_textbox(pymupdf.Rect(54, 430, 558, 740), BODY * 3, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "offset.pdf"), tmp_path)[3]
    assert f.region_bbox[0] <= 81 and f.region_bbox[1] <= 141 and f.region_bbox[3] >= 379, f.region_bbox
    assert f.region_bbox[1] >= 121, f.region_bbox  # not the paragraph above


def test_caption_wider_than_half_the_text_takes_the_plot_beside_it(tmp_path):
    """A one-column page with a small plot at the left of a caption a little wider than half the
    text: the crop is the plot (was: the caption alone)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 200), BODY[:500], fontsize=10)
    page.draw_rect(pymupdf.Rect(72, 215, 280, 380), color=(0, 0, 0), width=1)
    page.draw_line((80, 370), (270, 230), color=(1, 0, 0), width=1.5)
    page.insert_textbox(pymupdf.Rect(290, 250, 540, 380), "Figure 2: Accuracy over training for the three models; the "
                        "dashed line is the baseline and the shaded band the spread over five runs of each model.",
                        fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 400, 540, 740), BODY * 2, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "side.pdf"), tmp_path)[2]
    assert f.crop_quality == "ok" and f.region_bbox is not None
    assert f.region_bbox[0] <= 73 and f.region_bbox[2] <= 285 and f.region_bbox[1] <= 216, f.region_bbox


def test_sentence_under_arcs_right_over_its_caption_is_figure_text(tmp_path):
    """A dependency tree whose arcs are all drawn over its sentence, the sentence in the body font
    right above the caption: the crop holds the sentence too (was: the arcs alone, the sentence
    taken for running text)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(54, 60, 295, 150), BODY[:300], fontsize=10)
    xs, x = [], 56.0
    for w in "The committee approved the new budget for next year".split():
        xs.append(x + pymupdf.get_text_length(w, fontsize=10) / 2)
        page.insert_text((x, 240), w, fontsize=10)
        x += pymupdf.get_text_length(w + " ", fontsize=10)
    for a in range(len(xs) - 1):
        b = min(len(xs) - 1, a + 1 + a % 3)
        h = 10 + 9 * (b - a)
        page.draw_bezier((xs[a], 230), (xs[a], 230 - h), (xs[b], 230 - h), (xs[b], 230), color=(0, 0, 0), width=0.6)
        page.insert_text(((xs[a] + xs[b]) / 2 - 6, 230 - 0.75 * h), "nsubj", fontsize=6)
    page.insert_textbox(pymupdf.Rect(54, 260, 295, 290), "Figure 1: A dependency parse of the sentence.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(54, 300, 295, 740), BODY * 2, fontsize=10)
    page.insert_textbox(pymupdf.Rect(317, 60, 558, 740), BODY * 4, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "dep.pdf"), tmp_path)[1]
    assert f.region_bbox[1] <= 200 and f.region_bbox[3] >= 242, f.region_bbox
    assert f.region_bbox[1] >= 150 and f.region_bbox[2] <= 300, f.region_bbox  # not the text above or beside


def _plot(page, rect: tuple) -> None:
    page.draw_rect(pymupdf.Rect(rect), color=(0, 0, 0), width=1)
    page.draw_line((rect[0] + 4, rect[3] - 5), (rect[2] - 5, rect[1] + 5), color=(1, 0, 0), width=1.5)


@pytest.mark.parametrize("plot_left", [True, False])
def test_plot_and_caption_side_by_side_in_one_column(tmp_path, plot_left):
    """A small plot and its caption side by side inside one column of a two-column page, the other
    column's text level with both: the crop is the plot (was: the caption alone)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(54, 60, 295, 150), BODY[:300], fontsize=10)
    plot, cap = ((56, 165, 165, 270), (175, 180, 295, 270)) if plot_left else ((185, 165, 294, 270), (54, 180, 175, 270))
    _plot(page, plot)
    page.insert_textbox(pymupdf.Rect(cap), "Figure 2: Accuracy over training; the dashed line is the baseline.",
                        fontsize=9)
    page.insert_textbox(pymupdf.Rect(54, 285, 295, 740), BODY * 2, fontsize=10)
    page.insert_textbox(pymupdf.Rect(317, 60, 558, 740), BODY * 4, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "side.pdf"), tmp_path)[2]
    assert f.crop_quality == "ok" and f.region_bbox is not None
    assert all(abs(a - b) <= 2 for a, b in zip(f.region_bbox, plot)), f.region_bbox


def test_picture_keeps_its_part_level_with_a_caption_beside_it(tmp_path):
    """A picture whose lower part stands beside its caption (the caption at its right, level with
    its bottom): the crop is the whole picture (was: cut at the caption's top)."""
    import io

    from PIL import Image, ImageDraw

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 150), BODY[:400], fontsize=10)
    im = Image.new("RGB", (300, 300), "white")
    ImageDraw.Draw(im).ellipse((20, 20, 280, 280), outline="black", width=6)
    buf = io.BytesIO()
    im.save(buf, "PNG")
    page.insert_image(pymupdf.Rect(72, 165, 272, 365), stream=buf.getvalue())
    page.insert_textbox(pymupdf.Rect(290, 300, 540, 365), "Figure 2: A circle drawn by the model when asked for a "
                        "round shape.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 380, 540, 740), BODY * 2, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "beside.pdf"), tmp_path)[2]
    assert f.region_bbox is not None and f.region_bbox[3] >= 364 and f.region_bbox[1] <= 166, f.region_bbox


def test_plot_keeps_the_words_printed_inside_it(tmp_path):
    """A born-digital plot's axis titles and legend are text: the figure keeps them (what it
    plots), without its caption or the body text around it; tick values are kept as printed."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.draw_rect(pymupdf.Rect(110, 80, 290, 200), color=(0, 0, 0), width=1)
    page.draw_line((120, 190), (280, 100), color=(1, 0, 0), width=1.5)
    page.insert_text((200, 95), "DeepFM", fontsize=7)  # legend entry
    for k in range(4):
        page.insert_text((120 + 50 * k, 209), str(2 ** (k + 5)), fontsize=7)
    page.insert_text((160, 222), "Embedding size", fontsize=8)
    page.insert_text((100, 170), "Recall@20", fontsize=8, rotate=90)
    page.insert_textbox(pymupdf.Rect(72, 240, 295, 280), "Figure 1: Quality against dimension.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 300, 295, 700), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "words.pdf"), tmp_path)[1]
    words = f.region_text.split()
    for w in ("DeepFM", "Embedding", "size", "Recall@20", "32", "256"):
        assert w in words, f.region_text
    assert "Quality" not in words and "paragraph" not in words, f.region_text


def test_raster_figure_has_no_region_words(tmp_path):
    """A figure that is a picture has no text layer inside: no words, not the caption's."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    _half_transparent_image(page, pymupdf.Rect(110, 80, 290, 200))
    page.insert_textbox(pymupdf.Rect(72, 210, 295, 250), "Figure 1: A photograph of a cat.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 300, 295, 700), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "raster.pdf"), tmp_path)[1]
    assert f.region_bbox is not None and f.region_text == ""



def test_words_of_a_font_coded_below_the_letters_are_read_back(tmp_path):
    """Drawing programs often embed a font whose codes run 29 below the letters ("7DVN" for
    "Task"); when most of a figure's words are no word of the rest of its page but are once shifted
    back, the figure keeps the letters."""
    printed = ["Task", "Samples", "Domain", "Shared", "Network", "Parameters"]
    coded = ["".join(chr(ord(c) - 29) for c in w) for w in printed]
    assert coded[0] == "7DVN"
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.draw_rect(pymupdf.Rect(110, 80, 290, 200), color=(0, 0, 0), width=1)
    for k, w in enumerate(coded):
        page.insert_text((120 + 55 * (k % 3), 110 + 30 * (k // 3)), w, fontsize=8)
    page.insert_textbox(pymupdf.Rect(72, 240, 295, 280), "Figure 1: Sharing between tasks.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 300, 295, 700), BODY + " Each task has samples of a domain; a shared "
                        "network holds the parameters.", fontsize=10)
    f = _figures(_saved(doc, tmp_path / "coded.pdf"), tmp_path)[1]
    assert f.region_text.split() == printed, f.region_text
    # words of the page's own language are never shifted, even when few of them are on the page
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.draw_rect(pymupdf.Rect(110, 80, 290, 200), color=(0, 0, 0), width=1)
    page.insert_text((120, 110), "Steam Tmall Electronic HR@10 NDCG@10", fontsize=8)
    page.insert_textbox(pymupdf.Rect(72, 240, 295, 280), "Figure 1: Matching steps.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 300, 295, 700), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "plain.pdf"), tmp_path)[1]
    assert f.region_text == "Steam Tmall Electronic HR@10 NDCG@10"


def test_crop_padding_shows_no_sliver_of_the_caption_under_it(tmp_path):
    """The stored crop pads its region by a couple of points; where the caption starts right
    under the region, that padding is left blank instead of showing the caption's first line."""
    import numpy as np
    from app.ingest.render import CROP_PADDING, render_crop

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.draw_rect(pymupdf.Rect(80, 80, 290, 200), color=(0, 0, 0), fill=(0.6, 0.6, 0.9), width=1)
    caption = pymupdf.Rect(80, 200.5, 290, 230)
    page.draw_rect(caption, color=None, fill=(0, 0, 0))  # stands for the caption's ink
    region = (79.5, 79.5, 290.5, 200.5)

    def bottom_strip(keep_out):
        out = tmp_path / str(len(keep_out))
        out.mkdir()
        rc = render_crop(page, page.get_displaylist(), region, out, "f", "fig-1", 144, 64, keep_out=keep_out)
        px = np.asarray(rc.pixels)
        rows = int(CROP_PADDING * rc.px_per_pt) - 1
        return px[-rows:], px[: px.shape[0] - rows - 2]

    padded, _ = bottom_strip(())
    assert padded.min() < 50  # without keep-out the caption shows in the padding
    blank, body = bottom_strip([tuple(caption)])
    assert blank.min() == 255
    assert (body[..., 2] > body[..., 0] + 20).mean() > 0.5  # the region itself is unchanged


def _draw_image(doc, page, name: str, ops: str) -> None:
    """Append PDF operators (PDF coordinates, y up) that draw the page's image `name`."""
    xref = doc.get_new_xref()
    doc.update_object(xref, "<<>>")
    doc.update_stream(xref, ops.replace("IMG", name).encode())
    doc.xref_set_key(page.xref, "Contents", "[" + " ".join(f"{x} 0 R" for x in page.get_contents() + [xref]) + "]")


def _image_page(doc, at: tuple, width=400, height=500):
    """A page holding one small image (drawn at `at`), and the image's resource name."""
    page = doc.new_page(width=width, height=height)
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 30, 20), False)
    pix.set_rect(pix.irect, (200, 30, 30))
    page.insert_image(pymupdf.Rect(at), pixmap=pix)
    return page, page.get_images()[0][7]


def test_image_boxes_are_what_the_page_shows_of_them(tmp_path):
    """An image counts where it is painted: flipped or rotated by its matrix it keeps its box, cut
    by a clip it counts only inside the clip, clipped away entirely (MuPDF reports the empty
    intersection as an inverted box) or off the page it counts not at all."""
    from app.ingest.layout import page_graphics

    doc = pymupdf.open()
    page, name = _image_page(doc, (10, 40, 40, 60))
    _draw_image(doc, page, name, "q 100 0 0 -50 50 250 cm /IMG Do Q\n"   # flipped: page y 250..300
                "q 0 60 -40 0 300 300 cm /IMG Do Q\n"                    # rotated: x 260..300, y 140..200
                "q 210 100 30 20 re W n 100 0 0 50 200 90 cm /IMG Do Q\n"  # trimmed: x 210..240, y 380..400
                "q 10 10 5 5 re W n 100 0 0 50 200 350 cm /IMG Do Q\n"   # clipped away
                "q 100 0 0 50 420 100 cm /IMG Do Q\n")                   # off the page
    doc = _saved(doc, tmp_path / "images.pdf")
    boxes = sorted(tuple(round(float(v)) for v in r) for r in page_graphics(doc[0]))
    assert boxes == [(10, 40, 40, 60), (50, 250, 150, 300), (210, 380, 240, 400), (260, 140, 300, 200)], boxes


def test_image_clipped_away_beside_a_plot_does_not_stretch_its_crop(tmp_path):
    """A figure exported with an image its clip hides (drawn just past the plot's right edge, out
    to the page margin): the crop ends at the plot."""
    doc = pymupdf.open()
    page, name = _image_page(doc, (340, 90, 400, 130), 612, 792)  # a raster inside the plot
    page.draw_rect(pymupdf.Rect(330, 80, 540, 240), color=(0, 0, 0), width=1)
    page.insert_textbox(pymupdf.Rect(320, 250, 545, 280), "Figure 1: Two curves.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(320, 300, 545, 700), BODY, fontsize=10)
    page.insert_textbox(pymupdf.Rect(72, 60, 295, 700), BODY, fontsize=10)
    # the image at x 535..585, y 150..160 (page), in a clip that lies left of it
    _draw_image(doc, page, name, "q 400 600 30 30 re W n 50 0 0 10 535 632 cm /IMG Do Q")
    f = _figures(_saved(doc, tmp_path / "hidden.pdf"), tmp_path)[1]
    assert f.bbox[2] <= 546, f.bbox


def test_table_top_rule_near_the_page_head_is_kept_and_the_running_head_rule_is_not(tmp_path):
    """A table set at the head of an A4 page has its top rule inside the band where running heads
    and their rules sit: the rule opens the table (its header row starts right under it), so the
    crop keeps it; the rule under the running head (text right over it, the table a line below)
    stays page decoration."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((60, 52), "Proceedings of a conference on something, pages 1-10", fontsize=8)
    page.draw_line((56, 55), (539, 55), color=(0, 0, 0), width=0.5)  # the running head's rule
    page.draw_line((110, 71), (485, 71), color=(0, 0, 0), width=0.8)  # the table's top rule
    for k, row in enumerate(["Model       AUC      LogLoss", "LR          0.71     0.45", "DeepFM      0.80     0.38"]):
        page.insert_text((170, 84 + 13 * k), row, fontsize=9)  # the header row's top 4 points under the rule
        if k == 0:
            page.draw_line((110, 88), (485, 88), color=(0, 0, 0), width=0.5)
    page.draw_line((110, 115), (485, 115), color=(0, 0, 0), width=0.8)
    page.insert_textbox(pymupdf.Rect(56, 125, 539, 150), "Table 1: Results of the two models.", fontsize=9, align=1)
    page.insert_textbox(pymupdf.Rect(56, 160, 539, 400), BODY * 2, fontsize=10)
    doc = _saved(doc, tmp_path / "head.pdf")
    tabs = {f.number: f for f in extract_figures(doc, tmp_path / "out", "f", dpi=72) if f.kind == "table"}
    r = tabs[1].region_bbox
    assert r is not None and 69 <= r[1] <= 71.5, r  # from the top rule (was: the header row's text)
    assert r[0] <= 111 and r[2] >= 484 and r[3] <= 120, r


def test_dashed_frame_lines_beside_a_diagram_are_the_figure(tmp_path):
    """The sides of a dashed frame, drawn as vertical hairlines set a little apart from the boxes
    of a diagram, are the figure's: the crop takes them (was: ended at the boxes, a hairline has no
    width to overlap the caption's column with)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(54, 60, 295, 700), BODY * 4, fontsize=10)
    for x in (345, 410, 475):
        page.draw_rect(pymupdf.Rect(x, 95, x + 50, 175), color=(0, 0, 0), width=1)
    for x in (333, 537):
        page.draw_line((x, 85), (x, 150), color=(0, 0, 0), width=0.8, dashes="[4 3] 0")
    page.insert_textbox(pymupdf.Rect(320, 190, 558, 215), "Figure 1: Three stages of the model.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(320, 225, 558, 700), BODY * 2, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "dashed.pdf"), tmp_path)[1]
    r = f.region_bbox
    assert r[0] <= 333.5 and r[2] >= 536.5, r
    assert r[1] <= 85.5 and r[3] <= 185, r


def test_ruled_table_grows_along_its_uprights_past_a_cell_of_running_text(tmp_path):
    """A ruled table whose second row holds a cell of several long lines in the body font (it
    reads as a paragraph, so the first guess stops above it): the region's edge cuts the table's
    uprights, and the region grows along them to the bottom rule, the cell's lines being held
    between the uprights left and right of them however wide the cell (was: the first row alone)."""
    cell = ("age, gender, device type, geo info, app info, browser, colo (host location), page view, "
            "previous clearing price, number of visits, conversion, impressions, clicks, previous winning "
            "statistics and the history of the user on the site")
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(54, 60, 295, 740), BODY * 4, fontsize=10)
    page.insert_textbox(pymupdf.Rect(318, 80, 558, 106), "Table 1: The features that set the value of an ad slot.",
                        fontsize=10)
    for y in (110, 134, 214):
        page.draw_line((318, y), (565, y), color=(0, 0, 0), width=0.5)
    for x in (318, 390, 565):
        page.draw_line((x, 110), (x, 214), color=(0, 0, 0), width=0.5)
    page.insert_text((322, 125), "Publisher", fontsize=10)
    page.insert_text((394, 125), "site, ad size, ad position", fontsize=10)
    page.insert_text((322, 150), "User", fontsize=10)
    page.insert_textbox(pymupdf.Rect(393, 137, 562, 212), cell, fontsize=10)
    page.insert_textbox(pymupdf.Rect(318, 230, 558, 740), BODY * 3, fontsize=10)
    doc = _saved(doc, tmp_path / "ruled.pdf")
    tabs = {f.number: f for f in extract_figures(doc, tmp_path / "out", "f", dpi=72) if f.kind == "table"}
    r = tabs[1].region_bbox
    assert r is not None and r[1] <= 111 and r[3] >= 213, r
    assert r[3] <= 225 and r[0] >= 317 and r[2] <= 566, r  # not into the paragraph under it


def _ruled_table(page, top: float, rows: list[str]) -> float:
    """A table of text rows between a top and a bottom rule, from `top`; returns its bottom."""
    page.draw_line((340, top), (540, top), color=(0, 0, 0), width=0.6)
    for k, row in enumerate(rows):
        page.insert_text((350, top + 11 + 11 * k), row, fontsize=8)
    bottom = top + 4 + 11 * len(rows)
    page.draw_line((340, bottom), (540, bottom), color=(0, 0, 0), width=0.6)
    return bottom


def test_stacked_tables_never_share_one_region(tmp_path):
    """Two ruled tables stacked in a column, each with its caption below it, the second table a
    little nearer the first caption than the first table is: the first caption's content below is
    the second's content above. Both captions take the same side, the one that gives each a
    table (was: both claimed the second table and the first was left a strip)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(54, 60, 295, 700), BODY * 4, fontsize=10)
    page.insert_textbox(pymupdf.Rect(320, 60, 558, 400), BODY, fontsize=10)
    b1 = _ruled_table(page, 420, ["Model   AUC   LogLoss", "LR      0.71  0.45", "FM      0.80  0.38"])
    page.insert_textbox(pymupdf.Rect(320, b1 + 12, 558, b1 + 40), "Table 1. Test error of the models on the first set.", fontsize=9)
    b2 = _ruled_table(page, b1 + 30, ["Rate    0.9   0.95", "1e-2    2.59  2.58", "1e-4    2.05  1.99"])
    page.insert_textbox(pymupdf.Rect(320, b2 + 12, 558, b2 + 40), "Table 2. Test error for each setting of the rate.", fontsize=9)
    tabs = {f.number: f for f in extract_figures(_saved(doc, tmp_path / "stack.pdf"), tmp_path / "out", "f", dpi=72)
            if f.kind == "table"}
    r1, r2 = tabs[1].region_bbox, tabs[2].region_bbox
    assert r1 is not None and 418 <= r1[1] and r1[3] <= b1 + 2, r1
    assert r2 is not None and b1 + 28 <= r2[1] and r2[3] <= b2 + 2, r2


def test_bold_table_caption_ends_before_its_first_row(tmp_path):
    """A table caption set wholly in bold with no closing stop, right over the table's rows in the
    regular face: the rows are the table's, not caption text; nor is a header row of cells set
    far apart in the caption's own face (was: the caption swallowed the rows)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(54, 300, 295, 700), BODY * 2, fontsize=10)
    page.insert_text((100, 70), "Table 2: Learning rate parameter", fontsize=9, fontname="hebo")
    for k, (a, b) in enumerate((("Learning rate schema", "Parameters"), ("Per-coordinate", "0.1"), ("Global", "0.01"))):
        page.insert_text((100, 84 + 12 * k), a, fontsize=9)
        page.insert_text((210, 84 + 12 * k), b, fontsize=9)
    page.insert_text((330, 70), "Table 3: Results for direct ads", fontsize=9, fontname="hebo")
    for k, (a, b, c) in enumerate((("Pacing", "Off", "On"), ("Life time", "13.5", "19.5"), ("Spend", "-", "+7.7%"))):
        font = "hebo" if k == 0 else "helv"
        page.insert_text((310, 84 + 12 * k), a, fontsize=9, fontname=font)
        page.insert_text((420, 84 + 12 * k), b, fontsize=9, fontname=font)
        page.insert_text((460, 84 + 12 * k), c, fontsize=9, fontname=font)
    page.insert_textbox(pymupdf.Rect(320, 300, 558, 700), BODY * 2, fontsize=10)
    tabs = {f.number: f for f in extract_figures(_saved(doc, tmp_path / "bold.pdf"), tmp_path / "out", "f", dpi=72)
            if f.kind == "table"}
    assert tabs[2].caption == "Table 2: Learning rate parameter", tabs[2].caption
    assert tabs[3].caption == "Table 3: Results for direct ads", tabs[3].caption
    assert tabs[2].region_bbox is not None and tabs[2].region_bbox[1] <= 76, tabs[2].region_bbox
    assert tabs[3].region_bbox is not None and tabs[3].region_bbox[1] <= 76, tabs[3].region_bbox


def _code_and_plot(page, frame: tuple) -> None:
    """A Sweave listing flush left over a centred plot frame with tick marks and a curve."""
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 120), BODY[:300], fontsize=10)
    page.insert_text((72, 135), "R> plot(scus)", fontsize=10, fontname="cour")
    page.draw_rect(pymupdf.Rect(frame), color=(0, 0, 0), width=1)
    page.draw_line((frame[0] + 5, frame[3] - 5), (frame[2] - 5, frame[1] + 10), color=(0, 0, 0), width=1)


def test_plot_title_centred_over_its_plot_is_kept(tmp_path):
    """A plot's title (R's main title: bold, about the body's size, centred over the plot a line
    and a half above its frame) is part of the figure; the listing flush left above it is not
    (was: the crop started at the frame)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    _code_and_plot(page, (200, 190, 420, 330))
    page.insert_text((262, 172), "M-fluctuation test", fontsize=11, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 345, 540, 375), "Figure 3: Empirical fluctuation process.", fontsize=10, align=1)
    page.insert_textbox(pymupdf.Rect(72, 395, 540, 700), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "title.pdf"), tmp_path)[3]
    assert f.region_bbox is not None and f.region_bbox[1] <= 163, f.region_bbox  # the title's top
    assert f.region_bbox[1] >= 140, f.region_bbox  # not the listing


def test_text_left_of_a_side_caption_is_kept_below_its_top(tmp_path):
    """A small plot with its caption at its right, the caption level with the plot's lower edge:
    the x-axis tick labels and title under the frame stand beside the caption and stay in the
    figure (was: cut at the caption's top)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(125, 60, 470, 120), BODY[:300], fontsize=10)
    page.draw_rect(pymupdf.Rect(150, 133, 307, 289), color=(0, 0, 0), width=1)
    for k in range(5):
        x = 158 + 35 * k
        page.draw_line((x, 289), (x, 292), color=(0, 0, 0), width=0.5)
        page.insert_text((x - 4, 301), f"{k - 1}.0", fontsize=5.3)
    page.insert_text((220, 313), "NMDS1", fontsize=5.3)
    page.insert_textbox(pymupdf.Rect(325, 291, 470, 320), "Figure 1: Default ordination plot.", fontsize=10)
    page.insert_textbox(pymupdf.Rect(125, 335, 470, 700), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "beside.pdf"), tmp_path)[1]
    assert f.region_bbox is not None and f.region_bbox[3] >= 312, f.region_bbox  # down to the axis title
    assert f.region_bbox[2] <= 320, f.region_bbox  # not the caption


def test_justified_first_row_of_a_narrow_caption_keeps_its_words():
    """A justified narrow caption whose first row's words stand far apart (pieces of one text
    block, gaps wider than a span gap) keeps every word of that row (was: "Figure 1: plot.")."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((325, 300), "Figure 1:", fontsize=10)
    page.insert_text((381, 300), "Default", fontsize=10)
    page.insert_text((425, 300), "ordination", fontsize=10)
    page.insert_text((325, 312), "plot.", fontsize=10)
    (cap,) = find_captions(page)
    assert cap.text == "Figure 1: Default ordination plot.", cap.text


def test_table_caption_stops_at_the_rule_over_its_header(tmp_path):
    """A table caption above its table ends at the table's top rule: the spanning header and the
    column header under the rule are the table's (was: caption text, and the crop began under them)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 120), BODY[:300], fontsize=10)
    page.insert_text((172, 142), "Table 1: alzheimer data: Smoking and Alzheimer's disease.", fontsize=10)
    for y in (144.8, 146.8):
        page.draw_line((198, y), (413, y), color=(0, 0, 0), width=0.4)
    page.insert_text((299, 156), "No. of cigarettes daily", fontsize=10)
    page.insert_text((288, 168), "None   <10   10-20   >20", fontsize=10)
    page.draw_line((198, 171), (413, 171), color=(0, 0, 0), width=0.4)
    for k, (name, vals) in enumerate((("Alzheimer", "91 7 15 21"), ("Other dementias", "55 7 16 9"))):
        page.insert_text((204, 183 + 12 * k), name, fontsize=10)
        for j, v in enumerate(vals.split()):
            page.insert_text((301 + 33 * j, 183 + 12 * k), v, fontsize=10)
    page.draw_line((198, 210), (413, 210), color=(0, 0, 0), width=0.4)
    page.insert_textbox(pymupdf.Rect(72, 230, 540, 600), BODY, fontsize=10)
    (tab,) = [f for f in extract_figures(_saved(doc, tmp_path / "rule.pdf"), tmp_path / "out", "f")
              if f.kind == "table"]
    assert tab.caption == "Table 1: alzheimer data: Smoking and Alzheimer's disease.", tab.caption
    assert tab.region_bbox is not None and tab.region_bbox[1] <= 146, tab.region_bbox


def test_landscape_figure_keeps_its_rotated_labels(tmp_path):
    """A figure set sideways on its page (rotated caption): the crop holds the drawings and the
    rotated labels around them (was: the drawings alone)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.draw_rect(pymupdf.Rect(150, 150, 400, 650), color=(0, 0, 0), width=1)
    page.draw_line((160, 640), (390, 160), color=(1, 0, 0), width=1.5)
    page.insert_text((140, 450), "Pearson residuals", fontsize=7, rotate=90)
    page.insert_text((420, 650), "Figure 2: Mosaic plots for the arthritis data.", fontsize=10, rotate=90)
    f = _figures(_saved(doc, tmp_path / "landscape.pdf"), tmp_path)[2]
    assert f.region_bbox is not None and f.region_bbox[0] <= 136, f.region_bbox
    assert f.region_bbox[2] <= 405, f.region_bbox  # not the caption


def test_table_wrapped_in_text_keeps_its_caption_and_rows(tmp_path):
    """A small table set at the right of a paragraph that wraps around it: the caption does not
    run on into the paragraph's lines beside it, and the paragraph beside the table does not end
    the table's region (was: a caption with body text in it and a crop of the header alone)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(108, 60, 505, 480), BODY * 2, fontsize=10)
    for rect, text in (((108, 492, 376, 578), BODY[:280]), ((108, 582, 376, 652), BODY[:220])):
        assert page.insert_textbox(pymupdf.Rect(rect), text, fontsize=10) >= 0  # the paragraph beside the table
    page.insert_textbox(pymupdf.Rect(385, 492, 505, 545), "Table 1: Mean of error per category of MTL algorithms.",
                        fontsize=10)
    for y in (551.3, 578.4, 638.2):
        page.draw_line((385.2, y), (505.3, y), color=(0, 0, 0), width=0.5)
    page.insert_text((470, 570), "Average error", fontsize=10)
    for k, (name, v) in enumerate((("Single task", "8.77"), ("Uniform scaling", "9.62"), ("GradNorm", "8.44"),
                                   ("Ours", "8.25"))):
        page.insert_text((390, 592 + 13 * k), name, fontsize=10)
        page.insert_text((478, 592 + 13 * k), v, fontsize=10)
    page.insert_textbox(pymupdf.Rect(108, 660, 505, 740), BODY[:300], fontsize=10)
    (tab,) = [f for f in extract_figures(_saved(doc, tmp_path / "wrap.pdf"), tmp_path / "out", "f")
              if f.kind == "table"]
    assert tab.caption == "Table 1: Mean of error per category of MTL algorithms.", tab.caption
    assert tab.region_bbox is not None and tab.region_bbox[1] <= 552 and tab.region_bbox[3] >= 637, tab.region_bbox
    assert tab.region_bbox[0] >= 380, tab.region_bbox  # not the paragraph beside it


def test_y_axis_title_two_lines_out_is_kept(tmp_path):
    """R sets a y-axis title about two lines out from the axis with the rotated tick labels between:
    the title stands more than a word gap beside the labels and is still the plot's."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 120), BODY[:300], fontsize=10)
    page.draw_rect(pymupdf.Rect(120, 135, 305, 330), color=(0, 0, 0), width=1)
    page.draw_line((125, 320), (300, 140), color=(0, 0, 0), width=1)
    for k in range(4):
        page.insert_text((115, 320 - 50 * k), f"{50 * k}", fontsize=9.6, rotate=90)
    page.insert_text((92, 260), "rank residual", fontsize=9.6, rotate=90)  # 10 pt beside the tick labels
    page.insert_textbox(pymupdf.Rect(72, 345, 540, 370), "Figure 5: Species accumulation curve.", fontsize=10)
    page.insert_textbox(pymupdf.Rect(72, 390, 540, 700), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "ytitle.pdf"), tmp_path)[5]
    assert f.region_bbox is not None and f.region_bbox[0] <= 83, f.region_bbox


def test_plot_title_kept_beside_the_next_columns_title(tmp_path):
    """Two plots side by side in two columns, each with its own title at the same height: each
    title is alone on its row within its own plot's width and stays with its plot."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    for x0, n in ((72, 5), (304, 6)):
        page.insert_text((x0 + 65, 126), "Procrustes errors", fontsize=10, fontname="hebo")
        page.draw_rect(pymupdf.Rect(x0 + 20, 140, x0 + 210, 330), color=(0, 0, 0), width=1)
        page.draw_line((x0 + 25, 325), (x0 + 205, 145), color=(0, 0, 0), width=1)
        page.insert_textbox(pymupdf.Rect(x0, 345, x0 + 226, 380), f"Figure {n}: Procrustes rotation of the scores.",
                            fontsize=10)
        page.insert_textbox(pymupdf.Rect(x0, 395, x0 + 226, 740), BODY, fontsize=10)
    figs = _figures(_saved(doc, tmp_path / "titles.pdf"), tmp_path)
    for n in (5, 6):
        assert figs[n].region_bbox is not None and figs[n].region_bbox[1] <= 120, (n, figs[n].region_bbox)


def test_diagram_rows_set_far_apart_stay_one_figure(tmp_path):
    """A figure of four state diagrams in two rows, the upper row set 75 points over the lower one
    on an otherwise empty float page: the upper row is the same figure's (was: one row kept)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    for x, name in ((133, "Alive"), (235, "Dead")):  # upper row: two boxes and an arrow
        page.draw_rect(pymupdf.Rect(x, 296, x + 36, 315), color=(0, 0, 0), width=0.8)
        page.insert_text((x + 5, 309), name, fontsize=10, fontname="helv")
    page.draw_line((172, 305), (230, 305), color=(0, 0, 0), width=0.8)
    for y, name in ((390, "D1"), (435, "D2"), (480, "D3")):  # lower row: a box with three arrows out
        page.draw_rect(pymupdf.Rect(241, y, 266, y + 18), color=(0, 0, 0), width=0.8)
        page.insert_text((246, y + 13), name, fontsize=10, fontname="helv")
        page.draw_line((164, 444), (236, y + 9), color=(0, 0, 0), width=0.8)
    page.draw_rect(pymupdf.Rect(141, 435, 159, 453), color=(0, 0, 0), width=0.8)
    page.insert_text((146, 448), "A", fontsize=10, fontname="helv")
    page.insert_textbox(pymupdf.Rect(98, 528, 514, 570), "Figure 1: Four multi-state models. The upper panel "
                        "depicts simple survival, the lower one competing risks.", fontsize=10)
    f = _figures(_saved(doc, tmp_path / "rows.pdf"), tmp_path)[1]
    assert f.region_bbox is not None and f.region_bbox[1] <= 297, f.region_bbox  # the upper row's top


def test_listing_past_a_wide_gap_stays_out_of_the_figure(tmp_path):
    """Past an empty band wider than three lines, code (lines of several words) over a drawing is
    not the figure's, even on a page with nothing else above it."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.draw_rect(pymupdf.Rect(133, 296, 169, 315), color=(0, 0, 0), width=0.8)
    page.insert_text((174, 309), "R> fit <- coxph(Surv(time, status) ~ age)", fontsize=9, fontname="cour")
    page.draw_rect(pymupdf.Rect(141, 390, 400, 500), color=(0, 0, 0), width=0.8)
    page.insert_text((150, 440), "A", fontsize=10, fontname="helv")
    page.insert_textbox(pymupdf.Rect(98, 528, 514, 570), "Figure 1: A plot of the fit.", fontsize=10)
    f = _figures(_saved(doc, tmp_path / "listing.pdf"), tmp_path)[1]
    assert f.region_bbox is not None and f.region_bbox[1] >= 385, f.region_bbox


def test_caption_like_label_inside_a_drawing_is_not_a_caption(tmp_path):
    """Set names "Table 1", "Table 2" written inside a framed Venn diagram are words of the drawing,
    not table captions; the figure's caption beside the diagram gets the diagram (was: four
    tables, and the figure a caption-only crop)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(98, 60, 514, 140), BODY[:300], fontsize=10)
    page.draw_rect(pymupdf.Rect(162, 164, 332, 335), color=(0, 0, 0), width=0.8)
    page.draw_circle((215, 222), 46, color=(0.8, 0, 0.5), width=0.8)
    page.draw_circle((279, 222), 46, color=(0, 0.5, 0.8), width=0.8)
    page.insert_text((163, 183), "Table 1", fontsize=6.7, fontname="helv")
    page.insert_text((311, 183), "Table 2", fontsize=6.7, fontname="helv")
    page.insert_text((282, 328), "Residuals = [h]", fontsize=5.7, fontname="helv")
    page.insert_textbox(pymupdf.Rect(351, 232, 478, 300), "Figure 2: Two canonical analyses and one "
                        "subtraction are needed to estimate the fractions.", fontsize=10)
    page.insert_textbox(pymupdf.Rect(98, 380, 514, 560), BODY, fontsize=10)
    figs = extract_figures(_saved(doc, tmp_path / "venn.pdf"), tmp_path / "out", "f", dpi=72)
    assert not [f for f in figs if f.kind == "table"], [(f.kind, f.number) for f in figs]
    f = {f.number: f for f in figs if f.kind == "figure"}[2]
    assert f.region_bbox is not None and f.region_bbox[0] <= 165 and f.region_bbox[1] <= 168, f.region_bbox


CODE = ["R> fit <- glm(y ~ x, family = poisson)", "R> summary(fit)$coefficients", "            Estimate Std. Error",
        "(Intercept)   0.3121     0.0412"]


@pytest.mark.parametrize("shaded", [False, True])
def test_code_chunk_under_a_plot_ends_the_figure(tmp_path, shaded):
    """A plot with its caption above it and a code chunk (typewriter lines, bare or on a grey box as
    wide as the column) set close under it: the listing ends the figure as a paragraph would (was:
    the crop grew down into the code)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 120), BODY[:300], fontsize=10)
    page.insert_textbox(pymupdf.Rect(72, 130, 540, 160), "Figure 1: Counts by group and the fitted means.",
                        fontsize=10, align=1)
    _plot(page, (200, 165, 420, 320))
    if shaded:
        page.draw_rect(pymupdf.Rect(68, 326, 544, 382), color=None, fill=(0.95, 0.95, 0.95))
    for i, text in enumerate(CODE):
        page.insert_text((72, 336 + 11 * i), text, fontsize=9, fontname="cour")
    page.insert_textbox(pymupdf.Rect(72, 395, 540, 700), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "chunk.pdf"), tmp_path)[1]
    assert f.region_bbox is not None and f.region_bbox[1] <= 166, f.region_bbox
    assert f.region_bbox[3] <= 326 and f.region_bbox[0] >= 195, f.region_bbox  # not the code


def test_figure_that_is_a_listing_keeps_its_code(tmp_path):
    """A figure made of a code listing alone: the listing is the figure, not its bound."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 120), BODY[:300], fontsize=10)
    for i, text in enumerate(CODE):
        page.insert_text((100, 145 + 11 * i), text, fontsize=9, fontname="cour")
    page.insert_textbox(pymupdf.Rect(72, 195, 540, 225), "Figure 2: Fitting the model.", fontsize=10, align=1)
    page.insert_textbox(pymupdf.Rect(72, 245, 540, 600), BODY, fontsize=10)
    figs = extract_figures(_saved(doc, tmp_path / "code.pdf"), tmp_path / "out", "f", dpi=72)
    f = {f.number: f for f in figs if f.kind == "figure"}[2]
    assert f.region_bbox is not None and f.region_bbox[1] <= 140 and f.region_bbox[3] >= 175, f.region_bbox


def test_framed_code_set_into_a_figure_stays_in_it(tmp_path):
    """Code in an outlined box over the plot it makes, one caption under both: the framed listing is
    part of the figure (a shaded or bare chunk there would end it)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 120), BODY[:300], fontsize=10)
    page.draw_rect(pymupdf.Rect(180, 135, 440, 190), color=(0.5, 0.5, 1), fill=(1, 1, 1), width=0.8)
    for i, text in enumerate(CODE[:3]):
        page.insert_text((186, 150 + 11 * i), text, fontsize=9, fontname="cour")
    _plot(page, (200, 230, 420, 360))
    page.insert_textbox(pymupdf.Rect(72, 375, 540, 400), "Figure 4: The code and the plot it draws.",
                        fontsize=10, align=1)
    page.insert_textbox(pymupdf.Rect(72, 420, 540, 700), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "framed.pdf"), tmp_path)[4]
    assert f.region_bbox is not None and f.region_bbox[1] <= 136, f.region_bbox


def test_algorithm_between_two_thick_rules_is_the_figure(tmp_path):
    """An algorithm set as text between two thick rules, its caption a float's skip (two lines)
    under the lower rule, its steps spaced wider than three lines around a display: the text
    between the rules is the figure (was: only the lower rule was taken)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 180), BODY, fontsize=10)
    page.draw_rect(pymupdf.Rect(100, 200, 500, 202.8), color=None, fill=(0, 0, 0))
    page.insert_text((100, 222), "Initialize f(x) to be a constant", fontsize=10)
    page.insert_textbox(pymupdf.Rect(112, 232, 500, 262), BODY[:150], fontsize=10)  # a step of two long lines
    page.insert_text((250, 300), "z = - d Psi / d f", fontsize=10)  # a display 35 points below
    page.insert_text((112, 322), "4. Update the estimate of f(x)", fontsize=10)
    page.draw_rect(pymupdf.Rect(100, 335, 500, 337.8), color=None, fill=(0, 0, 0))
    page.insert_textbox(pymupdf.Rect(72, 360, 540, 380), "Figure 1: The boosting algorithm", fontsize=10, align=1)
    page.insert_textbox(pymupdf.Rect(72, 400, 540, 600), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "algo.pdf"), tmp_path)[1]
    assert f.region_bbox is not None and f.region_bbox[1] <= 201 and f.region_bbox[3] >= 337, f.region_bbox


def _listing(page, x: float, y: float) -> None:
    for i, text in enumerate(CODE[:3]):
        page.insert_text((x, y + 11 * i), text, fontsize=9, fontname="cour")


def test_listing_next_to_its_caption_beats_a_note_box_beyond(tmp_path):
    """A short listing right above its caption (the document's side for figures) and a shaded note
    box a little further below the caption: the listing is the figure (was: the note box, the one
    side with a graphic, was taken)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 160), BODY, fontsize=10)
    _plot(page, (200, 175, 420, 300))
    page.insert_textbox(pymupdf.Rect(72, 310, 540, 330), "Figure 1: A plot of the fit.", fontsize=10, align=1)
    page.insert_textbox(pymupdf.Rect(72, 350, 540, 440), BODY[:300], fontsize=10)
    _listing(page, 150, 462)
    page.insert_textbox(pymupdf.Rect(72, 498, 540, 518), "Figure 2: The constraints file.", fontsize=10, align=1)
    page.draw_rect(pymupdf.Rect(72, 530, 540, 565), color=None, fill=(1, 0.97, 0.7))
    page.insert_textbox(pymupdf.Rect(100, 535, 530, 560), "Initial values must also comply with these constraints.",
                        fontsize=8)
    page.insert_textbox(pymupdf.Rect(72, 585, 540, 720), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "note.pdf"), tmp_path)[2]
    assert f.region_bbox is not None and 450 <= f.region_bbox[1] <= 456 and f.region_bbox[3] <= 490, f.region_bbox


def test_listing_stops_at_the_sentence_that_introduces_it(tmp_path):
    """A one-line sentence in the body font right above a listing that is a figure (too short to
    count as a paragraph) is not part of the listing (was: taken in)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 160), BODY, fontsize=10)
    page.insert_text((90, 180), "Figure 4 gives an example file.", fontsize=10)
    _listing(page, 150, 200)
    page.insert_textbox(pymupdf.Rect(72, 236, 540, 256), "Figure 4: The initial configurations file.",
                        fontsize=10, align=1)
    page.insert_textbox(pymupdf.Rect(72, 275, 540, 500), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "intro.pdf"), tmp_path)[4]
    assert f.region_bbox is not None and 188 <= f.region_bbox[1] <= 194, f.region_bbox


def test_table_body_under_a_booktabs_mid_rule_is_the_table(tmp_path):
    """A table with its caption right over the top rule, a header row, a mid rule and rows of two
    cells whose gap joins them into long lines that read as a paragraph, then the bottom rule:
    the rows down to the bottom rule are the table (was: only the header row)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 160), BODY, fontsize=10)
    page.insert_text((200, 182), "Table 1: Translation of relative paths.", fontsize=10)
    page.draw_line((90, 186), (520, 186), color=(0, 0, 0), width=0.8)
    page.insert_text((180, 199), "Relative path appears as", fontsize=10, fontname="hebo")
    page.insert_text((320, 199), "is relative to", fontsize=10, fontname="hebo")
    page.draw_line((90, 204), (520, 204), color=(0, 0, 0), width=0.5)
    rows = [("a string within the instances file", "the instances directory"),
            ("code within the runner or the evaluator", "the execution directory"),
            ("the value of the log file option given", "the execution directory"),
            ("the value of other options in the file", "the directory containing the file")]
    for k, (a, b) in enumerate(rows):
        w = pymupdf.get_text_length(a, fontsize=10)
        page.insert_text((309 - w, 218 + 12 * k), a, fontsize=10)
        page.insert_text((320, 218 + 12 * k), b, fontsize=10)
    page.draw_line((90, 270), (520, 270), color=(0, 0, 0), width=0.8)
    page.insert_textbox(pymupdf.Rect(72, 300, 540, 500), BODY, fontsize=10)
    doc = _saved(doc, tmp_path / "booktabs.pdf")
    tabs = {f.number: f for f in extract_figures(doc, tmp_path / "out", "f", dpi=72) if f.kind == "table"}
    assert tabs[1].region_bbox is not None and tabs[1].region_bbox[3] >= 269, tabs[1].region_bbox


def test_table_caption_ends_before_a_row_of_column_names(tmp_path):
    """A finished table caption over a header row of column names set apart, in the caption's own
    font and with no rule between: the names are the table's, not caption text (was: the caption
    took the row and the crop lost it)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 160), BODY, fontsize=10)
    page.insert_text((160, 180), "Table 1: Taxonomic contributions to the components.", fontsize=10)
    for x, name in ((250, "Mean"), (291, "m1"), (321, "m2"), (351, "m3"), (381, "diff")):  # 16 points apart
        page.insert_text((x, 195), name, fontsize=10)
    page.draw_line((160, 200), (450, 200), color=(0, 0, 0), width=0.4)
    for k, name in enumerate(("Bacteroides", "Prevotella", "Dorea")):
        page.insert_text((162, 212 + 12 * k), name, fontsize=10)
        for x in (250, 291, 321, 351, 381):
            page.insert_text((x, 212 + 12 * k), "0.17", fontsize=10)
    page.insert_textbox(pymupdf.Rect(72, 260, 540, 500), BODY, fontsize=10)
    doc = _saved(doc, tmp_path / "header.pdf")
    t = {f.number: f for f in extract_figures(doc, tmp_path / "out", "f", dpi=72) if f.kind == "table"}[1]
    assert t.caption == "Table 1: Taxonomic contributions to the components.", t.caption
    assert t.region_bbox is not None and t.region_bbox[1] <= 186, t.region_bbox


def test_row_of_panel_titles_over_two_plots_is_kept(tmp_path):
    """Two plots side by side under one caption, each with its title centred over its own frame on
    one row: both titles are the figure's (was: two lines on one row were taken for a table row
    and left out)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    for x0 in (120, 340):
        page.insert_text((x0 + 30, 130), "Tukey (ordinary)", fontsize=10, fontname="helv")
        _plot(page, (x0, 145, x0 + 150, 260))
    page.insert_textbox(pymupdf.Rect(72, 285, 540, 315), "Figure 2: Simultaneous confidence intervals.",
                        fontsize=10, align=1)
    page.insert_textbox(pymupdf.Rect(72, 330, 540, 600), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "panels.pdf"), tmp_path)[2]
    assert f.region_bbox is not None and f.region_bbox[1] <= 122, f.region_bbox


def _shaded_chunk(page, y: float, lines: list[str]) -> None:
    """A grey code chunk as wide as the column, each line set as a text block of its own (as
    knitr's highlighted chunks are)."""
    page.draw_rect(pymupdf.Rect(68, y, 544, y + 8 + 14 * len(lines)), color=None, fill=(0.95, 0.95, 0.95))
    for i, text in enumerate(lines):
        page.insert_text((72, y + 14 + 14 * i), text, fontsize=8, fontname="cour")


def test_small_plot_over_its_caption_with_a_code_chunk_under_it(tmp_path):
    """A plot 40 points high above its caption and a grey code chunk set a little closer under the
    caption: the chunk's shading is no drawing, so the plot is the figure (was: the chunk)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 40, 540, 80), BODY[:200], fontsize=10)
    _plot(page, (240, 92, 375, 131))
    page.insert_text((136, 166), "Figure 1: Plot of original ranges", fontsize=8)
    _shaded_chunk(page, 190, CODE * 2)
    page.insert_textbox(pymupdf.Rect(72, 330, 540, 600), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "ranges.pdf"), tmp_path)[1]
    assert f.region_bbox is not None and f.region_bbox[1] <= 93 and f.region_bbox[3] <= 140, f.region_bbox


def test_code_chunks_do_not_set_the_body_size(tmp_path):
    """A manual whose code chunks (8 pt typewriter) outweigh its prose (10 pt): the body size is the
    prose's (was: the code's, so no paragraph was body text and crops ran through the prose)."""
    from app.ingest.layout import build_layout

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 200), BODY, fontsize=10)
    _shaded_chunk(page, 220, CODE * 6)
    st = build_layout(_saved(doc, tmp_path / "manual.pdf"))
    assert st.body_size == 10, st.body_size


def test_bar_plot_beside_its_caption_reaching_past_it(tmp_path):
    """A bar plot at the left of a narrow side caption, its top tick label over the caption's first
    line and its bottom one under the caption's last: the plot is the figure (was: one tick label,
    the plot's end found above or below the caption)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(125, 200, 468, 340), BODY, fontsize=10)
    page.draw_line((182.6, 396), (182.6, 543), color=(0, 0, 0), width=0.5)
    for i, (y, h) in enumerate(((396, 543), (406, 543), (412, 543), (415, 543), (417, 543))):
        page.draw_rect(pymupdf.Rect(188 + 27 * i, y, 210 + 27 * i, h), color=(0, 0, 0), fill=(0.7, 0.7, 0.7), width=0.5)
    for k in range(7):
        y = 543 - 24.5 * k
        page.draw_line((177.4, y), (182.6, y), color=(0, 0, 0), width=0.5)
        page.insert_text((161, y + 3), f"0.{k}", fontsize=8)
    page.insert_textbox(pymupdf.Rect(350, 415, 454, 540), "Figure 5: Boxplot showing the error versus the "
                        "number of loadings. In this example only one iteration was run.", fontsize=10)
    page.insert_textbox(pymupdf.Rect(125, 600, 468, 740), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "beside.pdf"), tmp_path)[5]
    assert f.region_bbox is not None and f.region_bbox[0] <= 162 and f.region_bbox[2] >= 318, f.region_bbox
    assert f.region_bbox[1] <= 397 and f.region_bbox[3] >= 543, f.region_bbox


def test_two_rows_of_plots_far_apart_with_tick_numbers(tmp_path):
    """Four framed plots in two rows nearly a plot's height apart, a row of tick numbers under each
    plot: the upper row is part of the figure too (was: the lower row only; a row of four or more
    numbers read as more than a label)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(90, 60, 506, 200), BODY, fontsize=10)
    for y in (250, 438):
        for x in (181, 348):
            page.draw_rect(pymupdf.Rect(x, y, x + 83, y + 83), color=(0, 0, 0.6), width=0.8)
            page.draw_line((x + 5, y + 78), (x + 78, y + 5), color=(1, 0, 1), width=1)
            for k in range(4):
                page.draw_line((x + 10 + 20 * k, y + 83), (x + 10 + 20 * k, y + 91), color=(0, 0, 0), width=0.5)
            page.insert_text((x + 6, y + 112), "0 1 2 3", fontsize=13)
    page.insert_text((172, 594), "Figure 4: The first four levels of the curve.", fontsize=10)
    page.insert_textbox(pymupdf.Rect(90, 630, 506, 740), BODY[:300], fontsize=10)
    f = _figures(_saved(doc, tmp_path / "rows.pdf"), tmp_path)[4]
    assert f.region_bbox is not None and f.region_bbox[1] <= 251 and f.region_bbox[3] >= 550, f.region_bbox


def test_legend_names_printed_over_each_other_belong_to_it(tmp_path):
    """A colour legend whose name column (body-size words printed over each other, a little apart
    from the stripes) stands at the stripes' left: the names are part of the figure (was: the
    stripes alone)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(65, 60, 533, 200), BODY, fontsize=10)
    page.insert_text((290, 324), "cytoband", fontsize=10.4)
    for k in range(100):
        y = 330 + 2.3 * k
        page.draw_rect(pymupdf.Rect(308, y, 449, y + 1.6), color=None, fill=(k / 120, 0, 0))
        page.insert_text((162, y + 12), f"pos{k}", fontsize=10.4)
    page.insert_text((220, 658), "Figure 2: Legend for cytoband colours", fontsize=10)
    page.insert_textbox(pymupdf.Rect(65, 680, 533, 760), BODY[:200], fontsize=10)
    f = _figures(_saved(doc, tmp_path / "legend.pdf"), tmp_path)[2]
    assert f.region_bbox is not None and f.region_bbox[0] <= 163 and f.region_bbox[2] >= 448, f.region_bbox


def test_plot_title_at_the_top_of_the_text_block_is_kept(tmp_path):
    """A plot at the head of an A4 page whose title sits in the page's top 9% but inside the running
    text's extent (the next page's text starts that high): the title is the plot's, not a running
    head (was: left out)."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    _plot(page, (176, 88, 402, 289))
    page.insert_text((247, 74), "Reference sample: one", fontsize=8)
    page.insert_textbox(pymupdf.Rect(54, 305, 541, 325), "Figure 10: RNA composition plot", fontsize=10, align=1)
    page.insert_textbox(pymupdf.Rect(54, 345, 541, 700), BODY, fontsize=10)
    doc.new_page(width=595, height=842).insert_textbox(pymupdf.Rect(54, 64, 541, 760), BODY * 3, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "title.pdf"), tmp_path)[10]
    assert f.region_bbox is not None and f.region_bbox[1] <= 68, f.region_bbox


def _framed_by_strokes(page, x0: float, y0: float, x1: float, lines: list[str]) -> float:
    """Code lines in a frame drawn as separate strokes (a rule over and under, uprights beside
    each line), as some Sweave styles draw a chunk; returns the frame's bottom."""
    y1 = y0 + 8 + 14 * len(lines)
    page.draw_line((x0, y0), (x1, y0), color=(0, 0, 0), width=0.4)
    for i, text in enumerate(lines):
        top = y0 + 14 * i
        page.draw_line((x0, top), (x0, top + 14), color=(0, 0, 0), width=0.4)
        page.draw_line((x1, top), (x1, top + 14), color=(0, 0, 0), width=0.4)
        page.insert_text((x0 + 15, y0 + 12 + 14 * i), text, fontsize=9, fontname="cour")
    page.draw_line((x0, y1), (x1, y1), color=(0, 0, 0), width=0.4)
    return y1


def test_code_framed_by_strokes_over_a_plot_stays_out_of_it(tmp_path):
    """A code chunk framed by separate strokes (rules over and under, uprights at its sides) over the
    plot it draws, one caption under the plot: the frame is the listing's, so the listing ends the
    figure (was: the frame's lower rule, as wide as the column, took the figure out to the frame
    and the layout model's pass grew it up over the code). The plot's title, two and a half lines
    over its box with nothing else above it, stays with the plot."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 120), BODY[:300], fontsize=10)
    bottom = _framed_by_strokes(page, 85, 135, 510, CODE)
    page.insert_text((275, bottom + 30), "3D barplot", fontsize=9.8, fontname="helv")
    _plot(page, (150, bottom + 57, 420, bottom + 250))
    page.insert_textbox(pymupdf.Rect(72, bottom + 265, 540, bottom + 290), "Figure 3: A 3D barplot.", fontsize=10,
                        align=1)
    f = _figures(_saved(doc, tmp_path / "strokes.pdf"), tmp_path)[3]
    assert f.region_bbox is not None and f.region_bbox[0] >= 145 and f.region_bbox[2] <= 425, f.region_bbox
    assert bottom + 18 <= f.region_bbox[1] <= bottom + 23, (bottom, f.region_bbox)  # the title, not the code


def test_notes_under_a_side_caption_stay_out_of_the_plot_beside_it(tmp_path):
    """A plot at the left, its caption at the right level with its top and notes in the body's size
    under the caption, another figure further down: the figure is the plot beside the caption,
    without the notes (was: the region under the caption took the notes, the plot and the next
    figure)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    _plot(page, (100, 70, 280, 240))
    page.insert_textbox(pymupdf.Rect(324, 26, 527, 64), "Figure 7: Data with multimapped variances. The line "
                        "is a fit.", fontsize=11)
    page.insert_textbox(pymupdf.Rect(324, 72, 527, 240), "The variance is quite different at the two ends of "
                        "the range, although the mean response is about the same.\n\nIt can be modelled as a "
                        "function of x but not of the mean response.", fontsize=11)
    _plot(page, (100, 265, 500, 440))
    page.insert_textbox(pymupdf.Rect(85, 460, 527, 490), "Figure 8: Residual plots for the data in the above "
                        "figure.", fontsize=11)
    page.insert_textbox(pymupdf.Rect(85, 510, 527, 700), BODY, fontsize=11)
    figs = _figures(_saved(doc, tmp_path / "notes.pdf"), tmp_path)
    r7, r8 = figs[7].region_bbox, figs[8].region_bbox
    assert r7 is not None and r7[2] <= 290 and r7[3] <= 250 and r7[1] <= 71, r7
    assert r8 is not None and r8[1] >= 250 and r8[3] >= 439, r8


def test_table_note_under_the_bottom_rule_is_left_to_the_caption(tmp_path):
    """A table in journal style: label and title over the top rule, a paragraph starting "Note."
    right under the bottom rule, then running text: the table ends at its bottom rule."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((54, 86), "Table 1", fontsize=10)
    page.insert_text((54, 98), "Model formulas in R", fontsize=10, fontname="tiit")
    for y in (102, 119, 208):
        page.draw_line((54, y), (554, y), color=(0, 0, 0), width=0.5)
    page.insert_text((60, 114), "formula", fontsize=10)
    page.insert_text((200, 114), "meaning", fontsize=10)
    for i in range(6):
        page.insert_text((60, 132 + 13 * i), f"a * b{i}", fontsize=10, fontname="cour")
        page.insert_text((200, 132 + 13 * i), f"main effects and interaction {i} of a and b", fontsize=10)
    page.insert_textbox(pymupdf.Rect(54, 209, 554, 245), "Note. Whitespace is ignored in formulas, and the "
                        "default behaviour of R is to prevent models with higher order effects in the "
                        "absence of lower order effects, as shown in the table above.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(54, 270, 554, 600), BODY, fontsize=10)
    figs = extract_figures(_saved(doc, tmp_path / "note.pdf"), tmp_path / "out", "f", dpi=72)
    t = {f.number: f for f in figs if f.kind == "table"}[1]
    assert t.region_bbox is not None and 207 <= t.region_bbox[3] <= 210 and t.region_bbox[1] <= 103, t.region_bbox


def test_printed_output_in_the_captions_block_is_the_table(tmp_path):
    """A table that is printed R output in a typewriter font set right under its caption, in the
    caption's own text block: the output is no running text, so it is the table (was: the whole
    block counted as a paragraph and the table was a caption-only crop)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(92, 60, 520, 200), BODY, fontsize=11)
    caption = ["Table 2: The nine variable problem is a classic example of factoring where there is a",
               "higher order factor that accounts for the correlation between the factors, and the",
               "extraction method was principal axis with a targeted transformation to a cluster."]
    for i, text in enumerate(caption):
        page.insert_text((92, 245 + 13.4 * i), text, fontsize=10.9, fontname="tiro")
    output = ["> f3 <- fa(data, nfactors = 3, n.obs = 213, fm = 'pa', rotate = 'oblimin')",
              "Standardized loadings (pattern matrix) based upon the correlation matrix",
              "> print(f3, digits = 2, cut = 0.3, sort = TRUE, short = FALSE, lower = TRUE)",
              "             PA1   PA2   PA3   h2   u2"] + [f"Item.{i:<8} 0.{80 - i}  0.0{i}  0.07  0.81  0.19"
                                                       for i in range(12)]
    for i, text in enumerate(output[:2]):  # 9 points under the caption: one text block with it
        page.insert_text((92, 282 + 9.3 * i), text, fontsize=8, fontname="cour")
    for i, text in enumerate(output[2:]):
        page.insert_text((140, 325 + 9.3 * i), text, fontsize=8, fontname="cour")
    figs = extract_figures(_saved(doc, tmp_path / "output.pdf"), tmp_path / "out", "f", dpi=72)
    t = {f.number: f for f in figs if f.kind == "table"}[2]
    assert t.region_bbox is not None and t.region_bbox[3] - t.region_bbox[1] >= 120, t.region_bbox


def test_layout_model_joins_a_drawing_beyond_an_empty_band_to_its_tiny_end(tmp_path, monkeypatch):
    """A grid of cells, a legend set four lines under it, the caption under the legend and a code
    chunk under the caption: the geometry stops at the empty band, so the region above is the
    legend alone (tiny) and the code below is taken instead. The layout model's picture over the
    grid, beyond the legend with nothing between, makes the figure with the legend; the model is
    asked only for such a page."""
    from app.ingest import layout_model

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(90, 40, 513, 100), BODY[:250], fontsize=10)
    for r in range(6):
        for k in range(12):
            page.draw_rect(pymupdf.Rect(175 + 19 * k, 130 + 20 * r, 193 + 19 * k, 149 + 20 * r), color=None,
                           fill=(0.8, 0.1, 0.1) if (r + k) % 3 else (0.3, 0.7, 0.3))
    page.draw_rect(pymupdf.Rect(212, 300, 256, 310), color=(0, 0, 0), width=0.3)
    page.insert_text((215, 308), "active", fontsize=5)
    page.insert_textbox(pymupdf.Rect(90, 330, 513, 360), "Figure 3: Visualization of a sequence of states.",
                        fontsize=10)
    for i, text in enumerate(CODE[:3]):
        page.insert_text((90, 366 + 11 * i), text, fontsize=10, fontname="cour")
    page.insert_textbox(pymupdf.Rect(90, 430, 513, 700), BODY, fontsize=10)
    pdf = tmp_path / "grid.pdf"
    doc.save(pdf)
    asked = []

    def page_boxes(p):
        asked.append(p.number)
        return [layout_model.LayoutBox("picture", (171, 128, 410, 255))]

    monkeypatch.setattr(layout_model, "page_boxes", page_boxes)
    f = _figures(pymupdf.open(pdf), tmp_path)[3]
    assert asked == [0]
    assert f.region_bbox is not None and f.region_bbox[1] <= 131 and 309 <= f.region_bbox[3] <= 320, f.region_bbox


def test_running_head_over_a_figure_at_the_top_is_no_plot_title(tmp_path):
    """A figure at the top of the text block and the page's running head, centred, two and a half
    lines over it above the running text's extent: the head is no plot title (a lone title may
    stand up to three lines above its plot only inside the running text's extent)."""
    doc = pymupdf.open()
    first = doc.new_page(width=612, height=792)
    first.insert_textbox(pymupdf.Rect(90, 110, 520, 700), BODY * 3, fontsize=11)
    page = doc.new_page(width=612, height=792)
    page.insert_text((262, 84), "A. N. Author", fontsize=10.9)
    _plot(page, (137, 110, 466, 270))
    page.insert_textbox(pymupdf.Rect(90, 285, 520, 315), "Figure 2: Rootogram of posterior probabilities.",
                        fontsize=11, align=1)
    page.insert_textbox(pymupdf.Rect(90, 330, 520, 700), BODY * 2, fontsize=11)
    f = _figures(_saved(doc, tmp_path / "head.pdf"), tmp_path)[2]
    assert f.region_bbox is not None and f.region_bbox[1] >= 108, f.region_bbox


def test_running_head_repeated_on_every_page_is_no_plot_title(tmp_path):
    """A journal's running head (author names in the body's size, as long as a body line, on
    every page at the same height) over a plot at the top of an A4 page: its length puts the
    running text's measured top at the head itself and its centre is below the page's top 9%, yet
    it repeats page after page, so it is no plot title (was: taken as the plot's title)."""
    head = "Ann Author, Bob Builder, Carol Writer and Dan Editor"
    doc = pymupdf.open()
    for k in range(4):
        page = doc.new_page(width=595, height=842)
        page.insert_text((301.5 - pymupdf.get_text_length(head, fontsize=11) / 2, 85), head, fontsize=11)
        if k == 2:
            _plot(page, (134, 115, 468, 267))
            page.insert_textbox(pymupdf.Rect(81, 280, 522, 310), "Figure 1: Solutions of the model.",
                                fontsize=11, align=1)
            page.insert_textbox(pymupdf.Rect(81, 330, 522, 730), BODY * 2, fontsize=11)
        else:
            page.insert_textbox(pymupdf.Rect(81, 110, 522, 730), BODY * 3, fontsize=11)
    f = _figures(_saved(doc, tmp_path / "jsshead.pdf"), tmp_path)[1]
    assert f.region_bbox is not None and f.region_bbox[1] >= 105, f.region_bbox


def _line_number_rulers(page, first: int, text: tuple[float, float] = (90, 520), gap: float = 40, top: float = 72,
                        bottom: float = 730, pitch: float = 12, fontsize: float = 6) -> int:
    """A review copy's line numbers: small grey numbers at every line's height in both margins,
    `gap` points off the text block's `text` edges (the left ones set flush right), counting on
    from `first`, the left margin's first; returns the next number."""
    n = first
    for side in ("left", "right"):
        y = top
        while y <= bottom:
            label = f"{n:03d}"
            w = pymupdf.get_text_length(label, fontsize=fontsize)
            page.insert_text((text[0] - gap - w if side == "left" else text[1] + gap, y), label, fontsize=fontsize,
                             color=(0.5, 0.5, 0.5))
            n, y = n + 1, y + pitch
    return n


@pytest.mark.parametrize("others", ["line numbers", "cells"])
def test_value_label_level_with_numbers_on_other_pages_stays_with_its_plot(tmp_path, others):
    """A bar's value label over a plot at the top of a page, level with numbers printed elsewhere
    on the other pages (a review copy's line numbers in the margins, or table cells at the top of
    those pages), is no page number: a bare number is a running head only where it recurs at the
    same place (was: all numbers read alike, so it recurred "on every page" and was left out)."""
    doc = pymupdf.open()
    n = 0
    for k in range(4):
        page = doc.new_page(width=612, height=792)
        if others == "line numbers":
            n = _line_number_rulers(page, n)
        elif k != 2:
            page.insert_text((450, 96), f"{k + 3}", fontsize=7)
        if k == 2:
            page.insert_text((200, 96), "82", fontsize=7)
            _plot(page, (150, 108, 450, 250))
            page.insert_textbox(pymupdf.Rect(90, 265, 520, 295), "Figure 1: Accuracy of the models.",
                                fontsize=10, align=1)
            page.insert_textbox(pymupdf.Rect(90, 310, 520, 720), BODY * 2, fontsize=10)
        else:
            page.insert_textbox(pymupdf.Rect(90, 104, 520, 720), BODY * 3, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "review.pdf"), tmp_path)[1]
    assert f.region_bbox is not None and f.region_bbox[1] <= 90, f.region_bbox
    assert f.region_bbox[0] >= 140 and f.region_bbox[2] <= 460, f.region_bbox  # no line numbers


@pytest.mark.parametrize("numbered", [False, True])
def test_line_numbers_beside_a_plot_wider_than_the_text_stay_out_of_its_crop(tmp_path, numbered):
    """A one-column review copy: a plot a little wider than the text block, its line numbers a few
    points off the plot's sides in both margins. In a one-column document words and numbers past
    the text's edges may be a wide plot's tick labels, but a column of numbers counting down the
    margin is the page's, not the plot's (was: the crop grew out to both rulers)."""
    doc = pymupdf.open()
    n = 0
    for k in range(3):
        page = doc.new_page(width=612, height=792)
        if numbered:
            n = _line_number_rulers(page, n, text=(100, 512), gap=12, top=90, bottom=719, fontsize=5.5)
        if k == 1:
            _plot(page, (94, 100, 518, 260))
            page.insert_textbox(pymupdf.Rect(100, 272, 512, 300), "Figure 1: Feasible yields of the three settings.",
                                fontsize=10, align=1)
            page.insert_textbox(pymupdf.Rect(100, 320, 512, 700), BODY * 2, fontsize=10)
        else:
            page.insert_textbox(pymupdf.Rect(100, 90, 512, 700), BODY * 3, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "wide.pdf"), tmp_path)[1]
    assert f.region_bbox is not None and f.region_bbox[0] >= 92 and f.region_bbox[2] <= 520, f.region_bbox


def test_large_plot_title_centred_over_its_plot_is_kept(tmp_path):
    """A lattice plot's title set in 14 pt over a 10 pt body, centred over the plot a line and a half
    above it: a plot title, though larger than the body's text (was: left out, a title was at most
    1.2 times the body's size)."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(125, 80, 470, 190), BODY, fontsize=10)
    _plot(page, (160, 230, 450, 500))
    page.insert_text((305 - pymupdf.get_text_length("PM10", fontsize=14) / 2, 212), "PM10", fontsize=14)
    page.insert_textbox(pymupdf.Rect(125, 515, 470, 545), "Figure 1: Daily means by station.", fontsize=10, align=1)
    page.insert_textbox(pymupdf.Rect(125, 560, 470, 760), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "bigtitle.pdf"), tmp_path)[1]
    assert f.region_bbox is not None and f.region_bbox[1] <= 202, f.region_bbox


def test_tick_labels_past_the_text_width_on_a_one_column_page_are_kept(tmp_path):
    """A plot wider than a one-column page's text, its right-hand tick labels set just past the
    frame, beyond the caption's and the graphics' extent: with no other column there, they are the
    plot's (was: left out, only text within the column span or the graphics could join)."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(125, 80, 470, 190), BODY, fontsize=10)
    _plot(page, (137, 230, 522, 500))
    for k, y in enumerate((260, 330, 400, 470)):
        page.insert_text((528, y), str(20 * (4 - k)), fontsize=10)
    page.insert_textbox(pymupdf.Rect(125, 515, 470, 545), "Figure 1: Daily means by station.", fontsize=10, align=1)
    page.insert_textbox(pymupdf.Rect(125, 560, 470, 760), BODY, fontsize=10)
    f = _figures(_saved(doc, tmp_path / "ticks.pdf"), tmp_path)[1]
    assert f.region_bbox is not None and f.region_bbox[2] >= 538, f.region_bbox


def _tables(doc, tmp_path) -> dict:
    """Tables by number, rendered at 72 dpi."""
    return {f.number: f for f in extract_figures(doc, tmp_path / "out", "t", dpi=72) if f.kind == "table"}


def _booktabs(page, x0: float, x1: float, y: float, header: list[str], rows: list[list[str]], mono_header: bool,
              group: str | None = None) -> float:
    """A ruled table from `y` down (top rule, header, mid rule, rows, bottom rule); its bottom y. A
    `group` header row over the header has a short rule under it (a cmidrule)."""
    page.draw_line((x0, y), (x1, y), width=0.8)
    y += 12
    if group is not None:
        page.insert_text((x0 + 90, y), group, fontsize=9, fontname="cour" if mono_header else "helv")
        page.draw_line((x0 + 80, y + 3), (x1 - 10, y + 3), width=0.4)
        y += 13
    step = (x1 - x0) / len(header)
    for k, h in enumerate(header):
        page.insert_text((x0 + 4 + k * step, y), h, fontsize=9, fontname="cour" if mono_header else "helv")
    page.draw_line((x0, y + 4), (x1, y + 4), width=0.4)
    y += 16
    for row in rows:
        for k, cell in enumerate(row):
            page.insert_text((x0 + 4 + k * step, y), cell, fontsize=9)
        y += 12
    page.draw_line((x0, y - 7), (x1, y - 7), width=0.8)
    return y - 7


ROWS = [["LR", "0.71", "0.45"], ["DeepFM", "0.80", "0.38"], ["DCN", "0.81", "0.37"]]


@pytest.mark.parametrize("shaded", [False, True])
def test_table_printed_by_a_code_chunk_ends_at_the_chunk(tmp_path, shaded):
    """A table printed by the code chunk right above it (typewriter lines, bare or on a grey box as
    wide as the column) with its caption under it: the table ends at its top rule (was: the crop
    grew up through the chunk, as wide as its shading)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 130), BODY[:300], fontsize=10)
    if shaded:
        page.draw_rect(pymupdf.Rect(68, 140, 544, 185), color=None, fill=(0.95, 0.95, 0.95))
    for i, text in enumerate(["R> tab <- xtable(fit, caption = \"Fitted models\")",
                              "R> print(tab, floating = TRUE, booktabs = TRUE)"]):
        page.insert_text((72, 156 + 14 * i), text, fontsize=9, fontname="cour")
    bottom = _booktabs(page, 200, 420, 200, ["Model", "AUC", "LogLoss"], ROWS, mono_header=False)
    page.insert_textbox(pymupdf.Rect(72, bottom + 10, 540, bottom + 30), "Table 1: Fitted models.", fontsize=10,
                        align=1)
    page.insert_textbox(pymupdf.Rect(72, bottom + 50, 540, 700), BODY, fontsize=10)
    t = _tables(_saved(doc, tmp_path / "chunk.pdf"), tmp_path)[1]
    assert t.region_bbox is not None and t.region_bbox[3] >= bottom - 1, t.region_bbox
    assert t.region_bbox[1] >= 190 and t.region_bbox[0] >= 195, t.region_bbox  # not the chunk
    assert t.region_bbox[1] <= 201, t.region_bbox  # the table's top rule


@pytest.mark.parametrize("group", [None, "zero-shot runs"])
def test_typewriter_header_row_stays_in_its_table(tmp_path, group):
    """A table whose header row names models in a typewriter font, under the table's top rule (or
    under a group header with a short rule between): the row is the table's, not a listing that
    ends it, even with a real code listing further up."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 130), BODY[:300], fontsize=10)
    for i, text in enumerate(["R> tab <- xtable(fit)", "R> print(tab, booktabs = TRUE)"]):
        page.insert_text((72, 150 + 14 * i), text, fontsize=9, fontname="cour")
    bottom = _booktabs(page, 150, 470, 200, ["Metric", "gpt-4 + CoT", "llama-2 + CoT"],
                       [["accuracy", "0.71", "0.45"], ["recall", "0.80", "0.38"], ["precision", "0.62", "0.41"],
                        ["F1", "0.70", "0.40"]], mono_header=True, group=group)
    page.draw_rect(pymupdf.Rect(250, bottom - 45, 250.5, bottom - 2), color=None, fill=(0, 0, 0))  # an upright
    page.insert_textbox(pymupdf.Rect(72, bottom + 10, 540, bottom + 30), "Table 1: Models compared.", fontsize=10,
                        align=1)
    page.insert_textbox(pymupdf.Rect(72, bottom + 50, 540, 700), BODY, fontsize=10)
    t = _tables(_saved(doc, tmp_path / "header.pdf"), tmp_path)[1]
    assert t.region_bbox is not None and t.region_bbox[1] <= 201, t.region_bbox  # the top rule and header row
    assert t.region_bbox[3] >= bottom - 1, t.region_bbox
