"""The region statistics of scripts/vector_marks_rule.py (measured, not shipped): a vector chart of
many scattered marks of one shape passes the rule; a polyline with a marker on each vertex, ticks,
a heat map's cells and markers drawn in order along a curve do not."""
import math
import random

import pymupdf

from tests.script_modules import load_script


def load():
    return load_script("vector_marks_rule")


def axes(page, x0, y0, x1, y1):
    page.draw_rect(pymupdf.Rect(x0, y0, x1, y1))
    for k in range(6):  # tick marks: short lines, never marks
        x = x0 + (x1 - x0) * k / 5
        page.draw_line((x, y1), (x, y1 + 4))


def page_of_charts():
    doc = pymupdf.open()
    page = doc.new_page(width=600, height=800)
    rng = random.Random(0)
    # a scatter plot: 200 small circles at random, drawn in random order
    axes(page, 50, 50, 290, 250)
    shape = page.new_shape()
    for _ in range(200):
        shape.draw_circle((rng.uniform(60, 280), rng.uniform(60, 240)), 2)
        shape.finish(color=(0, 0, 1), fill=(0, 0, 1))
    shape.commit()
    # a line chart with markers: one polyline, a circle on each vertex
    axes(page, 310, 50, 550, 250)
    pts = [(320 + 5 * i, 150 - 60 * math.sin(i / 6)) for i in range(45)]
    shape = page.new_shape()
    shape.draw_polyline(pts)
    shape.finish(color=(1, 0, 0), closePath=False)
    for p in pts:
        shape.draw_circle(p, 2)
        shape.finish(color=(1, 0, 0), fill=(1, 0, 0))
    shape.commit()
    # a heat map: a lattice of equal squares
    axes(page, 50, 300, 290, 540)
    shape = page.new_shape()
    for i in range(20):
        for j in range(20):
            shape.draw_rect(pymupdf.Rect(60 + 10 * i, 310 + 10 * j, 68 + 10 * i, 318 + 10 * j))
            shape.finish(fill=(i / 20, 0, j / 20), color=None)
    shape.commit()
    # markers without a line along a curve (a series drawn point after point)
    axes(page, 310, 300, 550, 540)
    shape = page.new_shape()
    for i in range(60):
        shape.draw_circle((320 + 3.5 * i, 420 - 80 * math.exp(-i / 15)), 2)
        shape.finish(color=(0, 0.5, 0), fill=None)
    shape.commit()
    return doc, page


def test_marks_tell_scatter_from_line_heat_map_and_curve():
    vm = load()
    vector_marks = vm.vector_marks
    doc, page = page_of_charts()
    paths = vm.page_paths(page)
    scatter = vector_marks(paths, (40, 40, 300, 260))
    line = vector_marks(paths, (300, 40, 560, 260))
    heat = vector_marks(paths, (40, 290, 300, 560))
    curve = vector_marks(paths, (300, 290, 560, 560))
    assert scatter.marks == 200 and scatter.on_lines == 0.0 and scatter.is_scatter
    assert line.marks == 45 and line.on_lines == 1.0 and not line.is_scatter
    assert heat.marks == 400 and heat.lattice >= 0.9 and not heat.is_scatter
    assert curve.marks == 60 and curve.step < 0.05 and not curve.is_scatter
    empty = vector_marks(paths, (100, 600, 500, 780))
    assert empty.marks == 0 and not empty.is_scatter
    doc.close()


def test_rule_on_the_statistics():
    Marks = load().Marks
    assert Marks(paths=300, marks=200, on_lines=0.0, lattice=0.02, step=0.3).is_scatter
    assert not Marks(300, 200, 0.9, 0.02, 0.3).is_scatter  # marks on a line's vertices
    assert not Marks(300, 8, 0.0, 0.02, 0.3).is_scatter  # too few
    assert not Marks(300, 200, 0.0, 0.02, 0.01).is_scatter  # drawn one next to the other
