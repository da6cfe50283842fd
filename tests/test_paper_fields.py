"""The scorer of parsed paper titles and author lists (`figsearch eval-paper-fields`)."""
import json

import pymupdf

from app.eval.paper_fields import evaluate_paper_fields, field_defects, norm_name, split_authors, token_f1


def test_names_compare_without_case_accents_or_spacing_marks():
    assert split_authors("Ann Author, Bob Builder and Cy Coder") == ["Ann Author", "Bob Builder", "Cy Coder"]
    assert norm_name("Ivan Vuli\u00b4c") == norm_name("IVAN VULIĆ") == "ivan vulic"
    assert norm_name("Jason D. Lee") == "jason d lee"


def test_title_token_f1():
    assert token_f1("Attention is all you need", "Attention Is All You Need") == 1.0
    assert token_f1("Attention", "Attention Is All You Need") == 2 * 0.2 / 1.2
    assert token_f1("", "Attention") == 0.0


def test_defects_a_reader_should_never_see():
    assert field_defects("A Study", "Ann Author, Bob Builder") == []
    assert field_defects("A STUDY OF THINGS", "Ann Author 1, \\ Bob*, b@x.org") == [
        "authors_backslash", "authors_digit", "authors_symbol", "authors_email", "title_all_caps"]


def test_scores_found_by_sha256(tmp_path):
    import hashlib

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(56, 60, 556, 100), "Learning Sparse Interactions for Ranking Models",
                        fontsize=18, fontname="hebo", align=1)
    page.insert_text((150, 120), "Ann Author, Bob Builder", fontsize=12, fontname="helv")
    page.insert_text((56, 160), "Abstract", fontsize=11, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(56, 170, 296, 300), "We study sparse interactions. " * 12, fontsize=9,
                        fontname="helv")
    pdf = tmp_path / "pdfs" / "a.pdf"
    pdf.parent.mkdir()
    doc.save(pdf)
    sha = hashlib.sha256(pdf.read_bytes()).hexdigest()
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"sha256": sha, "source": "a.pdf", "title": "Learning sparse interactions for "
                                "ranking models", "authors": ["Ann Author", "Bob Builder", "Cy Coder"]}) + "\n")
    r = evaluate_paper_fields(gold, [tmp_path / "pdfs"])
    assert (r["found"], r["title_exact"], r["authors_exact"]) == (1, 1.0, 0.0)
    assert r["authors"] == {"precision": 1.0, "recall": 0.667, "f1": 0.8}


def test_years_scored_with_their_also_years_and_by_split(tmp_path):
    import hashlib

    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    rows = []
    for name, date, gold_year, also, split in [("a.pdf", "June 2019", 2019, [], "dev"),
                                               ("b.pdf", "March 2012", 2022, [2012], "dev"),
                                               ("c.pdf", "May 2001", 2022, [], "check")]:
        doc = pymupdf.open()
        page = doc.new_page(width=612, height=792)
        page.insert_textbox(pymupdf.Rect(56, 60, 556, 100), "Learning Sparse Interactions for Ranking Models",
                            fontsize=18, fontname="hebo", align=1)
        page.insert_text((250, 130), date, fontsize=12, fontname="helv")
        page.insert_textbox(pymupdf.Rect(56, 170, 296, 300), "We study sparse interactions. " * 12, fontsize=9,
                            fontname="helv")
        doc.save(pdfs / name)
        sha = hashlib.sha256((pdfs / name).read_bytes()).hexdigest()
        rows.append({"sha256": sha, "source": name, "year": gold_year, "also": also, "split": split})
    gold = tmp_path / "years.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = evaluate_paper_fields(gold, [pdfs])
    assert (r["years"], r["year_right"], r["title_exact"]) == (3, 0.667, None)
    assert evaluate_paper_fields(gold, [pdfs], split="dev")["year_right"] == 1.0
