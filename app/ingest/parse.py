"""Text-layer parsing of a research paper PDF.

``parse_pdf`` turns an already opened PyMuPDF document into a
:class:`~app.ingest.types.ParsedPaper`: title, authors, year, abstract, body
text in reading order (two-column aware, running headers/footers, captions and
the reference list removed), body sentences and the split reference list.

Everything is heuristic and tuned to be fast (one ``get_text("dict")`` call per
page, then plain Python); nothing here raises on odd documents -- a scanned
paper simply yields ``has_text_layer=False`` and empty fields.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from typing import Mapping, Sequence
from datetime import date

import pymupdf

from app.labels import CAPTION_PARAGRAPH_RE
from app.ingest.hyphenation import join_lines, vocabulary
from app.ingest.layout import (REPEAT_BAND, DocumentLayout, Line, PageLayout, build_layout, clean_text, furniture_key,
                               in_band, is_bold, join_spans, repeat_min)
from app.ingest.names import strip_emails, tidy_names, uncased_script
from app.ingest.title_case import title_case
from app.ingest.types import ParsedPaper

__all__ = ["caption_boxes", "parse_pdf", "split_sentences"]

_MAX_YEAR = date.today().year + 1

# ----------------------------------------------------------------------------
# blocks of the page model's lines
# ----------------------------------------------------------------------------


@dataclass
class _Block:
    lines: list[Line]
    page: int
    x0: float = 0.0
    y0: float = 0.0
    x1: float = 0.0
    y1: float = 0.0
    col: str = "s"  # "l", "r" (two-column page) or "s" (spanning / single column)

    def update_bbox(self) -> None:
        self.x0 = min(ln.x0 for ln in self.lines)
        self.y0 = min(ln.y0 for ln in self.lines)
        self.x1 = max(ln.x1 for ln in self.lines)
        self.y1 = max(ln.y1 for ln in self.lines)

    @property
    def n_chars(self) -> int:
        return sum(len(ln.text) for ln in self.lines)


_NUMBERING_RE = re.compile(r"^[\d.IVX]+$")


def _drop_run_in_heading(ln: Line) -> Line:
    """'4.2 Results. Figure 3 shows ...': a bold (numbered) heading that runs into its paragraph
    is cut off, so the paragraph's text (and its figure mentions) stays body text."""
    spans = ln.spans
    k = 0
    while k < len(spans) and (is_bold(spans[k]) or _NUMBERING_RE.match(spans[k]["text"].strip() or "x")
                              or not spans[k]["text"].strip(".: ")):
        k += 1
    if k == 0 or k >= len(spans) or any(is_bold(sp) for sp in spans[k:]):
        return ln
    head = "".join(sp["text"] for sp in spans[:k]).strip()
    if not any(is_bold(sp) for sp in spans[:k]) or not re.search(r"[A-Za-z]{2}", head) or head[-1:] not in ".:":
        return ln
    rest = spans[k:]
    text = clean_text(join_spans(rest)).strip()
    return replace(ln, spans=rest, text=text, x0=rest[0]["bbox"][0]) if text else ln


def _page_blocks(page: PageLayout) -> tuple[list[_Block], list[str]]:
    """Horizontal text blocks of one page (pieces on a common baseline merged into one line)
    plus the text of rotated lines (e.g. the arXiv stamp). Lines are copies: parsing edits them,
    the page model stays as it is for figure extraction."""
    by_block: dict[int, list[Line]] = defaultdict(list)
    rotated: list[str] = []
    for ln in page.lines:
        if not ln.horizontal:
            rotated.append(ln.text)
        else:
            by_block[ln.block].append(ln)
    blocks: list[_Block] = []
    for bi in sorted(by_block):
        raw = sorted(by_block[bi], key=lambda l: (round(l.yc), l.x0))
        merged: list[Line] = []
        for ln in raw:
            if merged:
                prev = merged[-1]
                h = min(prev.y1 - prev.y0, ln.y1 - ln.y0)
                overlap = min(prev.y1, ln.y1) - max(prev.y0, ln.y0)
                if overlap > 0.5 * h and ln.x0 >= prev.x1 - 2:
                    gap = ln.x0 - prev.x1
                    if gap < 3 * max(prev.size, ln.size):
                        sep = "" if prev.text.endswith(" ") or ln.text.startswith(" ") else " "
                        prev.text = prev.text + sep + ln.text
                        prev.x1 = max(prev.x1, ln.x1)
                        prev.y0 = min(prev.y0, ln.y0)
                        prev.y1 = max(prev.y1, ln.y1)
                        prev.pieces = prev.pieces + ln.pieces
                        if len(ln.text.strip()) > len(prev.text.strip()) / 2:
                            prev.size = max(prev.size, ln.size)
                        continue
            merged.append(_drop_run_in_heading(replace(ln, size=ln.largest_piece_size)))
        merged.sort(key=lambda l: (l.y0, l.x0))  # the original vertical order
        for ln in merged:
            ln.text = re.sub(r"\s+", " ", ln.text).strip()
        merged = [ln for ln in merged if ln.text]
        if merged:
            blk = _Block(merged, page.number)
            blk.update_bbox()
            blocks.append(blk)
    return blocks, rotated


# ----------------------------------------------------------------------------
# page furniture (running headers / footers / page numbers)
# ----------------------------------------------------------------------------

_PAGE_NO_RE = re.compile(r"^(?:page\s*)?[\divxlcIVXLC]{1,5}(?:\s*(?:of|/)\s*\d+)?$", re.I)


# The single-page rules (page numbers, tiny print) look in this band; repeated running heads and
# feet in layout.REPEAT_BAND, wider.
_MARGIN_BAND = 0.09


def _remove_furniture(pages: list[list[_Block]], heights: list[float], body_size: float) -> None:
    n = len(pages)
    counts: Counter[str] = Counter()
    for pno, blocks in enumerate(pages):
        seen = {furniture_key(ln.text) for b in blocks for ln in b.lines if in_band(ln, heights[pno], REPEAT_BAND)}
        counts.update(seen)
    repeats = repeat_min(n) or 10**9
    for pno, blocks in enumerate(pages):
        h = heights[pno]
        keep_blocks = []
        for b in blocks:
            kept = []
            for ln in b.lines:
                if in_band(ln, h, REPEAT_BAND) and counts[furniture_key(ln.text)] >= repeats:
                    continue
                if in_band(ln, h, _MARGIN_BAND):
                    if _PAGE_NO_RE.match(ln.text) or len(ln.text) <= 3:
                        continue
                    if ln.size < 0.8 * body_size and (ln.yc < 0.06 * h or ln.yc > 0.94 * h):
                        continue
                kept.append(ln)
            if kept:
                b.lines = kept
                b.update_bbox()
                keep_blocks.append(b)
        blocks[:] = keep_blocks


_NOTE_MARK_RE = re.compile(r"^(?:\d{1,2}|[*\u2217\u2020\u2021\u00a7\u00b6\u22c6])$")
_NOTE_ZONE = 0.6  # footnotes sit in the lower part of a page
_NOTE_START_RE = re.compile(r"[A-Z][a-z]|https?:|www\.")


def _starts_footnote(ln: Line, height: float) -> bool:
    """A line low on the page that opens with a raised, smaller mark ("¹See https://...",
    "∗Corresponding author"): a footnote. Footnotes set barely smaller than the body pass the
    size test of paragraphs, so they are told by their mark."""
    if ln.yc < _NOTE_ZONE * height:
        return False
    spans = [sp for sp in ln.spans if sp["text"].strip()]
    if len(spans) < 2 or not _NOTE_MARK_RE.match(spans[0]["text"].strip()):
        return False
    mark, text = spans[0], spans[1]
    # a note opens with a capitalised word or an address; a raised mark before a comma, a
    # lower-case word or a symbol in capitals ("² AD") is an exponent or a wrapped note reference
    opens_note = bool(_NOTE_START_RE.match(text["text"].lstrip()))
    return opens_note and mark["size"] < 0.8 * text["size"] and mark["bbox"][3] < text["bbox"][3] - 0.5


def _remove_footnotes(pages: list[list[_Block]], heights: list[float]) -> None:
    """Drop each footnote: from the line opening it to the end of its block."""
    for pno, blocks in enumerate(pages):
        keep_blocks = []
        for b in blocks:
            start = next((i for i, ln in enumerate(b.lines) if _starts_footnote(ln, heights[pno])), None)
            if start is not None:
                b.lines = b.lines[:start]
                if not b.lines:
                    continue
                b.update_bbox()
            keep_blocks.append(b)
        blocks[:] = keep_blocks


# ----------------------------------------------------------------------------
# reading order
# ----------------------------------------------------------------------------


def _order_page(blocks: list[_Block], page_width: float) -> list[_Block]:
    if not blocks:
        return []
    texty = [b for b in blocks if b.n_chars >= 10] or blocks
    xmin = min(b.x0 for b in texty)
    xmax = max(b.x1 for b in texty)
    width = max(xmax - xmin, 1.0)
    mid = (xmin + xmax) / 2
    # a page is two-column when there is real text entirely on each side of the middle
    left_chars = right_chars = 0
    for b in blocks:
        bw = b.x1 - b.x0
        if b.x1 <= mid + 6 and bw > 0.25 * width:
            left_chars += b.n_chars
        elif b.x0 >= mid - 6 and bw > 0.25 * width:
            right_chars += b.n_chars
    two_col = left_chars >= 150 and right_chars >= 150
    if not two_col:
        for b in blocks:
            b.col = "s"
        return sorted(blocks, key=lambda b: (round(b.y0), b.x0))
    for b in blocks:
        if b.x1 <= mid + 6:
            b.col = "l"
        elif b.x0 >= mid - 6:
            b.col = "r"
        else:
            b.col = "s"
    ordered: list[_Block] = []
    band: list[_Block] = []

    def flush() -> None:
        band.sort(key=lambda b: (b.col != "l", b.y0, b.x0))
        ordered.extend(band)
        band.clear()

    for b in sorted(blocks, key=lambda b: (b.y0, b.x0)):
        if b.col == "s":
            flush()
            ordered.append(b)
        else:
            band.append(b)
    flush()
    return ordered


# ----------------------------------------------------------------------------
# how a line is classified: section headings, the references heading, the abstract
# ----------------------------------------------------------------------------

_SECTION_NO_RE = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[IVX]+\.|[A-H](?:\.\d+)*\.?)\s+\S")
_REF_HEAD_RE = re.compile(
    r"^(?:\d+\.?|[IVX]+\.?)?\s*(?:references?|bibliography|literature cited|references and notes|"
    r"r\s?e\s?f\s?e\s?r\s?e\s?n\s?c\s?e\s?s)\s*:?$",
    re.I,
)
_ABS_RE = re.compile(
    r"^\s*(?:A\s?b\s?s\s?t\s?r\s?a\s?c\s?t|A\s?B\s?S\s?T\s?R\s?A\s?C\s?T)\b\s*[:.\u2014\u2013-]?\s*"
)
_ABS_STOP_RE = re.compile(
    r"^(?:keywords?|key\s*words|index terms|ccs concepts|acm reference format|general terms|"
    r"categories and subject descriptors|additional key words|"
    r"(?:\d+\.?|[IVX]+\.)?\s*introduction\b)",
    re.I,
)
_BOILERPLATE_RE = re.compile(
    r"^(?:permission to make digital|permission to copy|copyright|\u00a9|\(c\)|acm reference format|"
    r"acm isbn|https?://doi|doi:|publication rights|\*?corresponding author|proc\. of the|proceedings of the)",
    re.I,
)
_META_HEAD_RE = re.compile(
    r"^(?:ccs concepts|keywords|key\s*words|index terms|general terms|categories and subject descriptors|"
    r"acm reference format|additional key words and phrases)\b",
    re.I,
)
_APPENDIX_RE = re.compile(r"^(?:appendix|appendices|supplementary|supplemental)\b|^[A-H](?:\.\d+)*\.?\s+[A-Z]", re.I)


def _is_heading(ln: Line, body_size: float) -> bool:
    t = ln.text
    words = t.split()
    if not words or len(words) > 14 or len(t) > 110:
        return False
    if t[-1] in ".,;" and not _SECTION_NO_RE.match(t):
        return False
    if not any(c.isalpha() for c in t):
        return False
    bigger = ln.size >= body_size + 0.8
    if ln.bold or bigger:
        return True
    letters = [c for c in t if c.isalpha()]
    upper = sum(c.isupper() for c in letters) / len(letters)
    return bool(_SECTION_NO_RE.match(t)) and upper > 0.8


def _body_size(pages: list[list[_Block]]) -> float:
    c: Counter[float] = Counter()
    for blocks in pages:
        for b in blocks:
            for ln in b.lines:
                c[round(ln.size * 2) / 2] += len(ln.text)
    return c.most_common(1)[0][0] if c else 10.0


# ----------------------------------------------------------------------------
# front matter: title, authors, year, abstract
# ----------------------------------------------------------------------------

_JUNK_TITLE_RE = re.compile(
    r"arxiv|preprint|proceedings|journal|conference|vol\.|issn|\bdoi\b|copyright|"
    r"published|accepted|submitted|under review|workshop on|transactions on|letters",
    re.I,
)
_BAD_META_TITLE_RE = re.compile(
    r"^(?:microsoft\s+(?:word|powerpoint)|untitled|title|paper|main|template|slide|"
    r"proceedings template|sig proceedings|acm proceedings|no title|manuscript)\b|"
    r"\.(?:docx?|tex|dvi|pdf|ps|pptx?|indd|qxd)\b|^[\w.\-]+$|^\d",
    re.I,
)


# a numbered section heading ("1 Introduction"): a page without a title block starts with one
_NUMBERED_HEADING_RE = re.compile(r"^\d{1,2}(?:\.\d+)*\.?\s+[A-Z][a-z]")


# how much larger than any other type on the page a title shorter than two words or 12 characters
# must be set (vignettes' "Concordance" 17 pt over 14 pt headings; a journal's name 13.9 pt over a
# 13.4 pt title is no title)
_SHORT_TITLE_LEAD = 1.15


def _find_title(first_page: list[_Block], page_h: float) -> tuple[str, list[Line]]:
    lines = [ln for b in first_page for ln in b.lines if ln.yc < 0.6 * page_h]
    cands = [
        ln for ln in lines
        if sum(c.isalpha() for c in ln.text) >= 2 and not _JUNK_TITLE_RE.search(ln.text)
    ]
    sizes = sorted({ln.size for ln in cands}, reverse=True)
    for size in sizes[:4]:
        group_start = [ln for ln in cands if abs(ln.size - size) < 0.15]
        group_start.sort(key=lambda l: (l.y0, l.x0))
        first = group_start[0]
        if _NUMBERED_HEADING_RE.match(first.text):
            return "", []  # the largest text is a section heading: the page has no title block
        group = [first]
        last = first
        for ln in sorted(lines, key=lambda l: (l.y0, l.x0)):
            if ln is first or ln.y0 < first.y0:
                continue
            if (
                abs(ln.size - size) < 0.35
                and ln.y0 - last.y1 < 0.9 * size
                and ln.bold == first.bold
                and not _JUNK_TITLE_RE.search(ln.text)
            ):
                group.append(ln)
                last = ln
            elif ln.y0 > last.y1 + 2:
                break
        text = join_lines([g.text for g in group])
        text = re.sub(r"[\*\u2217\u2020\u2021\u00a7\u00b6\u22c6]+", "", text)
        text = re.sub(r"\s+([,:;?!])", r"\1", re.sub(r"\s+", " ", text)).strip(" ,;")
        if len(text) >= 12 and len(text.split()) >= 2 and len(text) < 300:
            return text, group
        # a short title ("Concordance") set alone in type clearly the page's largest is still the title
        # (a journal's name over a title about as large is not)
        if (size == sizes[0] and (len(sizes) == 1 or size >= _SHORT_TITLE_LEAD * sizes[1])
                and len(group) == 1 and sum(c.isalpha() for c in text) >= 4):
            return text, group
    return "", []


_AFFIL_RE = re.compile(
    r"@|universit|institut|college|school|department|dept\.|laborator|\blab\b|\blabs\b|research|inc\.|"
    r"\bltd\b|corporation|company|group|academy|\bchina\b|\busa\b|\bemail\b|e-mail|http|www\.|\d{5}|"
    r"cent(?:er|re)\b|gmbh|\bag\b|foundation|hospital|faculty|technolog|science|engineering",
    re.I,
)
# a footnote mark of an author name: any character no name is written with (digits, stars, daggers,
# section signs, card signs, and glyphs a broken font maps to "\\" or "|"); names hold letters,
# spaces, hyphens, apostrophes and the periods of initials
_MARK_CHAR = r"(?:[^\w\s\-'\u2019.,&]|[\d_])"
# marks after a name, set close to it or apart ("Wang1,2", "Wang 1 Isola 1", "Liu, 1 Li, 2, 3 Wu")
_NAME_MARK_RE = re.compile(rf"(?<=[^\W\d_])(?:\s*,?\s*{_MARK_CHAR}+)+")
_SYMBOL_RE = re.compile(rf"{_MARK_CHAR}+")
_AFFIL_MARK_RE = re.compile(r"^\d+\s?[^\W\d_]")  # "1LMU Munich", "2 University of ..."
_LIST_SEP_RE = re.compile(r",|\band\b|&")


def _piece_groups(ln: Line) -> list[tuple[float, float, str]]:
    """(x0, x1, text) of the parts of a line whose pieces stand more than a letter's height apart
    (names set in columns, "Wei Zhou1,3   Mohsen Mesgar1")."""
    groups: list[list[tuple[float, float, str]]] = []
    for piece in sorted(ln.pieces) or [(ln.x0, ln.x1, ln.text)]:
        if not groups or piece[0] - groups[-1][-1][1] > 0.6 * ln.size:
            groups.append([])
        groups[-1].append(piece)
    return [(g[0][0], g[-1][1], " ".join(p[2] for p in g)) for g in groups]


def _spaced_text(ln: Line) -> str:
    """A line's text with a comma between its parts set far apart."""
    groups = _piece_groups(ln)
    return ", ".join(g[2] for g in groups) if len(groups) > 1 else ln.text


def _find_authors(first_page: list[_Block], title_lines: list[Line], body_size: float) -> str:
    """The author names between the title and the abstract: the first row of names and the rows that
    continue it as a list; affiliations, e-mail addresses and footnote marks left out. Names set in a
    grid (each over its own affiliation and address) go on in later rows of the grid."""
    if not title_lines:
        return ""
    bottom = max(ln.y1 for ln in title_lines)
    tsize, tbold = title_lines[0].size, title_lines[0].bold
    uncased_ok = uncased_script(" ".join(ln.text for ln in title_lines))
    lines = sorted(
        (ln for b in first_page for ln in b.lines if ln.y0 >= bottom - 1 and ln not in title_lines),
        key=lambda l: (l.y0, l.x0),
    )[:60]
    rows: list[list[Line]] = []  # lines at one height: one row of the author block
    for ln in lines:
        if rows and abs(ln.y0 - rows[-1][0].y0) < 0.5 * ln.size:
            rows[-1].append(ln)
        else:
            rows.append([ln])
    out = ""
    paired_rows = False  # the first row pairs its name with an e-mail address or affiliation
    first_x0 = first_xc = 0.0
    first_row: list[Line] = []
    n_rows = 0
    last = -1  # index of the last row read
    for ri, row in enumerate(rows[:8]):
        row.sort(key=lambda l: l.x0)
        if _ends_front_matter(row, tsize, body_size):
            break
        last = ri
        if all(ln.size >= tsize - 0.5 and ln.bold == tbold for ln in row):
            continue  # more of the title's lines
        names, t, paired = _row_names(row)
        if not _names_row(names, t, uncased_ok):
            if out:
                break
            continue
        if out:
            # a later row goes on with the list: after a separator, with footnote marks, or (names
            # paired with addresses, one per row) at the first row's indent or centre
            if re.search(r"(,|\band|&)\s*$", out):
                out += " " + t
            elif (_LIST_SEP_RE.search(t) or _NAME_MARK_RE.search(t)) and _full_names(t):
                # a name broken over two rows leaves one word after the row's last separator
                tail = _LIST_SEP_RE.split(_clean_names(out))[-1].split()
                out += (" " if len(tail) == 1 else ", ") + t
            elif paired and paired_rows and (abs(names[0].x0 - first_x0) < 2 or abs(_xc(names[0]) - first_xc) < 2):
                out += ", " + t
            elif len(t.split()) == 1 and len(_LIST_SEP_RE.split(_clean_names(out))[-1].split()) == 1 \
                    and _same_style(names[0], first_row[0]):
                out += " " + t  # the list's last name broken over two rows
            else:
                break
        elif not _full_names(t):
            continue  # single words ("CITATIONS  READS") are not a first row of names
        else:
            out, paired_rows, first_x0, first_xc, first_row = t, paired, names[0].x0, _xc(names[0]), names
        n_rows += 1
        if n_rows >= 6:
            break
    if first_row and _in_columns(first_row):
        out = ", ".join([out] + _grid_rows(rows[last + 1:], first_row, tsize, body_size, uncased_ok))
    return _name_list(tidy_names(_clean_names(out).split(","), uncased_ok) or [])


_MAX_AUTHORS_CHARS = 300


def _name_list(names: list[str]) -> str:
    """The names as one string, cut after the last whole name that fits the stored length."""
    out = ""
    for n in names:
        if len(out) + len(n) + 2 > _MAX_AUTHORS_CHARS:
            break
        out = f"{out}, {n}" if out else n
    return out


def _xc(ln: Line) -> float:
    return (ln.x0 + ln.x1) / 2


def _ends_front_matter(row: list[Line], tsize: float, body_size: float) -> bool:
    """The abstract label, the labels that stand for it (keywords, "1 Introduction") or a heading:
    no author names below."""
    return bool(_ABS_RE.match(row[0].text) or _ABS_STOP_RE.match(row[0].text)) \
        or any(_is_heading(ln, body_size) and ln.size >= tsize - 0.5 and not _names_row([ln], ln.text) for ln in row)


# a name in capitals followed by its affiliation ("IAN A. KASH, Microsoft Research Cambridge")
_CAPS_NAME_AFFIL_RE = re.compile(r"^([^\W\d_][^,a-z]*[A-Z][^,a-z]*),\s*(.*[a-z].*)$")


def _name_part(ln: Line) -> Line | None:
    """The line as far as it may hold names: e-mail addresses beside the names taken out, the
    affiliation after a name set in capitals taken off; None for an affiliation or address line."""
    text = strip_emails(ln.text)
    m = _CAPS_NAME_AFFIL_RE.match(text)
    if m and _AFFIL_RE.search(m.group(2)) and not _AFFIL_RE.search(m.group(1)) and len(m.group(1).split()) >= 2:
        text = m.group(1)
    if not text or _AFFIL_RE.search(text) or _AFFIL_MARK_RE.match(text):
        return None
    if text == ln.text:
        return ln
    pieces = tuple((x0, x1, t) for x0, x1, t in ln.pieces if t.strip() and t.strip() in text)
    return replace(ln, text=text, pieces=pieces if len(pieces) > 1 else ())


def _row_names(row: list[Line]) -> tuple[list[Line], str, bool]:
    """The lines of a row that are not affiliations or addresses, their text as a list (lines of a
    row are columns, and pieces set far apart are separate names unless the line separates its names
    itself), and whether the row pairs its names with an address or affiliation."""
    parts = [_name_part(ln) for ln in row]
    names = [n for n in parts if n is not None]
    paired = any(n is not ln for n, ln in zip(parts, row))
    return names, _names_text(names), paired


def _names_text(names: list[Line]) -> str:
    return ", ".join(ln.text if _LIST_SEP_RE.search(_NAME_MARK_RE.sub(" ", ln.text)) else _spaced_text(ln)
                     for ln in names)


def _names_row(names: list[Line], t: str, uncased_ok: bool = False) -> bool:
    """A row that can hold author names: not a repeated part ("Meituan, Meituan"), not a sentence,
    every part a name (not a date, a publication-type line or text in another script)."""
    found = tidy_names(_clean_names(t).split(","), uncased_ok, strict=True)
    return bool(names) and bool(found) and len(set(found)) == len(found) and len(t.split()) <= 25 \
        and not t.endswith(".") and ":" not in t


def _in_columns(names: list[Line]) -> bool:
    """Names set apart in columns (two lines of one row, or pieces far apart), each over its own
    affiliation."""
    return len(names) >= 2 or (len(names) == 1 and _spaced_text(names[0]) != names[0].text)


def _same_style(a: Line, b: Line) -> bool:
    return abs(a.size - b.size) <= 0.3 and a.bold == b.bold


def _cells(ln: Line) -> list[tuple[float, float, str]]:
    """(x0, x1, text) of the names of a line: its parts set far apart, or the whole line when it
    separates its names itself."""
    groups = _piece_groups(ln)
    if len(groups) < 2 or _LIST_SEP_RE.search(_NAME_MARK_RE.sub(" ", ln.text)):
        return [(ln.x0, ln.x1, ln.text)]
    return groups


def _grid_rows(rows: list[list[Line]], first: list[Line], tsize: float, body_size: float,
               uncased_ok: bool = False) -> list[str]:
    """Names of the later rows of a grid of authors: rows set in the style of the first row of names,
    past the affiliation and address rows (a style of their own, or addresses) between them. A name
    too long for its column goes on in the row right below it."""
    out: list[list] = []  # [x0, x1, y1, text] of each name
    prev: list[list] = []  # the names of the last row read
    for row in rows:
        row.sort(key=lambda l: l.x0)
        if _ends_front_matter(row, tsize, body_size):
            break
        names = [ln for ln in _row_names(row)[0] if _same_style(ln, first[0])]
        if not names:
            prev = []
            continue  # affiliations and addresses
        t = _names_text(names)
        if not _names_row(names, t, uncased_ok):
            break
        cells = [(x0, x1, text, ln) for ln in names for x0, x1, text in _cells(ln)]
        below = [next((p for p in prev if min(x1, p[1]) - max(x0, p[0]) > 0 and ln.y0 - p[2] < 0.8 * ln.size), None)
                 for x0, x1, text, ln in cells]
        if prev and all(below) and len(t.split()) == len(cells):  # one word under each name: its end
            for p, (_, _, text, ln) in zip(below, cells):
                p[3] += " " + text
                p[2] = ln.y1
            continue
        if not _full_names(t):
            break
        prev = [[x0, x1, ln.y1, text] for x0, x1, text, ln in cells]
        out.extend(prev)
    return [c[3] for c in out]


def _has_abstract_label(blocks: list[_Block]) -> bool:
    """An "Abstract" label on the page: alone on its line, followed by punctuation, or bold."""
    for b in blocks:
        for ln in b.lines:
            m = _ABS_RE.match(ln.text)
            if m and (m.end() == len(ln.text) or re.search(r"[:.\u2014\u2013-]\s*$", m.group(0)) or ln.bold):
                return True
    return False


def _front_matter(pages: list[list[_Block]], heights: list[float], body_size: float) -> tuple[str, list[Line], str]:
    """Title, its lines and the author list. A cover sheet before the paper (a repository's page of
    download statistics) has no abstract, and the next page has one or repeats the title: title and
    authors are read there when that page names its authors (some cover sheets carry the only
    author list)."""
    title, title_lines = _with_subtitle(*_find_title(pages[0], heights[0]), pages[0], body_size)
    authors = _find_authors(pages[0], title_lines, body_size)
    if len(pages) > 1 and not _has_abstract_label(pages[0]):
        title2, lines2 = _with_subtitle(*_find_title(pages[1], heights[1]), pages[1], body_size)
        if _has_abstract_label(pages[1]) or _NON_ALNUM_RE.sub("", title2.casefold()) == _NON_ALNUM_RE.sub("", title.casefold()):
            authors2 = _find_authors(pages[1], lines2, body_size)
            if title2 and authors2:
                return title2, lines2, authors2
    return title, title_lines, authors


_DASH_START_RE = re.compile(r"^[\u2013\u2014:-]\s*")


def _with_subtitle(title: str, lines: list[Line], page: list[_Block], body_size: float) -> tuple[str, list[Line]]:
    """The title with its subtitle: the line right under it, alone on its row, set smaller than the
    title but in a display size, that is not a list of names, an affiliation or a label ("Microsoft
    Recommenders" over "Tools to Accelerate ...", "Deep Learning over ..." over "\u2013 A Case Study
    ..."). Written "Title: Subtitle"."""
    if not lines:
        return title, lines
    bottom = max(ln.y1 for ln in lines)
    below = sorted((ln for b in page for ln in b.lines if ln.y0 >= bottom - 1 and ln not in lines),
                   key=lambda l: (l.y0, l.x0))
    if not below:
        return title, lines
    sub = below[0]
    text = _DASH_START_RE.sub("", sub.text).strip()
    alone = len(below) == 1 or below[1].y0 - sub.y0 > 0.5 * sub.size
    if not (
        alone and sub.y0 - bottom < 1.2 * sub.size and body_size + 1.5 <= sub.size < lines[0].size - 0.35
        and 2 <= len(text.split()) <= 20 and not text.endswith(".") and not re.search(r"\d|@", text)
        and not (_AFFIL_RE.search(text) or _JUNK_TITLE_RE.search(text) or _ABS_RE.match(text)
                 or _ABS_STOP_RE.match(text)) and not _names_row([sub], sub.text)
    ):
        return title, lines
    sep = " " if re.search(r"[:\-\u2013\u2014]$", title) else ": "
    return title + sep + text, lines + [sub]


def _full_names(t: str) -> bool:
    """Most parts of a list read as full names (two words or more): "LinkedIn, Mountain View, CA"
    and "Cohere For AI, MIT" do not (a society grade, "Fellow, IEEE", is no part)."""
    parts = [x.split() for x in tidy_names(_LIST_SEP_RE.split(_clean_names(t))) or []]
    return bool(parts) and sum(len(x) >= 2 for x in parts) >= 2 / 3 * len(parts)


def _clean_names(s: str) -> str:
    """Footnote marks and symbols out (a mark after a name ends it), names separated by a comma
    alone ("A, B and C" reads "A, B, C")."""
    s = _SYMBOL_RE.sub(" ", _NAME_MARK_RE.sub(",", s))
    s = re.sub(r"(?:\s*,\s*|\s+)(?:and|&)\s+|\s*&\s*", ", ", s)
    s = re.sub(r"\s*,[\s,]*", ", ", s)
    return re.sub(r"\s+", " ", s).strip(" ,")


_COPY_YEAR_RE = re.compile(r"(?:\u00a9|\(c\)|copyright)\s*(?:\d{4}\s*[-\u2013]\s*)?((?:19|20)\d\d)", re.I)
_CONF_YEAR_RE = re.compile(r"\b[A-Z][A-Za-z]{1,9}\s?['\u2019\u2018](\d\d)\b")
_ARXIV_RE = re.compile(r"arXiv:(\d\d)(\d\d)\.\d{4,5}")
_YEAR_RE = re.compile(r"\b(19[5-9]\d|20[0-4]\d)\b")
# a year cited in running text ("[Chapelle, 2014]", "(Law, 2014; ...)", "Zhao 2013)"; not "(NIPS 2017)")
# or one end of a page range ("1929-1958") is not the paper's
_CITED_YEAR_RE = re.compile(r"(?:,|\bal\.|\b[A-Z][a-z]+)\s+(?:19[5-9]\d|20[0-4]\d)[a-z]?\s*[)\];]|\d[-\u2013]\d{4}|\d{4}[-\u2013]\d")
# the date a copy was uploaded, downloaded or accessed (cover pages of repositories), or a manuscript
# received or revised, is not the paper's
_ACCESS_RE = re.compile(r"upload|download|retrieved|accessed|viewed on|received|revised|submitted", re.I)


# a date as a document prints its own ("November 1, 2022", "6 March 2012", "Feb 2008", "2009-06-29")
_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
          r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?")
_DATE_RE = re.compile(rf"\b(?:\d{{1,2}}(?:st|nd|rd|th)?\s+)?{_MONTH}\s+(?:\d{{1,2}}(?:st|nd|rd|th)?,?\s+)?((?:19|20)\d\d)\b"
                      r"|\b((?:19|20)\d\d)-[01]\d-[0-3]\d\b")
# a line that is a date, perhaps with a label ("Modified: ...", "Version: ...", "processed ... on ..."),
# has few other words; a sentence naming a date is running text
_DATE_LINE_WORDS = 10
_WORD_RE = re.compile(r"\w\S*")
_DATE_BLOCK_LINES = 2


def _date_line_year(text: str) -> int | None:
    """The year of the first date on a line that is mostly dates, or None."""
    dates = list(_DATE_RE.finditer(text))
    if not dates or _ACCESS_RE.search(text):
        return None
    if len(_WORD_RE.findall(_DATE_RE.sub(" ", text))) > _DATE_LINE_WORDS:
        return None
    y = int(dates[0].group(1) or dates[0].group(2))
    return y if _ok_year(y) else None


def _ok_year(y: int) -> bool:
    return 1950 <= y <= _MAX_YEAR


def _printed_year(first_page: list[_Block], rotated: list[str], page_h: float, body_size: float) -> int | None:
    """The year printed on the first page (arXiv stamp, the document's date line, copyright, venue
    line), or None."""
    for t in rotated:  # arXiv stamp in the left margin
        m = _ARXIV_RE.search(t)
        if m:
            return 2000 + int(m.group(1))
    lines = [ln for b in first_page for ln in b.lines]
    texts = [ln.text for ln in lines]
    for b in first_page:  # a date set apart (its own block), not a date inside a paragraph
        if len(b.lines) <= _DATE_BLOCK_LINES:
            for ln in b.lines:
                y = _date_line_year(ln.text)
                if y is not None:
                    return y
    # a paragraph in body type running into the foot of the page is text, whose years are cited works'
    running = {id(ln) for b in first_page if len(b.lines) > 1
               for ln in b.lines if abs(ln.size - body_size) < 0.5}
    edge = [ln.text for ln in lines if ln.yc < 0.15 * page_h
            or ln.yc > 0.8 * page_h and id(ln) not in running]
    for t in texts:
        m = _COPY_YEAR_RE.search(t)
        if m and _ok_year(int(m.group(1))):
            return int(m.group(1))
    for t in edge:
        for m in _CONF_YEAR_RE.finditer(t):
            if m.start() > 0 and t[m.start() - 1] == "[":
                continue
            yy = int(m.group(1))
            y = 2000 + yy if 2000 + yy <= _MAX_YEAR else 1900 + yy
            if _ok_year(y):
                return y
    for t in texts:
        m = _ARXIV_RE.search(t)
        if m:
            return 2000 + int(m.group(1))
    for t in rotated + edge:
        if _ACCESS_RE.search(t):
            continue
        cited = [c.span() for c in _CITED_YEAR_RE.finditer(t)]
        for m in _YEAR_RE.finditer(t):
            if _ok_year(int(m.group(1))) and not any(a <= m.start() < b for a, b in cited):
                return int(m.group(1))
    return None


def _fallback_year(metadata: dict, references: list[str]) -> int | None:
    """The year of a paper that prints none: the PDF's creation year when it is plausible next to the
    newest year its references cite (a re-saved copy is years younger), else that newest year + 1
    (on papers with a known year the newest cited year is mostly the paper's year or the one before)."""
    cd = (metadata or {}).get("creationDate") or ""
    m = re.search(r"((?:19|20)\d\d)", cd)
    created = int(m.group(1)) if m and _ok_year(int(m.group(1))) else None
    # a cited "year" after the file was made is a page number or a report id
    cited = [y for r in references for y in map(int, _YEAR_RE.findall(r)) if _ok_year(y) and y <= (created or _MAX_YEAR)]
    if not cited:
        return created
    newest = max(cited)
    if created is not None and newest <= created <= newest + 2:
        return created
    return min(newest + 1, _MAX_YEAR)


def _find_abstract(
    ordered: list[_Block], body_size: float, title_lines: list[Line], vocab: Counter[str]
) -> tuple[str, Line | None]:
    """Abstract text and the line holding the "Abstract" label (None when not found)."""
    lines = [ln for b in ordered if b.page <= 1 for ln in b.lines]
    start = None
    first_text = ""
    for i, ln in enumerate(lines[:400]):
        m = _ABS_RE.match(ln.text)
        if m:
            start = i
            first_text = ln.text[m.end():]
            break
    if start is not None:
        collected: list[str] = [first_text] if first_text else []
        style = (lines[start].bold, lines[start].size) if first_text else None
        for ln in lines[start + 1:]:
            t = ln.text
            if _ABS_STOP_RE.match(t):
                break
            if style is None:
                style = (ln.bold, ln.size)
            else:
                same_style = ln.bold == style[0] and abs(ln.size - style[1]) <= 1.2
                if not same_style and (
                    _is_heading(ln, body_size) or sum(len(c) for c in collected) > 200
                ):
                    break
                if _SECTION_NO_RE.match(t) and _is_heading(ln, body_size):
                    break
            if _BOILERPLATE_RE.match(t):
                break
            collected.append(t)
            if sum(len(c) for c in collected) > 5000:
                break
        text = join_lines(collected, vocab).strip()
        if len(text) >= 80:
            return text, lines[start]
    # fall back: the first long paragraph after the title
    tset = {id(ln) for ln in title_lines}
    for b in ordered:
        if b.page > 1:
            break
        if any(id(ln) in tset for ln in b.lines):
            continue
        text = join_lines([ln.text for ln in b.lines], vocab)
        if len(text.split()) >= 60 and not _BOILERPLATE_RE.match(text):
            return text, None
    return "", None


# ----------------------------------------------------------------------------
# references
# ----------------------------------------------------------------------------

_NUM_BRACKET_RE = re.compile(r"^\[(\d{1,4}|[A-Za-z][A-Za-z+\-]{0,9}\d{0,4}[a-z]?)\]\s*")
_NUM_DOT_RE = re.compile(r"^(\d{1,3})\.\s+\S")


def _split_references(ref_lines: list[tuple[Line, str]], vocab: Counter[str]) -> list[str]:
    """``ref_lines``: (line, column key) in reading order after the heading."""
    if not ref_lines:
        return []
    n_bracket = sum(1 for ln, _ in ref_lines if _NUM_BRACKET_RE.match(ln.text))
    entries: list[list[str]] = []

    def starts_bracket(ln: Line) -> bool:
        return bool(_NUM_BRACKET_RE.match(ln.text))

    if n_bracket >= 3:
        for ln, _ in ref_lines:
            if starts_bracket(ln) or not entries:
                entries.append([ln.text])
            else:
                entries[-1].append(ln.text)
        return _finish_refs(entries, vocab)

    # "12. Author ..." numbered with a dot, must follow the running number
    seq = 0
    for ln, _ in ref_lines:
        m = _NUM_DOT_RE.match(ln.text)
        if m and int(m.group(1)) == seq + 1:
            seq += 1
    if seq >= 3:
        expected = 1
        for ln, _ in ref_lines:
            m = _NUM_DOT_RE.match(ln.text)
            if m and int(m.group(1)) == expected:
                entries.append([ln.text])
                expected += 1
            elif entries:
                entries[-1].append(ln.text)
            else:
                entries.append([ln.text])
        return _finish_refs(entries, vocab)

    # author-year: hanging indent per column, else vertical gaps
    by_col: dict[str, list[Line]] = defaultdict(list)
    for ln, key in ref_lines:
        by_col[key].append(ln)
    col_min = {k: min(l.x0 for l in v) for k, v in by_col.items()}
    col_hanging = {
        k: sum(1 for l in v if l.x0 > col_min[k] + 4) >= max(2, 0.2 * len(v)) for k, v in by_col.items()
    }
    pitches = sorted(
        b.y0 - a.y0
        for (a, ka), (b, kb) in zip(ref_lines, ref_lines[1:])
        if ka == kb and b.y0 > a.y0 + 1
    )
    med_pitch = pitches[len(pitches) // 2] if pitches else 0.0
    prev: Line | None = None
    prev_key = None
    for ln, key in ref_lines:
        new = not entries
        if not new:
            last_text = entries[-1][-1]
            ended = bool(re.search(r"[.\d)\]]$", last_text))
            if col_hanging[key]:
                new = ln.x0 <= col_min[key] + 2 and ended
            else:
                pitch = ln.y0 - prev.y0 if prev is not None and prev_key == key else None
                new = pitch is not None and pitch > med_pitch + max(1.0, 0.12 * ln.size) and ended
                if prev_key != key and ended and ln.text[:1].isupper():
                    # first line of a new column/page: a new entry if the last one looked complete
                    new = True
        if new:
            entries.append([ln.text])
        else:
            entries[-1].append(ln.text)
        prev, prev_key = ln, key
    return _finish_refs(entries, vocab)


def _finish_refs(entries: list[list[str]], vocab: Counter[str]) -> list[str]:
    out = []
    for e in entries:
        s = re.sub(r"\s+", " ", join_lines(e, vocab)).strip()
        if len(s) >= 15 and sum(c.isalpha() for c in s) >= 8:
            out.append(s)
    return out


# ----------------------------------------------------------------------------
# sentences
# ----------------------------------------------------------------------------

# words that end with a period but do not end a sentence (lower-cased, without the period)
_ABBREV = {
    "fig", "figs", "eq", "eqs", "eqn", "eqns", "sec", "secs", "sect", "tab", "tabs", "no", "nos",
    "vs", "e.g", "i.e", "al", "cf", "resp", "approx", "ref", "refs", "vol", "pp", "p", "ch", "chap",
    "dr", "mr", "mrs", "ms", "prof", "st", "jr", "sr", "inc", "ltd", "co", "corp", "dept", "univ",
    "alg", "algo", "thm", "lem", "prop", "def", "appx", "app", "viz", "etc.al", "w.r.t", "a.k.a",
    "ca", "ed", "eds", "ex", "incl", "max", "min", "avg", "std", "est", "jan", "feb", "mar", "apr",
    "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "u.s", "u.k", "e.u", "ph.d", "m.sc",
}
_BOUNDARY_RE = re.compile(r"([.!?])([\"'\u201d\u2019)\]]*)\s+(?=[\"'\u201c\u2018(]?[A-Z])")
_WORD_BEFORE_RE = re.compile(r"([A-Za-z][A-Za-z.]*)$")


def split_sentences(text: str) -> list[str]:
    """Split running text into sentences.

    Newlines are hard boundaries (``body_text`` puts one between paragraphs);
    inside a paragraph a sentence ends at ``. ! ?`` followed by whitespace and
    an upper-case letter, except after common abbreviations (Fig., Eq., e.g.,
    et al., vs., No., ...) and single-letter initials (J. Smith)."""
    out: list[str] = []
    for para in text.split("\n"):
        para = para.strip()
        if not para:
            continue
        start = 0
        for m in _BOUNDARY_RE.finditer(para):
            if m.group(1) == ".":
                head = para[start:m.start(1)]
                wm = _WORD_BEFORE_RE.search(head)
                if wm:
                    word = wm.group(1)
                    lw = word.lower().rstrip(".")
                    if lw in _ABBREV:
                        continue
                    if len(word) == 1 and word.isupper():  # initial "J. Smith"
                        continue
                    if re.fullmatch(r"(?:[A-Za-z]\.)+[A-Za-z]", word):  # "e.g" "U.S" forms
                        continue
            s = para[start:m.end(2) if m.group(2) else m.end(1)].strip()
            if s:
                out.append(s)
            start = m.end()
        tail = para[start:].strip()
        if tail:
            out.append(tail)
    return out


# ----------------------------------------------------------------------------
# main entry point
# ----------------------------------------------------------------------------


_NON_ALNUM_RE = re.compile(r"[\W_]+")
_NON_ALPHA_RE = re.compile(r"[\W\d_]+")


def _looks_real_meta_title(t: str) -> bool:
    t = (t or "").strip()
    return len(t) >= 10 and len(t.split()) >= 2 and not _BAD_META_TITLE_RE.search(t)


def caption_boxes(figures) -> dict[int, list[list[float]]]:
    """The caption boxes of extracted figures and tables (ExtractedFigure) by 0-based page, as
    `parse_pdf` takes them."""
    out: dict[int, list[list[float]]] = defaultdict(list)
    for f in figures:
        if f.caption_bbox:
            out[f.page - 1].append(f.caption_bbox)
    return dict(out)


def _in_caption(ln: Line, page: int, captions: Mapping[int, Sequence[Sequence[float]]] | None) -> bool:
    """Whether the line's centre lies in one of the caption boxes of its page."""
    if not captions:
        return False
    x, y = (ln.x0 + ln.x1) / 2, (ln.y0 + ln.y1) / 2
    return any(b[0] - 1 <= x <= b[2] + 1 and b[1] - 1 <= y <= b[3] + 1 for b in captions.get(page, ()))


def parse_pdf(doc: pymupdf.Document, max_pages: int | None = None,
              layout: DocumentLayout | None = None,
              captions: Mapping[int, Sequence[Sequence[float]]] | None = None) -> ParsedPaper:
    """Parse an opened PyMuPDF document (the caller owns and closes it). `layout` is the
    document's page model when the caller built it already (figure extraction shares it).
    `captions` maps a 0-based page number to the boxes of the captions found there: their lines
    never enter the body text (a caption's second block, or a caption printed in the flow of a
    column, would otherwise become body sentences and the context of mentions)."""
    n_pages = doc.page_count
    paper = ParsedPaper(n_pages=n_pages)
    meta = doc.metadata or {}
    if layout is None:
        layout = build_layout(doc, max_pages)
    todo = len(layout.pages)

    pages: list[list[_Block]] = []
    heights: list[float] = []
    widths: list[float] = []
    rotated: list[str] = []
    total_alnum = 0
    for pl in layout.pages:
        blocks, rot = _page_blocks(pl)
        pages.append(blocks)
        heights.append(pl.height)
        widths.append(pl.width)
        if pl.number < 2:
            rotated.extend(rot)
        total_alnum += sum(len(_NON_ALNUM_RE.sub("", ln.text)) for b in blocks for ln in b.lines)

    if todo == 0 or total_alnum < 100 * todo:  # scanned: (almost) no extractable text
        paper.has_text_layer = False
        if _looks_real_meta_title(meta.get("title", "")):
            paper.title = clean_text(meta["title"]).strip()
        return paper

    body_size = _body_size(pages)
    first_page = pages[0]
    title, title_lines, authors = _front_matter(pages, heights, body_size)
    meta_title = clean_text(meta.get("title") or "").strip()
    if not title and _looks_real_meta_title(meta_title):
        title = meta_title
    paper.title = title
    paper.authors = authors
    paper.year = _printed_year(first_page, rotated, heights[0], body_size)

    _remove_furniture(pages, heights, body_size)
    _remove_footnotes(pages, heights)
    ordered: list[_Block] = []
    for pno, blocks in enumerate(pages):
        ordered.extend(_order_page(blocks, widths[pno]))

    vocab = vocabulary(ln.text for b in ordered for ln in b.lines)
    paper.abstract, abs_line = _find_abstract(ordered, body_size, title_lines, vocab)

    # flatten to lines with their block index / column key
    flat: list[tuple[Line, int, str]] = []
    for bi, b in enumerate(ordered):
        for ln in b.lines:
            flat.append((ln, bi, f"{b.page}:{b.col}"))

    # references heading: the last one that is followed by some text
    ref_i = None
    for i in range(len(flat) - 1, -1, -1):
        ln = flat[i][0]
        if len(ln.text) <= 40 and _REF_HEAD_RE.match(ln.text) and i < len(flat) - 2:
            ref_i = i
            break
    body_idx = list(range(len(flat)))
    if ref_i is not None:
        ref_lines: list[tuple[Line, str]] = []
        sizes = Counter(round(l.size) for l, _, _ in flat[ref_i + 1: ref_i + 60])
        ref_size = sizes.most_common(1)[0][0] if sizes else body_size
        end = len(flat)
        for j in range(ref_i + 1, len(flat)):
            ln = flat[j][0]
            if (
                _APPENDIX_RE.match(ln.text)
                and len(ln.text) < 90
                and (ln.bold or ln.size >= ref_size + 1)
                and not ln.text.endswith(".")
                and not _NUM_BRACKET_RE.match(ln.text)
            ):
                end = j
                break
            ref_lines.append((ln, flat[j][2]))
        paper.references = _split_references(ref_lines, vocab)
        body_idx = list(range(ref_i)) + list(range(end, len(flat)))
    if paper.year is None:
        paper.year = _fallback_year(meta, paper.references)

    # body units: blocks (minus the refs), headings split off and dropped
    skip_ids = {id(ln) for ln in title_lines}
    if abs_line is not None:
        # front matter (title, authors, affiliations) precedes the abstract label
        for ln, _, _ in flat:
            if ln is abs_line:
                break
            skip_ids.add(id(ln))
    heading_styled: Counter[int] = Counter()
    for ln, bi, _ in flat:
        if ln.bold or ln.size >= body_size + 0.8:
            heading_styled[bi] += 1
    units: list[list[Line]] = []
    cur_block = None
    skipping = False  # inside CCS concepts / keywords / ACM reference format
    for i in body_idx:
        ln, bi, _ = flat[i]
        if id(ln) in skip_ids:
            continue
        if _in_caption(ln, ordered[bi].page, captions):
            units.append([])  # a caption: hard paragraph boundary, text dropped
            cur_block = None
            continue
        styled = ln.bold or ln.size >= body_size + 0.8
        if (
            _is_heading(ln, body_size)
            and (styled and heading_styled[bi] <= 2 or not styled and _SECTION_NO_RE.match(ln.text))
        ) or _META_HEAD_RE.match(ln.text):
            units.append([])  # heading: hard paragraph boundary, text dropped
            cur_block = None
            skipping = bool(_META_HEAD_RE.match(ln.text))
            continue
        if skipping:
            continue
        if bi != cur_block or not units:
            units.append([])
            cur_block = bi
        units[-1].append(ln)

    paras: list[str] = []
    hard_break = True
    for u in units:
        if not u:
            hard_break = True
            continue
        text = join_lines([ln.text for ln in u], vocab)
        m = _ABS_RE.match(text)
        if m:
            text = text[m.end():]
        words = text.split()
        if CAPTION_PARAGRAPH_RE.match(text) or _BOILERPLATE_RE.match(text):
            continue
        if len(words) < 4 and not text.endswith("."):
            continue
        if len(_NON_ALPHA_RE.sub("", text)) < 0.4 * len(text):
            continue  # tables, equations, number soup
        size = Counter(ln.size for ln in u).most_common(1)[0][0]
        if size < 0.85 * body_size:
            continue  # footnotes, figure labels, table cells
        if paras and not hard_break and not re.search(r"[.!?:]['\"\u201d)]?$", paras[-1]) and text[:1].islower():
            paras[-1] = join_lines([paras[-1], text], vocab)
        else:
            paras.append(text)
        hard_break = False
    paper.body_text = "\n".join(paras)
    paper.sentences = split_sentences(paper.body_text)
    paper.title = title_case(paper.title, paper.abstract + "\n" + paper.body_text)
    return paper
