"""Schemathesis hooks for figsearch's binary inputs: a schema cannot say "a decodable PNG" or "a
PDF", so query-image parts get real small PNG/JPEG files (random size and colour) and upload parts
real one-page PDFs or zips of them (random text) instead of random bytes. Used by
scripts/probe_hardening.py: SCHEMATHESIS_HOOKS=scripts.schemathesis_hooks."""
from __future__ import annotations

import io
import zipfile

import pymupdf
import schemathesis
from hypothesis import strategies as st
from PIL import Image


def _image(fmt: str, size: tuple[int, int], colour: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, fmt)
    return buf.getvalue()


_sizes = st.tuples(st.integers(1, 300), st.integers(1, 300))
_colours = st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 255))
schemathesis.openapi.media_type("image/png", st.builds(lambda s, c: _image("PNG", s, c), _sizes, _colours))
schemathesis.openapi.media_type("image/jpeg", st.builds(lambda s, c: _image("JPEG", s, c), _sizes, _colours))


def _pdf(text: str) -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text or "empty")
    return doc.tobytes()


def _zip(text: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("paper.pdf", _pdf(text))
    return buf.getvalue()


_texts = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=60)
schemathesis.openapi.media_type("application/pdf", st.builds(_pdf, _texts))
schemathesis.openapi.media_type("application/zip", st.builds(_zip, _texts))
