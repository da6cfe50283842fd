"""The stored PDF of each paper (data_dir/pdfs/ab/<sha256>.pdf) and crops rendered from it on
demand at any resolution.

Ingestion stores each accepted file with `store_pdf` (by content hash, so duplicates share one
copy); `attach_pdfs` stores the PDFs of papers ingested before that existed (`figsearch
attach-pdfs FOLDER`). Reading never trusts a path from the database: the location follows from
the sha256 alone.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

PDF_DIR = "pdfs"
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")
MAX_SCALE = 8.0  # zoom over 72 dpi (8 = 576 dpi)


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes: a PDF's identity in the collection, an index file's checksum."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_paper_shas(path: str | Path | None) -> set[str]:
    """Papers named by sha256 in a file (`--exclude-papers`): one per line (blank lines and #
    comments ignored), or JSON lines with a "sha256" field, so a gold file can be given as is."""
    if not path:
        return set()
    import json

    out: set[str] = set()
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        out.add((json.loads(line)["sha256"] if line.startswith("{") else line.split()[0]).lower())
    return out


def pdf_relpath(sha256: str) -> str:
    if not _SHA_RE.match(sha256 or ""):
        raise ValueError("not a sha256 hex digest")
    return f"{PDF_DIR}/{sha256[:2]}/{sha256}.pdf"


def stored_pdf(data_dir: Path, sha256: str | None) -> Path | None:
    """The paper's stored PDF, or None when it was not kept."""
    try:
        p = Path(data_dir) / pdf_relpath(sha256 or "")
    except ValueError:
        return None
    return p if p.is_file() else None


@functools.lru_cache(maxsize=4096)
def first_page_text(path: Path) -> str:
    """The text of a stored PDF's first page (where venue lines are printed); "" when unreadable.
    Stored PDFs never change (named by content hash), so the answer is kept."""
    import pymupdf

    try:
        with pymupdf.open(path) as doc:
            return doc[0].get_text() if doc.page_count else ""
    except Exception:  # noqa: BLE001 - a damaged file has no venue to read
        return ""


def store_pdf(data_dir: Path, src: Path, sha256: str) -> Path:
    """Keep a copy of `src` (whose content hash is `sha256`) for the paper; atomic, idempotent."""
    dest = Path(data_dir) / pdf_relpath(sha256)
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, suffix=".part")
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return dest


def remove_pdf(data_dir: Path, sha256: str | None) -> None:
    p = stored_pdf(data_dir, sha256)
    if p is not None:
        p.unlink(missing_ok=True)


def attach_pdfs(settings, paths: list[Path]) -> tuple[int, int]:
    """Store the PDFs among `paths` (files or folders, searched recursively) whose content is a
    paper of the collection. Returns (stored, not in the collection)."""
    from sqlalchemy import select

    from app.db.schema import Paper
    from app.db.session import session_scope

    files = []
    for p in map(Path, paths):
        files += sorted(p.rglob("*.pdf")) if p.is_dir() else [p]
    with session_scope(settings.db_url) as s:
        known = set(s.scalars(select(Paper.sha256)))
    stored = unknown = 0
    for f in files:
        sha = file_sha256(f)
        if sha in known:
            store_pdf(settings.data_dir, f, sha)
            stored += 1
        else:
            unknown += 1
    return stored, unknown


def render_region(pdf: Path, page: int, bbox: list[float] | None, scale: float, max_pixels: int) -> bytes:
    """A PNG of `bbox` (PDF points; the whole page when empty) on 1-based `page`, zoomed `scale`
    times over 72 dpi and lowered so the image stays within `max_pixels`. ValueError for a page
    or region the document does not have."""
    import pymupdf

    with pymupdf.open(pdf) as doc:
        if not 1 <= page <= doc.page_count:
            raise ValueError(f"the PDF has no page {page}")
        pg = doc[page - 1]
        clip = pymupdf.Rect(bbox) & pg.rect if bbox and len(bbox) == 4 else pg.rect
        if clip.is_empty:
            raise ValueError("the figure's region is outside its page")
        scale = min(max(scale, 0.5), MAX_SCALE)
        area = clip.width * clip.height * scale * scale
        if area > max_pixels:
            scale *= (max_pixels / area) ** 0.5
        pix = pg.get_pixmap(matrix=pymupdf.Matrix(scale, scale), clip=clip, alpha=False)
        return pix.tobytes("png")

