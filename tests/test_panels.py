"""Panels of compound figures: found from their "(a)", "(b)" labels (text, or pixels of the figure),
cut out, addressable and searchable."""
from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import pymupdf
import pytest
from fastapi.testclient import TestClient
from PIL import Image

import app.ingest  # noqa: F401  (PyMuPDF set up as ingestion uses it)
from app.ingest.figures import extract_figures
from app.ingest.layout import Line
from app.ingest.panel_pixels import label_shapes
from app.ingest.panels import caption_parts, find_panels

BODY = ("This is a body paragraph of ordinary running text that discusses the results in detail and "
        "goes on for several lines like the paragraphs of a research paper. ") * 3


def _line(text: str, x0: float, y0: float, x1: float, size: float = 8.0) -> Line:
    return Line(x0, y0, x1, y0 + size, text, size, [], 0, 0)


def test_sub_captions_under_panels_split_the_region_between_their_centres():
    region = (100, 100, 500, 300)
    lines = [_line("(a) Criteo", 160, 285, 240), _line("(b) Avazu", 360, 285, 440)]
    panels = find_panels(lines, region, "Figure 2: AUC over training.")
    assert [p["label"] for p in panels] == ["a", "b"]
    assert panels[0]["bbox"] == [100, 100, 300, 300] and panels[1]["bbox"] == [300, 100, 500, 300]
    assert panels[0]["caption_part"] == "Criteo"


def test_corner_labels_start_their_panels_and_rows_split_the_region():
    region = (100, 100, 500, 500)
    lines = [_line("(a)", 102, 102, 112), _line("(b)", 302, 102, 312),
             _line("(c)", 102, 302, 112), _line("(d)", 302, 302, 312)]
    caption = "Figure 3: Embeddings. (a) Epoch 1; (b) epoch 5; (c) epoch 10; (d) epoch 50."
    panels = {p["label"]: p for p in find_panels(lines, region, caption)}
    assert panels["a"]["bbox"] == [100, 100, 300, 300] and panels["d"]["bbox"] == [300, 300, 500, 500]
    assert panels["c"]["caption_part"] == "epoch 10"


def test_labels_out_of_order_or_alone_leave_the_figure_whole():
    region = (100, 100, 500, 300)
    assert find_panels([_line("(a) Criteo", 160, 285, 240)], region, "") == []
    assert find_panels([_line("(a) x", 160, 285, 240), _line("(c) y", 360, 285, 440)], region, "") == []
    assert find_panels([_line("(a) x", 160, 285, 240), _line("(b) y", 360, 285, 440)], (600, 0, 700, 50), "") == []
    assert caption_parts("Figure 1: (b) first (a) second") == {}


def _compound_pdf(path: Path) -> None:
    """A figure of two plots side by side, each with a sub-caption under it."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    for x0, colour in ((80, (1, 0, 0)), (330, (0, 0, 1))):
        page.draw_rect(pymupdf.Rect(x0, 80, x0 + 200, 240), color=(0, 0, 0), width=1)
        page.draw_line((x0 + 10, 230), (x0 + 190, 90), color=colour, width=1.5)
    page.insert_text((140, 258), "(a) Histogram of dwell times", fontsize=8)
    page.insert_text((390, 258), "(b) Regression of clicks", fontsize=8)
    page.insert_textbox(pymupdf.Rect(72, 275, 540, 300), "Figure 1: Two views of user behaviour.", fontsize=9,
                        align=1)
    page.insert_textbox(pymupdf.Rect(72, 320, 540, 460), BODY, fontsize=10)
    doc.save(path)


def test_extraction_finds_the_panels_of_a_drawn_compound_figure(tmp_path):
    pdf = tmp_path / "compound.pdf"
    _compound_pdf(pdf)
    fig = next(f for f in extract_figures(pymupdf.open(pdf), tmp_path / "out", "figures/x") if f.kind == "figure")
    panels = {p["label"]: p for p in fig.panels}
    assert set(panels) == {"a", "b"}
    assert panels["a"]["bbox"][2] <= 330 and panels["b"]["bbox"][0] >= 280  # each holds its own plot
    assert panels["b"]["caption_part"] == "Regression of clicks"


def test_panels_in_the_api_and_search(tmp_path, monkeypatch):
    """A compound figure's panels are listed on its page with an image each, and a query that
    matches one panel's sub-caption names that panel."""
    from app.api.main import create_app
    from app.pipeline import ingest_jobs
    from app.pipeline.indexing import build_index
    from app.settings import Settings

    pdf = tmp_path / "papers" / "compound.pdf"
    pdf.parent.mkdir()
    _compound_pdf(pdf)
    settings = Settings(data_dir=tmp_path / "data", database_url="", broker_url="", dense=False)
    job = ingest_jobs.prepare_job([pdf.parent], settings)
    ingest_jobs.run_job_embedded(settings, job, workers=1)
    build_index(settings, dense=False)
    client = TestClient(create_app(settings))
    fid = client.get("/api/v1/figures").json()["items"][0]["figure_id"]
    detail = client.get(f"/api/v1/figures/{fid}").json()
    assert [p["label"] for p in detail["panels"]] == ["a", "b"]
    whole = Image.open(io.BytesIO(client.get(f"/api/v1/figures/{fid}/image").content))
    part = client.get(detail["panels"][1]["image_url"])
    assert part.status_code == 200 and part.headers["content-type"] == "image/png"
    cut = Image.open(io.BytesIO(part.content))
    assert cut.width < 0.7 * whole.width and cut.height <= whole.height
    assert client.get(f"/api/v1/figures/{fid}/panels/c/image").status_code == 404
    hits = client.get("/api/v1/search", params={"q": "regression clicks"}).json()["items"]
    assert hits and hits[0]["figure_id"] == fid and hits[0]["panel"]["label"] == "b"


def _distinct_panels_pdf(path: Path) -> None:
    """A figure of three different plots side by side (bars, a curve, a scatter), each with a
    sub-caption under it."""
    import math

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 40, 540, 70), BODY[:180], fontsize=10)
    for i, x0 in enumerate((72, 232, 392)):
        page.draw_rect(pymupdf.Rect(x0, 80, x0 + 150, 230), color=(0, 0, 0), width=1)
        if i == 0:
            for j, h in enumerate((40, 120, 70, 135, 95)):
                page.draw_rect(pymupdf.Rect(x0 + 10 + 27 * j, 230 - h, x0 + 30 + 27 * j, 230),
                               color=(0, 0, 0), fill=(0.2, 0.3, 0.8))
        elif i == 1:
            pts = [(x0 + 5 + t * 1.4, 155 - 60 * math.sin(t / 12)) for t in range(100)]
            page.draw_polyline(pts, color=(0.8, 0, 0), width=2)
        else:
            for j in range(30):
                page.draw_circle((x0 + 10 + (j * 37) % 130, 90 + (j * 53) % 130), 4, color=(0, 0.5, 0), fill=(0, 0.5, 0))
    for label, x in (("(a) Clicks per day", 100), ("(b) Dwell time", 265), ("(c) Queries", 430)):
        page.insert_text((x, 248), label, fontsize=8)
    page.insert_textbox(pymupdf.Rect(72, 265, 540, 290), "Figure 1: Three views of user behaviour.",
                        fontsize=9, align=1)
    page.insert_textbox(pymupdf.Rect(72, 310, 540, 460), BODY, fontsize=10)
    doc.save(path)


def test_an_uploaded_copy_of_one_panel_finds_its_figure_and_names_the_panel(tmp_path):
    """Search by picture with a rescaled JPEG of panel (b): the figure comes first, its reason
    names the panel and `panel` is that panel; a copy of the whole figure stays "same picture"."""
    from app.api.main import create_app
    from app.pipeline import ingest_jobs
    from app.pipeline.indexing import build_index
    from app.settings import Settings

    pdf = tmp_path / "papers" / "compound.pdf"
    pdf.parent.mkdir()
    _distinct_panels_pdf(pdf)
    settings = Settings(data_dir=tmp_path / "data", database_url="", broker_url="", auto_index=False)
    job = ingest_jobs.prepare_job([pdf.parent], settings)
    ingest_jobs.run_job_embedded(settings, job, workers=1)
    build_index(settings)
    client = TestClient(create_app(settings))
    fid = client.get("/api/v1/figures").json()["items"][0]["figure_id"]
    detail = client.get(f"/api/v1/figures/{fid}").json()
    assert [p["label"] for p in detail["panels"]] == ["a", "b", "c"]

    def upload(img: Image.Image) -> dict:
        buf = io.BytesIO()
        img.convert("RGB").resize((img.width * 3 // 4, img.height * 3 // 4)).save(buf, "JPEG", quality=70)
        r = client.post("/api/v1/search/by-image", files={"image": ("p.jpg", buf.getvalue(), "image/jpeg")})
        assert r.status_code == 200, r.text
        return r.json()["items"][0]

    first = upload(Image.open(io.BytesIO(client.get(detail["panels"][1]["image_url"]).content)))
    assert first["figure_id"] == fid and "same picture as panel (b) of this figure" in first["reasons"]
    assert first["panel"]["label"] == "b" and first["panel"]["image_url"].endswith("/panels/b/image")
    whole = upload(Image.open(io.BytesIO(client.get(f"/api/v1/figures/{fid}/image").content)))
    assert whole["figure_id"] == fid and "same picture" in whole["reasons"] and whole["panel"] is None


def test_panel_titles_above_split_between_their_centres():
    region = (100, 100, 500, 300)
    lines = [_line("(a) Criteo", 160, 102, 240), _line("(b) all datasets", 340, 102, 460)]
    panels = find_panels(lines, region, "")
    assert [p["bbox"] for p in panels] == [[100, 100, 300, 300], [300, 100, 500, 300]]


def test_a_caption_part_ends_with_its_sentence():
    parts = caption_parts("(a) Recall on Criteo. (b) Recall on all datasets. Our model wins everywhere.")
    assert parts == {"a": "Recall on Criteo", "b": "Recall on all datasets"}


FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def _text_image(parts: list[tuple[int, str]], size: tuple[int, int] = (1000, 60), font_px: int = 30) -> Image.Image:
    from PIL import ImageDraw, ImageFont

    im = Image.new("L", size, 255)
    draw = ImageDraw.Draw(im)
    for x, text in parts:
        draw.text((x, 10), text, fill=0, font=ImageFont.truetype(FONT, font_px))
    return im


@pytest.mark.skipif(not Path(FONT).exists(), reason="needs the DejaVu fonts")
def test_label_shapes_are_brackets_round_a_letter_not_straight_strokes():
    px_per_pt = 150 / 72 * 1.0
    labels = np.asarray(_text_image([(40, "(a) Criteo"), (540, "(b) Avazu")]))
    strokes = np.asarray(_text_image([(40, "la Criteo"), (540, "lb 1c |d")]))
    assert len(label_shapes(labels, px_per_pt)) >= 2
    assert len(label_shapes(strokes, px_per_pt)) == 0


def _compound_pdf_with_labels_in_an_image(path: Path) -> None:
    """The compound figure above, but its sub-captions are pixels of an image (no text layer)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    for x0, colour in ((80, (1, 0, 0)), (330, (0, 0, 1))):
        page.draw_rect(pymupdf.Rect(x0, 80, x0 + 200, 240), color=(0, 0, 0), width=1)
        page.draw_line((x0 + 10, 230), (x0 + 190, 90), color=colour, width=1.5)
    im = _text_image([(267, "(a) Histogram of dwell times"), (1378, "(b) Regression of clicks")], (2000, 60))
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    page.insert_image(pymupdf.Rect(80, 244, 530, 257.5), stream=buf.getvalue())
    page.insert_textbox(pymupdf.Rect(72, 275, 540, 300), "Figure 1: Two views of user behaviour.", fontsize=9,
                        align=1)
    page.insert_textbox(pymupdf.Rect(72, 320, 540, 460), BODY, fontsize=10)
    doc.save(path)


@pytest.mark.skipif(shutil.which("tesseract") is None or not Path(FONT).exists(),
                    reason="needs Debian's tesseract-ocr and the DejaVu fonts")
def test_panel_labels_inside_an_image_are_read_from_its_pixels(tmp_path):
    pdf = tmp_path / "pixels.pdf"
    _compound_pdf_with_labels_in_an_image(pdf)

    def figure(read: bool):
        found = extract_figures(pymupdf.open(pdf), tmp_path / f"out{read}", "figures/x", read_panel_pixels=read)
        return next(f for f in found if f.kind == "figure")

    assert figure(False).panels == []
    panels = {p["label"]: p for p in figure(True).panels}
    assert set(panels) == {"a", "b"}
    assert panels["a"]["bbox"][2] <= 330 and panels["b"]["bbox"][0] >= 280  # each holds its own plot
    assert "Regression" in panels["b"]["caption_part"]


def _bold_line(text: str, x0: float, y0: float, bold: bool) -> Line:
    span = {"text": text, "font": "Helvetica-Bold" if bold else "Helvetica", "flags": 16 if bold else 0, "size": 12.0}
    return Line(x0, y0, x0 + 6, y0 + 12, text, 12.0, [span], 0, 0)


def test_bare_bold_corner_letters_start_their_panels_but_plain_letters_do_not():
    """Nature-style labels: a bold "a", "b", ... alone in each panel's corner (no brackets). The same
    letters in a plain font (variables, node names) leave the figure whole."""
    region = (300, 60, 560, 250)
    bold = [_bold_line("a", 305, 61, True), _bold_line("b", 385, 61, True), _bold_line("c", 467, 61, True),
            _bold_line("d", 305, 142, True), _bold_line("e", 481, 142, True)]
    panels = find_panels(bold, region, "Figure 1: Recordings.")
    assert [p["label"] for p in panels] == list("abcde")
    assert panels[0]["bbox"] == [300, 60, 383, 140] and panels[4]["bbox"] == [479, 140, 560, 250]
    plain = [_bold_line(t, x, y, False) for t, x, y in (("a", 305, 61), ("b", 385, 61), ("c", 467, 61))]
    assert find_panels(plain, region, "Figure 1: A graph.") == []


def test_bold_letters_away_from_the_top_left_corner_are_not_panel_labels():
    """Bold "A" "B" "C" badges marking the steps inside a diagram (the first one mid-height): the
    figure stays whole."""
    region = (70, 76, 524, 345)
    badges = [_bold_line("A", 74, 180, True), _bold_line("B", 232, 180, True), _bold_line("C", 352, 180, True)]
    assert find_panels(badges, region, "Figure 2: A problem solving chain.") == []


def test_a_bold_node_letter_does_not_hide_the_bracketed_labels():
    """A diagram with a bold node "a" near its top and sub-captions "(a)" "(b)" "(c)" under its
    panels: the panels come from the bracketed labels."""
    region = (100, 100, 500, 300)
    lines = [_bold_line("a", 150, 110, True), _line("(a) Input", 120, 285, 180), _line("(b) Encoder", 250, 285, 320),
             _line("(c) Output", 390, 285, 450)]
    assert [p["label"] for p in find_panels(lines, region, "Figure 4: The model.")] == ["a", "b", "c"]
