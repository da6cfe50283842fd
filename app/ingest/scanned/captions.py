"""Captions ("Figure 3:", "Fig. 3.", "TABLE 2", "Figure 3 The title") found in OCR lines.

Uses the born-digital caption label pattern after undoing the usual OCR confusions in the
label ("Figure l:" -> "Figure 1:", "Fig, 3." -> "Fig. 3.", "Figure 1;" -> "Figure 1:"). A caption
starts a paragraph (or follows a finished sentence), carries a delimiter after the number, stands
alone, or (in journal styles that set the label in bold with no delimiter) opens a paragraph of
its own with a capitalised word after the number; it runs to the end of its Tesseract paragraph,
and on into the pieces Tesseract read as other blocks that go on its rows or its left edge at its
line pitch.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from app.ingest.captions import join_caption_lines
from app.ingest.scanned.ocr import OcrLine
from app.labels import CAPTION_RE

_LABEL_FIX_RE = re.compile(r"^(\W{0,2})(Fig(?:ure)?s?[.,]?|FIG(?:URE)?S?[.,]?|Table|TABLE|Tab\.)\s*([0-9IlO|!]{1,3})(?=\W|$)")
_DIGIT_FIX = str.maketrans({"I": "1", "l": "1", "|": "1", "!": "1", "O": "0"})
_DELIMS = ":.|-\u2013\u2014"
_UNFINISHED = (",", ";", "(", "-")  # a line ending so has more of its sentence on the next
PITCH_SLACK = 1.15  # a line this much further than the caption's own pitch is no longer its line
COLUMN_GAP_LINES = 2.5  # a gap between words wider than this many line heights parts two columns
# a bold full stop after the number often reads as a comma: "Figure 3, CTR variance across ..."
_COMMA_DELIM_RE = re.compile(r"^,\s+[A-Z]")
# no delimiter: the label set apart by weight alone, the title's first word capitalised
# ("Figure 2 Subthreshold ..."); "Figure 2 shows ..." and "Figure 2 (a)" are running text
_BARE_TITLE_RE = re.compile(r"^\s+(?:[A-Z][A-Za-z-]+\b(?![.,;:)])|A\s+[a-z])")
_REFERENCE_RE = re.compile(r"^\s*(?:[-\u2013\u2014,]\s*\d|and\s+\d|to\s+\d|\))")


@dataclass
class OcrCaption:
    kind: str  # figure | table
    number: int
    text: str
    lines: list[OcrLine]
    score: float

    @property
    def box(self) -> tuple[float, float, float, float]:
        return (min(ln.box[0] for ln in self.lines), min(ln.box[1] for ln in self.lines),
                max(ln.box[2] for ln in self.lines), max(ln.box[3] for ln in self.lines))


def normalise_label(text: str) -> str:
    """'Figure l: ...' -> 'Figure 1: ...' (only the label's number is touched)."""
    m = _LABEL_FIX_RE.match(text)
    if not m:
        return text
    rest = text[m.end():]
    if rest[:1] == ";":
        rest = ":" + rest[1:]  # a colon's lower dot read as a comma's tail
    return m.group(2).replace(",", ".") + " " + m.group(3).translate(_DIGIT_FIX) + rest


def _caption_start(line: OcrLine, prev: OcrLine | None) -> tuple[str, int, str, float] | None:
    text = normalise_label(line.text)
    m = CAPTION_RE.match(text)
    if not m:
        return None
    rest = m.group("rest").lstrip()
    if _REFERENCE_RE.match(m.group("rest")):
        return None
    delim = rest[:1] in _DELIMS and rest[:1] != "" or bool(_COMMA_DELIM_RE.match(rest))
    alone = rest.strip(_DELIMS + " ") == ""
    bare = not (delim or alone) and bool(_BARE_TITLE_RE.match(m.group("rest")))
    if not (delim or alone or bare):
        return None
    if bare and prev is not None and (prev.block, prev.par) == (line.block, line.par):
        return None  # a bare label only opens a paragraph of its own
    if rest[:1] not in ":|" and not _starts_paragraph(line, prev):
        return None  # "Figure 3." inside running text; "Figure 3:" at a line start is a caption
    kind = "table" if m.group("word").lower().startswith("tab") else "figure"
    score = (2.0 if rest[:1] == ":" else 1.0) + (prev is None or (prev.block, prev.par) != (line.block, line.par))
    return kind, int(m.group("num")), text, score


def _starts_paragraph(line: OcrLine, prev: OcrLine | None) -> bool:
    if prev is None or (prev.block, prev.par) != (line.block, line.par):
        return True
    gap = line.box[1] - prev.box[3]
    narrow = (prev.box[2] - prev.box[0]) < 0.6 * (line.box[2] - line.box[0])
    return prev.text.rstrip().endswith((".", ":", "!", "?")) or gap > 0.5 * line.height or narrow


def _pitch(own: list[OcrLine]) -> float | None:
    """The caption's line pitch so far (top to top), None for a single row (pieces of one row
    are not a pitch)."""
    steps = [b.box[1] - a.box[1] for a, b in zip(own, own[1:]) if b.box[1] - a.box[1] > 0.5 * a.height]
    return max(steps) if steps else None


def _at_pitch(line: OcrLine, own: list[OcrLine]) -> bool:
    """The line follows the caption's last line at the caption's own line pitch (Tesseract's line
    heights of small type swing with ascenders and descenders; the pitch does not)."""
    pitch = _pitch(own)
    return pitch is not None and 0 < line.box[1] - own[-1].box[1] <= PITCH_SLACK * pitch


def _continues(line: OcrLine, prev: OcrLine, first: OcrLine, own: list[OcrLine] | None = None) -> bool:
    """The next line of a caption: close below, not a row of numbers (a table under the caption)."""
    gap = line.box[1] - prev.box[3]
    if (gap > 0.6 * max(prev.height, line.height, 1.0) and not _at_pitch(line, own or [prev])) \
            or line.box[0] < first.box[0] - 2 * first.height:
        return False
    if line.box[0] > (first.box[0] + first.box[2]) / 2:
        return False  # starts right of the caption's middle: a legend or label beside it, not its next line
    if prev.text.rstrip().endswith(_UNFINISHED):
        return True  # the caption's sentence runs on ("... (left to right, I = 25," / "50, 100 and 200 nA")
    tokens = line.text.split()
    numeric = sum(1 for t in tokens if not any(c.isalpha() for c in t))
    return numeric <= 0.4 * len(tokens)


def _same_block_goes_on(line: OcrLine, own: list[OcrLine]) -> bool:
    """Tesseract starts new paragraphs inside a caption set in small type (a caption column
    beside its figure): the same block, and the line before not ending a sentence or this one
    at the caption's own line pitch (the text after a caption stands further off)."""
    prev = own[-1]
    return line.block == prev.block and (not prev.text.rstrip().endswith((".", ":", "!", "?"))
                                         or _at_pitch(line, own))


def _label_only(text: str) -> bool:
    m = CAPTION_RE.match(text)
    return m is not None and m.group("rest").strip(_DELIMS + " ") == ""


def _title_under_label(line: OcrLine, label: OcrLine) -> bool:
    """The line right under a caption label that stands alone: the caption's title, when it is
    close below, overlaps the label horizontally and is words rather than a row of numbers."""
    if _caption_start(line, label) is not None or line.box[1] < label.box[1]:
        return False
    gap = line.box[1] - label.box[3]
    overlap = min(line.box[2], label.box[2]) - max(line.box[0], label.box[0])
    tokens = line.text.split()
    numeric = sum(1 for t in tokens if not any(c.isalpha() for c in t))
    return gap <= max(label.height, 1.0) and overlap > 0 and numeric <= 0.4 * len(tokens)


def column_pieces(line: OcrLine) -> list[OcrLine]:
    """A line cut where a gap between two words is wider than prose ever leaves (a few letters):
    the columns of a table row, or a caption that the OCR joined with the text beside it."""
    words = sorted(line.words, key=lambda w: w.box[0])
    if len(words) < 2:
        return [line]
    # the words' height, not the line's: a joined line is as tall as its two rows together
    gap = COLUMN_GAP_LINES * max(float(np.median([w.box[3] - w.box[1] for w in words])), 1.0)
    pieces, cur = [], words[:1]
    for a, b in zip(words, words[1:]):
        if b.box[0] - a.box[2] > gap:
            pieces.append(cur)
            cur = []
        cur.append(b)
    if len(pieces) == 0:
        return [line]
    pieces.append(cur)
    return [OcrLine(" ".join(w.text for w in ws), (min(w.box[0] for w in ws), min(w.box[1] for w in ws),
                                                  max(w.box[2] for w in ws), max(w.box[3] for w in ws)),
                    ws, line.block, line.par) for ws in pieces]


def find_captions(lines: list[OcrLine]) -> list[OcrCaption]:
    """Captions of one page, in Tesseract's reading order (a line with a column gap read as its
    pieces)."""
    split = [column_pieces(ln) for ln in lines]
    after_gap = {id(p) for pieces in split for p in pieces[1:]}  # starts a column: nothing before it
    lines = [piece for pieces in split for piece in pieces]
    caps: list[OcrCaption] = []
    i = 0
    while i < len(lines):
        prev = lines[i - 1] if i and id(lines[i]) not in after_gap else None
        start = _caption_start(lines[i], prev)
        if start is None:
            i += 1
            continue
        kind, number, text, score = start
        own = [lines[i]]
        parts = [text]
        j = i + 1
        head, titled = lines[i], False
        if j < len(lines) and _label_only(text) and _title_under_label(lines[j], head):
            own.append(lines[j])  # "Table 1" on its own line, its title on the next (another paragraph)
            parts.append(lines[j].text)
            head, titled = lines[j], True
            j += 1
        while j < len(lines) and ((lines[j].block, lines[j].par) == (head.block, head.par)
                                  or _same_block_goes_on(lines[j], own)):
            if id(lines[j]) in after_gap and len(lines[j].text.strip()) <= 2:
                j += 1  # a speck read as a letter beyond a wide gap on the caption's line
                continue
            if _caption_start(lines[j], own[-1]) is not None or not _continues(lines[j], own[-1], lines[i], own):
                break
            if titled and own[-1].text.rstrip().endswith("."):
                break  # such a title is one sentence; what follows in its paragraph is the table's
            own.append(lines[j])
            parts.append(lines[j].text)
            j += 1
        caps.append(OcrCaption(kind, number, join_caption_lines(parts), own, score))
        i = j
    used = {id(ln) for c in caps for ln in c.lines}
    return [_run_on(c, lines, used) for c in caps]


def _same_row(a: OcrLine, b: OcrLine) -> bool:
    return min(a.box[3], b.box[3]) - max(a.box[1], b.box[1]) > 0.5 * min(a.height, b.height)


def _rows(own: list[OcrLine]) -> list[list[OcrLine]]:
    rows: list[list[OcrLine]] = []
    for ln in sorted(own, key=lambda ln: (ln.box[1], ln.box[0])):
        row = next((r for r in rows if _same_row(r[0], ln)), None)
        if row is None:
            rows.append([ln])
        else:
            row.append(ln)
    return [sorted(r, key=lambda ln: ln.box[0]) for r in rows]


def _prose_row(piece: OcrLine, pieces: list[OcrLine], x0: float, x1: float) -> bool:
    """The row of `piece` (its pieces between x0 and x1) reads as a sentence: a few words, most of
    them lower-case (a table's header or first row under a one-sentence title does not)."""
    words = [w.text.strip(".,;:!?()[]\"'`") for p in pieces if _same_row(p, piece) and p.box[0] >= x0
             and p.box[2] <= x1 for w in p.words]
    words = [w for w in words if w]
    lower = sum(1 for w in words if w[0].islower() and not any(c.isdigit() for c in w))
    return len(words) >= 3 and lower >= 0.5 * len(words)


def _run_on(cap: OcrCaption, pieces: list[OcrLine], used: set[int]) -> OcrCaption:
    """The caption with the pieces Tesseract read as other blocks added: a piece on its last row
    just after that row's end (a word gap, not a column gutter; a wider one after a label alone),
    or the next row starting at one of its rows' left edges (its margin or a hanging indent), no
    wider than it, close below at its own pitch (after a finished sentence only at its measured
    pitch and reading as prose) and words rather than a row of numbers."""
    own = list(cap.lines)
    added: list[OcrLine] = []
    while True:
        rows = _rows(own)
        last = rows[-1]
        h = max(float(np.median([ln.height for ln in own])), 1.0)
        free = [p for p in pieces if id(p) not in used and _caption_start(p, None) is None]
        # a label standing alone on its row is set off from its text by a wider space than a word's
        space = 2 * h if len(own) == 1 and _label_only(normalise_label(own[0].text)) else h
        beside = [p for p in free if _same_row(p, last[-1]) and 0 <= p.box[0] - last[-1].box[2] <= space]
        if beside:
            nxt = min(beside, key=lambda p: p.box[0])
        else:
            lefts = [r[0].box[0] for r in rows]
            right = max(ln.box[2] for ln in own)
            head = last[0]
            ended = last[-1].text.rstrip().endswith((".", ":", "!", "?"))
            below = [p for p in free if p.box[1] > head.box[1] + 0.5 * head.height
                     and min(abs(p.box[0] - x) for x in lefts) <= h and p.box[2] <= right + h
                     and _continues(p, last[-1], own[0], [r[0] for r in rows])
                     and (not ended or (_at_pitch(p, [r[0] for r in rows])
                                        and _prose_row(p, free, min(lefts) - h, right + h)))]
            if not below:
                break
            nxt = min(below, key=lambda p: (p.box[1], p.box[0]))
        own.append(nxt)
        added.append(nxt)
        used.add(id(nxt))
    if not added:
        return cap
    return OcrCaption(cap.kind, cap.number, join_caption_lines([cap.text] + [p.text for p in added]), own, cap.score)
