"""A chart drawn as vector paths in the PDF shows how it was plotted: a scatter plot is many small
marks of one shape (circles, crosses, squares, dots) that no line joins; a line chart is polylines,
and the marks it may carry sit on their vertices. The pixel classifier often calls vector scatter
plots of statistics papers line charts; the drawing of the crop's region in the PDF settles it.

Region statistics: among the paths inside the region, the largest group of small marks of one
shape (same size and same drawing commands), how many of them sit on a vertex of another path
(the line through the points of a line chart, the error bar a cap ends), and how many distinct
rows and columns their centres take (cells of a heat map form a lattice, scattered points do not).

Rule: at least MARKS marks of one shape, at most ON_LINES of them on another path's vertices and
not a lattice make `scatter_plot` the dominant type with probability SCATTER_RIGHT (or the pixels'
own when higher); the other types keep their pixel probabilities in proportion. How the thresholds
were chosen and how often the rule is right: scripts/vector_marks_rule.py and the README. Raster
figures, scanned pages and uploaded images have no drawing and are typed by pixels alone.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.vision.figure_types import LABELS, TypeScores, made_dominant

MARKS = 20  # marks of one shape, at least
ON_LINES = 0.25  # share of those marks on another path's vertices, at most
STEP = 0.075  # a series of marks drawn one next to the other traces a curve (markers without a line)
LATTICE = 0.5  # marks / (distinct columns x distinct rows) above this: cells of a grid, not points
SCATTER_RIGHT = 5 / 9  # held out on the development figures it was right 4 times of 7: (4 + 1) / (7 + 2)
OVERRIDES = frozenset({"line_chart"})  # the types the rule may turn into a scatter plot
MARK_SIZE = 12.0  # PDF points: the largest side of a mark
MARK_MIN = 0.8  # and its smallest (a full stop drawn as an outline is about half a point)
MARK_ASPECT = 0.5  # the shorter side of a mark over its longer, at least
ON_VERTEX = 1.0  # PDF points: a mark this close to a vertex (or 3/4 of its size) marks it
MARK_ITEMS = 12  # drawing commands of a mark, at most (a star has 10; letters drawn as outlines more)
MAX_PATHS = 20000  # paths of a page read, at most (beyond, the region is typed by pixels)
SAMPLE = 300  # marks tested against the vertices


@dataclass(frozen=True)
class Marks:
    paths: int  # vector paths inside the region
    marks: int  # the largest group of small marks of one shape
    on_lines: float  # share of those marks whose centre is a vertex of a path that is no mark
    lattice: float  # marks / (distinct columns x distinct rows of their centres)
    step: float = 0.0  # median distance from one mark to the next drawn, over the marks' extent


    @property
    def is_scatter(self) -> bool:
        return (self.marks >= MARKS and self.on_lines <= ON_LINES and self.lattice <= LATTICE
                and self.step >= STEP)


NO_MARKS = Marks(0, 0, 0.0, 0.0, 0.0)


def page_paths(page) -> list[dict]:
    """The vector paths of a PyMuPDF page (empty when there are more than MAX_PATHS), read once
    per page and shared by the figures on it."""
    paths = page.get_cdrawings()
    return [] if len(paths) > MAX_PATHS else paths


def vector_marks(paths: list[dict], rect) -> Marks:
    """Statistics of the `paths` (from page_paths) that lie inside `rect` (PDF points)."""
    x0, y0, x1, y1 = (float(v) for v in rect)
    inside = [p for p in paths if _within(p["rect"], x0, y0, x1, y1)]
    if not inside:
        return NO_MARKS
    groups: dict[tuple, list[dict]] = {}
    for p in inside:
        if _is_mark(p):
            groups.setdefault(_shape(p), []).append(p)
    if not groups:
        return Marks(len(inside), 0, 0.0, 0.0)
    key, marks = max(groups.items(), key=lambda kv: len(kv[1]))
    centres = np.array([((p["rect"][0] + p["rect"][2]) / 2, (p["rect"][1] + p["rect"][3]) / 2) for p in marks])
    tol = max(ON_VERTEX, 0.75 * max(key[0], key[1]))  # the gap R's type="b" leaves between point and line
    vertices = _vertices([p for p in inside if not _is_mark(p)])
    sample = centres[np.linspace(0, len(centres) - 1, min(SAMPLE, len(centres))).astype(int)]
    on = 0.0
    if len(vertices):
        near = [np.min(np.abs(vertices - c).max(axis=1)) <= tol for c in sample]
        on = float(np.mean(near))
    cols = len(np.unique(np.round(centres[:, 0], 0)))
    rows = len(np.unique(np.round(centres[:, 1], 0)))
    steps = np.hypot(*np.diff(centres, axis=0).T) if len(centres) > 1 else np.zeros(1)
    span = float(np.hypot(*(centres.max(axis=0) - centres.min(axis=0))))
    return Marks(len(inside), len(marks), on, len(marks) / max(cols * rows, 1),
                 float(np.median(steps)) / span if span > 0 else 0.0)


def _is_mark(p: dict) -> bool:
    """Small, about as wide as high, more than one straight segment and few: a point's mark (not a
    tick, an error bar's cap, a piece of a line or a letter drawn as outlines)."""
    w, h = _size(p)
    items = p["items"]
    return (0 < len(items) <= MARK_ITEMS and not (len(items) == 1 and items[0][0] == "l")
            and MARK_MIN <= max(w, h) <= MARK_SIZE and min(w, h) >= MARK_ASPECT * max(w, h))


def _within(r, x0, y0, x1, y1) -> bool:
    cx, cy = (r[0] + r[2]) / 2, (r[1] + r[3]) / 2
    return x0 <= cx <= x1 and y0 <= cy <= y1


def _size(p: dict) -> tuple[float, float]:
    r = p["rect"]
    return r[2] - r[0], r[3] - r[1]


def _shape(p: dict) -> tuple:
    """Marks of one shape: the same size (to half a point), drawing commands and fill/stroke."""
    w, h = _size(p)
    return round(w * 2) / 2, round(h * 2) / 2, "".join(it[0] for it in p["items"]), p.get("type")


def _vertices(paths: list[dict]) -> np.ndarray:
    """End points of the line and curve segments of `paths`."""
    pts = []
    for p in paths:
        for it in p["items"]:
            if it[0] in ("l", "c"):
                pts.append(it[1])
                pts.append(it[-1])
    return np.array([(float(x), float(y)) for x, y in pts]) if pts else np.zeros((0, 2))


def with_vector_marks_evidence(result: TypeScores, marks: Marks | None) -> TypeScores:
    """`result` (pixels, text layer and caption), with `scatter_plot` made dominant when the
    drawing says so and the figure was typed as one of the charts in OVERRIDES."""
    if marks is None or not marks.is_scatter or result.figure_type not in OVERRIDES or "scatter_plot" not in LABELS:
        return result
    return made_dominant(result, "scatter_plot", SCATTER_RIGHT)
