"""Tests for app.ingest.parse (synthetic PDFs built with PyMuPDF + two real papers)."""
from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from app.ingest.parse import parse_pdf, split_sentences

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"

LEFT = pymupdf.Rect(56, 150, 296, 740)
RIGHT = pymupdf.Rect(316, 90, 556, 740)

ABSTRACT = (
    "We study the ranking of sponsored results with a simple model. "
    "The model learns feature interactions from raw data and is cheap to serve. "
    "Experiments on two public data sets show consistent gains over strong baselines."
)
LEFT_BODY = (
    "Alpha paragraph starts the introduction of this synthetic paper and it talks about "
    "recommender systems at length. As shown in Fig. 2, the alpha effect is strong and "
    "clearly visible in every setting that we tried."
)
RIGHT_BODY = (
    "Omega paragraph continues in the right column with more discussion of the method. "
    "Results are listed in Table 1 and compared with prior work by Smith et al. in detail."
)
REFS = [
    "[1] A. Author and B. Writer. 2019. A study of click prediction in online advertising systems. In KDD. 1-10.",
    "[2] C. Person. 2020. Deep models for sparse categorical features in large scale recommendation. In WWW.",
    "[3] D. Someone, E. Other, and F. Third. 2018. Learning to rank with implicit user feedback. In SIGIR. 5-9.",
]


def _two_column_pdf() -> pymupdf.Document:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(56, 60, 556, 100), "A Synthetic Study of Column Reading Order",
                        fontsize=18, fontname="hebo", align=1)
    page.insert_textbox(pymupdf.Rect(56, 100, 556, 120), "Ann Author, Bob Builder", fontsize=11,
                        fontname="helv", align=1)
    page.insert_text((56, 140), "Abstract", fontsize=11, fontname="hebo")
    y = 150
    page.insert_textbox(pymupdf.Rect(56, y, 296, y + 90), ABSTRACT, fontsize=9, fontname="helv")
    page.insert_text((56, 262), "1 Introduction", fontsize=11, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(56, 272, 296, 400), LEFT_BODY, fontsize=9, fontname="helv")
    page.insert_textbox(pymupdf.Rect(316, 150, 556, 300), RIGHT_BODY, fontsize=9, fontname="helv")
    # a figure caption in the right column: must not become a body sentence
    page.insert_textbox(pymupdf.Rect(316, 320, 556, 360), "Figure 2: The alpha effect on all data sets.",
                        fontsize=8, fontname="helv")
    page.insert_text((300, 770), "1", fontsize=9, fontname="helv")

    page2 = doc.new_page(width=612, height=792)
    page2.insert_textbox(pymupdf.Rect(56, 60, 296, 300),
                         "The conclusion paragraph closes the paper and summarises what we found in the study. "
                         "It is long enough to make the left column of the last page look like real text, with "
                         "a few more words about future work on synthetic documents.",
                         fontsize=9, fontname="helv")
    page2.insert_text((316, 70), "References", fontsize=11, fontname="hebo")
    y = 80
    for ref in REFS:
        page2.insert_textbox(pymupdf.Rect(316, y, 556, y + 40), ref, fontsize=8, fontname="helv")
        y += 45
    page2.insert_text((300, 770), "2", fontsize=9, fontname="helv")
    return doc


def test_synthetic_two_column_layout():
    doc = _two_column_pdf()
    p = parse_pdf(doc)
    assert p.has_text_layer
    assert p.n_pages == 2
    assert p.title == "A Synthetic Study of Column Reading Order"
    assert p.abstract.startswith("We study the ranking")
    assert p.abstract.endswith("strong baselines.")
    body = p.body_text
    # reading order: abstract, left column, right column, then page 2
    assert body.index("We study") < body.index("Alpha paragraph") < body.index("Omega paragraph")
    assert body.index("Omega paragraph") < body.index("conclusion paragraph")
    # references excluded from the body and split into entries
    assert "click prediction in online advertising" not in body
    assert len(p.references) == 3
    assert p.references[0].startswith("[1] A. Author")
    assert p.references[2].endswith("In SIGIR. 5-9.")
    # captions and page numbers are not body text
    assert not any(s.startswith("Figure 2:") for s in p.sentences)
    assert "1 Introduction" not in body
    # sentence split keeps abbreviations together
    assert "As shown in Fig. 2, the alpha effect is strong and clearly visible in every setting that we tried." in p.sentences
    assert any(s.startswith("Results are listed in Table 1") and "et al. in detail." in s for s in p.sentences)


def test_max_pages_limits_parsing():
    doc = _two_column_pdf()
    p = parse_pdf(doc, max_pages=1)
    assert p.n_pages == 2
    assert "conclusion paragraph" not in p.body_text
    assert p.references == []


def test_no_text_layer():
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 50, 50), 0)
    pix.set_rect(pix.irect, (200, 200, 200))
    page.insert_image(pymupdf.Rect(50, 50, 550, 750), pixmap=pix)
    p = parse_pdf(doc)
    assert p.has_text_layer is False
    assert p.sentences == [] and p.references == [] and p.body_text == ""
    assert p.n_pages == 1


def test_dehyphenation_and_hyphen_keep():
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((56, 100), "A Title For The Hyphen Test Paper", fontsize=16, fontname="hebo")
    lines = [
        "This paragraph discusses the recom-",
        "mendation problem in a long sentence that goes on and",
        "on with a state-of-the-",
        "art model, which ends here.",
    ]
    for i, t in enumerate(lines):
        page.insert_text((56, 150 + 12 * i), t, fontsize=10, fontname="helv")
    p = parse_pdf(doc)
    assert "recommendation problem" in p.body_text
    assert "state-of-the-art model" in p.body_text
    assert "\n" not in p.body_text


def test_split_sentences_basic():
    s = split_sentences("First one is here. Second one, e.g. with an example, ends. Third?\nNew paragraph")
    assert s == ["First one is here.", "Second one, e.g. with an example, ends.", "Third?", "New paragraph"]


def _real(name_part: str) -> Path:
    if not CORPUS.exists():
        pytest.skip("shared corpus not available")
    hits = sorted(CORPUS.rglob(f"*{name_part}*.pdf"))
    if not hits:
        pytest.skip(f"{name_part} not in corpus")
    return hits[0]


@pytest.mark.parametrize("name_part", ["[DeepFM]", "[DIEN]"])
def test_real_papers(name_part):
    path = _real(name_part)
    with pymupdf.open(path) as doc:
        p = parse_pdf(doc)
    assert p.has_text_layer
    assert p.title and len(p.title.split()) >= 4
    assert len(p.abstract) > 300
    assert len(p.references) >= 10
    assert len(p.sentences) > 100
    assert p.year is not None
    # the reference list is not part of the body
    assert not any(s.startswith("[1] ") for s in p.sentences)


def test_clean_text_repairs_accents_ligatures_and_broken_glyphs():
    from app.ingest.layout import clean_text

    assert clean_text("Milo\u02c7s Stanojevi\u00b4c") == "Milo\u0161 Stanojevi\u0107"
    assert clean_text("Stanojevi \u00b4c") == "Stanojevi\u0107"
    assert clean_text("na\u0131\u00a8ve M\u00a8uller") == "na\u00efve M\u00fcller"
    assert clean_text("e\x0ecient di\x0berent \x0cgure \ufb01ne") == "efficient different figure fine"
    # the same ligatures in TeX's T1 encoding (fontenc), as R vignettes print them
    assert clean_text("di\x1berential \x1ctted in\x1duence e\x1ecient ba\x1fe") == "differential fitted influence efficient baffle"
    assert "\ufffd" not in clean_text("Ca2\ufffd ions")
    assert clean_text("plain text") == "plain text"


def _front_page(rows: list[list[tuple[float, str, float]]], metadata: dict | None = None,
                bottom_line: str = "", refs: list[str] | None = None) -> pymupdf.Document:
    """A page with a title, then rows of (x, text, font size) pieces drawn as separate text runs,
    an abstract, a body line near the bottom and optionally a references page."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(56, 60, 556, 100), "Learning Sparse Interactions for Ranking Models",
                        fontsize=18, fontname="hebo", align=1)
    y = 120
    for row in rows:
        for x, text, size in row:
            page.insert_text((x, y), text, fontsize=size, fontname="helv")
        y += 14
    page.insert_text((56, y + 20), "Abstract", fontsize=11, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(56, y + 30, 296, y + 120), ABSTRACT, fontsize=9, fontname="helv")
    if bottom_line:
        page.insert_text((56, 700), bottom_line, fontsize=9, fontname="helv")
    if refs:
        page2 = doc.new_page(width=612, height=792)
        page2.insert_textbox(pymupdf.Rect(56, 60, 296, 300), LEFT_BODY, fontsize=9, fontname="helv")
        page2.insert_text((316, 70), "References", fontsize=11, fontname="hebo")
        ry = 80
        for ref in refs:
            page2.insert_textbox(pymupdf.Rect(316, ry, 556, ry + 40), ref, fontsize=8, fontname="helv")
            ry += 45
    if metadata:
        doc.set_metadata(metadata)
    return doc


def test_authors_set_in_columns_with_footnote_marks():
    """Names set apart with superscript marks and no commas, then a row of numbered affiliations."""
    row, x = [], 110.0
    for name, mark in [("Ann Author", "1,2"), ("Bob Builder", "1"), ("Cy Coder", "2")]:
        end = x + pymupdf.get_text_length(name, fontname="helv", fontsize=12)
        row += [(x, name, 12), (end, mark, 8)]  # the mark right after the name, then a wide gap
        x = end + pymupdf.get_text_length(mark, fontname="helv", fontsize=8) + 30
    doc = _front_page([row, [(150, "1Northwind Labs 2Acme AG", 12)]])
    assert parse_pdf(doc).authors == "Ann Author, Bob Builder, Cy Coder"


def test_authors_paired_with_addresses_one_per_row():
    doc = _front_page([
        [(90, "Ann Author", 11), (400, "ann@example.org", 10)],
        [(90, "Bob Builder", 11), (400, "bob@example.org", 10)],
        [(90, "Cy Coder", 11), (400, "cy@example.org", 10)],
    ])
    assert parse_pdf(doc).authors == "Ann Author, Bob Builder, Cy Coder"


def test_authors_list_stops_at_an_affiliation_row():
    doc = _front_page([
        [(150, "Ann Author, Bob Builder and Cy Coder", 12)],
        [(250, "Northwind Center", 12)],
        [(240, "Springfield, ST, Freedonia", 12)],
    ])
    assert parse_pdf(doc).authors == "Ann Author, Bob Builder, Cy Coder"


def test_author_marks_set_apart_or_misread_end_the_name_before_them():
    """Marks set apart from the name ("Ann Author 1 Bob Builder 1"), after a comma ("Ann Author,1
    Bob Builder"), glyphs a broken font maps to a backslash, and "and" all separate names; none of
    them stays in the list."""
    for row in ["Ann Author 1 Bob Builder 1 Cy Coder 2", "Ann Author,1 Bob Builder, 1 Cy Coder 2, 3",
                "Ann Author1,2, Bob Builder1,\\ Cy Coder1,3", "Ann Author\u2020, Bob Builder* and Cy Coder\u2021"]:
        doc = _front_page([[(150, row, 12)], [(150, "1Northwind Labs 2Acme AG", 9)]])
        assert parse_pdf(doc).authors == "Ann Author, Bob Builder, Cy Coder", row


def test_authors_set_in_a_grid_go_on_below_their_affiliations():
    """Rows of names, each name over its own affiliation and address; a later row of names in the same
    style continues the list, and a name too long for its column ends in the row below it."""
    doc = _front_page([
        [(80, "Ann Author", 12), (260, "Bob Builder", 12), (440, "Cy Coder", 12)],
        [(80, "Northwind Labs", 9), (260, "Acme Research", 9), (440, "Globex Institute", 9)],
        [(80, "ann@example.org", 9), (260, "bob@example.org", 9), (440, "cy@example.org", 9)],
        [(80, "Chandrashekhar", 12), (260, "Dee Developer", 12), (440, "Eve Engineer", 12)],
        [(80, "Nagarajan", 12)],
        [(80, "Northwind Labs", 9), (260, "Acme Research", 9), (440, "Globex Institute", 9)],
    ])
    assert parse_pdf(doc).authors == ("Ann Author, Bob Builder, Cy Coder, Chandrashekhar Nagarajan, "
                                      "Dee Developer, Eve Engineer")


def test_a_cover_sheet_before_the_paper_gives_way_to_its_first_page():
    """A repository's cover sheet (title, publication type and date, no abstract) before the paper:
    title and authors come from the paper's own first page."""
    doc = pymupdf.open()
    cover = doc.new_page(width=612, height=792)
    cover.insert_text((40, 90), "See discussions and author profiles for this publication", fontsize=7, fontname="helv")
    cover.insert_text((40, 120), "Learning Sparse InteractionsFor Ranking", fontsize=16, fontname="helv")
    cover.insert_text((40, 150), "Preprint \u00b7 October 2020", fontsize=8, fontname="helv")
    cover.insert_text((40, 200), "CITATIONS", fontsize=6, fontname="helv")
    cover.insert_text((300, 200), "READS", fontsize=6, fontname="helv")
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(56, 60, 556, 100), "Learning Sparse Interactions for Ranking Models",
                        fontsize=18, fontname="hebo", align=1)
    page.insert_text((150, 120), "Ann Author, Bob Builder", fontsize=12, fontname="helv")
    page.insert_text((56, 160), "Abstract", fontsize=11, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(56, 170, 296, 260), ABSTRACT, fontsize=9, fontname="helv")
    page.insert_textbox(pymupdf.Rect(56, 272, 296, 400), LEFT_BODY, fontsize=9, fontname="helv")
    p = parse_pdf(doc)
    assert (p.title, p.authors) == ("Learning Sparse Interactions for Ranking Models", "Ann Author, Bob Builder")


def test_a_title_in_capitals_reads_in_title_case_spelled_as_the_paper_spells_its_words():
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(56, 60, 556, 100), "LARGE-SCALE CTR PREDICTION WITH GNNS AND ADAM",
                        fontsize=18, fontname="hebo", align=1)
    page.insert_text((150, 120), "Ann Author, Bob Builder", fontsize=12, fontname="helv")
    page.insert_text((56, 160), "Abstract", fontsize=11, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(56, 170, 296, 300),
                        "Large-scale models of CTR prediction rely on GNNs trained with Adam. We study "
                        "large-scale prediction of the CTR and show that prediction with GNNs is cheap.",
                        fontsize=9, fontname="helv")
    page.insert_textbox(pymupdf.Rect(56, 312, 296, 440), LEFT_BODY, fontsize=9, fontname="helv")
    assert parse_pdf(doc).title == "Large-Scale CTR Prediction with GNNs and Adam"


def test_year_skips_citations_and_falls_back_to_the_references():
    """A cited year in running text is not the paper's; with no printed year, a creation date years
    after the newest reference (a re-saved copy) gives way to that reference's year + 1."""
    refs = ["[1] A. Author. 2019. A study of click prediction. In KDD.",
            "[2] C. Person. 2020. Deep models for sparse features. In WWW."]
    doc = _front_page([[(200, "Ann Author, Bob Builder", 12)]], {"creationDate": "D:20260813001223"},
                      "as in earlier work (Smith, 1985; Doe, 2001) and [Roe, 2003]", refs)
    assert parse_pdf(doc).year == 2021
    doc = _front_page([[(200, "Ann Author, Bob Builder", 12)]], {"creationDate": "D:20210105000000"},
                      "as in earlier work (Smith, 1985; Doe, 2001)", refs)
    assert parse_pdf(doc).year == 2021
    doc = _front_page([[(200, "Ann Author, Bob Builder", 12)]], {"creationDate": "D:20260813001223"},
                      "Proceedings of the Conference on Ranking (RANK 2022), pages 1-9", refs)
    assert parse_pdf(doc).year == 2022


def test_the_documents_own_date_line_gives_the_year_before_cited_and_copy_years():
    """A date set apart under the title is the document's year; of a last-edit and a build date the
    first printed; a date inside a sentence, or one a copy was accessed, is not."""
    meta = {"creationDate": "D:20220105000000"}
    doc = _front_page([[(200, "Ann Author, Bob Builder", 12)], [(200, "Modified: 6 March 2012. Compiled: November 1, 2022", 12)]],
                      meta, "as in earlier work (Smith, 1985; Doe, 2001) and [Roe, 2003]")
    assert parse_pdf(doc).year == 2012
    doc = _front_page([[(200, "Ann Author, Bob Builder", 12)], [(200, "Feb 2005", 12)]], meta)
    assert parse_pdf(doc).year == 2005
    doc = _front_page([[(200, "Ann Author, Bob Builder", 12)], [(200, "Accessed: 2019-03-02", 12)]], meta)
    assert parse_pdf(doc).year == 2022


def test_a_paragraph_running_into_the_page_foot_gives_no_year():
    """Years in running text at the foot of the first page are cited works' ("(Friendly 1994, 2000)")."""
    doc = _front_page([[(200, "Ann Author, Bob Builder", 12)]], {"creationDate": "D:20210105000000"})
    doc[0].insert_textbox(pymupdf.Rect(56, 660, 556, 740), "Extensions of these displays use residual-based "
                          "shadings to visualize log-linear models (Friendly 1994, 2000) and the significance "
                          "of tests, which later work extends to other displays.", fontsize=9, fontname="helv")
    assert parse_pdf(doc).year == 2021


def test_a_short_title_set_clearly_largest_is_the_title_and_a_journal_name_is_not():
    def page(lines: list[tuple[float, str, float]]) -> pymupdf.Document:
        doc = pymupdf.open()
        pg = doc.new_page(width=612, height=792)
        for y, text, size in lines:
            w = pymupdf.get_text_length(text, fontname="helv", fontsize=size)
            pg.insert_text(((612 - w) / 2, y), text, fontsize=size, fontname="helv")
        pg.insert_textbox(pymupdf.Rect(56, 300, 556, 420), ABSTRACT, fontsize=10, fontname="helv")
        pg.insert_textbox(pymupdf.Rect(56, 430, 556, 560), LEFT_BODY, fontsize=10, fontname="helv")
        return doc

    assert parse_pdf(page([(150, "Concordance", 17), (190, "Ann Author, Bob Builder", 12)])).title == "Concordance"
    doc = page([(90, "Data Open", 14), (150, "Graph networks: a review of methods", 13.6),
                (190, "Ann Author, Bob Builder", 11)])
    assert parse_pdf(doc).title == "Graph networks: a review of methods"


def _page_of_lines(doc: pymupdf.Document, lines: list[str], y0: float = 150, size: float = 10) -> pymupdf.Page:
    page = doc.new_page(width=612, height=792)
    for i, t in enumerate(lines):
        page.insert_text((56, y0 + 1.2 * size * i), t, fontsize=size, fontname="helv")
    return page


def test_line_end_hyphen_before_a_capital_or_digit_leaves_no_space():
    """'GPT-' / '3.5' and 'BERT-' / 'Base' keep the hyphen; 'EN-' / 'GLISH' drops it because the
    paper writes ENGLISH elsewhere; a lower-case break keeps its hyphen when the paper writes the
    compound hyphenated ('cross-entropy'), and drops it otherwise ('recommendation')."""
    doc = pymupdf.open()
    page = _page_of_lines(doc, [
        "We evaluate the recom-",
        "mendation quality of GPT-",
        "3.5 and of BERT-",
        "Base on the EN-",
        "GLISH part of the data, trained with cross-",
        "entropy on all the rest of the training data.",
    ])
    page.insert_text((56, 100), "A Title For The Hyphen Test Paper", fontsize=16, fontname="hebo")
    _page_of_lines(doc, ["The ENGLISH results use the cross-entropy loss, as is usual for such models of text."],
                   y0=400)
    body = parse_pdf(doc).body_text
    assert "recommendation quality of GPT-3.5 and of BERT-Base on the ENGLISH part" in body
    assert "trained with cross-entropy on all" in body
    assert "- " not in body


def test_join_lines_without_the_documents_words():
    from app.ingest.hyphenation import join_lines

    assert join_lines(["a state-of-the-", "art model with a 2-", "layer net and GPT-", "4"]) == \
        "a state-of-the-art model with a 2-layer net and GPT-4"
    assert join_lines(["the recom-", "mendation (see", "-", "below)"]) == "the recommendation (see - below)"


def _paged_pdf(n_pages: int, heads: dict[int, str], head_y: float) -> pymupdf.Document:
    doc = pymupdf.open()
    for pno in range(n_pages):
        page = doc.new_page(width=612, height=792)
        if pno == 0:
            page.insert_text((56, 60), "A Synthetic Study of Running Heads", fontsize=18, fontname="hebo")
        elif pno in heads:
            page.insert_text((56, head_y), heads[pno], fontsize=9, fontname="helv")
        topic = ["columns", "captions", "tables", "figures", "headings", "equations", "footnotes", "lists"][pno]
        page.insert_textbox(pymupdf.Rect(56, 86, 556, 700),
                            f"This paragraph on {topic} talks about the page model and the reading order in some "
                            "detail, so that the page holds a real paragraph of running text for the parser.",
                            fontsize=9, fontname="helv")
    return doc


def test_running_heads_just_below_the_margin_band_are_dropped():
    """An author-list head on odd pages and a short-title head on even pages, each on only half of
    the pages, set 0.091 of the page height down with the body text right below them."""
    heads = {p: ("Ann Author, Bob Builder, and Cy Coder" if p % 2 else "Running Heads in a Synthetic Study")
             for p in range(1, 8)}
    body = parse_pdf(_paged_pdf(8, heads, head_y=0.091 * 792 + 3)).body_text
    assert "This paragraph on equations talks" in body
    assert "Ann Author" not in body and "Running Heads in" not in body


def test_footnotes_with_a_raised_mark_are_not_body_text():
    """A footnote set at nearly the body size is told by its raised mark; a raised exponent that
    wrapped to a line start (before a comma) stays in the paragraph."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((56, 60), "A Synthetic Study of Footnotes", fontsize=18, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(56, 100, 556, 200),
                        "The first paragraph of the paper is long enough to be body text and it cites a "
                        "data set with a footnote mark after its name, as papers often do.",
                        fontsize=9, fontname="helv")
    page.insert_text((56, 560), "We normalise the adjacency matrix with the degree matrix D raised to -1/", fontsize=9,
                     fontname="helv")
    page.insert_text((56, 568), "2", fontsize=6, fontname="helv")
    page.insert_text((60, 571), ", which keeps the scale of the features stable over all layers of the model.",
                     fontsize=9, fontname="helv")
    page.insert_text((56, 700), "1", fontsize=6, fontname="helv")
    page.insert_text((60, 703), "See https://example.org/data for the data set and its licence terms.", fontsize=8.5,
                     fontname="helv")
    body = parse_pdf(doc).body_text
    assert "The first paragraph" in body
    assert "which keeps the scale of the features" in body
    assert "example.org" not in body and "licence terms" not in body


def test_rows_that_are_no_names_are_passed_over():
    """A version line and a date between the title and the name, or a publication-type line, are not
    authors: the first row of names is."""
    doc = _front_page([[(250, "Version 1.7", 12)], [(240, "27 November, 2022", 12)], [(230, "Ann Author", 12)]])
    assert parse_pdf(doc).authors == "Ann Author"
    doc = _front_page([[(150, "Conference Paper \u00b7 June 2013", 12)], [(150, "Ann Author, Bob Builder", 12)]])
    assert parse_pdf(doc).authors == "Ann Author, Bob Builder"


def test_a_sentence_under_the_title_is_no_author_list():
    """Names set each with its affiliation (all of them affiliation lines) and then the abstract's first
    lines without a label: no sentence of the abstract becomes the author list."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((100, 70), "Ranking and Tradeoffs in Sponsored Search", fontsize=12, fontname="hebo")
    page.insert_text((100, 90), "Northwind Research Center", fontsize=8, fontname="helv")
    for i, line in enumerate(["In a sponsored search auction, decisions about how to rank ads impose tradeoffs",
                              "between objectives such as revenue and welfare. In this paper, we examine how"]):
        page.insert_text((100, 120 + 10 * i), line, fontsize=8, fontname="helv")
    page.insert_textbox(pymupdf.Rect(100, 160, 500, 400), LEFT_BODY * 3, fontsize=10, fontname="helv")
    assert parse_pdf(doc).authors == ""


def test_names_in_capitals_with_their_affiliations_one_per_row():
    doc = _front_page([[(100, "ANN AUTHOR, Northwind Research", 9)], [(100, "BOB B. BUILDER, Acme University", 9)]])
    assert parse_pdf(doc).authors == "Ann Author, Bob B. Builder"


def test_society_grades_and_affiliation_letters_leave_the_list():
    doc = _front_page([[(100, "Ann Author, Bob Builder, Member, IEEE, and Cy Coder, Fellow, IEEE", 12)]])
    assert parse_pdf(doc).authors == "Ann Author, Bob Builder, Cy Coder"
    doc = _front_page([[(100, "Ann Author a, Bob Builder b, Cy Coder a", 12)]])
    assert parse_pdf(doc).authors == "Ann Author, Bob Builder, Cy Coder"


def test_centred_names_each_with_an_address_in_parentheses():
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(56, 60, 556, 100), "Learning Sparse Interactions for Ranking Models",
                        fontsize=18, fontname="hebo", align=1)
    for i, row in enumerate(["Ann Author (ann@example.org)", "Bobby Q. Builder (bob@example.org)",
                             "Cy Coder <cy@example.org>"]):
        page.insert_text((306 - pymupdf.get_text_length(row, fontname="helv", fontsize=11) / 2, 120 + 14 * i), row,
                         fontsize=11, fontname="helv")
    page.insert_text((56, 180), "Abstract", fontsize=11, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(56, 190, 296, 300), ABSTRACT, fontsize=9, fontname="helv")
    assert parse_pdf(doc).authors == "Ann Author, Bobby Q. Builder, Cy Coder"


def test_a_name_row_at_the_title_size_in_another_weight_is_read():
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((120, 70), "AN ADAPTIVE LEARNING RATE METHOD", fontsize=12, fontname="hebo")
    page.insert_text((220, 95), "Ann B. Author", fontsize=12, fontname="helv")
    page.insert_text((150, 120), "Northwind Labs, Springfield", fontsize=12, fontname="helv")
    page.insert_text((56, 160), "Abstract", fontsize=10, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(56, 170, 296, 300), ABSTRACT, fontsize=10, fontname="helv")
    assert parse_pdf(doc).authors == "Ann B. Author"


def test_a_subtitle_under_the_title_joins_it():
    for sub in ["Tools to Accelerate Developing Ranking Models", "- A Case Study on Click Prediction"]:
        doc = pymupdf.open()
        page = doc.new_page(width=612, height=792)
        page.insert_text((150, 70), "Sparse Interactions", fontsize=18, fontname="hebo")
        page.insert_text((130, 92), sub, fontsize=12, fontname="helv")
        page.insert_text((150, 115), "Ann Author, Bob Builder", fontsize=12, fontname="helv")
        page.insert_text((56, 150), "Abstract", fontsize=10, fontname="hebo")
        page.insert_textbox(pymupdf.Rect(56, 160, 296, 300), ABSTRACT, fontsize=9, fontname="helv")
        p = parse_pdf(doc)
        assert (p.title, p.authors) == ("Sparse Interactions: " + sub.lstrip("- "), "Ann Author, Bob Builder"), sub


def test_a_page_that_starts_with_a_numbered_section_has_no_title():
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((56, 80), "1 Functions to calculate numerical derivatives", fontsize=14, fontname="hebo")
    page.insert_text((56, 100), "In R, the functions in this package are made available with", fontsize=10,
                     fontname="helv")
    page.insert_textbox(pymupdf.Rect(56, 110, 556, 400), LEFT_BODY * 3, fontsize=10, fontname="helv")
    p = parse_pdf(doc)
    assert (p.title, p.authors) == ("", "")


def test_a_cover_sheet_that_repeats_the_title_gives_way_to_the_paper():
    """A cover sheet with the title and a publication-type line, and a paper page without an abstract
    label that repeats the title: title and authors come from the paper's page."""
    doc = pymupdf.open()
    cover = doc.new_page(width=612, height=792)
    cover.insert_text((40, 120), "Revenue optimization in sponsored search", fontsize=16, fontname="helv")
    cover.insert_text((40, 150), "Conference Paper \u00b7 June 2013", fontsize=8, fontname="helv")
    cover.insert_text((40, 200), "Bob Builder", fontsize=8, fontname="helv")
    page = doc.new_page(width=612, height=792)
    page.insert_text((100, 70), "Revenue Optimization in Sponsored Search", fontsize=12, fontname="hebo")
    page.insert_text((100, 90), "ANN AUTHOR, Northwind University", fontsize=8, fontname="helv")
    page.insert_text((100, 100), "BOB BUILDER, Northwind University", fontsize=8, fontname="helv")
    page.insert_textbox(pymupdf.Rect(100, 130, 500, 400), LEFT_BODY * 3, fontsize=8, fontname="helv")
    p = parse_pdf(doc)
    assert (p.title, p.authors) == ("Revenue Optimization in Sponsored Search", "Ann Author, Bob Builder")


def test_a_long_author_list_is_cut_after_a_whole_name():
    names = ", ".join(f"Author{c} Person{c}" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    doc = _front_page([[(56, names[:95], 8)], [(56, names[96:190], 8)], [(56, names[191:285], 8)],
                       [(56, names[286:], 8)]])
    authors = parse_pdf(doc).authors
    assert len(authors) <= 300 and authors.startswith("AuthorA PersonA, ")
    assert all(len(n.split()) == 2 for n in authors.split(", "))


def test_review_copy_line_numbers_stay_out_of_the_text():
    """A review copy numbers its lines in both margins, counting on from page to page: the numbers
    are no words of the abstract or the body (were: read into both)."""
    plain = parse_pdf(_two_column_pdf())
    doc = _two_column_pdf()
    n = 0
    for page in doc:
        for x in (30, 568):
            for y in range(66, 740, 11):
                page.insert_text((x, y), f"{n:03d}", fontsize=5.5, fontname="helv", color=(0.5, 0.5, 0.5))
                n += 1
    numbered = parse_pdf(doc)
    assert numbered.abstract == plain.abstract and numbered.title == plain.title
    assert numbered.body_text == plain.body_text
