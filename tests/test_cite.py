"""Citations: the venue a paper's first page prints makes its BibTeX entry @inproceedings or
@article (real first pages of the shared corpus where present)."""
from __future__ import annotations

from pathlib import Path

import pytest

from app.cite import bibtex, venue_of

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"


@pytest.mark.parametrize("text, venue", [
    ("Proceedings of the 2024 Conference of the North American Chapter of the Association for Computational\n"
     "Linguistics: Human Language Technologies (Volume 1: Long Papers), pages 1041–1053\nJune 16-21, 2024",
     ("booktitle", "Proceedings of the 2024 Conference of the North American Chapter of the Association for "
                   "Computational Linguistics: Human Language Technologies (Volume 1: Long Papers)")),
    ("Proceedings of the 37 th International Conference on Machine\nLearning, Online, PMLR 119, 2020.",
     ("booktitle", "Proceedings of the 37th International Conference on Machine Learning, Online")),
    ("Journal of Machine Learning Research 15 (2014) 1929-1958\nSubmitted 11/13",
     ("journal", "Journal of Machine Learning Research")),
    ("arXiv:1904.12857v2 [cs.LG] 15 Apr 2019", ("journal", "arXiv preprint arXiv:1904.12857")),
    ("A title\nSome authors\nAbstract. We study things.", None),
])
def test_venue_from_first_page_text(text, venue):
    assert venue_of(text) == venue


def test_bibtex_kind_follows_the_venue():
    proc = bibtex("Ann Lee, Bo Chen", "A Study", 2024, "Figure 2",
                  venue=("booktitle", "Proceedings of the Conference"))
    assert proc.startswith("@inproceedings{lee2024study,") and "booktitle = {Proceedings of the Conference}" in proc
    assert bibtex("Ann Lee", "A Study", 2024, venue=("journal", "Journal of X")).startswith("@article{")
    assert bibtex("Ann Lee", "A Study", 2024).startswith("@misc{")


def test_real_naacl_papers_cite_their_proceedings():
    import pymupdf

    pdfs = sorted((CORPUS / "naacl2024").glob("*/paper.pdf"))[:5]
    if not pdfs:
        pytest.skip("shared corpus not available")
    for pdf in pdfs:
        with pymupdf.open(pdf) as doc:
            field, name = venue_of(doc[0].get_text())
        assert field == "booktitle" and "North American Chapter of the Association for Computational Linguistics" in name
