"""Panels of compound figures: the sub-figure labels "(a)", "(b)", ... printed inside a figure's
region split it into one box per panel, each with its part of the caption.

Papers place a panel's label under the panel (often as a sub-caption, "(a) Criteo"), above it (a
panel title) or alone in its top-left corner ("(a)", or a bare bold "a"). Labels are read from the
page model's lines inside the region; rows of labels cut the region into horizontal bands, and
the labels of a row cut their band into columns (between label centres for sub-captions, titles
and bare labels centred over their panels; at each label's left edge for a bare letter in a
corner). A figure gets panels only when its labels are "a", "b", ... in order, at least two of them: anything else
(a lone "(a)" in a plot's legend, letters out of order) leaves the figure whole.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from app.labels import SUBFIGURE_RE
from app.ingest.layout import Line

_BARE_LETTER_RE = re.compile(r"^[a-hA-H]$")  # a panel letter alone on its line, in bold ("a", "B")
_SENTENCE_END_RE = re.compile(r"(?<=[a-z0-9)])\.\s+(?=[A-Z])")
MIN_PANELS = 2
MAX_PANEL_LETTERS = "abcdefgh"
LABEL_ROW_TOLERANCE = 6.0  # points: labels of one row of panels are level within this
LABELS_ABOVE_TOP_SHARE = 0.2  # labels this close to the region's top head their panels


@dataclass(frozen=True)
class _Label:
    letter: str
    x0: float
    y0: float
    x1: float
    y1: float
    rest: str  # the sub-caption printed after the label, if any
    bare: bool = False  # a bold letter alone, no bracket

    @property
    def xc(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def yc(self) -> float:
        return (self.y0 + self.y1) / 2


def _labels(lines: Sequence[Line], region: Sequence[float]) -> list[_Label]:
    """Lines inside the region that begin with a sub-figure label, or that are a bold letter alone
    (Nature-style bare labels; a plain single letter is more often a variable or a node name), the
    first of each letter in reading order."""
    x0, y0, x1, y1 = region
    found: dict[tuple[str, bool], _Label] = {}  # (letter, bare) -> its first label in reading order
    for ln in sorted(lines, key=lambda l: (round(l.yc), l.x0)):
        if not ln.horizontal or not (x0 - 2 <= (ln.x0 + ln.x1) / 2 <= x1 + 2 and y0 - 2 <= ln.yc <= y1 + 2):
            continue
        text = ln.text.strip()
        m = SUBFIGURE_RE.match(text)
        if m is not None and m.start() == 0:
            letter, rest, bare = m.group("letter").lower(), text[m.end():].strip(), False
        elif _BARE_LETTER_RE.match(text) and ln.bold:
            letter, rest, bare = text.lower(), "", True
        else:
            continue
        if (letter, bare) not in found:
            found[(letter, bare)] = _Label(letter, ln.x0, ln.y0, ln.x1, ln.y1, rest, bare)
    bracketed = [lab for lab in found.values() if not lab.bare]
    if len(bracketed) >= MIN_PANELS:
        return bracketed  # the figure's labels are bracketed; a bold letter is a node or a variable
    bare = [lab for lab in found.values() if lab.bare]
    first = next((lab for lab in bare if lab.letter == "a"), None)
    if first is None or not _in_corner(first, region):
        # bold letters that do not start at the figure's top-left corner are badges or node
        # names inside a diagram ("A" "B" "C" steps), not panel labels
        return bracketed
    return bare


def _in_corner(lab: _Label, region: Sequence[float]) -> bool:
    """The label sits at the region's top-left corner, as a first bare panel letter does."""
    x0, y0, x1, y1 = region
    h = lab.y1 - lab.y0
    return lab.y0 - y0 <= max(2 * h, 0.08 * (y1 - y0)) and lab.x0 - x0 <= max(2 * h, 0.08 * (x1 - x0))


def caption_parts(caption: str) -> dict[str, str]:
    """{letter: text} of a caption that describes its panels in turn ("... (a) Criteo. (b) Avazu.");
    empty unless the letters run a, b, ... in order. A part ends with its first sentence: what
    follows the last panel's part is usually about the whole figure."""
    marks = [m for m in SUBFIGURE_RE.finditer(caption or "")]
    letters = [m.group("letter").lower() for m in marks]
    if len(marks) < MIN_PANELS or letters != list(MAX_PANEL_LETTERS[:len(letters)]):
        return {}
    ends = [m.start() for m in marks[1:]] + [len(caption)]
    return {l: _SENTENCE_END_RE.split(caption[m.end():e].strip(), maxsplit=1)[0].strip(" ;,.")
            for l, m, e in zip(letters, marks, ends)}


def _rows(labels: list[_Label]) -> list[list[_Label]]:
    rows: list[list[_Label]] = []
    for lab in sorted(labels, key=lambda l: l.yc):
        if rows and abs(lab.yc - rows[-1][0].yc) <= LABEL_ROW_TOLERANCE:
            rows[-1].append(lab)
        else:
            rows.append([lab])
    return [sorted(r, key=lambda l: l.x0) for r in rows]


def _centred(row: list[_Label], rx0: float, rx1: float) -> bool:
    """Bare labels centred over their panels rather than in their corners: the first stands well
    inside the region, a quarter of the label spacing or more from its left edge."""
    spacing = (row[1].x0 - row[0].x0) if len(row) > 1 else rx1 - rx0
    return row[0].x0 - rx0 >= 0.25 * spacing


def find_panels(lines: Sequence[Line], region: Sequence[float], caption: str) -> list[dict]:
    """[{label, bbox, caption_part}] for the panels of a figure region (PDF points), or [] when
    the region is not a compound figure with labelled panels."""
    labels = _labels(lines, region)
    letters = sorted(l.letter for l in labels)
    if len(labels) < MIN_PANELS or letters != list(MAX_PANEL_LETTERS[:len(letters)]):
        return []
    rx0, ry0, rx1, ry1 = region
    rows = _rows(labels)
    above = rows[0][0].y0 - ry0 < LABELS_ABOVE_TOP_SHARE * max(ry1 - ry0, 1.0)
    parts = caption_parts(caption)
    panels = []
    for i, row in enumerate(rows):
        if above:  # a label starts its panel: the band runs down to the next row of labels
            top = ry0 if i == 0 else min(l.y0 for l in row) - 2
            bottom = ry1 if i == len(rows) - 1 else min(l.y0 for l in rows[i + 1]) - 2
        else:  # a label (sub-caption) ends its panel: the band runs up to the previous row
            top = ry0 if i == 0 else max(l.y1 for l in rows[i - 1]) + 1
            bottom = ry1 if i == len(rows) - 1 else max(l.y1 for l in row) + 1
        if above and not any(l.rest for l in row) and not _centred(row, rx0, rx1):
            # bare corner letters: each starts its column
            cuts = [rx0] + [l.x0 - 2 for l in row[1:]] + [rx1]
        else:
            cuts = [rx0] + [(a.xc + b.xc) / 2 for a, b in zip(row, row[1:])] + [rx1]
        for lab, left, right in zip(row, cuts, cuts[1:]):
            if right - left < 4 or bottom - top < 4:
                return []  # labels too close to make boxes: not a grid of panels
            panels.append({"label": lab.letter, "bbox": [round(v, 2) for v in (left, top, right, bottom)],
                           "caption_part": parts.get(lab.letter) or lab.rest})
    return sorted(panels, key=lambda p: p["label"])

