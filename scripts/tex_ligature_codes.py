"""Ligatures a PDF prints as TeX control codes (no ToUnicode map for them), counted over PDFs: the
words holding one, as `clean_text` stores them, most frequent first and a sample of the rare ones
(to see that every code became the right ligature). OT1 codes (0x0B-0x0F) and T1 codes (0x1B-0x1F).

    python scripts/tex_ligature_codes.py PDF...
"""
from __future__ import annotations

import re
import sys
from collections import Counter

import pymupdf

from app.ingest.layout import clean_text

CODES = r"[\x0b-\x0f\x1b-\x1f]"
WORD_RE = re.compile(rf"\w*(?:(?<=[A-Za-z]){CODES}|{CODES}(?=[a-z]))\w*")


def main(paths: list[str]) -> None:
    files, words = Counter(), Counter()
    for path in paths:
        try:
            doc = pymupdf.open(path)
        except (pymupdf.FileDataError, RuntimeError):
            continue
        for page in doc:
            for raw in WORD_RE.findall(page.get_text()):
                files[path] += 1
                words[clean_text(raw)] += 1
    print(f"{len(files)} of {len(paths)} PDFs print ligatures as TeX codes; {sum(files.values())} words")
    print("most frequent:", words.most_common(40))
    print("seen once:", [w for w, n in words.items() if n == 1][:80])


if __name__ == "__main__":
    main(sys.argv[1:])
