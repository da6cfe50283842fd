"""Faults left in parsed body text, counted over every PDF under the given folders: line-end
hyphens that leave "- " before a capital or digit ("GPT- 3.5"), and lines printed on three or
more pages in their top or bottom eighth (running heads and feet; digits folded, 12 letters or
more) that still appear in the body text, and footnote text in it (an address right after a note
number, "³https://...", or a paragraph opening with a note mark, "∗Work done at ..."). Parses as ingestion does (`parse_pdf`, without caption boxes:
they change neither rule).

    python scripts/body_text_faults.py ../shared/corpus/recsys ../shared/corpus/naacl2024 ../shared/corpus/misc
"""
from __future__ import annotations

import argparse
import random
import re
from collections import defaultdict
from pathlib import Path

import pymupdf

from app.ingest.layout import build_layout
from app.ingest.parse import parse_pdf

_HYPHEN_SPACE_RE = re.compile(r"[A-Za-z]- [A-Z0-9]")
_FOOTNOTE_RE = re.compile(r"(?:^|\s)\d{1,2}(?:https?://|www\.)|^[*\u2217\u2020\u2021\u22c6]\s?[A-Z][a-z]", re.M)
_MIN_REPEAT_CHARS = 12
_MARGIN_BAND = 0.125


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\d+", "#", text)).strip().lower()


def _repeated_lines(layout) -> set[str]:
    """Lines (digits folded) printed in a page's top or bottom eighth on three or more pages."""
    pages_of: dict[str, set[int]] = defaultdict(set)
    for page in layout.pages:
        for ln in page.lines:
            if _MARGIN_BAND * page.height < ln.yc < (1 - _MARGIN_BAND) * page.height:
                continue
            key = _norm(ln.text)
            if len(re.sub(r"[^a-z]", "", key)) >= _MIN_REPEAT_CHARS:
                pages_of[key].add(page.number)
    return {k for k, pages in pages_of.items() if len(pages) >= 3}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--samples", type=int, default=12, help="examples of each fault to print")
    args = ap.parse_args()
    n_pdfs = n_hyphen = n_repeat = papers_hyphen = papers_repeat = n_notes = papers_notes = 0
    hyphen_samples: list[str] = []
    note_samples: list[str] = []
    repeat_samples: list[str] = []
    for folder in args.folders:
        for pdf in sorted(folder.rglob("*.pdf")):
            with pymupdf.open(pdf) as doc:
                layout = build_layout(doc)
                paper = parse_pdf(doc, layout=layout)
                repeated = _repeated_lines(layout)
            if not paper.has_text_layer:
                continue
            n_pdfs += 1
            body = paper.body_text
            hits = [body[max(0, m.start() - 25): m.end() + 15] for m in _HYPHEN_SPACE_RE.finditer(body)]
            n_hyphen += len(hits)
            papers_hyphen += bool(hits)
            hyphen_samples += [f"{pdf.name[:30]}: ...{h}..." for h in hits]
            notes = [body[m.start(): m.end() + 50] for m in _FOOTNOTE_RE.finditer(body)]
            n_notes += len(notes)
            papers_notes += bool(notes)
            note_samples += [f"{pdf.name[:30]}: {n.strip()}..." for n in notes]
            norm_body = _norm(body)
            left = [k for k in repeated if k in norm_body]
            n_repeat += sum(norm_body.count(k) for k in left)
            papers_repeat += bool(left)
            repeat_samples += [f"{pdf.name[:30]}: {k!r} x{norm_body.count(k)}" for k in left]
    rng = random.Random(0)
    print(f"papers {n_pdfs}")
    print(f'"- " hyphen artifacts in body text: {n_hyphen} in {papers_hyphen} papers')
    for s in rng.sample(hyphen_samples, min(args.samples, len(hyphen_samples))):
        print("   ", s.replace("\n", " | "))
    print(f"lines printed on >= 3 pages still in body text: {n_repeat} occurrences in {papers_repeat} papers")
    for s in rng.sample(repeat_samples, min(args.samples, len(repeat_samples))):
        print("   ", s)
    print(f"footnote text in body text: {n_notes} in {papers_notes} papers")
    for s in rng.sample(note_samples, min(args.samples, len(note_samples))):
        print("   ", s.replace("\n", " | "))


if __name__ == "__main__":
    main()
