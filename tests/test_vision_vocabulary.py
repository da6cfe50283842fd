"""Figure types a query names by everyday names."""
import pytest

from app.vision.vocabulary import TYPES, types_named_in


@pytest.mark.parametrize("query,types", [
    ("heatmap", ["heatmap"]), ("heat map of attention", ["heatmap"]), ("confusion matrix", ["heatmap"]),
    ("t-SNE of embeddings", ["scatter_plot"]), ("UMAP", ["scatter_plot"]), ("bar chart", ["bar_chart"]),
    ("histogram of lengths", ["bar_chart"]), ("architecture diagram", ["diagram"]),
    ("screenshot", ["screenshot"]), ("learning curves", ["line_chart"]),
    ("feature map resolution", []), ("error bars", []), ("user study", []),
])
def test_types_named_in(query, types):
    assert types_named_in(query) == types
    assert all(t in TYPES for t in types)
