"""Find body sentences that refer to figures or tables.

Recognised forms (case-insensitive label, optional sub-panel letters):
``Figure 3``, ``Fig. 3``, ``Fig 3``, ``Fig.3``, ``FIGURE 3``, ``Figure 3(a)``,
``Fig. 3b``, ``Figs. 2 and 3``, ``Figs. 2, 3, and 5``, ``Figures 2-4`` /
``Figures 2–4`` / ``Figures 2 to 4`` (ranges expanded, at most
``MAX_RANGE`` numbers), ``Table 2``, ``Tab. 2``, ``Tables 1 and 2``.
"""
from __future__ import annotations

from app.ingest.labels import MENTION_PART_RE as _PART_RE
from app.ingest.labels import MENTION_RE as _MENTION_RE
from app.ingest.types import MentionRecord

__all__ = ["find_mentions", "mentioned_numbers", "MAX_RANGE"]

MAX_RANGE = 20


def _expand(label: str, nums: str) -> list[int]:
    """Numbers referred to by one match, ranges expanded."""
    plural = label.lower().rstrip(".").endswith("s")
    out: list[int] = []
    pending_range = False
    pending_list = False
    first = True
    for m in _PART_RE.finditer(nums):
        num, rng, lst = m.groups()
        if num is not None:
            n = int(num)
            if pending_range and out:
                lo = out[-1]
                if lo < n <= lo + MAX_RANGE:
                    out.extend(range(lo + 1, n + 1))
                elif n != lo:
                    out.append(n)
                pending_range = False
            elif first or pending_list:
                out.append(n)
            first = False
            pending_list = False
        elif rng is not None:
            pending_range = True
            pending_list = False
        else:
            # "Figure 3, 4 ..." after a singular label is usually not a list
            # ("in Table 1, 2 methods fail"); "Figure 3 and 4" is accepted.
            pending_list = plural or lst != ","
            pending_range = False
    return out


def _refs_in(sentence: str) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    for m in _MENTION_RE.finditer(sentence):
        label = m.group("label")
        kind = "figure" if label[0] in "fF" else "table"
        nums = m.group("nums")
        for n in _expand(label, nums):
            if n <= 0:
                continue
            key = (kind, n)
            if key not in found:
                found.append(key)
    return found


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
        refs = _refs_in(s)
        if not refs:
            continue
        before = sentences[i - 1] if i > 0 else ""
        after = sentences[i + 1] if i + 1 < n else ""
        before_refs, after_refs = _refs_in(before), _refs_in(after)
        for kind, num in refs:
            out.append(MentionRecord(
                kind=kind, number=num, sentence=s, position=i,
                before=before if not before_refs or (kind, num) in before_refs else "",
                after=after if not after_refs or (kind, num) in after_refs else ""))
    return out


def mentioned_numbers(sentences: list[str]) -> set[tuple[str, int]]:
    """All (kind, number) pairs referred to anywhere in ``sentences``."""
    out: set[tuple[str, int]] = set()
    for s in sentences:
        out.update(_refs_in(s))
    return out
