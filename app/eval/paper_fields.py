"""`figsearch eval-paper-fields`: parsed titles and author lists against ones read off the page.

The gold (tests/data/paper_fields_gold.jsonl, see its .md) holds, per paper, the PDF's sha256, its
file name, the title and the list of author names as printed. The PDFs are found by sha256 under
the given folders and parsed as ingest parses them (`parse_pdf`).

Titles: exact match after case folding and whitespace collapsing, and token F1 (word tokens).
Authors: names compared after case folding, accents and punctuation removed; precision, recall
and F1 over all names of all papers, and the share of papers whose whole list (order included) is
right. Papers are few and each counts once, so the numbers are plain shares, no intervals.
A gold may hold, instead or as well, a `year` per paper (with `also`, other years that count as
right, e.g. tests/data/paper_years_vignettes.jsonl): the share of those papers whose parsed year
is one of them. Rows with a `split` can be chosen by it.

`field_counts` counts, over every PDF under the folders, what a reader should never see in the
fields: author strings with a backslash, a digit, a footnote symbol or an e-mail address, and
titles set in capitals only.
"""
from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

import pymupdf

from app.ingest.parse import parse_pdf
from app.ingest.title_case import is_all_caps
from app.pdfs import file_sha256

_NAME_SEP_RE = re.compile(r",|;|\band\b|&")
_FOOTNOTE_SYMBOL_RE = re.compile("[*\u2217\u2020\u2021\u00a7\u00b6\u22c6\u2660-\u266f]")
_WORD_RE = re.compile(r"\w+")


def read_gold(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def pdfs_under(roots: Iterable[Path]) -> list[Path]:
    """Every PDF under the folders (a PDF given itself counts too), sorted."""
    out: set[Path] = set()
    for root in roots:
        root = Path(root)
        if root.is_file():
            out.add(root)
        else:
            out.update(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() == ".pdf")
    return sorted(out)


def parse_fields(pdf: Path) -> tuple[str, str]:
    """(title, authors) of one PDF as ingest stores them."""
    title, authors, _ = parse_fields_year(pdf)
    return title, authors


def parse_fields_year(pdf: Path) -> tuple[str, str, int | None]:
    """(title, authors, year) of one PDF as ingest stores them."""
    with pymupdf.open(pdf) as doc:
        paper = parse_pdf(doc)
    return paper.title or "", paper.authors or "", paper.year


def split_authors(authors: str) -> list[str]:
    """The names of an author string ("A, B and C")."""
    return [n.strip() for n in _NAME_SEP_RE.split(authors or "") if n.strip()]


def norm_name(name: str) -> str:
    """Case, accents, spacing marks and punctuation do not tell names apart ("Vuli\u00b4c" = "Vulić")."""
    name = "".join(c for c in name if unicodedata.category(c) != "Sk")
    name = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    return " ".join(re.sub(r"[^\w]+", " ", name.casefold()).split())


def norm_title(title: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", title or "").casefold().split())


def token_f1(pred: str, gold: str) -> float:
    p, g = _WORD_RE.findall(norm_title(pred)), _WORD_RE.findall(norm_title(gold))
    if not p or not g:
        return float(p == g)
    common = sum(min(p.count(w), g.count(w)) for w in set(p))
    if not common:
        return 0.0
    prec, rec = common / len(p), common / len(g)
    return 2 * prec * rec / (prec + rec)


def _prf(tp: int, n_pred: int, n_gold: int) -> dict:
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gold if n_gold else 0.0
    return {"precision": round(p, 3), "recall": round(r, 3), "f1": round(2 * p * r / (p + r), 3) if p + r else 0.0}


def evaluate_paper_fields(gold_path: Path, roots: Iterable[Path], split: str | None = None) -> dict:
    """Scores of the parsed fields on the gold papers, with each paper's parsed and gold values."""
    gold = [g for g in read_gold(gold_path) if split is None or g.get("split") == split]
    wanted = {g["sha256"] for g in gold}
    by_sha = {}
    for pdf in pdfs_under(roots):
        sha = file_sha256(pdf)
        if sha in wanted:
            by_sha[sha] = pdf
    papers = []
    tp = n_pred = n_gold = 0
    for g in gold:
        pdf = by_sha.get(g["sha256"])
        title, authors, year = parse_fields_year(pdf) if pdf else ("", "", None)
        row = {"source": g["source"], "found": pdf is not None}
        if "title" in g:
            row.update({"title": title, "gold_title": g["title"],
                        "title_exact": norm_title(title) == norm_title(g["title"]),
                        "title_f1": round(token_f1(title, g["title"]), 3)})
        if "authors" in g:
            pred_names = [norm_name(n) for n in split_authors(authors)]
            gold_names = [norm_name(n) for n in g["authors"]]
            hit = len(set(pred_names) & set(gold_names))
            tp, n_pred, n_gold = tp + hit, n_pred + len(set(pred_names)), n_gold + len(set(gold_names))
            row.update({"authors": authors, "gold_authors": g["authors"],
                        "authors_exact": pred_names == gold_names,
                        "authors_missing": sorted(set(gold_names) - set(pred_names)),
                        "authors_extra": sorted(set(pred_names) - set(gold_names))})
        if "year" in g:
            row.update({"year": year, "gold_year": g["year"], "year_right": year in [g["year"], *g.get("also", [])]})
        papers.append(row)

    def share(key: str) -> float | None:
        rows = [p[key] for p in papers if key in p]
        return round(sum(rows) / len(rows), 3) if rows else None

    return {
        "papers": len(papers),
        "found": sum(p["found"] for p in papers),
        "title_exact": share("title_exact"),
        "title_token_f1": share("title_f1"),
        "authors": _prf(tp, n_pred, n_gold),
        "authors_exact": share("authors_exact"),
        "years": sum("year_right" in p for p in papers),
        "year_right": share("year_right"),
        "details": papers,
    }


def field_defects(title: str, authors: str) -> list[str]:
    """What a reader should never see in the fields of one paper."""
    out = []
    if "\\" in authors:
        out.append("authors_backslash")
    if re.search(r"\d", authors):
        out.append("authors_digit")
    if _FOOTNOTE_SYMBOL_RE.search(authors):
        out.append("authors_symbol")
    if "@" in authors:
        out.append("authors_email")
    if is_all_caps(title):
        out.append("title_all_caps")
    return out


def field_counts(roots: Iterable[Path]) -> Iterator[tuple[Path, str, str, list[str]]]:
    """(pdf, title, authors, defects) of every PDF under the folders."""
    for pdf in pdfs_under(roots):
        try:
            title, authors = parse_fields(pdf)
        except Exception:  # an unreadable file has no fields to judge
            continue
        yield pdf, title, authors, field_defects(title, authors)


def summary_text(report: dict) -> str:
    lines = [f"papers: {report['papers']} (found {report['found']})"]
    if report["title_exact"] is not None:
        a = report["authors"]
        lines += [f"title exact: {report['title_exact']:.3f}  title token F1: {report['title_token_f1']:.3f}",
                  f"authors P/R/F1: {a['precision']:.3f}/{a['recall']:.3f}/{a['f1']:.3f}  "
                  f"author list exact: {report['authors_exact']:.3f}"]
    if report["years"]:
        lines.append(f"year right: {report['year_right']:.3f} of {report['years']}")
    return "\n".join(lines)
