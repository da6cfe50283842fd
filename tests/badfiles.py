"""Generators of hostile inputs: every one must end as a clear per-file status."""
from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path


def zero_byte(folder: Path) -> Path:
    p = folder / "empty.pdf"
    p.write_bytes(b"")
    return p


def truncated(folder: Path, good: Path) -> Path:
    p = folder / "truncated.pdf"
    data = good.read_bytes()
    p.write_bytes(data[: max(200, len(data) // 7)])
    return p


def random_bytes(folder: Path) -> Path:
    p = folder / "random.pdf"
    p.write_bytes(os.urandom(20_000))
    return p


def html_named_pdf(folder: Path) -> Path:
    p = folder / "page.pdf"
    p.write_text("<!DOCTYPE html><html><head><title>Not a paper</title></head><body>Login</body></html>")
    return p


def encrypted(folder: Path) -> Path:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Secret paper with a Figure 1: caption")
    p = folder / "encrypted.pdf"
    doc.save(p, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner")
    doc.close()
    return p


def scanned(folder: Path) -> Path:
    """A page that is only an image: no text layer."""
    import pymupdf

    src = pymupdf.open()
    pg = src.new_page()
    pg.insert_text((72, 100), "This text becomes pixels", fontsize=20)
    pix = pg.get_pixmap(dpi=60)
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_image(page.rect, pixmap=pix)
    p = folder / "scanned.pdf"
    doc.save(p)
    return p


def many_pages(folder: Path, n: int = 2000) -> Path:
    import pymupdf

    doc = pymupdf.open()
    for _ in range(n):
        doc.new_page(width=200, height=200)
    p = folder / "two-thousand-pages.pdf"
    doc.save(p, garbage=1)
    return p


def zip_with_traversal(folder: Path, good: Path) -> Path:
    p = folder / "traversal.zip"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("../../escaped.pdf", good.read_bytes())
        z.writestr("/abs/escaped2.pdf", good.read_bytes())
        z.write(good, "ok/inside.pdf")
    return p


def zip_bomb(folder: Path) -> Path:
    p = folder / "bomb.zip"
    with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("bomb.pdf", b"%PDF-1.4\n" + b"\0" * (60 * 1024 * 1024))
    return p


def odd_name(folder: Path, good: Path) -> Path:
    p = folder / "odd näme ✓ (v2) [final];'$x.pdf"
    p.write_bytes(good.read_bytes())
    return p
