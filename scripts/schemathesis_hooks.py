"""Schemathesis hooks for figsearch's binary inputs: a schema cannot say "a decodable PNG", so
query-image parts get real small PNG/JPEG files (of random size and colour) instead of random
bytes. Used by scripts/probe_hardening.py: SCHEMATHESIS_HOOKS=scripts.schemathesis_hooks."""
from __future__ import annotations

import io

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
