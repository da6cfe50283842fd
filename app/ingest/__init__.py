"""Ingestion: PDF files -> papers, figures, mentions and citation links in the database.

PyMuPDF 2 imports two optional add-ons whenever it is imported: its layout-analysis plug-in
(pymupdf.layout, which loads onnxruntime and an ONNX model) and pymupdf4llm (Markdown export).
Together they take over a second and a few hundred MB in every process that imports PyMuPDF, and
ingestion imports it in each worker process. Neither is needed at import (they serve
``Page.get_layout``, layout-guided table finding and Markdown export), so both are marked absent
before PyMuPDF is first imported; PyMuPDF then behaves as when they are not installed. The layout
model is loaded later, only in a process that asks it about a page (layout_model.py).

Importing pymupdf4llm also switches two PyMuPDF-wide settings, which the text geometry and the
logs were tuned with: character boxes without quad corrections, and MuPDF's own error and
warning messages not printed. They are set here explicitly, so extraction gives the same lines
whichever module imported PyMuPDF first.
"""
import sys

for _addon in ("pymupdf.layout", "pymupdf4llm"):
    sys.modules.setdefault(_addon, None)

import pymupdf  # noqa: E402  (after the add-ons are marked absent)

pymupdf.TOOLS.unset_quad_corrections(True)
pymupdf.TOOLS.mupdf_display_errors(False)
pymupdf.TOOLS.mupdf_display_warnings(False)
