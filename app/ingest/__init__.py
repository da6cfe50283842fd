"""Ingestion: PDF files -> papers, figures, mentions and citation links in the database.

PyMuPDF 2 imports two optional add-ons whenever it is imported: its layout-analysis plug-in
(pymupdf.layout, which loads onnxruntime and an ONNX model) and pymupdf4llm (Markdown export).
Together they take over a second and a few hundred MB in every process that imports PyMuPDF, and
ingestion imports it in each worker process. Nothing here uses them (they serve
``Page.get_layout``, layout-guided table finding and Markdown export), so both are marked absent
before PyMuPDF is first imported; PyMuPDF then behaves as when they are not installed.
"""
import sys

for _addon in ("pymupdf.layout", "pymupdf4llm"):
    sys.modules.setdefault(_addon, None)
