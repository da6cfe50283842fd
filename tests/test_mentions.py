"""Tests for app.ingest.mentions and the sentence splitter."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.ingest.mentions import find_mentions, mentioned_numbers
from app.ingest.parse import split_sentences


def refs(sentence: str) -> list[tuple[str, int]]:
    return [(m.kind, m.number) for m in find_mentions([sentence])]


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("As shown in Figure 3, the loss drops.", [("figure", 3)]),
        ("See Fig. 3 for details.", [("figure", 3)]),
        ("See Fig 3 for details.", [("figure", 3)]),
        ("See Fig.3 for details.", [("figure", 3)]),
        ("FIGURE 3 shows the model.", [("figure", 3)]),
        ("Figs. 2 and 3 compare both.", [("figure", 2), ("figure", 3)]),
        ("Figures 2-4 show curves.", [("figure", 2), ("figure", 3), ("figure", 4)]),
        ("Figures 2\u20134 show curves.", [("figure", 2), ("figure", 3), ("figure", 4)]),
        ("Figure 3(a) shows the input.", [("figure", 3)]),
        ("Fig. 3b depicts the output.", [("figure", 3)]),
        ("Figs. 2, 3, and 5 are similar.", [("figure", 2), ("figure", 3), ("figure", 5)]),
        ("Table 2 lists the data.", [("table", 2)]),
        ("Tab. 2 lists the data.", [("table", 2)]),
        ("Tables 1 and 2 list the data.", [("table", 1), ("table", 2)]),
        ("Results (Table 4 and Figure 5) agree.", [("table", 4), ("figure", 5)]),
        ("In Table 1, 2 methods fail.", [("table", 1)]),
        ("This is stable 3 times and configured in 2019.", []),
        ("No reference here.", []),
        ("The Fig 9.2 in the book and Fig.11.10 show it.", []),
        ("We compare them in Table 4.6 Our model wins, as in Figure 2.8", [("table", 4), ("figure", 2)]),
        ("See Supplementary Fig. 5 and Extended Data Table 2, then Figure 1.", [("figure", 1)]),
        ("We report NeuMF from Table 2 in [16] and Fig. 3 of [5], as in Table 4.", [("table", 4)]),
    ],
)
def test_reference_forms(sentence, expected):
    assert refs(sentence) == expected


def test_range_is_capped():
    got = refs("Figures 1-500 are in the appendix.")
    assert len(got) <= 2


def test_records_have_neighbours_and_positions():
    sents = ["Intro sentence.", "Figure 1 shows it and Fig. 1 again.", "Middle.", "Table 2 ends."]
    ms = find_mentions(sents)
    assert [(m.kind, m.number, m.position) for m in ms] == [("figure", 1, 1), ("table", 2, 3)]
    fig = ms[0]
    assert fig.before == "Intro sentence." and fig.after == "Middle."
    assert ms[1].after == ""
    assert fig.context == "Intro sentence. Figure 1 shows it and Fig. 1 again. Middle."
    first = find_mentions(["Figure 7 opens."])[0]
    assert first.before == "" and first.after == ""


def test_mentioned_numbers():
    assert mentioned_numbers(["Figs. 2 and 3.", "Table 1.", "Fig. 2 again."]) == {
        ("figure", 2), ("figure", 3), ("table", 1)}


@pytest.mark.parametrize(
    "text",
    [
        "As shown in Fig. 3 the loss drops quickly.",
        "Both Figs. 2 and 3 agree.",
        "Many models, e.g. DeepFM and DCN, learn interactions.",
        "The result, i.e. the score, is higher.",
        "Smith et al. Proposed this first.",
        "Using Eq. 2 we derive the update.",
        "Details are in Sec. 3 below.",
        "DeepFM vs. DCN is a classic comparison.",
        "The numbers in Tab. 1 are averages.",
        "The AUC improves by 0.5 points overall.",
        "This was proposed by J. Smith in his thesis.",
        "It is listed as No. 5 in the ranking.",
    ],
)
def test_splitter_keeps_abbreviations(text):
    assert split_sentences(text) == [text]


def test_splitter_splits_real_boundaries():
    text = ("We propose a model. It works well! Does it scale? Yes, it does. "
            "The gain is 3.5%. Figure 2 shows it.")
    assert split_sentences(text) == [
        "We propose a model.", "It works well!", "Does it scale?", "Yes, it does.",
        "The gain is 3.5%.", "Figure 2 shows it.",
    ]


def test_splitter_quotes_and_newlines():
    assert split_sentences('He said "stop." Then left.\nNext para.') == ['He said "stop."', "Then left.", "Next para."]


# Real papers whose caption text used to leak into the body text: a caption's second block, or
# a caption printed in the flow of a column, became body sentences and the context of mentions.
NAACL = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "naacl2024"
LEAKY_PAPERS = ["052faf8a14c4", "02f1b819d5ff", "040f59eb5a52"]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


@pytest.mark.parametrize("folder", LEAKY_PAPERS)
def test_caption_lines_never_enter_body_sentences_of_real_papers(folder, tmp_path):
    """No body sentence and no mention (sentence, sentence before, sentence after) is a sentence
    of a caption of the paper; every mention sentence still names the figure it is attached to."""
    from app.ingest.extract import extract_pdf
    from app.search.explain import sentences

    pdf = NAACL / folder / "paper.pdf"
    if not pdf.exists():
        pytest.skip("shared corpus not available")
    r = extract_pdf(pdf, tmp_path)
    assert r.status == "ok" and r.figures
    caption_sentences = {_norm(s) for f in r.figures for s in sentences(f.caption or "") if len(s.split()) >= 6}
    leaked = [s for s in r.paper.sentences if _norm(s) in caption_sentences]
    assert leaked == []
    in_mentions = [p for m in r.mentions for p in (m.before, m.sentence, m.after) if p and _norm(p) in caption_sentences]
    assert in_mentions == []
    assert all((m.kind, m.number) in mentioned_numbers([m.sentence]) for m in r.mentions)


def test_context_about_another_figure_is_left_out():
    """The sentence after a mention of Figure 3 that is about Figure 4 is not Figure 3's context;
    one about no figure, or about Figure 3 too, is."""
    sents = ["We train for ten epochs.", "Figure 3 plots the loss.", "Figure 4 is a heatmap of the attention.",
             "Figures 3 and 4 agree.", "Nothing else changes."]
    got = {(m.number, m.sentence): (m.before, m.after) for m in find_mentions(sents)}
    assert got[(3, "Figure 3 plots the loss.")] == ("We train for ten epochs.", "")
    assert got[(4, "Figure 4 is a heatmap of the attention.")] == ("", "Figures 3 and 4 agree.")
    assert got[(3, "Figures 3 and 4 agree.")] == ("", "Nothing else changes.")
    assert got[(4, "Figures 3 and 4 agree.")] == ("Figure 4 is a heatmap of the attention.", "Nothing else changes.")
