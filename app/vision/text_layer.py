"""Figures that are text (prompts, chats, worked examples, model outputs) carry their words in the
PDF's text layer, densely and in lines of several words; charts and diagrams hold a few short
labels. The pixel classifier has seen few real text figures (its labelled sources have almost
none), so it often calls a framed box of text a diagram: the crop's own text layer settles it.

Rule: words covering at least COVERAGE of the figure's region, in lines of at least
WORDS_PER_LINE words on average, make `text` the dominant type with probability TEXT_RIGHT (or
the pixels' own when higher); the other types keep their pixel probabilities in proportion, so a
diagram around the text stays listed. Chosen on the hand-labelled recommender-systems crops and
text runs cut from their pages (`scripts/text_layer_rule.py`: on each fold's other folds, the
thresholds with the highest recall of text that fire on no other labelled figure): held out, it
fired on 3 of the 720 labelled charts, diagrams and pictures, on both labelled text figures and on
236 of 261 page-text runs. Two real text figures are all the evidence of its precision, so
TEXT_RIGHT is their rule-of-succession estimate, (2 + 1) / (2 + 2). Scanned pages have no text
layer, and uploaded images no PDF: both are typed by pixels alone.

Not applied when figures are typed (app/pipeline/classify.py) since the pixel head learnt text
figures: on six labelled sets it turned 7 right types wrong and 2 wrong ones right
(`scripts/caption_evidence_rule.py`); kept for measuring it again with other heads.
"""
from __future__ import annotations

from dataclasses import dataclass

from app.vision.figure_types import LABELS, TypeScores, made_dominant

COVERAGE = 0.30  # share of the region's area inside word boxes
WORDS_PER_LINE = 1.5
TEXT_RIGHT = 3 / 4


@dataclass(frozen=True)
class TextLayer:
    words: int
    lines: int
    coverage: float  # summed word-box area / region area

    @property
    def words_per_line(self) -> float:
        return self.words / max(self.lines, 1)

    @property
    def is_text(self) -> bool:
        return self.coverage >= COVERAGE and self.words_per_line >= WORDS_PER_LINE


def text_layer(page, rect) -> TextLayer:
    """The words of a PyMuPDF page inside `rect` (PDF points): count, lines and area covered."""
    import pymupdf

    r = pymupdf.Rect(rect)
    words = page.get_text("words", clip=r)
    area = max(r.width * r.height, 1.0)
    covered = sum((w[2] - w[0]) * (w[3] - w[1]) for w in words)
    return TextLayer(len(words), len({(w[5], w[6]) for w in words}), covered / area)


def with_text_layer_evidence(result: TypeScores, layer: TextLayer | None) -> TypeScores:
    """`result` of the pixel classifier, with `text` made dominant when the text layer says so."""
    if layer is None or not layer.is_text or "text" not in LABELS:
        return result
    return made_dominant(result, "text", TEXT_RIGHT)
