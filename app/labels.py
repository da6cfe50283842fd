"""Figure, table and subfigure label patterns: the one place that knows how papers write
"Figure 3:", "Fig. 3b", "Tables 1 and 2" or "(a)". Used by caption detection, body parsing,
mention finding and the central-figure data, so they can never disagree.
"""
from __future__ import annotations

import re

__all__ = ["CAPTION_RE", "CAPTION_DELIMS", "CAPTION_PARAGRAPH_RE", "LABEL_PREFIX_RE", "MENTION_RE",
           "MENTION_PART_RE", "MULTI_REF_RE", "SUBFIGURE_RE", "kind_of"]

# A caption label at the start of a line; ``rest`` is whatever follows the number.
CAPTION_RE = re.compile(
    r"^\s*(?P<word>Figures?|Fig\.?|FIGURES?|FIG\.?|Table|TABLE|Tab\.|TAB\.)"
    r"\s*(?P<num>\d{1,3})(?![\d.]\d)(?P<rest>.*)$",
    re.S,
)
# Characters that end a caption label ("Figure 3:", "Fig. 3.", "Figure 3 | ...", "Table 2 -- ...").
CAPTION_DELIMS = ":.|-\u2013\u2014"
# What follows the first number of a label that refers to several figures ("Figures 11-13", "Figs. 2
# and 3"): such a line is a reference, not a caption.
MULTI_REF_RE = re.compile(r"\s*(?:[-\u2013\u2014]\s*|,\s*|\s+(?:and|to|&)\s+)\(?[A-Za-z]?\d+(?![A-Za-z\d])")
# A paragraph of the body text that is really a caption (dropped from the body text).
CAPTION_PARAGRAPH_RE = re.compile(
    r"^(?:fig(?:ure)?s?\.?|tab(?:le)?s?\.?|algorithm)\s*(?:\d+|[IVX]+)[a-z]?"
    r"(?:\s*[:.|\u2014\u2013-]|\s+(?-i:[A-Z(]))",  # "Figure 3 shows ..." is body text
    re.I,
)
# A caption's own label with its delimiter, to strip it off the caption text.
LABEL_PREFIX_RE = re.compile(r"^\s*(?:fig(?:ure)?s?|tab(?:le)?s?)\.?\s*\d{1,3}\s*[a-z]?\s*[:.|\-\u2013\u2014]?\s*", re.I)

# References in running text: "Figure 3", "Fig. 3b", "Figure 3(a)", "Figs. 2, 3, and 5",
# "Figures 2-4", "Tables 1 and 2".
# 3, 3a, 3(a), 3 (b); not 9.2 when the sentence goes on ("Fig. 9.2 in the book": a sub-numbered
# figure); "Table 4.6 Our model ..." and "... in Table 2.5" end a sentence with a footnote mark
_NUM = r"\d{1,3}(?!\d|\.\d{1,2}\s+(?-i:[a-z(\[]))(?:\s?\(?[a-z]\)?(?![a-z]))?"
_SEP = r"(?:\s*,\s*(?:and\s+|&\s*)?|\s*(?:and|&|or)\s+|\s*(?:-|\u2013|\u2014|\u2012|to)\s*)"
MENTION_RE = re.compile(
    r"\b(?P<label>fig(?:ure)?s?\.?|tab(?:le)?s?\.?)\s*(?P<nums>" + _NUM + r"(?:" + _SEP + _NUM + r")*)",
    re.I,
)
# The parts of a mention's number list: a number, a range word or a list separator.
MENTION_PART_RE = re.compile(r"(\d{1,3})|(-|\u2013|\u2014|\u2012|\bto\b)|(,|\band\b|&|\bor\b)")

# A subfigure (panel) label: "(a)", "(b)", "a)", "(A)" -- one letter, in parentheses or followed by ")".
SUBFIGURE_RE = re.compile(r"(?:^|(?<=[\s.;:,]))\(?(?P<letter>[a-hA-H])\)(?=\s|$)")


def kind_of(label_word: str) -> str:
    """'figure' or 'table' for a label word such as 'Fig.', 'TABLE', 'Tab.'."""
    return "table" if label_word.lower().startswith("tab") else "figure"


# ---------------------------------------------------------------- references in running text
MAX_RANGE = 20


def _expand(label: str, nums: str) -> list[int]:
    """Numbers referred to by one match, ranges expanded."""
    plural = label.lower().rstrip(".").endswith("s")
    out: list[int] = []
    pending_range = False
    pending_list = False
    first = True
    for m in MENTION_PART_RE.finditer(nums):
        num, rng, lst = m.groups()
        if num is not None:
            n = int(num)
            if pending_range and out:
                lo = out[-1]
                if lo < n <= lo + MAX_RANGE:
                    out.extend(range(lo + 1, n + 1))
                elif n != lo:
                    out.append(n)
                pending_range = False
            elif first or pending_list:
                out.append(n)
            first = False
            pending_list = False
        elif rng is not None:
            pending_range = True
            pending_list = False
        else:
            # "Figure 3, 4 ..." after a singular label is usually not a list
            # ("in Table 1, 2 methods fail"); "Figure 3 and 4" is accepted.
            pending_list = plural or lst != ","
            pending_range = False
    return out


# Before a reference: the figure is in another file ("Supplementary Fig. 5", "Extended Data Table 2").
_ELSEWHERE_BEFORE_RE = re.compile(r"(?:supplement\w*|suppl\.|extended\s+data)\s*$", re.I)
# After a reference: the figure is a cited work's ("Table 2 in [16]", "Fig. 3 of [5]").
_ELSEWHERE_AFTER_RE = re.compile(r"\s*(?:in|of|from)\s+\[\d")


def references_in(sentence: str) -> list[tuple[str, int]]:
    """(kind, number) of every figure or table of the paper the sentence refers to, in order, ranges
    expanded; not those of supplementary material or of a cited work."""
    found: list[tuple[str, int]] = []
    for m in MENTION_RE.finditer(sentence):
        if _ELSEWHERE_BEFORE_RE.search(sentence, max(0, m.start() - 20), m.start()) or \
                _ELSEWHERE_AFTER_RE.match(sentence, m.end()):
            continue
        label = m.group("label")
        kind = "figure" if label[0] in "fF" else "table"
        nums = m.group("nums")
        for n in _expand(label, nums):
            if n <= 0:
                continue
            key = (kind, n)
            if key not in found:
                found.append(key)
    return found


def mentioned_numbers(sentences: list[str]) -> set[tuple[str, int]]:
    """All (kind, number) pairs referred to anywhere in ``sentences``."""
    out: set[tuple[str, int]] = set()
    for s in sentences:
        out.update(references_in(s))
    return out
