"""Joining printed lines into running text, undoing line-end hyphenation.

A hyphen at a line end is either the typesetter's (``recom-`` / ``mendation``: dropped) or part of
the word (``GPT-`` / ``3.5``, ``cross-`` / ``entropy``: kept, without the space). When the document
writes the word elsewhere, its own spelling decides; otherwise a capital or digit after the break,
a compound that already has a hyphen (``state-of-the-`` / ``art``) or a number before it (``2-`` /
``layer``) keeps the hyphen.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

__all__ = ["join_lines", "vocabulary"]

_WORD_RE = re.compile(r"[^\W_]+(?:-[^\W_]+)*")
_HEAD_RE = re.compile(r"([^\W_]+(?:-[^\W_]+)*)-$")
_SOFT_HYPHENS = ("\u2010", "\u2011")


def vocabulary(texts: Iterable[str]) -> Counter[str]:
    """How often a document writes each word (lower case; a hyphenated compound is one word)."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(w.lower() for w in _WORD_RE.findall(text))
    return counts


def _keeps_hyphen(head: str, tail: str, vocab: Counter[str] | None) -> bool:
    """Whether 'head-' at a line end followed by 'tail' is one hyphenated word."""
    if vocab:
        hyphenated, closed = vocab[f"{head}-{tail}".lower()], vocab[f"{head}{tail}".lower()]
        if hyphenated != closed:
            return hyphenated > closed
    return not tail[:1].islower() or "-" in head or head[-1].isdigit()


def join_lines(lines: Iterable[str], vocab: Counter[str] | None = None) -> str:
    """Join lines with spaces; a line-end hyphen after a letter or digit joins the next line's word
    with or without the hyphen (never "GPT- 3.5"). `vocab` is the document's :func:`vocabulary`."""
    out = ""
    for t in lines:
        t = t.strip()
        if not t:
            continue
        if not out:
            out = t
            continue
        head = _HEAD_RE.search(out[out.rfind(" ") + 1:])
        tail = _WORD_RE.match(t)
        if head and tail:
            out = out + t if _keeps_hyphen(head.group(1), tail.group(0), vocab) else out[:-1] + t
        elif out.endswith(_SOFT_HYPHENS):
            out = out[:-1] + t
        else:
            out = out + " " + t
    return out
