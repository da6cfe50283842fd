"""Tests for the synthetic demo collection (app/demo/generate.py)."""
from __future__ import annotations

import re

import pymupdf
import pytest

from app.demo.generate import generate_collection, main

N = 4


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    return generate_collection(out, n_papers=N, seed=0)


def _text(path) -> str:
    with pymupdf.open(path) as doc:
        return "".join(page.get_text() for page in doc)


def _flat(s: str) -> str:
    return " ".join(s.split())


def test_files_written(collection):
    assert [p.name for p in collection] == [f"paper-{i:02d}.pdf" for i in range(1, N + 1)]
    for p in collection:
        assert p.exists() and p.stat().st_size > 5_000
        assert p.read_bytes()[:5] == b"%PDF-"


def test_papers_look_like_papers(collection):
    for p in collection:
        with pymupdf.open(p) as doc:
            assert 3 <= doc.page_count <= 6
            assert doc.metadata["title"]
            page1 = doc[0].get_text()
            assert "Abstract" in page1
            assert "1 Introduction" in page1
            assert doc.metadata["title"].split()[0] in page1
            n_images = sum(len(page.get_images(full=True)) for page in doc)
            n_drawings = sum(len(page.get_drawings()) for page in doc)
            assert n_images + n_drawings > 0
        text = _flat(_text(p))
        assert re.search(r"(?:Figure 1:|Fig\. 1\.) \S", text), "caption of Figure 1 missing"
        assert "References" in text
        assert re.search(r"\[1\] [A-Z]\. ", text), "numbered reference list missing"
        # figures are mentioned in the body text
        body = text[: text.rfind("References")]
        assert re.search(r"\b(?:Figure|Fig\.|Figs\.|Figures) \d", body)


def test_captions_numbered_in_order(collection):
    for p in collection:
        lines = [ln.strip() for ln in _text(p).splitlines()]
        nums = [int(m.group(1)) for ln in lines if (m := re.match(r"(?:Figure|Fig\.) (\d+)[:.] ", ln))]
        assert 3 <= len(nums) <= 6
        assert nums == list(range(1, len(nums) + 1))


def test_references_cite_collection_titles(collection):
    titles = {}
    for p in collection:
        with pymupdf.open(p) as doc:
            titles[p] = doc.metadata["title"]
    links = 0
    for p in collection:
        text = _flat(_text(p))
        refs = text[text.rfind("References"):]
        links += sum(1 for q, t in titles.items() if q != p and t in refs)
    assert links >= 2


def test_deterministic(collection, tmp_path):
    again = generate_collection(tmp_path, n_papers=N, seed=0)
    for a, b in zip(collection, again):
        with pymupdf.open(a) as da, pymupdf.open(b) as db:
            assert da[0].get_text() == db[0].get_text()
        assert a.read_bytes() == b.read_bytes()


def test_other_seed_differs(collection, tmp_path):
    other = generate_collection(tmp_path, n_papers=1, seed=1)
    with pymupdf.open(collection[0]) as da, pymupdf.open(other[0]) as db:
        assert da.metadata["title"] != db.metadata["title"] or da[0].get_text() != db[0].get_text()


def test_cli(tmp_path, capsys):
    assert main([str(tmp_path / "out"), "--n", "1", "--seed", "2"]) == 0
    assert (tmp_path / "out" / "paper-01.pdf").exists()
    assert "paper-01.pdf" in capsys.readouterr().out
