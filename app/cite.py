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


def bibtex(authors: str, title: str, year: int | None, label: str = "", url: str = "") -> str:
    fields = [("title", "{" + _bib_escape(title) + "}")]
    names = _authors(authors)
    if names:
        fields.append(("author", _bib_escape(" and ".join(names))))
    if year:
        fields.append(("year", str(year)))
    if label:
        fields.append(("note", _bib_escape(label)))
    if url:
        fields.append(("url", _bib_escape(url)))
    body = ",\n".join(f"  {k} = {{{v}}}" for k, v in fields)
    return f"@misc{{{bibtex_key(authors, title, year)},\n{body}\n}}"
