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


def png_bomb(width: int = 12_000, height: int = 12_000, colour: bool = False) -> bytes:
    """A valid PNG that is tiny on disk but declares width x height pixels (all zeros compress
    to almost nothing): decoding it in full would take width * height * (3 if colour else 1/8) B."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    depth, ctype, row_bytes = (8, 2, 3 * width) if colour else (1, 0, (width + 7) // 8)
    z = zlib.compressobj(9)
    row = b"\0" * (1 + row_bytes)  # filter byte + pixels
    idat = b"".join(z.compress(row) for _ in range(height)) + z.flush()
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, ctype, 0, 0, 0))
            + chunk(b"IDAT", idat) + chunk(b"IEND", b""))


def truncated_png(size: tuple[int, int] = (300, 200)) -> bytes:
    """A real PNG (noise, so it does not compress away) cut after 60% of its bytes."""
    import numpy as np
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (*size[::-1], 3), dtype=np.uint8)).save(buf, "PNG")
    data = buf.getvalue()
    return data[: int(len(data) * 0.6)]


def child_pids(pid: int) -> list[int]:
    """Direct children of a process (the Celery pool processes of a worker), from /proc."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            pass
    return out


def kill_worker_per_delivery(cli, worker_pid: int, db_url: str, file_name: str, timeout: float) -> int:
    """While the `figsearch ingest` process `cli` runs, SIGKILL the worker's pool processes each
    time the file `file_name` is delivered again (what the OOM killer does to the process on a
    file that exhausts memory); returns how many times it killed."""
    import signal
    import time

    from sqlalchemy import select

    from app.db.schema import JobFile, JobFileStatus
    from app.db.session import session_scope

    kills, seen, t0 = 0, 0, time.time()
    while cli.poll() is None and time.time() - t0 < timeout:
        with session_scope(db_url) as s:
            row = s.execute(select(JobFile.status, JobFile.deliveries)
                            .where(JobFile.name.like(f"%{file_name}"))).first()
        if row is not None and row.status in JobFileStatus.UNFINISHED and row.deliveries > seen:
            seen = row.deliveries
            for child in child_pids(worker_pid):
                os.kill(child, signal.SIGKILL)
            kills += 1
        time.sleep(0.05)
    return kills
