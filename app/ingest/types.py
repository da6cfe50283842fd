"""Plain data records passed between the ingestion stages (no ORM, no I/O)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ParsedPaper:
    """What the text parser learns from one PDF."""

    title: str = ""
    authors: str = ""
    year: int | None = None
    abstract: str = ""
    n_pages: int = 0
    has_text_layer: bool = True
    body_text: str = ""  # reading order, references section excluded
    sentences: list[str] = field(default_factory=list)  # body sentences in reading order
    references: list[str] = field(default_factory=list)  # one string per reference entry


@dataclass
class ExtractedFigure:
    """One figure or table found in a PDF, with its rendered crop."""

    kind: str  # "figure" or "table"
    label: str  # e.g. "Figure 3"
    number: int
    caption: str
    page: int  # 1-based page number
    bbox: list[float]  # PDF points [x0, y0, x1, y1], origin top-left (graphic + caption region)
    image_path: str = ""  # PNG crop, relative to the data dir
    thumbnail_path: str = ""  # small PNG, relative to the data dir
    width: int = 0  # crop size in pixels
    height: int = 0
    caption_bbox: list[float] | None = None
    # 'ok', or why the crop is doubtful: 'text_only' (a figure crop that is only text), 'tiny',
    # 'page_number', 'caption_only' (no region found: the crop is the caption itself)
    crop_quality: str = "ok"
    panels: list[dict] = field(default_factory=list)  # [{label, bbox, caption_part}]
    text_source: str = "text_layer"  # where the caption text came from: text_layer | ocr
    region_bbox: list[float] | None = None  # the graphic (or table grid) alone, without its caption
    region_text: str = ""  # the words inside the region: a table's cells (searchable), a figure's axis/legend words


@dataclass
class MentionRecord:
    """A body sentence that refers to a figure, with its neighbours."""

    kind: str  # "figure" or "table"
    number: int
    sentence: str
    before: str
    after: str
    position: int  # index of the sentence in ParsedPaper.sentences

    @property
    def context(self) -> str:
        return " ".join(s for s in (self.before, self.sentence, self.after) if s)


@dataclass
class Region:
    """Content found on one side of a caption."""

    rect: tuple[float, float, float, float] | None
    gap: float
    has_graphics: bool
    area: float = 0.0
    side: bool = False  # beside the caption (side_captions.py): no vote on the above/below convention
    code: bool = False  # text only, and that text a code listing (typewriter lines) next to the caption
