"""A caption naming one chart type makes it the dominant type; other names and pixels stay as they were."""
import numpy as np

from app.vision.caption_evidence import CAPTION_RIGHT, caption_named_type, with_caption_evidence
from app.vision.figure_types import LABELS, decide
from app.vision.vocabulary import types_named_in


def pixel_result(**scores):
    p = np.array([scores.get(t, 0.01) for t in LABELS])
    return decide(p / p.sum())


def test_caption_named_type_one_chart_type_only():
    assert caption_named_type("Figure 4: t-SNE visualization of the learned embeddings.") == "scatter_plot"
    assert caption_named_type("Figure 2: Confusion matrix on the test set.") == "heatmap"
    assert caption_named_type("Figure 1: Overall architecture of the model.") == "diagram"
    # names of what a chart measures are not evidence of the figure's type
    assert caption_named_type("Figure 5: Runtime of the algorithm for each prompt length.") is None
    assert caption_named_type("Figure 6: Results in Table 3 as a function of the batch size.") is None
    # what is plotted, drawn as heat maps, bars or curves alike, is not evidence of how
    assert caption_named_type("Figure 3: Recall@k of items ranked by the attention weights.") is None
    assert types_named_in("attention weights") == ["heatmap"]  # a query naming them still wants heat maps first
    # two chart types named: ambiguous
    assert caption_named_type("Figure 3: The architecture (left) and a heat map of its weights (right).") is None
    assert caption_named_type("") is None and caption_named_type(None) is None


def test_named_type_becomes_dominant_and_the_pixel_types_stay_listed():
    pixels = pixel_result(diagram=6.0, line_chart=3.0, heatmap=0.2)
    assert pixels.figure_type == "diagram"
    out = with_caption_evidence(pixels, "Figure 2: Attention map between the two sentences.")
    assert out.figure_type == "heatmap" and out.scores["heatmap"] >= CAPTION_RIGHT - 1e-3
    assert abs(sum(out.scores.values()) - 1.0) < 0.02  # still probabilities
    # the other types keep their order
    assert out.scores["diagram"] > out.scores["line_chart"] > out.scores["bar_chart"]


def test_no_evidence_keeps_the_pixel_result():
    pixels = pixel_result(bar_chart=8.0)
    assert with_caption_evidence(pixels, "Figure 7: Results on the validation set.") is pixels
    # even when the pixels say something else, a named type wins
    assert with_caption_evidence(pixels, "Figure 8: Box plots of the scores per annotator.").figure_type == "box_plot"
