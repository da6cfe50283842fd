"""How a figure is cited: a one-line citation and a BibTeX entry for its paper."""
from __future__ import annotations

import re
import unicodedata


def _authors(authors: str) -> list[str]:
    parts = re.split(r"\s*(?:;|,\s*and\s+|\band\b|,)\s*", authors or "")
    return [p.strip() for p in parts if p.strip()]


def citation_line(authors: str, title: str, year: int | None, label: str) -> str:
    """'A. One, B. Two et al. (2019). Title. Figure 3.' (parts that are unknown are left out)."""
    names = _authors(authors)
    who = ", ".join(names[:3]) + (" et al." if len(names) > 3 else "")
    parts = [f"{who} ({year})." if who and year else (f"{who}." if who else (f"({year})." if year else ""))]
    parts.append(f"{(title or '').strip().rstrip('.')}.")
    if label:
        parts.append(f"{label.strip().rstrip('.')}.")
    return " ".join(p for p in parts if p and p != ".")


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()


def _bib_escape(text: str) -> str:
    return re.sub(r"([{}\\])", r"\\\1", " ".join((text or "").split()))


def bibtex_key(authors: str, title: str, year: int | None) -> str:
    names = _authors(authors)
    last = _ascii(names[0].split()[-1]).lower() if names else "anon"
    word = next((w for w in re.findall(r"[A-Za-z]+", _ascii(title or "")) if len(w) > 3), "paper").lower()
    return re.sub(r"[^a-z0-9]", "", f"{last}{year or ''}{word}") or "paper"


# Where a paper appeared, as its first page prints it: a proceedings line (ACL, PMLR, ACM ...), a
# journal line, or an arXiv stamp. The ACM template's "Conference'17" tags are not used: unedited
# templates print placeholders there.
_PROCEEDINGS_RE = re.compile(r"\b(Proceedings of (?:the )?[^\n]{10,240}?)(?=,?\s+pages\b|,\s*PMLR\b|,\s*\d{4}\b|,\s*(?:January|February|March|April|May|June|July|August|September|October|November|December)\b|\.\s|\(\w+ \d{4}\)|$)", re.S)
_JOURNAL_RE = re.compile(r"^((?:Journal|Transactions) of [A-Z][^\n]{5,120}?)\s+\d+\s*\((\d{4})\)", re.M)
_ARXIV_RE = re.compile(r"arXiv:(\d{4}\.\d{4,5})(?:v\d+)?")


def venue_of(first_page_text: str) -> tuple[str, str] | None:
    """(BibTeX field, value) for where the paper appeared, read from its first page's text:
    ("booktitle", "Proceedings of ..."), ("journal", "Journal of ...") or ("journal", "arXiv
    preprint arXiv:NNNN.NNNNN"); None when the page names none."""
    text = first_page_text or ""
    m = _PROCEEDINGS_RE.search(" ".join(text.split()))
    if m:
        name = re.sub(r"(\d+) (st|nd|rd|th)\b", r"\1\2", m.group(1)).rstrip(" ,.:;")
        return "booktitle", name
    m = _JOURNAL_RE.search(text)
    if m:
        return "journal", " ".join(m.group(1).split())
    m = _ARXIV_RE.search(text)
    if m:
        return "journal", f"arXiv preprint arXiv:{m.group(1)}"
    return None


def bibtex(authors: str, title: str, year: int | None, label: str = "", url: str = "",
           venue: tuple[str, str] | None = None) -> str:
    """A BibTeX entry: @inproceedings with a proceedings `venue`, @article with a journal (or
    arXiv), else @misc."""
    fields = [("title", "{" + _bib_escape(title) + "}")]
    names = _authors(authors)
    if names:
        fields.append(("author", _bib_escape(" and ".join(names))))
    if venue:
        fields.append((venue[0], _bib_escape(venue[1])))
    if year:
        fields.append(("year", str(year)))
    if label:
        fields.append(("note", _bib_escape(label)))
    if url:
        fields.append(("url", _bib_escape(url)))
    kind = {"booktitle": "inproceedings", "journal": "article"}.get(venue[0], "misc") if venue else "misc"
    body = ",\n".join(f"  {k} = {{{v}}}" for k, v in fields)
    return f"@{kind}{{{bibtex_key(authors, title, year)},\n{body}\n}}"
