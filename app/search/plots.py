"""What a chart plots, read from its caption: the measure it shows and what the measure is
plotted against ("Phoneme error rates under different noise types" -> error rates against noise
types). Two figures that plot the same measure against the same variable are the closest kind of
related figure a researcher asks for, and saying so ("both plot recall against embedding size")
is a reason on a card that anyone can check against the two captions.

Read by a handful of phrase patterns (x "vs." y, "under / with / for / across different" y,
"impact of" y "on" x, "as a function of" y, ...), not by a parser: a caption that uses none of
them plots nothing we can name, and the comparison falls back to the rest of the ranking.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from app.search.text import analyze

# words that end a phrase: what follows them is not part of the measure or of the variable
_STOP = (r"(?:\.|,|;|:|\(|\)|\bwhere\b|\bwhich\b|\bwhen\b|\bwhile\b|\band the\b|\bon the\b|\bin the\b|\bfor the\b|"
         r"\bof the\b|\bwith the\b|\bis\b|\bare\b|\bwas\b|\bwere\b|\bfrom\b|\bat\b|$)")
_PHRASE = r"([^.,;:()]{2,60}?)"
_LEADING = r"([^.,;:()]{2,80}?)"  # from the start of the sentence: the chart's subject
_VARY = r"(?:different|various|varying|increasing|decreasing|diverse|several|multiple|changing)"

# (pattern, which group is the measure, which the variable, whether the measure is plotted against
# the variable (a curve or bars over it) rather than shown for a few of its values); the first
# pattern that matches wins
_PATTERNS: list[tuple[re.Pattern, int | None, int | None, bool]] = [
    (re.compile(r"(?:impact|effect|influence|effects|impacts)\s+of\s+" + _PHRASE + r"\s+on\s+(?:the\s+)?" + _PHRASE + r"\s*" + _STOP,
                re.I), 2, 1, True),
    (re.compile(r"^" + _LEADING + r"\s+(?:vs\.?|versus|against|w\.r\.t\.?|with respect to|as a function of)\s+(?:the\s+)?"
                + _PHRASE + r"\s*" + _STOP, re.I), 1, 2, True),
    (re.compile(r"^" + _LEADING + r"\s+(?:under|with|for|across|on|over|of|in|at|by)\s+" + _VARY + r"\s+" + _PHRASE
                + r"\s*" + _STOP, re.I), 1, 2, False),
    (re.compile(r"^" + _LEADING + r"\s+(?:of|with|for|across|on|over|under|by|in)\s+(?:the\s+)?"
                r"((?:number|numbers|amount|size|sizes)\s+of\s+[^.,;:()]{2,60}?)\s*" + _STOP, re.I), 1, 2, True),
    (re.compile(r"^" + _LEADING + r"\s+(?:as|when|while)\s+(?:the\s+)?" + _PHRASE
                + r"\s+(?:increases|decreases|varies|grows|changes)", re.I), 1, 2, True),
    (re.compile(r"(?:impact|effect|influence|sensitivity|effects|impacts)\s+of\s+(?:the\s+)?" + _PHRASE + r"\s*" + _STOP,
                re.I), None, 1, True),
]
# leading words that say how, not what ("the average", "comparison of")
_LEAD = re.compile(r"^(?:(?:the|a|an|our|their|overall|average|mean|comparison of|distribution of|performance of|"
                   r"results? of|illustration of|example of|visualization of|we show|we plot|this figure shows|plot of)\s+)+",
                   re.I)
_LABEL = re.compile(r"^\s*(?:fig\.?|figure)\s*\d+[a-z]?\s*[:.|]?\s*", re.I)
MAX_WORDS = 5
_DANGLING = frozenset("of the a an and or to for in on with by".split())


@dataclass(frozen=True)
class Plotted:
    """A chart's measure and variable as written in its caption (empty when not said), and
    their stems, which comparisons use."""
    measure: str = ""
    against: str = ""
    curve: bool = False  # the measure is plotted against the variable ("vs.", "as a function of")

    @property
    def measure_stems(self) -> frozenset[str]:
        return frozenset(analyze(self.measure))

    @property
    def against_stems(self) -> frozenset[str]:
        return frozenset(analyze(self.against))

    @property
    def measure_head(self) -> str | None:
        return head(self.measure)

    @property
    def against_head(self) -> str | None:
        return head(self.against)

    def __bool__(self) -> bool:
        return bool(self.measure_stems or self.against_stems)


_PREPOSITION = re.compile(r"\s+(?:of|for|in|on|over|from|by|per|under|during|between|among|with|using|across)\s+.*$", re.I)


def _clean(phrase: str | None, measure: bool) -> str:
    """A measure cut to its head noun phrase ("generation speed of REST" -> "generation speed"),
    a variable to its first MAX_WORDS words."""
    if not phrase:
        return ""
    phrase = _LEAD.sub("", phrase.strip())
    if measure:
        phrase = _PREPOSITION.sub("", phrase)
    words = phrase.split()[:MAX_WORDS]
    while words and words[-1].lower() in _DANGLING:
        words.pop()
    return " ".join(words).strip(" -")


_COUNT_OF = re.compile(r"^(?:the\s+)?(?:number|numbers|amount|size|sizes|choice|value|values)\s+of\s+", re.I)


def head(phrase: str) -> str | None:
    """The stem of a phrase's head noun: its last word before any preposition ("number of
    interacting layers" -> "layer", "dimensions of augmented vectors" -> "dimens"). Two phrases
    name the same thing only when their heads agree ("task correlation" is not "tasks")."""
    stems = analyze(_PREPOSITION.sub("", _COUNT_OF.sub("", phrase or "")))
    return stems[-1] if stems else None


def plotted(caption: str) -> Plotted:
    """The measure and variable the caption's first sentence names (Plotted() when none)."""
    text = _LABEL.sub("", caption or "")
    first = re.split(r"(?<=[.!?])\s+(?=[A-Z(])", text, maxsplit=1)[0]
    for pattern, measure, against, curve in _PATTERNS:
        m = pattern.search(first)
        if m:
            return Plotted(_clean(m.group(measure), True) if measure else "",
                           _clean(m.group(against), False) if against else "", curve)
    return Plotted()
