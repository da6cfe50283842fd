"""A caption naming one chart type as the figure's raises that type's odds against the pixels:
it decides where the pixels are unsure, not against a confident pixel answer."""
import numpy as np

from app.vision.caption_evidence import (CAPTION_WEIGHT, caption_named_type, first_sentence, names_with_next,
                                         with_caption_evidence)
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


def test_a_name_that_modifies_another_word_is_not_the_figures_name():
    assert caption_named_type("Figure 4: Object model for robust location and scatter estimation.") is None
    assert caption_named_type("Figure 2: Power of the boxplot-based test.") is None
    assert caption_named_type("Figure 3: Overlaid scatterplot smoother lines of the test scores.") is None
    # function words, nouns of drawing, participles, numbers and punctuation keep it the figure's name
    assert caption_named_type("Figure 15: Heatmaps showing the expression of the top genes.") == "heatmap"
    assert caption_named_type("Figure 2: Histogram based on 1000 draws") == "bar_chart"
    assert caption_named_type("Figure 1: Scatterplot matrix of the five variables.") == "scatter_plot"
    assert caption_named_type("Fig. 7. Learning curves (left) and accuracy (right)") == "line_chart"
    assert caption_named_type("Figure 9: A boxplot") == "box_plot"
    assert names_with_next("a boxplot-based test, heat maps.") == [("heatmap", "heat maps", ""),
                                                                  ("box_plot", "boxplot", "-based")]


def test_only_the_first_sentence_names_the_figure():
    assert first_sentence("Figure 5: Comparison of the samples of two runs. Upper panels: empirical densities.") \
        == "Comparison of the samples of two runs"
    assert first_sentence("Fig. 2. Recall of the models (left). Right: their runtime.") == "Recall of the models (left)"
    assert caption_named_type("Figure 5: Comparison of the samples of two runs. Lower panels: boxplots of "
                              "the differences.") is None
    assert caption_named_type("Figure 1: A diagram of the viewport. The rest is text.") == "diagram"


def test_the_name_decides_where_the_pixels_are_unsure():
    pixels = pixel_result(bar_chart=0.54, heatmap=0.1, line_chart=0.2)
    assert pixels.figure_type == "bar_chart"
    out = with_caption_evidence(pixels, "Figure 16: Heatmap showing the distances between the samples.")
    assert out.figure_type == "heatmap"
    assert abs(sum(out.scores.values()) - 1.0) < 0.02  # still probabilities
    # the odds of the named type are multiplied, the others keep their order
    odds = lambda r: r.scores["heatmap"] / r.scores["bar_chart"]  # noqa: E731
    assert abs(odds(out) / odds(pixels) - CAPTION_WEIGHT) < 0.1 * CAPTION_WEIGHT
    assert out.scores["bar_chart"] > out.scores["line_chart"] > out.scores["box_plot"]
    # a type the pixels give no weight at all can still be named into the list
    assert with_caption_evidence(pixel_result(scatter_plot=0.4, screenshot=0.03),
                                 "Figure 5: The graphical user interface of the tool.").figure_type == "screenshot"


def test_a_confident_pixel_answer_stands_against_the_caption():
    pixels = pixel_result(diagram=5.0)
    assert pixels.scores["diagram"] > 0.95
    out = with_caption_evidence(pixels, "Figure 4: Box plots of the classes.")
    assert out.figure_type == "diagram"
    assert out.scores["box_plot"] > pixels.scores["box_plot"]


def test_no_evidence_keeps_the_pixel_result():
    pixels = pixel_result(bar_chart=8.0)
    assert with_caption_evidence(pixels, "Figure 7: Results on the validation set.") is pixels
    assert with_caption_evidence(pixels, "Figure 8: Robust scatter estimation.") is pixels
    assert with_caption_evidence(pixels, None) is pixels
