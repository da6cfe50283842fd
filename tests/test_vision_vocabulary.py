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


@pytest.mark.parametrize("query,types", [
    ("Kaplan-Meier curves by stage", ["line_chart"]), ("survival curve", ["line_chart"]),
    ("density plot", ["line_chart"]), ("barplot of counts", ["bar_chart"]), ("rootogram", ["bar_chart"]),
    ("levelplot", ["heatmap"]), ("MA plot", ["scatter_plot"]), ("volcano plot", ["scatter_plot"]),
    ("NMDS ordination diagram", ["scatter_plot"]),
    # kinds the classifier types too unreliably in statistics papers for the type to lead the ranking
    # (their top five by words alone were better on the development vignettes): searched by words only
    ("QQ plot", []), ("trace plot", []), ("dendrogram", []), ("biplot", []), ("residual plot", []),
])
def test_statistics_names_of_figure_types(query, types):
    """The names statisticians and bioinformaticians type for a chart kind."""
    assert types_named_in(query) == types
