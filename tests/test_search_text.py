"""Text analysis: the same analyzer feeds the index and the queries."""
from app.search.text import STOP_WORDS, analyze, figure_text


def test_stemming():
    assert analyze("recommendations") == ["recommend"]
    assert analyze("Recommending recommended") == ["recommend", "recommend"]


def test_stop_words_numbers_and_short_tokens_removed():
    toks = analyze("The results of the model are shown in Figure 3 (a) for 2019 and x")
    assert "the" not in toks and "of" not in toks and "are" not in toks
    assert "3" not in toks and "2019" not in toks and "a" not in toks and "x" not in toks
    assert toks == ["result", "model"]  # "shown in Figure" is reference boilerplate
    assert "the" in STOP_WORDS


def test_alphanumerics_kept():
    assert analyze("CTR of BERT on 2D data, ResNet50 with L2") == ["ctr", "bert", "2d", "data", "resnet50", "l2"]


def test_empty():
    assert analyze("") == [] and analyze("the of and") == []


def test_figure_text_composition():
    t = figure_text("Figure 2: AUC vs. embedding size.",
                    ["We vary the size. Figure 2 shows AUC. Larger is better.", "", "As Fig. 2 shows, it saturates."])
    assert t.startswith("Figure 2: AUC vs. embedding size.")
    assert "Figure 2 shows AUC" in t and "it saturates" in t
    assert t.index("AUC vs.") < t.index("We vary") < t.index("As Fig. 2")
    assert figure_text("cap", []) == "cap"
    assert figure_text("", ["ctx"]) == "ctx"
