"""Find body sentences that refer to figures or tables.

Recognised forms (case-insensitive label, optional sub-panel letters):
``Figure 3``, ``Fig. 3``, ``Fig 3``, ``Fig.3``, ``FIGURE 3``, ``Figure 3(a)``,
``Fig. 3b``, ``Figs. 2 and 3``, ``Figs. 2, 3, and 5``, ``Figures 2-4`` /
``Figures 2–4`` / ``Figures 2 to 4`` (ranges expanded, at most
``MAX_RANGE`` numbers), ``Table 2``, ``Tab. 2``, ``Tables 1 and 2``.
"""
from __future__ import annotations

from app.ingest.types import MentionRecord
from app.labels import MAX_RANGE, mentioned_numbers, references_in

__all__ = ["find_mentions", "mentioned_numbers", "MAX_RANGE"]


def find_mentions(sentences: list[str]) -> list[MentionRecord]:
    """One record per (kind, number, sentence) for every figure/table reference. The sentences
    before and after are its context, except one that refers to other figures or tables and not
    to this one: it is about them ("Figure 4 shows ..." after a mention of Figure 3), and would
    make this figure match their words."""
    out: list[MentionRecord] = []
    n = len(sentences)
    for i, s in enumerate(sentences):
        if not s or ("ig" not in s and "IG" not in s and "ab" not in s and "AB" not in s):
            continue
        refs = references_in(s)
        if not refs:
            continue
        before = sentences[i - 1] if i > 0 else ""
        after = sentences[i + 1] if i + 1 < n else ""
        before_refs, after_refs = references_in(before), references_in(after)
        for kind, num in refs:
            out.append(MentionRecord(
                kind=kind, number=num, sentence=s, position=i,
                before=before if not before_refs or (kind, num) in before_refs else "",
                after=after if not after_refs or (kind, num) in after_refs else ""))
    return out
