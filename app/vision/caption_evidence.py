"""A caption that names a figure type ("t-SNE visualization of ...", "confusion matrix of ...",
"overall architecture") is stronger evidence of the figure's type than its pixels when the pixel
classifier has seen few figures of that type.

Rule: when the caption names exactly one chart type (the same everyday names keyword queries use,
app/vision/vocabulary.py), that type becomes the dominant one with the probability the rule was
right with (CAPTION_RIGHT, or the pixels' own when higher); the other types keep their pixel
probabilities in proportion, so the types the figure also shows stay listed. Names of `text` ("algorithm", "prompt",
"equation") and `table` are left out: in captions they mostly name what a chart measures ("runtime
of the algorithm"), not what the figure is. Chosen on the hand-labelled training crops of
recommender-systems papers (`tests/data/figure_types_train_recsys.jsonl`): where the rule applies
(110 of 728 figures) the named type is right for 100, the pixel classifier on the very crops it was
trained on for 98; with the text names included the rule is right for 103 of 128. Names of what is
plotted rather than how (vocabulary.CONTENT_NAMES: "attention weights") are no evidence either: without
them the rule applies to 104 of the 728 figures and is right for 99 (with them 101 of 110 on the same
ingest).
Uploaded images have no caption and are typed by pixels alone.
"""
from __future__ import annotations

from app.vision.figure_types import LABELS, TypeScores, made_dominant
from app.vision.vocabulary import types_named_in

NOT_EVIDENCE = frozenset({"text", "table"})
CAPTION_RIGHT = 99 / 104  # where the rule applied on the labelled training crops, it was right this often


def caption_named_type(caption: str | None) -> str | None:
    """The one chart type the caption names, or None (no name, or names of several types)."""
    named = {t for t in types_named_in(caption or "", kinds_only=True) if t not in NOT_EVIDENCE}
    return next(iter(named)) if len(named) == 1 else None


def with_caption_evidence(result: TypeScores, caption: str | None) -> TypeScores:
    """`result` of the pixel classifier, with the type its caption names made dominant."""
    named = caption_named_type(caption)
    if named is None or named not in LABELS:
        return result
    return made_dominant(result, named, CAPTION_RIGHT)
