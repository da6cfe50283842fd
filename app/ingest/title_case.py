"""Titles set in capitals ("LARGE-SCALE CAUSAL APPROACHES TO ...", small capitals read as capitals)
shown in title case, with each word spelled as the paper's own text spells it.

Capitals alone cannot tell an acronym ("CTR") or a word with inner capitals ("GNNs", "t-SNE") from
an ordinary word; the abstract and body of the same paper can. A word the text writes in lower case
or with a capital first letter only is an ordinary word (or a name) and gets a capital first letter,
each part of a compound too (short function words stay lower case inside the title); a word the
text writes with other capitals keeps that spelling.
A word the text never uses keeps its capitals when it has no vowel or holds a digit ("RNN",
"GPT4"), otherwise it is capitalised.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict

__all__ = ["is_all_caps", "title_case"]

_WORD_RE = re.compile(r"[^\W\d_][\w'\u2019]*(?:-[\w'\u2019]+)*")
_SMALL_WORDS = frozenset(
    "a an the and or nor but for of in on at to by via with from into onto over as vs per than up".split()
)
_ROMAN_RE = re.compile(r"^[IVX]+$")


def is_all_caps(title: str) -> bool:
    """Two words or more of two letters or more, and no lower-case letter among them."""
    words = [w for w in re.findall(r"[^\W\d_]+", title or "") if len(w) >= 2]
    return len(words) >= 2 and not any(c.islower() for w in words for c in w)


def _spellings(text: str) -> dict[str, str]:
    """Lower-cased word -> how the text spells it: lower case when it ever does (an ordinary word
    capitalised at a sentence start), else its most frequent spelling (fewest capitals on ties)."""
    forms: dict[str, Counter[str]] = defaultdict(Counter)
    for w in _WORD_RE.findall(text or ""):
        forms[w.lower()][w] += 1
    out = {}
    for key, c in forms.items():
        out[key] = key if key in c else max(c, key=lambda f: (c[f], -sum(ch.isupper() for ch in f)))
    return out


def _capitalised(word: str) -> str:
    return word[:1].upper() + word[1:].lower()


def _unknown_word(word: str) -> str:
    """A word the paper's text does not use: an acronym keeps its capitals."""
    if any(ch.isdigit() for ch in word) or _ROMAN_RE.match(word) or not re.search(r"[AEIOUY]", word, re.I):
        return word
    return _capitalised(word)


def _case_word(word: str, spelled: dict[str, str], first: bool) -> str:
    key = word.lower()
    if not first and key in _SMALL_WORDS:
        return key
    form = spelled.get(key)
    if form is None and "-" in word:  # "LARGE-SCALE" the text may only use as "large" and "scale"
        parts = word.split("-")
        return "-".join(_case_word(p, spelled, first=i == 0 or p.lower() not in _SMALL_WORDS)
                        for i, p in enumerate(parts))
    if form is None:
        return _unknown_word(word)
    if form[1:] == key[1:]:  # an ordinary word (or a name): capital first letter, each part of a compound
        return "-".join(_capitalised(p) if i == 0 or p not in _SMALL_WORDS else p
                        for i, p in enumerate(key.split("-")))
    return form


def title_case(title: str, text: str) -> str:
    """`title` in title case when it is set in capitals (else unchanged), its words spelled as
    `text` (the paper's abstract and body) spells them."""
    if not is_all_caps(title):
        return title
    spelled = _spellings(text)
    out = []
    pos = 0
    first = True
    for m in _WORD_RE.finditer(title):
        gap = title[pos:m.start()]
        if re.search(r"[:.?!\u2014\u2013]", gap):  # a subtitle starts with a capital too
            first = True
        out.append(gap)
        out.append(_case_word(m.group(0), spelled, first))
        first = False
        pos = m.end()
    out.append(title[pos:])
    return "".join(out)
