"""Synthetic pages of the figure shapes that extraction has failed on in unseen papers (dependency and
constituency trees, dendrograms, prompt boxes stacked or side by side, chat bubbles, side captions),
each with the box its figure should get; prints OK or BAD per shape.

    python scripts/crop_shapes.py [--keep DIR]

A shape is OK when every edge of the extracted region is within 6 pt of the expected box. Built to
probe the region rules on layouts not in the corpora; the shapes that failed became tests in
tests/test_figures.py. `--keep DIR` writes the PDFs there to look at.
"""

from __future__ import annotations

import io
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pymupdf  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

import app.ingest  # noqa: E402,F401  (PyMuPDF set up as ingestion uses it)
from app.ingest.figures import extract_figures  # noqa: E402

BODY = (
    "This is a body paragraph of ordinary running text that discusses the results in detail. "
    "Figure 1 shows the plot above and the text keeps going for several lines so that it looks "
    "like a real paragraph of a research paper with long lines of normal body font. "
) * 2
PROMPT = (
    "You are a helpful assistant. Read the passage below and answer the question that follows it "
    "with a short span copied from the passage. If the passage does not contain the answer, say so. "
)
OUT = pathlib.Path(".")  # set by main
RESULTS: list[bool] = []


def run(name, doc, want):
    p = OUT / f"{name}.pdf"
    doc.save(p)
    d = pymupdf.open(p)
    with tempfile.TemporaryDirectory() as t:
        figs = {f.number: f for f in extract_figures(d, pathlib.Path(t), "f", dpi=72) if f.kind == "figure"}
    for num, box in want.items():
        f = figs.get(num)
        got = f.region_bbox if f else None
        ok = got is not None and all(abs(a - b) <= 6 for a, b in zip(got, box))
        RESULTS.append(ok)
        print(
            f"{'OK ' if ok else 'BAD'} {name:22} figure {num}: want {[round(v) for v in box]} "
            f"got {[round(float(v)) for v in got] if got else None}"
        )


def page2():
    doc = pymupdf.open()
    return doc, doc.new_page(width=612, height=792)


def page_across():
    """A page whose first paragraph spans both columns (over a figure as wide as the text)."""
    doc, page = page2()
    page.insert_textbox(pymupdf.Rect(54, 60, 558, 120), BODY, fontsize=10)
    return doc, page


def caption_across(page, top, text, height=28):
    """A centred caption across the page at `top`, running text below it."""
    page.insert_textbox(pymupdf.Rect(54, top, 558, top + height), text, fontsize=9, align=1)
    page.insert_textbox(pymupdf.Rect(54, top + height + 10, 558, 740), BODY * 3, fontsize=10)


def prompt_box(page, rect, text, **style):
    """A box drawn with `style` around `text` set in the body font just inside it."""
    page.draw_rect(rect, **style)
    page.insert_textbox(pymupdf.Rect(rect.x0 + 6, rect.y0 + 4, rect.x1 - 6, rect.y1 - 2), text, fontsize=10)


def right_column(page):
    """Running text filling the right column of a two-column page."""
    page.insert_textbox(pymupdf.Rect(317, 60, 558, 740), BODY * 4, fontsize=10)


def join_levels(page, nodes, step, vertical=False):
    """A dendrogram's branches: nodes joined pair by pair (an odd one out waits for the next
    level), each level `step` further along the depth axis (y when `vertical`, else x) than the
    one before; returns the root's coordinate on that axis."""
    at = nodes[0][1] if vertical else nodes[0][0]
    while len(nodes) > 1:
        at += step
        joined = []
        for k in range(0, len(nodes) - 1, 2):
            (xa, ya), (xb, yb) = nodes[k], nodes[k + 1]
            if vertical:
                page.draw_line((xa, ya), (xa, at), color=(0, 0, 0), width=0.6)
                page.draw_line((xb, yb), (xb, at), color=(0, 0, 0), width=0.6)
                page.draw_line((xa, at), (xb, at), color=(0, 0, 0), width=0.6)
                joined.append(((xa + xb) / 2, at))
            else:
                page.draw_line((xa, ya), (at, ya), color=(0, 0, 0), width=0.6)
                page.draw_line((xb, yb), (at, yb), color=(0, 0, 0), width=0.6)
                page.draw_line((at, ya), (at, yb), color=(0, 0, 0), width=0.6)
                joined.append((at, (ya + yb) / 2))
        if len(nodes) % 2:
            joined.append(nodes[-1])
        nodes = joined
    return at


def build() -> None:

    def dep_above(page, sentence, base, x0, fs=10):
        xs, x = [], x0
        for w in sentence.split():
            xs.append(x + pymupdf.get_text_length(w, fontsize=fs) / 2)
            page.insert_text((x, base), w, fontsize=fs)
            x += pymupdf.get_text_length(w + " ", fontsize=fs)
        top = base
        for a in range(len(xs) - 1):
            b = min(len(xs) - 1, a + 1 + a % 3)
            h = 10 + 9 * (b - a)
            page.draw_bezier(
                (xs[a], base - 10),
                (xs[a], base - 10 - h),
                (xs[b], base - 10 - h),
                (xs[b], base - 10),
                color=(0, 0, 0),
                width=0.6,
            )
            page.insert_text(((xs[a] + xs[b]) / 2 - 6, base - 10 - 0.75 * h), "nsubj", fontsize=6)
            top = min(top, base - 10 - 0.75 * h - 6)
        return top

    # 1 dependency tree, arcs above only, sentence in body font, left column
    doc, page = page2()
    page.insert_textbox(pymupdf.Rect(54, 60, 295, 150), BODY[:300], fontsize=10)
    top = dep_above(page, "The committee approved the new budget for next year", 240, 56)
    page.insert_textbox(pymupdf.Rect(54, 260, 295, 290), "Figure 1: A dependency parse of the sentence.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(54, 300, 295, 740), BODY * 2, fontsize=10)
    right_column(page)
    run("dep_above", doc, {1: (56, top, 296, 243)})

    # 2 constituency tree: words at the bottom in body font, nodes small text above, branches
    doc, page = page2()
    page.insert_textbox(pymupdf.Rect(54, 60, 295, 140), BODY[:250], fontsize=10)
    words = "the cat sat on the mat".split()
    xs = []
    x = 70
    for w in words:
        page.insert_text((x, 250), w, fontsize=10)
        xs.append(x + pymupdf.get_text_length(w, fontsize=10) / 2)
        x += 38
    cur = xs
    y = 238
    while len(cur) > 1:
        nxt = [(cur[i] + cur[i + 1]) / 2 if i + 1 < len(cur) else cur[i] for i in range(0, len(cur), 2)]
        for i in range(0, len(cur), 2):
            px = nxt[i // 2]
            for c in cur[i : i + 2]:
                page.draw_line((px, y - 20), (c, y - 2), color=(0, 0, 0), width=0.6)
            page.insert_text((px - 5, y - 23), "NP", fontsize=8)
        cur = nxt
        y -= 30
    run_top = y - 3
    page.insert_textbox(pymupdf.Rect(54, 262, 295, 290), "Figure 1: A constituency tree.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(54, 300, 295, 740), BODY * 2, fontsize=10)
    right_column(page)
    run("const_tree", doc, {1: (70, run_top, 280, 253)})

    # 3 dendrogram full pipeline, leaf labels in body size, across page
    doc, page = page_across()
    nodes = [(400, 140 + 12 * i) for i in range(16)]
    for i, (_, yy) in enumerate(nodes):
        page.insert_text((405, yy + 3), f"language model variant {i}", fontsize=9)
    join_levels(page, nodes, -40)
    caption_across(page, 345, "Figure 2: Clustering of the models.", height=30)
    run("dendro_full", doc, {2: (240, 133, 511, 326)})

    # 4 prompt box with a title tab above its frame
    doc, page = page_across()
    page.draw_rect(pymupdf.Rect(100, 140, 220, 156), color=None, fill=(0.2, 0.3, 0.6))
    page.insert_text((106, 152), "System prompt", fontsize=9, color=(1, 1, 1))
    prompt_box(page, pymupdf.Rect(100, 156, 510, 260), PROMPT * 2, color=(0.2, 0.3, 0.6), width=1)
    caption_across(page, 272, "Figure 3: The prompt.")
    run("prompt_tab", doc, {3: (100, 140, 510, 260)})

    # 5 prompt: title line in bold body-size text above the frame, outside it
    doc, page = page_across()
    page.insert_text((100, 145), "Prompt for question answering", fontsize=10, fontname="hebo")
    prompt_box(page, pymupdf.Rect(100, 152, 510, 260), PROMPT * 2, color=(0.2, 0.3, 0.6), width=1)
    caption_across(page, 272, "Figure 3: The prompt.")
    run("prompt_title", doc, {3: (100, 136, 510, 260)})

    # 6 two prompt boxes, different colours, lower one narrower and offset (not aligned)
    doc, page = page_across()
    prompt_box(page, pymupdf.Rect(80, 140, 450, 240), PROMPT * 2, color=(0.2, 0.5, 0.2), width=1)
    prompt_box(page, pymupdf.Rect(200, 290, 540, 380), PROMPT * 2, color=(0.2, 0.3, 0.6), width=1)
    caption_across(page, 392, "Figure 3: The prompt and the answer.")
    run("two_boxes_offset", doc, {3: (80, 140, 540, 380)})

    # 7 two prompt boxes with filled backgrounds (no stroke), 4 lines apart
    doc, page = page_across()
    for y in (140, 290):
        prompt_box(page, pymupdf.Rect(80, y, 530, y + 100), PROMPT * 2, color=None, fill=(0.92, 0.95, 1.0))
    caption_across(page, 402, "Figure 3: Two prompts.")
    run("two_filled", doc, {3: (80, 140, 530, 390)})

    # 8 side caption right of a plot in a 1-column page with a wide caption
    doc, page = page2()
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 200), BODY[:500], fontsize=10)
    page.draw_rect(pymupdf.Rect(72, 215, 280, 380), color=(0, 0, 0), width=1)
    page.draw_line((80, 370), (270, 230), color=(1, 0, 0), width=1.5)
    page.insert_textbox(
        pymupdf.Rect(290, 250, 540, 380),
        "Figure 2: Accuracy over training for the three models; the "
        "dashed line is the baseline and the shaded band the spread over five runs of each model.",
        fontsize=9,
    )
    page.insert_textbox(pymupdf.Rect(72, 400, 540, 740), BODY * 2, fontsize=10)
    run("side_wide", doc, {2: (72, 215, 280, 380)})

    # 9 vertical dendrogram: leaves at bottom with rotated labels, root at top; caption below; left column
    doc, page = page2()
    page.insert_textbox(pymupdf.Rect(54, 60, 295, 120), BODY[:250], fontsize=10)
    nodes = [(62 + 14 * i, 260) for i in range(16)]
    for i, (xx, _) in enumerate(nodes):
        page.insert_text((xx + 3, 265), f"lang{i}", fontsize=7, rotate=90)
    yv = join_levels(page, nodes, -25, vertical=True)
    page.insert_textbox(pymupdf.Rect(54, 305, 295, 330), "Figure 1: Clustering of the languages.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(54, 340, 295, 740), BODY * 2, fontsize=10)
    right_column(page)
    run("dendro_vertical", doc, {1: (57.5, yv, 277, 265)})

    # 10 chat bubbles: rounded boxes of body text, alternating left/right, small gaps, caption below, left column
    doc, page = page2()
    page.insert_textbox(pymupdf.Rect(54, 60, 295, 110), BODY[:200], fontsize=10)
    y = 125
    for k in range(4):
        x0 = 60 if k % 2 == 0 else 110
        page.draw_rect(
            pymupdf.Rect(x0, y, x0 + 180, y + 50),
            color=(0.3, 0.3, 0.3),
            fill=(0.9, 0.95, 1) if k % 2 else (0.95, 0.95, 0.95),
            radius=0.15,
        )
        page.insert_textbox(pymupdf.Rect(x0 + 5, y + 4, x0 + 175, y + 48), PROMPT[:110], fontsize=10)
        y += 62
    page.insert_textbox(pymupdf.Rect(54, y + 8, 295, y + 35), "Figure 1: A dialogue with the model.", fontsize=9)
    page.insert_textbox(pymupdf.Rect(54, y + 45, 295, 740), BODY * 2, fontsize=10)
    right_column(page)
    run("bubbles", doc, {1: (60, 125, 290, y - 12)})

    # 11 plot in the left column, its caption in the right column level with it
    doc, page = page2()
    page.insert_textbox(pymupdf.Rect(54, 60, 295, 150), BODY[:300], fontsize=10)
    page.draw_rect(pymupdf.Rect(60, 165, 290, 320), color=(0, 0, 0), width=1)
    page.draw_line((70, 310), (280, 175), color=(1, 0, 0), width=1.5)
    page.insert_text((150, 332), "training steps", fontsize=7)
    page.insert_textbox(pymupdf.Rect(54, 350, 295, 740), BODY * 2, fontsize=10)
    page.insert_textbox(pymupdf.Rect(317, 60, 558, 160), BODY[:300], fontsize=10)
    page.insert_textbox(
        pymupdf.Rect(317, 170, 558, 230),
        "Figure 2: Loss over training steps for the three models; the dashed line is the baseline.",
        fontsize=9,
    )
    page.insert_textbox(pymupdf.Rect(317, 245, 558, 740), BODY * 3, fontsize=10)
    run("caption_other_column", doc, {2: (60, 165, 290, 334)})

    # 12 prompt box whose first line is a title inside a filled header band, frame drawn as 4 lines
    doc, page = page_across()
    page.draw_rect(pymupdf.Rect(100, 140, 510, 158), color=None, fill=(0.85, 0.85, 0.85))
    page.insert_text((106, 153), "Instruction", fontsize=10, fontname="hebo")
    for a, b in [
        ((100, 140), (510, 140)),
        ((100, 140), (100, 260)),
        ((510, 140), (510, 260)),
        ((100, 260), (510, 260)),
    ]:
        page.draw_line(a, b, color=(0, 0, 0), width=0.8)
    page.insert_textbox(pymupdf.Rect(106, 162, 504, 258), PROMPT * 2, fontsize=10)
    caption_across(page, 272, "Figure 3: The prompt.")
    run("prompt_lines", doc, {3: (100, 140, 510, 260)})

    # 13 two prompt boxes side by side of different heights, caption below both
    doc, page = page_across()
    prompt_box(page, pymupdf.Rect(60, 140, 300, 300), PROMPT * 2, color=(0, 0, 0), width=0.8)
    prompt_box(page, pymupdf.Rect(312, 200, 552, 300), PROMPT, color=(0, 0, 0), width=0.8)
    caption_across(page, 312, "Figure 3: Two prompts.")
    run("side_by_side_boxes", doc, {3: (60, 140, 552, 300)})

    def dendro_left_labels(name, fs, n=12, label="Multilingual model variant"):
        doc, page = page2()
        page.insert_textbox(pymupdf.Rect(54, 60, 295, 120), BODY[:250], fontsize=10)
        x_leaf = 175
        nodes = [(x_leaf, 140 + 14 * i) for i in range(n)]
        for i, (_, yy) in enumerate(nodes):
            page.insert_text((58, yy + 3), f"{label} {i}", fontsize=fs)
        x = join_levels(page, nodes, 28)
        bottom = 140 + 14 * (n - 1) + 6
        page.insert_textbox(
            pymupdf.Rect(54, bottom + 12, 295, bottom + 40), "Figure 1: Clustering of the models.", fontsize=9
        )
        page.insert_textbox(pymupdf.Rect(54, bottom + 50, 295, 740), BODY * 2, fontsize=10)
        right_column(page)
        run(name, doc, {1: (58, 133, x, bottom - 3)})

    dendro_left_labels("dendro_left_10pt", 10)
    dendro_left_labels("dendro_left_9pt", 9)
    dendro_left_labels("dendro_left_8pt", 8)

    def side_in_column(name, plot_x, line_x, caption_x):
        """A plot and its caption side by side within the left column of a two-column page."""
        doc, page = page2()
        page.insert_textbox(pymupdf.Rect(54, 60, 295, 150), BODY[:300], fontsize=10)
        page.draw_rect(pymupdf.Rect(plot_x[0], 165, plot_x[1], 270), color=(0, 0, 0), width=1)
        page.draw_line((line_x[0], 265), (line_x[1], 170), color=(1, 0, 0), width=1.5)
        page.insert_textbox(
            pymupdf.Rect(caption_x[0], 180, caption_x[1], 270),
            "Figure 2: Accuracy over training; the dashed line is the baseline.",
            fontsize=9,
        )
        page.insert_textbox(pymupdf.Rect(54, 285, 295, 740), BODY * 2, fontsize=10)
        right_column(page)
        run(name, doc, {2: (plot_x[0], 165, plot_x[1], 270)})

    side_in_column("side_in_column", (56, 165), (60, 160), (175, 295))
    side_in_column("side_in_column_left", (185, 294), (190, 290), (54, 175))  # caption left, plot right
    # raster image beside a caption, one-column page, image taller than caption, caption bottom-aligned
    doc, page = page2()
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 150), BODY[:400], fontsize=10)
    im = Image.new("RGB", (300, 300), "white")
    d = ImageDraw.Draw(im)
    d.ellipse((20, 20, 280, 280), outline="black", width=6)
    buf = io.BytesIO()
    im.save(buf, "PNG")
    page.insert_image(pymupdf.Rect(72, 165, 272, 365), stream=buf.getvalue())
    page.insert_textbox(
        pymupdf.Rect(290, 300, 540, 365),
        "Figure 2: A circle drawn by the model when asked for a round shape.",
        fontsize=9,
    )
    page.insert_textbox(pymupdf.Rect(72, 380, 540, 740), BODY * 2, fontsize=10)
    run("side_raster_bottom", doc, {2: (72, 165, 272, 365)})


def main() -> None:
    global OUT
    with tempfile.TemporaryDirectory(prefix="crop-shapes-") as tmp:
        OUT = pathlib.Path(sys.argv[sys.argv.index("--keep") + 1]) if "--keep" in sys.argv else pathlib.Path(tmp)
        OUT.mkdir(parents=True, exist_ok=True)
        build()
    print(f"{sum(RESULTS)} of {len(RESULTS)} shapes OK")


if __name__ == "__main__":
    main()
