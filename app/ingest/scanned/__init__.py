"""Papers without a usable text layer (scans): page detection, OCR, figure regions from pixels
and OCR-free topic retrieval.

Kept apart from the born-digital extraction: `extract_scanned` takes an opened PDF and the
page kinds found by `detect.classify_pages` and returns the same records (ParsedPaper,
ExtractedFigure) the born-digital path returns, so storage, citations and indexing are shared.
"""
