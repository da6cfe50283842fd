"""The section a piece of body text sits in: the trail of headings above it ("Experiments",
"Ablation Study", "Effect of depth."), so a figure can be told by the part of the paper that
shows or first mentions it (an architecture in the method, a curve in a sensitivity study).

Heading levels come from their numbering ("4.2" is level 2, "IV." level 1, "A.1" level 2);
an unnumbered heading takes the level of a numbered one printed in the same style, else it is
placed by its size against the heading before it. A bold run-in paragraph heading is the
innermost level and lasts until the next heading.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["SectionTrail", "heading_text"]

# "A" alone may be the article ("A Case Study"), so it counts as a number only with a dot
_NUMBER_RE = re.compile(r"^(?P<num>(?:\d+|[IVX]+|[B-H]|A(?=\.))(?:\.\d+)*)\.?\s+(?=\S)")
_STEP_RE = re.compile(r"^\s*\d+\s*:")  # an algorithm's numbered step, bold keywords and all
_RUN_IN = 9  # deeper than any numbered level


def heading_text(text: str) -> str:
    """A heading without its numbering or trailing punctuation: '4.2 Ablation Study.' -> 'Ablation Study'."""
    return _NUMBER_RE.sub("", text.strip()).strip(" .:")


def _numbered_level(text: str) -> int | None:
    m = _NUMBER_RE.match(text.strip())
    return m.group("num").count(".") + 1 if m else None


@dataclass
class SectionTrail:
    """Headings seen so far in reading order, outermost first."""

    trail: list[tuple[int, str, tuple]] = field(default_factory=list)  # (level, text, style)
    style_level: dict[tuple, int] = field(default_factory=dict)

    def heading(self, text: str, style: tuple[float, bool]) -> None:
        """A heading line; `style` is (font size, bold)."""
        if _STEP_RE.match(text):
            return
        level = _numbered_level(text)
        if level is not None:
            self.style_level.setdefault(style, level)
        elif style in self.style_level:
            level = self.style_level[style]
        else:
            outer = [t for t in self.trail if t[0] != _RUN_IN]
            if not outer or style[0] > outer[-1][2][0] + 0.5:
                level = 1
            elif style == outer[-1][2]:
                level = outer[-1][0]
            else:
                level = outer[-1][0] + 1
        self._push(level, text, style)

    def continue_heading(self, text: str) -> None:
        """The next line of a heading printed on two lines."""
        if self.trail:
            level, head, style = self.trail[-1]
            self.trail[-1] = (level, f"{head} {text.strip()}", style)

    def run_in(self, text: str) -> None:
        """A bold paragraph heading printed at the start of its paragraph."""
        self._push(_RUN_IN, text, (0.0, True))

    def _push(self, level: int, text: str, style: tuple) -> None:
        text = heading_text(text)
        if not text[:1].isupper():
            return  # a bullet, a formula, an algorithm's keyword: headings start with a capital
        self.trail = [t for t in self.trail if t[0] < level] + [(level, text, style)]

    @property
    def path(self) -> list[str]:
        return [t[1] for t in self.trail]
