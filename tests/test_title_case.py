"""Titles set in capitals shown in title case, spelled as the paper's text spells their words."""
from app.ingest.title_case import is_all_caps, title_case

BODY = ("We debias post-click conversion rate estimation at a large scale. Large-scale data and GNNs "
        "with t-SNE plots; the CTR is low. Adam is used. Multi-task learning helps.")


def test_words_keep_the_papers_spelling_and_ordinary_words_get_a_capital():
    assert title_case("LARGE-SCALE CAUSAL APPROACHES TO DEBIASING POST-CLICK CONVERSION RATE ESTIMATION WITH "
                      "MULTI-TASK LEARNING", BODY) == ("Large-Scale Causal Approaches to Debiasing Post-Click "
                                                      "Conversion Rate Estimation with Multi-Task Learning")
    assert title_case("GNNS AND T-SNE FOR CTR", BODY) == "GNNs and t-SNE for CTR"


def test_first_word_and_subtitle_start_with_a_capital():
    assert title_case("ADAM: A METHOD FOR STOCHASTIC OPTIMIZATION", BODY) == "Adam: A Method for Stochastic Optimization"
    assert title_case("THE CASE FOR LEARNED INDEXES", "") == "The Case for Learned Indexes"


def test_words_the_text_never_uses_keep_capitals_only_as_acronyms():
    assert title_case("XGB WITH RNN LAYERS FOR GPT4 AND BERT", "") == "XGB with RNN Layers for GPT4 and Bert"


def test_titles_with_lower_case_letters_are_left_alone():
    t = "Field-aware Factorization Machines for CTR Prediction"
    assert not is_all_caps(t) and title_case(t, BODY) == t
    assert not is_all_caps("E5") and is_all_caps("E5: ZERO-SHOT TABLES")
