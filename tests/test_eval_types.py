"""Mean recall in `figsearch eval-types`: each labelled type counts once, however many figures it has."""
from app.eval.types import mean_recall


def test_mean_recall_weighs_types_not_figures():
    figures = ([{"gold": "line_chart", "predicted": "line_chart"}] * 9
               + [{"gold": "box_plot", "predicted": "line_chart"}])
    assert mean_recall(figures) == 0.5  # accuracy would be .9
    figures.append({"gold": "box_plot", "predicted": "box_plot"})
    assert mean_recall(figures) == 0.75
    # a type only predicted, never labelled, does not count
    assert mean_recall([{"gold": "text", "predicted": "text"}, {"gold": "text", "predicted": "other"}]) == 0.5
