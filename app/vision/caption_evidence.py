"""A caption that names a figure type ("t-SNE visualization of ...", "confusion matrix of ...",
"heatmap showing ...") is evidence of the figure's type, weighed against its pixels.

Rule: when the caption's first sentence names exactly one chart type (the same everyday names
keyword queries use, app/vision/vocabulary.py) as the name of the figure, the odds of that type
are multiplied by CAPTION_WEIGHT and the scores renormalised. A name is the figure's when the word
after it is a function word ("heatmap of", "boxplots for"), a noun of drawing ("scatterplot
matrix", "t-SNE visualization"), a participle ("heatmap showing", "histogram based on"), a number,
punctuation or the caption's end; any other word makes it a modifier of that word ("robust
location and scatter estimation", "a boxplot-based test", "scatterplot smoother lines"). Sentences
after the first describe what the panels hold rather than name the figure. Names of `text`
("algorithm", "prompt", "equation") and `table` are no evidence: in captions they mostly name what
a chart measures ("runtime of the algorithm"); nor are names of what is plotted rather than how
(vocabulary.CONTENT_NAMES: "attention weights").

So the caption decides where the pixels are unsure (a heat map read as bars at .78, a user
interface read as a scatter plot at .90 whose pixels give it some weight) and a confident pixel
answer stands against it (a class diagram at .97 whose caption speaks of estimation, bars at .95
whose caption calls them a boxplot). Chosen among refinements of the previous rule (the named type
made dominant at 99/104) by leaving one labelled set out at a time over five sets of three fields
(`scripts/caption_evidence_rule.py --candidates`; README, "figure types, caption evidence weighed
against the pixels"). Uploaded images have no caption and are typed by pixels alone.
"""
from __future__ import annotations

import re

from app.vision.figure_types import LABELS, TypeScores, reweighed
from app.vision.vocabulary import CONTENT_NAMES, NAMES

NOT_EVIDENCE = frozenset({"text", "table"})
CAPTION_WEIGHT = 32.0  # likelihood ratio of a caption naming the type

# words after a type name that keep it the figure's name; any other word makes it a modifier
FUNCTION_WORDS = frozenset("""of for with on in at by from to and or vs versus between across over under
per against along among within without via as the a an is are was were be shows show showing shown
comparing compares illustrating illustrates depicting depicts displaying displays where when which that
while whereas after before each all both""".split())
DRAWING_NOUNS = frozenset("""plot plots chart charts graph graphs visualization visualisation visualizations
diagram diagrams view views projection projections panel panels figure figures map maps representation
matrix matrices curve curves display summary summaries overview""".split())

_TOKEN_RE = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
_LABEL_RE = re.compile(r"^\s*(fig(ure)?|table)\.?\s*[A-Za-z]?\d+[A-Za-z]?\s*[.:|]?\s*", re.IGNORECASE)
_SENTENCE_END_RE = re.compile(r"(?<=[a-z0-9)\]%])[.!?]\s+(?=[A-Z(])")
_NAMES = sorted(((tuple(re.sub(r"[^a-z0-9]+", " ", n.lower()).split()), t, n) for t, names in NAMES.items() for n in names),
                key=lambda x: -len(" ".join(x[0])))


def first_sentence(caption: str) -> str:
    """The caption's first sentence, its label ("Figure 3:") left out."""
    body = _LABEL_RE.sub("", caption or "", count=1)
    return _SENTENCE_END_RE.split(body, maxsplit=1)[0]


def names_with_next(text: str) -> list[tuple[str, str, str]]:
    """(type, name, what follows it) for each type name in `text`, longest names first and no word
    read twice (as vocabulary.types_named_in reads them); what follows: "" (punctuation or the
    end), "-word" (joined by a hyphen) or the next word."""
    toks = _TOKEN_RE.findall((text or "").lower())
    words = [i for i, t in enumerate(toks) if t[0].isalnum()]
    seq = [toks[i] for i in words]
    used = [False] * len(seq)
    out = []
    for pat, t, name in _NAMES:
        k = len(pat)
        for s in range(len(seq) - k + 1):
            if tuple(seq[s:s + k]) != pat or any(used[s:s + k]):
                continue
            used[s:s + k] = [True] * k
            end = words[s + k - 1]
            nxt = toks[end + 1] if end + 1 < len(toks) else ""
            if nxt == "-" and end + 2 < len(toks) and toks[end + 2][0].isalnum():
                follow = "-" + toks[end + 2]
            else:
                follow = nxt if nxt[:1].isalnum() else ""
            out.append((t, name, follow))
    return out


def names_the_figure(follow: str) -> bool:
    """Whether a type name followed by `follow` (see names_with_next) names the figure."""
    if follow == "":
        return True
    if follow.startswith("-"):
        return False
    return (follow in FUNCTION_WORDS or follow in DRAWING_NOUNS or follow.isdigit()
            or follow.endswith(("ed", "ing")))


def caption_named_type(caption: str | None) -> str | None:
    """The one chart type the caption's first sentence names as the figure's, or None (no name,
    only modifiers, or names of several types)."""
    named = {t for t, name, follow in names_with_next(first_sentence(caption or ""))
             if t not in NOT_EVIDENCE and name not in CONTENT_NAMES and names_the_figure(follow)}
    return next(iter(named)) if len(named) == 1 else None


def with_caption_evidence(result: TypeScores, caption: str | None) -> TypeScores:
    """`result` of the pixel classifier, with the odds of the type its caption names raised."""
    named = caption_named_type(caption)
    if named is None or named not in LABELS:
        return result
    return reweighed(result, named, CAPTION_WEIGHT)
