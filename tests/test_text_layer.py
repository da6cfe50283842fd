"""The text-layer rule measured by scripts/text_layer_rule.py: a region of dense lines of words in the
PDF's text layer is typed `text`; a chart's few labels are not."""

import numpy as np
import pymupdf

from app.vision.figure_types import LABELS, decide
from tests.script_modules import load_script

_rule = load_script("text_layer_rule")
TEXT_RIGHT, TextLayer, text_layer, with_text_layer_evidence = (
    _rule.TEXT_RIGHT, _rule.TextLayer, _rule.text_layer, _rule.with_text_layer_evidence)


def pixel_result(**scores):
    p = np.array([scores.get(t, 0.01) for t in LABELS])
    return decide(p / p.sum())


def page_with_prompt_box_and_chart():
    doc = pymupdf.open()
    page = doc.new_page(width=600, height=800)
    # a prompt box: a frame filled with lines of words
    page.draw_rect(pymupdf.Rect(50, 50, 300, 200))
    for i in range(9):
        page.insert_text((58, 68 + 14 * i), "Question: which of the answers below is the right one here?", fontsize=9)
    # a chart: a frame with axes and a few short labels
    page.draw_rect(pymupdf.Rect(50, 300, 300, 500))
    page.draw_line((70, 480), (290, 480))
    page.draw_line((70, 480), (70, 310))
    for k, x in enumerate((80, 140, 200, 260)):
        page.insert_text((x, 495), str(10 * k), fontsize=8)
    page.insert_text((150, 320), "Accuracy", fontsize=8)
    return doc, page


def test_text_layer_tells_a_text_box_from_a_chart():
    doc, page = page_with_prompt_box_and_chart()
    box = text_layer(page, (50, 50, 300, 200))
    chart = text_layer(page, (50, 300, 300, 500))
    assert box.lines == 9 and box.words >= 90 and box.is_text
    assert 1 <= chart.words <= 6 and not chart.is_text
    empty = text_layer(page, (350, 600, 550, 750))
    assert empty.words == 0 and not empty.is_text
    doc.close()


def test_text_becomes_dominant_and_the_pixel_types_stay_listed():
    pixels = pixel_result(diagram=20.0, screenshot=1.0)
    assert pixels.figure_type == "diagram"
    out = with_text_layer_evidence(pixels, TextLayer(words=120, lines=10, coverage=0.5))
    assert out.figure_type == "text" and abs(out.scores["text"] - TEXT_RIGHT) < 1e-3
    assert abs(sum(out.scores.values()) - 1.0) < 0.02
    assert out.scores["diagram"] > out.scores["screenshot"] > out.scores["bar_chart"]
    assert "diagram" in [t["type"] for t in out.figure_types]


def test_sparse_or_missing_text_layer_keeps_the_pixel_result():
    pixels = pixel_result(line_chart=8.0)
    assert with_text_layer_evidence(pixels, None) is pixels
    assert with_text_layer_evidence(pixels, TextLayer(words=12, lines=10, coverage=0.1)) is pixels
    # dense but one word a line (a column of tick labels) is not text
    assert with_text_layer_evidence(pixels, TextLayer(words=10, lines=10, coverage=0.6)) is pixels
