"""scripts/perturb_pdfs.py: copies of a PDF in another print state keep the page content and add
only margin furniture."""
from __future__ import annotations

import pymupdf
import pytest

from tests.script_modules import load_script

BODY = ("This is a body paragraph of ordinary running text that discusses the results in detail, "
        "long enough to fill several lines of the page in the body's font. ") * 6


@pytest.fixture()
def original(tmp_path):
    doc = pymupdf.open()
    for _ in range(2):
        page = doc.new_page(width=612, height=792)
        page.insert_textbox(pymupdf.Rect(90, 80, 520, 700), BODY, fontsize=10)
    path = tmp_path / "in" / "paper.pdf"
    path.parent.mkdir()
    doc.save(path)
    return path


def _words(page) -> list[tuple]:
    return [(round(w[0]), round(w[1]), w[4]) for w in page.get_text("words")]


@pytest.mark.parametrize("kind", ["linenumbers", "stamp", "heads", "none"])
def test_copies_keep_the_page_content(original, tmp_path, kind):
    out = tmp_path / "out" / "paper.pdf"
    load_script("perturb_pdfs").perturb(original, out, kind)
    a, b = pymupdf.open(original), pymupdf.open(out)
    for pa, pb in zip(a, b):
        assert set(_words(pa)) <= set(_words(pb))
    added = [w for w in _words(b[0]) if w not in set(_words(a[0]))]
    if kind == "none":
        assert not added
    elif kind == "linenumbers":
        left = [w for w in added if w[0] < 90]
        right = [w for w in added if w[0] > 520]
        assert left and right and all(w[2].isdigit() and len(w[2]) == 3 for w in added)
        assert left[0][2] == "000" and int(_words(b[1])[-1][2]) > int(right[-1][2])  # counting on
    elif kind == "stamp":
        assert any(w[0] < 60 and w[2].startswith("arXiv:") for w in added)
        assert not [w for w in _words(b[1]) if w not in set(_words(a[1]))]  # the first page only
    else:
        assert {w[2] for w in added} == {"Preprint.", "Under", "review.", "1"}


def test_a_sample_is_one_fixed_draw(tmp_path):
    for k in range(12):
        (tmp_path / f"{k:02d}.pdf").write_bytes(b"")
    pick = load_script("perturb_pdfs").pick
    assert pick(tmp_path, 5) == pick(tmp_path, 5) and len(pick(tmp_path, 5)) == 5
    assert len(pick(tmp_path, None)) == 12
