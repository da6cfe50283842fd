"""Why a result was returned: informative terms, reasons in words, the matched sentence."""
from app.search.explain import TermStats, best_sentence, highlight_spans, informative_terms, reasons, surface_words
from app.search.text import analyze


def test_informative_terms_drop_filler_and_common_terms_rarest_first():
    stems = analyze("see future work plan study heatmap attention using method")
    idf = TermStats({"heatmap": 5.0, "attent": 2.0})
    idf.common = frozenset({"attent"})
    assert informative_terms(stems) == analyze("heatmap attention")
    assert informative_terms(stems, idf) == analyze("heatmap")


def test_reasons_in_words():
    sig = {"type": 1.0, "visual": 0.9, "paper": 0.7, "text": 0.2, "lexical": 3.0}
    assert reasons(sig, "heatmap") == ["same kind of figure (heatmap)", "similar picture", "related paper topic"]
    assert "related paper topic" not in reasons(sig, "heatmap", same_paper=True)
    assert reasons({"type": 0.0, "visual": 0.1, "paper": 0.1}) == []
    assert reasons(None) == []
    assert reasons({"visual": 0.99}) == ["same picture"]  # a copy of the figure itself
    # a text query naming a type: the type named, in the words of the query
    assert reasons({"type": 0.9}, "pie_chart", named_type=True) == ["looks like a pie chart"]
    assert reasons({"type": 0.9}, "heatmap", named_type=True) == ["looks like a heatmap"]
    assert reasons({"type": 0.9}, "text", named_type=True) == ["looks like text"]
    assert reasons({"type": 0.2}, "heatmap", named_type=True) == []
    # below even odds, a figure the search counts as showing the type says so, less surely
    assert reasons({"type": 0.3, "type_shown": 1.0}, "box_plot", named_type=True) == ["may show a box plot"]
    assert reasons({"type": 0.3, "type_shown": 1.0}, "heatmap", named_type=True) == ["may show a heatmap"]
    assert reasons({"type": 0.9, "type_shown": 1.0}, "box_plot", named_type=True) == ["looks like a box plot"]
    assert reasons({"type": 0.1, "type_shown": 0.0, "lexical": 2.0}, "box_plot", named_type=True) == []
    # a named type query never says "same kind of figure" (that compares two figures)
    assert reasons({"type": 0.9, "type_shown": 1.0}, None, named_type=True) == []


def test_best_sentence_prefers_the_sentence_with_the_query_terms():
    caption = "Figure 3: Training curves. Loss decreases steadily."
    body = ["We compare models. The attention heatmap in Figure 3 shows sharp peaks. Other text."]
    s = best_sentence("attention heatmap", caption, body)
    assert s["source"] == "body" and "attention heatmap" in s["text"]
    a, b = s["highlights"][0]
    assert s["text"][a:b] == "attention"
    assert best_sentence("training loss", caption, body)["source"] == "caption"
    assert best_sentence("zebra", caption, body) is None


def test_hyphenated_name_is_highlighted_whole_when_every_indexed_part_matches():
    def shown(sentence, query):
        return [sentence[a:b] for a, b in highlight_spans(sentence, set(analyze(query)))]

    assert shown("A t-SNE view of the item embeddings.", "t-SNE") == ["t-SNE"]
    # a compound with a part the query lacks keeps word-by-word highlights
    assert shown("Our state-of-the-art results on art data.", "art") == ["art", "art"]


def test_snippet_is_not_the_caption_when_the_body_text_matches():
    caption = "Figure 2: Attention heatmap of the encoder."
    body = ["The heatmap in Figure 2 shows that attention concentrates on the first tokens."]
    s = best_sentence("attention heatmap", caption, body, about=("figure", 2))
    assert s["source"] == "body" and "first tokens" in s["text"]


def test_snippet_never_describes_another_figure():
    """A body sentence naming only another figure ("summarized in Fig. 6") is not shown under
    Figure 5, even when it matches the query best; one naming this figure is."""
    caption = "Figure 5: Recall at ten."
    body = ["The recall results are summarized in Fig. 6, which reports recall per domain.",
            "Recall in Figure 5 drops for long queries."]
    s = best_sentence("recall domain", caption, body, about=("figure", 5))
    assert s["text"] == "Recall in Figure 5 drops for long queries."
    assert best_sentence("domain", caption, body, about=("figure", 5)) is None


def test_a_sentence_shown_above_is_not_repeated():
    body = ["Error bars are omitted for clarity.", "The bar chart compares clicks per error type."]
    first = best_sentence("bar error", "Figure 1: x", body, about=("figure", 1))
    again = best_sentence("bar error", "Figure 1: x", body, about=("figure", 1), seen={first["text"]})
    assert first["text"] != again["text"]
    generic = "Figure 2: Clicks per day. Error bars are omitted for clarity."
    assert best_sentence("bar", generic, [], seen={"Error bars are omitted for clarity."}) is None


def test_related_reasons_name_the_kind_the_shared_caption_words_and_the_paper():
    from app.search.explain import related_reasons

    sig = {"type": 1.0, "paper": 0.7, "text": 0.3}
    out = related_reasons(sig, "line_chart", "Figure 4: Recall@20 against embedding size on the Criteo data.",
                          "Recall@20 with different embedding size.", "Two-tower retrieval for advertising",
                          "Retrieval with two towers for online advertising")
    assert out[0] == "same kind of figure (line chart)"
    # what both plot, and no list of the same words again
    assert out[1] == "both plot recall@20 against embedding size"
    assert not any(r.startswith("both captions mention ") for r in out)
    out = related_reasons(sig, "line_chart", "Figure 4: Recall@20 on the Criteo data for each embedding size.",
                          "Recall@20 per embedding size.", "Two-tower retrieval for advertising",
                          "Retrieval with two towers for online advertising")
    shared = next(r for r in out if r.startswith("both captions mention "))
    assert "embedding" in shared and "size" in shared and "Criteo" not in shared  # words of both captions only
    assert out[-1].startswith("related paper: both on ") and "advertising" in out[-1] and "online" not in out[-1]
    # related papers whose titles share nothing informative: the topic only
    assert related_reasons(sig, None, "a", "b", "Graph learning", "Click models")[-1] == "related paper topic"
    # nothing in common, papers far apart: no reason is made up
    assert related_reasons({"type": 0.0, "paper": 0.1}, "bar_chart", "Accuracy per task.", "Budget pacing curve.",
                           "One paper", "Other paper") == []


def test_what_a_chart_plots_is_read_from_the_caption():
    from app.search.plots import head, plotted

    p = plotted("Figure 6: Performance w.r.t. number of embedding dimensions. Results on two data sets are similar.")
    assert p.against == "number of embedding dimensions" and p.against_head == head("embedding dimensions") == "dimens"
    assert p.curve
    p = plotted("Figure 2: Generation speed of the decoder with different sizes of the datastore (7B model).")
    assert (p.measure, p.against, p.curve) == ("Generation speed", "sizes", False)
    p = plotted("Figure 3: Effect of training data size on NER task.")
    assert p.against == "training data size" and p.curve
    assert not plotted("Figure 1: The overall architecture of our model.")


def test_the_plot_reason_names_only_what_both_captions_plot():
    from app.search.explain import plot_reason, related_reasons

    reason, said = plot_reason("Figure 4: Recall@20 against embedding size on the Criteo data.",
                               "Figure 2: Recall@20 with different embedding size.")
    assert reason == "both plot recall@20 against embedding size" and said
    # the same head noun, or nothing: "tasks" is not "task correlation", "error" is not "CTR"
    assert plot_reason("Figure 6: Training space of different tasks",
                       "Figure 3: Accuracy on synthetic data with different task correlation.")[0] is None
    assert plot_reason("Figure 6: Expected mean absolute error as a function of views.",
                       "Figure 4: Expected CTR for different algorithms.")[0] is None
    # a variable only
    assert plot_reason("Figure 5: Performance w.r.t. the number of interacting layers.",
                       "Figure 4: The performance of different number of layers in DNN.")[0] == "both vary layers"
    # a picture shown for a few values is not a curve over them
    assert plot_reason("Figure 15: t-SNE visualization of the representations under different distortions.",
                       "Figure 7: t-SNE visualization of hidden states with different distortions.")[0] == \
        "both show t-SNE visualization across distortions"
    # "curve" is what every chart is
    assert plot_reason("Figure 6: The tradeoff curve of different values.", "Figure 5: Spend curve vs. time.")[0] is None
    # the caption words the plot reason names are not listed again
    out = related_reasons({"type": 1.0}, "line_chart", "Figure 4: Recall@20 against embedding size on the Criteo data.",
                          "Recall@20 with different embedding size on the Criteo data.")
    assert "both plot recall@20 against embedding size" in out
    mention = next(r for r in out if r.startswith("both captions mention"))
    assert "criteo" in mention.lower() and "embedding" not in mention


def test_a_count_the_caption_plots_over_is_the_variable():
    from app.search.explain import plot_reason
    from app.search.plots import plotted

    assert plotted("Figure 10: AUC and Logloss comparison of number of layers.").against == "number of layers"
    assert plot_reason("Figure 10: AUC and Logloss comparison of number of layers.",
                       "Figure 5: Performance w.r.t. the number of interacting layers.")[0] == "both vary layers"


def test_shared_terms_are_shown_as_written():
    # stems come back as the words of the texts; a compound stays whole ("t-SNE", not "sne")
    assert surface_words(["sne", "visual", "accuraci"], "t-SNE visualization", "Top-1 accuracy of t-SNE") == \
        ["t-SNE", "visualization", "accuracy"]
    assert surface_words(["unseen"], "no such word here") == ["unseen"]


def test_related_reasons_name_the_words_printed_inside_both_figures():
    from app.search.explain import inside_reason, related_reasons

    mine = "Recall@20 0.1 0.2 0.3 Embedding size 32 64 128 DeepFM (a) Criteo"
    theirs = "Recall@20 0.2 0.4 embedding size 16 32 LightGCN (b) MovieLens"
    reason, stems = inside_reason(mine, theirs)
    assert reason == "both show: recall@20, embedding, size"  # as the other figure writes them; no ticks, no letters
    assert stems == set(analyze("recall embedding size"))
    # words common to many figures say nothing about this pair
    idf = TermStats({"recal": 3.0, "embed": 2.0, "size": 1.0})
    idf.common = frozenset({"size"})
    assert inside_reason(mine, theirs, idf)[0] == "both show: recall@20, embedding"
    assert inside_reason(mine, "", idf) == (None, set())  # a raster figure prints nothing
    assert inside_reason("Accuracy epoch", "Latency QPS")[0] is None
    out = related_reasons({"type": 1.0}, "line_chart", "Figure 2: Results on Criteo.", "Recall of LightGCN.",
                          words=mine, other_words=theirs)
    assert out == ["same kind of figure (line chart)", "both show: recall@20, embedding, size"]
    # what the captions already say is not repeated as printed inside
    out = related_reasons({}, None, "Figure 4: Recall@20 against embedding size on the Criteo data.",
                          "Recall@20 with different embedding size.", words=mine, other_words=theirs)
    assert out == ["both plot recall@20 against embedding size"]


def test_printed_words_are_named_as_both_figures_print_them():
    from app.search.explain import inside_reason, related_reasons

    # HR@10 and HR@50 share the measure, not the cut-off
    assert inside_reason("HR@10 NDCG@10 0.2 0.4", "HR@50 NDCG@10 0.1")[0] == "both show: HR, NDCG@10"
    # a name one figure prints alone and the other inside a compound is named as both print it
    # (the reason said "DeepFM-FE" of a figure that prints only "DeepFM")
    assert inside_reason("DeepFM Random initialized AUC", "DeepFM-FE random AUC")[0] == "both show: DeepFM, random, AUC"
    # ... but a prefix of two different compounds ("multi" of multi-head and multi-task) names nothing
    assert inside_reason("multi-head attention", "multi-task attention")[0] == "both show: attention"
    # one shared label at a low figure-words cosine is chance: not said
    words, other = "Number of layer 1 2 3 accuracy", "layer depth latency"
    assert related_reasons({"figure_words": 0.05}, None, "a", "b", words=words, other_words=other) == []
    shown = related_reasons({"figure_words": 0.3}, None, "a", "b", words=words, other_words=other)
    assert shown == ["both show: layer"]


def test_shared_caption_words_are_named_as_both_captions_print_them():
    from app.search.explain import shared_words

    # "few-shot" and "T5-3B" were said of captions that print "zero-shot" and "FLAN-T5"
    assert shared_words("Scores of zero-shot GPT-3 with extra context", "Results of the few-shot setting in context") == ["shot", "context"]
    assert shared_words("Routing between T5-base and T5-3B", "For FLAN-T5 we use the FLAN collection") == ["T5"]
    assert shared_words("Multi-task learning on ads", "multi-task models for ads") == ["multi-task", "ads"]


def test_a_prefix_two_compounds_share_is_no_shared_word():
    """"related paper: both on multi" said of "Multi-Interest Network ..." and "Multi-channel
    Matching ...": a prefix of two different compounds names no topic. The titles' other shared
    words are named; a prefix both texts print alone stays, as does a compound both print."""
    from app.search.explain import related_reasons, shared_words

    on = related_reasons({"paper": 0.9}, None, "", "", "Multi-Interest Network with Dynamic Routing for Recommendation",
                         "Multi-channel Matching in Recommendation")
    assert on == ["related paper: both on recommendation"]
    on = related_reasons({"paper": 0.9}, None, "", "", "Self-Attentive Sequential Recommendation",
                         "Self-Supervised Learning for Sequential Recommendation")
    assert on == ["related paper: both on sequential, recommendation"]
    # nothing but the prefix is shared: the papers' topic is said without words
    assert related_reasons({"paper": 0.9}, None, "", "", "Cross-lingual Transfer", "Cross-domain Ranking") == ["related paper topic"]
    assert shared_words("Self-Supervised Ranking", "Self-Supervised ranking models") == ["self-supervised", "ranking"]
    assert shared_words("multi modal inputs", "inputs in multi modal form") == ["multi", "modal", "inputs"]
    # words printed inside both figures: the same
    from app.search.explain import inside_reason
    said, stems = inside_reason("Multi-gate Expert Tower Output", "Multi-Task Tower Output")
    assert said == "both show: tower, output" and "multi" not in stems
    assert inside_reason("multi head Tower", "multi Tower")[0] == "both show: multi, tower"
    # the prefix's place goes to the next shared word
    assert shared_words("Multi-task ads bids clicks", "Multi-channel ads bids clicks", n=2) == ["ads", "bids"]


def test_words_are_shown_in_one_readable_form_whatever_the_casing_of_their_text():
    from app.search.explain import related_reasons

    shouting = "ENTIRE SPACE MULTI-TASK MODEL FOR POST-CLICK CONVERSION RATE ESTIMATION"
    # a title set in capitals is not read as a list of acronyms; a title-case compound is lower case
    on = related_reasons({"paper": 0.9}, None, "", "", "Post-Click Conversion in Multi-Task Learning", shouting)
    assert on == ["related paper: both on multi-task, post-click"]
    on = related_reasons({"paper": 0.9}, None, "", "", shouting, "Post-Click Conversion Rate of CTR models")
    assert all(w == w.lower() for w in on[0].removeprefix("related paper: both on ").split(", "))
    # a short word in capitals stays an acronym, as do acronyms and mixed case in ordinary text
    assert surface_words(["ctr", "convers"], "CTR AND CONVERSION PREDICTION MODELS", "") == ["CTR", "conversion"]
    assert surface_words(["sne", "auc"], "The t-SNE Map and AUC", "") == ["t-SNE", "AUC"]
    # a word of ordinary text is preferred to the same word in capitals
    assert surface_words(["ndcg"], "NDCG OF ALL RANKING METHODS", "nDCG per query") == ["nDCG"]


def test_shared_words_of_ordinary_prose_are_no_reason():
    """A word spread over the papers as by chance ("according": once here, once there) says
    nothing about what two figures are about; a word recurring in the figures of a few papers
    ("conversion") does, and a rare word shared by two figures stays (too few to judge its spread)."""
    import numpy as np

    from app.search.explain import idf_of, related_reasons
    from app.search.lexical import LexicalIndex

    docs, papers = [], []
    for p in range(40):
        for f in range(4):
            words = f"filler{p} plot{f}"
            if f == 0 and p < 12:
                words += " according"
            if p < 4 and f < 3:
                words += " conversion"
            if p in (20, 30) and f == 1:
                words += " dialogue"
            docs.append(analyze(words))
            papers.append(p)
    lex = LexicalIndex.build(docs)
    idf = idf_of(lex, np.array(papers))
    shared = analyze("according conversion dialogue")
    assert idf.spread_evenly(analyze("according")[0]) and not idf.spread_evenly(analyze("conversion")[0])
    assert informative_terms(shared, idf) == analyze("dialogue conversion")
    assert set(informative_terms(shared, idf, topical=False)) == set(shared)  # a query's own words stay
    # without the papers nothing is judged by spread
    assert set(informative_terms(shared, idf_of(LexicalIndex.build(docs)))) == set(shared)
    out = related_reasons({"type": 0.0}, None, "Conversion rate according to the budget.",
                          "Conversion rate per day, according to the logs.", idf=idf)
    assert len(out) == 1 and "conversion" in out[0] and "according" not in out[0]


def test_a_second_part_two_compounds_share_is_no_shared_word():
    """"both captions mention wise" said of captions printing "step-wise" and "frame-wise", and
    "level" of "word-level" and "sentence-level": the second part of two different compounds names
    no topic, as a prefix does not. A word both print alone stays."""
    from app.search.explain import inside_reason, shared_words

    assert shared_words("A step-wise supervised decoding", "frame-wise self-supervised objective") == ["supervised"]
    assert shared_words("accuracy at word-level", "accuracy at sentence-level") == ["accuracy"]
    assert shared_words("the noise level", "a higher level of noise") == ["noise", "level"]
    assert inside_reason("word-level F1 accuracy", "sentence-level F1 accuracy")[0] == "both show: F1, accuracy"


def test_both_mention_words_are_printed_by_both_figures():
    """The "both mention" chips of a related figure (`matched_terms`) name words both figures
    print: a compound only one prints was shown whole ("SELF-GUARD" on a card beside a figure
    that says "self-supervision", "step-wise" beside "frame-wise", "TREC-COVID" beside
    "TREC-DL19"); now the part both print is, and a bare prefix or second part is left out."""
    from app.search.explain import words_both_print

    query = "The R-Spin self-supervision framework: a frame-wise objective, evaluated on TREC-DL19"
    assert words_both_print(["self", "object"], query, "The pipeline of SELF-GUARD and its objective") == ["objective"]
    assert words_both_print(["wise", "object"], query, "step-wise supervision of the objective") == ["objective"]
    assert words_both_print(["trec"], query, "Results on TREC-COVID") == ["TREC"]
    assert words_both_print(["bert"], "BERT-like encoders", "BERT and RoBERTa") == ["BERT"]
    # a compound both print is named whole, as are words both print
    assert words_both_print(["multi", "task"], "multi-task ranking", "a multi-task model") == ["multi-task"]
    # what the query figure prints inside it (text_words) counts as printed, not as a form to show
    assert words_both_print(["trec"], "Ranking results", "Results on TREC-COVID", text_words="TREC-DL19 nDCG") == ["TREC"]


def test_one_rule_names_the_words_of_both_mention_and_of_the_captions_and_titles():
    """`shared_words` (captions, titles) and `words_both_print` ("both mention") name a word the
    same way: a measure with two cut-offs by the measure ("HR" for HR@10 and HR@50), a compound
    one text lacks by the part both print ("experts", not "novice-expert")."""
    from app.search.explain import shared_words, words_both_print

    assert words_both_print(analyze("HR"), "HR@10 on Yelp", "HR@50 per user") == ["HR"]
    assert shared_words("HR@10 on Yelp", "HR@50 per user") == ["HR"]
    assert shared_words("Bridging the Novice-Expert Gap", "Mixture-of-Experts for ranking") == ["experts"]
    assert words_both_print(analyze("expert"), "Bridging the Novice-Expert Gap", "Mixture-of-Experts") == ["experts"]
