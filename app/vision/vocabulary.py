"""The fixed vocabulary of figure types, and the everyday names people use for them.

One rule for both directions: `types_named_in` maps a free-text query to the types it names
("heat map", "confusion matrix" -> heatmap), and the same names give weak labels to captions.
"""
from __future__ import annotations

import re

TYPES: tuple[str, ...] = ("line_chart", "bar_chart", "scatter_plot", "heatmap", "box_plot", "pie_chart",
                          "network_graph", "diagram", "table", "photo", "screenshot", "text", "map", "other")

# everyday names and synonyms -> type (lowercase; matched as whole words, hyphens/spaces optional).
# A name makes the classifier's score for its type lead a query's ranking (Searcher.query_type_weight),
# so a kind is named only where that helps: QQ, trace, residual and pairs plots, biplots, dot plots
# and dendrograms are left to their words, as their top five by words alone were better on R package
# vignettes (the classifier types them too unreliably there; README, Measurements).
NAMES: dict[str, tuple[str, ...]] = {
    "line_chart": ("line chart", "line plot", "line graph", "learning curve", "learning curves",
                   "training curve", "training curves", "loss curve", "loss curves", "roc curve", "roc curves",
                   "precision recall curve", "time series", "convergence plot",
                   "survival curve", "survival curves", "survival plot", "survival plots", "kaplan meier",
                   "kaplan meier curve", "kaplan meier curves", "kaplan meier plot", "density plot",
                   "density plots", "density curve", "density curves"),
    "bar_chart": ("bar chart", "bar charts", "bar plot", "bar plots", "bar graph", "histogram", "histograms",
                  "barplot", "barplots", "barchart", "barcharts", "rootogram", "rootograms"),
    "scatter_plot": ("scatter plot", "scatter plots", "scatterplot", "scatter", "tsne", "t sne", "umap",
                     "embedding visualization", "embedding visualisation",
                     "normal probability plot", "ordination plot", "ordination plots", "ordination diagram",
                     "ordination diagrams", "ma plot", "ma plots", "volcano plot", "volcano plots"),
    "heatmap": ("heatmap", "heatmaps", "heat map", "heat maps", "confusion matrix", "confusion matrices",
                "attention map", "attention maps", "attention matrix", "attention weights",
                "correlation matrix", "similarity matrix", "level plot", "level plots", "levelplot"),
    "box_plot": ("box plot", "box plots", "boxplot", "boxplots", "violin plot", "violin plots",
                 "box and whisker"),
    "pie_chart": ("pie chart", "pie charts", "pie"),
    "network_graph": ("network graph", "graph visualization", "graph visualisation", "knowledge graph",
                      "social network", "node link", "citation network", "co author network"),
    "diagram": ("diagram", "diagrams", "architecture", "architecture diagram", "model architecture",
                "pipeline", "framework overview", "overview figure", "flowchart", "flow chart", "flow diagram",
                "system overview", "schematic", "block diagram", "workflow"),
    "table": ("table", "tables"),
    "photo": ("photo", "photos", "photograph", "photographs", "microscopy", "micrograph", "natural image",
              "natural images"),
    "screenshot": ("screenshot", "screenshots", "screen shot", "user interface", "web page"),
    "text": ("algorithm", "pseudocode", "pseudo code", "prompt", "prompts", "example prompt", "equation",
             "equations", "listing", "code listing"),
    "map": ("geographic map", "world map", "choropleth"),
}

# Names of what a figure shows rather than how it is drawn: attention weights are drawn as heat maps,
# bars or curves. A query naming them wants that type first; a caption naming them does not say the
# figure's kind (on the labelled recommender-systems crops, 5 of the 9 captions whose only type name
# was "attention weights" were heat maps).
CONTENT_NAMES = frozenset({"attention weights"})

_NORM_RE = re.compile(r"[^a-z0-9]+")


def _norm(text: str) -> str:
    return " " + _NORM_RE.sub(" ", (text or "").lower()).strip() + " "


_PATTERNS = sorted(((f" {_norm(n).strip()} ", t) for t, names in NAMES.items() for n in names),
                   key=lambda x: -len(x[0]))


def types_named_in(query: str, kinds_only: bool = False) -> list[str]:
    """Types a query names, longest names first ("heat map" is a heatmap, not a map); a word
    already used by a longer name is not read again. `kinds_only`: only names of how a figure is
    drawn count, not CONTENT_NAMES."""
    text = _norm(query)
    found: list[str] = []
    for pat, t in _PATTERNS:
        if pat in text:
            text = text.replace(pat, " | ")
            if kinds_only and pat.strip() in CONTENT_NAMES:
                continue
            if t not in found:
                found.append(t)
    return found


def name_words() -> frozenset[str]:
    """The words of the figure types' names ("heatmap", "scatterplot", "histogram", ...): words a
    search understands in any collection, so a misspelling of one can be corrected to it."""
    return frozenset(w for names in NAMES.values() for n in names for w in n.split() if len(w) >= 3 and w.isalpha())
