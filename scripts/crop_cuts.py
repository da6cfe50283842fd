"""Drawings that a figure crop cuts: vector segments and images partly inside a crop and partly
outside it, where the outside part is not body text, a caption, another figure or the page margin.

    python scripts/crop_diff.py snapshot ../shared/corpus A.json      # the crops (regions) to check
    python scripts/crop_cuts.py ../shared/corpus A.json [--near 12] [--sheet DIR] [--json OUT] [--kind figure]

Reads the PDFs again for their drawings (`page.get_drawings()`, each segment of each path: a line,
a curve, a rectangle, cut to the clip it is drawn in) and images (the part the clip shows), and
for every crop counts those that cross its edge by more than `--tol` points (a crop is rendered
with 2 points of padding). Prints the number of crops flagged and of segments cut; `--sheet` draws
each flagged crop on its page (crop green, cut segments red, ink beside orange, other crops blue), 12 to a contact
sheet, so each flag can be looked at (a real cut, or a page rule, a column line, a frame around
the caption). `--near N` also counts ink wholly outside a crop, at most N points from its edge and
level with it, that no crop, caption or body line holds (a second box of the figure left out).
`--json` writes the flagged crops, to compare two versions.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
from collections import defaultdict

import pymupdf

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.ingest.layout import build_layout, cut_to, in_page_margin, paths_in_clips, visible_images  # noqa: E402
from crop_diff import save_sheets  # noqa: E402  (scripts/ is on the path of a script run from it)

PAD = 2.0  # the crop's own padding (render.py)


def _item_boxes(item) -> tuple[float, float, float, float]:
    kind = item[0]
    if kind == "re":
        r = pymupdf.Rect(item[1])
    elif kind == "qu":
        r = pymupdf.Quad(item[1]).rect
    else:
        pts = [pymupdf.Point(p) for p in item[1:] if isinstance(p, pymupdf.Point)]
        r = pymupdf.Rect(min(p.x for p in pts), min(p.y for p in pts), max(p.x for p in pts), max(p.y for p in pts))
    return (r.x0, r.y0, r.x1, r.y1)


def page_marks(page: pymupdf.Page) -> list[tuple[str, tuple]]:
    """("segment" | "image", box) of everything drawn on the page: each segment of each vector
    path cut to its clips (white fills without a stroke paint nothing and are left out), and the
    visible part of each image."""
    W, H = page.rect.width, page.rect.height
    out = [("image", tuple(b)) for b in (info["bbox"] for info in visible_images(page))
           if (b[2] - b[0]) * (b[3] - b[1]) <= 0.6 * W * H]  # not a page background (a scanned page)
    for p, clip in paths_in_clips(page.get_drawings(extended=True)):
        fill = p.get("fill")
        if p.get("type") == "f" and fill is not None and len(fill) >= 3 and min(fill[:3]) >= 0.99:
            continue
        for item in p.get("items", []):
            x0, y0, x1, y1 = cut_to(_item_boxes(item), clip)
            if x1 < x0 or y1 < y0 or (x1 - x0) * (y1 - y0) > 0.6 * W * H:
                continue  # clipped away; a page background
            out.append(("segment", (x0, y0, x1, y1)))
    return out


def _overlaps(a, b, eps: float = 0.5) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > eps and min(a[3], b[3]) - max(a[1], b[1]) > eps


def _outside_parts(s: tuple, r: tuple, tol: float) -> list[tuple]:
    """The parts of box s beyond each edge of r by more than tol."""
    parts = []
    if s[0] < r[0] - tol:
        parts.append((s[0], s[1], r[0], s[3]))
    if s[2] > r[2] + tol:
        parts.append((r[2], s[1], s[2], s[3]))
    if s[1] < r[1] - tol:
        parts.append((s[0], s[1], s[2], r[1]))
    if s[3] > r[3] + tol:
        parts.append((s[0], r[3], s[2], s[3]))
    return parts


def crop_cuts(region: tuple, marks: list[tuple[str, tuple]], blockers: list[tuple], height: float,
              tol: float) -> list[tuple[str, tuple]]:
    """The marks partly inside the (padded) region that go on past its edge by more than `tol`,
    into something other than the `blockers` (body lines, captions, other crops) or the page's
    top and bottom margin."""
    r = (region[0] - PAD, region[1] - PAD, region[2] + PAD, region[3] + PAD)
    cut = []
    for kind, s in marks:
        ox = min(s[2], r[2]) - max(s[0], r[0])
        oy = min(s[3], r[3]) - max(s[1], r[1])
        inside = (ox > 0.5 or (s[2] - s[0] <= 1 and ox >= 0)) and (oy > 0.5 or (s[3] - s[1] <= 1 and oy >= 0))
        if not inside:
            continue
        for o in _outside_parts(s, r, tol):
            # a hairline's outside part is a line: give it a little width to meet what it runs into
            grown = (o[0] - 0.5, o[1] - 0.5, o[2] + 0.5, o[3] + 0.5)
            if in_page_margin(o[1], o[3], height) or any(_overlaps(grown, b) for b in blockers):
                continue
            cut.append((kind, s))
            break
    return cut


def ink_beside(region: tuple, marks: list[tuple[str, tuple]], blockers: list[tuple], height: float,
               near: float) -> list[tuple[str, tuple]]:
    """The marks wholly outside the (padded) region but within `near` points of one of its edges and
    level with it (above, below or beside it, not off a corner), outside the `blockers` and the
    page's margin: ink set apart from the crop that no other crop, caption or body line holds (the
    second box of a figure made of several)."""
    r = (region[0] - PAD, region[1] - PAD, region[2] + PAD, region[3] + PAD)
    out = []
    for kind, s in marks:
        dx = max(r[0] - s[2], s[0] - r[2], 0.0)
        dy = max(r[1] - s[3], s[1] - r[3], 0.0)
        if (dx > 0) == (dy > 0) or max(dx, dy) > near:
            continue  # inside (or crossing), off a corner, or far
        grown = (s[0] - 0.5, s[1] - 0.5, s[2] + 0.5, s[3] + 0.5)
        if in_page_margin(s[1], s[3], height) or any(_overlaps(grown, b) for b in blockers):
            continue
        out.append((kind, s))
    return out


def check_pdf(pdf: pathlib.Path, figures: dict, tol: float, near: float, kinds: set[str]) -> list[dict]:
    """The flagged crops of one PDF: {key, page, region, cuts: [(kind, box)], beside: [(kind, box)]}."""
    doc = pymupdf.open(pdf)
    st = None
    by_page = defaultdict(list)
    for key, f in figures.items():
        if f.get("region") and key.split()[0] in kinds:
            by_page[f["page"]].append(key)
    out = []
    for page_no, keys in sorted(by_page.items()):
        if st is None:
            st = build_layout(doc)
        page = doc[page_no - 1]
        pl = st.pages[page_no - 1]
        st.mark_body(pl)
        marks = page_marks(page)
        body = [ln.rect for ln in pl.lines if ln.body]
        on_page = [(k, f) for k, f in figures.items() if f["page"] == page_no]
        captions = [f["caption_bbox"] for _, f in on_page if f.get("caption_bbox")]
        for key in keys:
            f = figures[key]
            others = [g["region"] for k, g in on_page if k != key and g.get("region")]
            r, c = f["region"], f.get("caption_bbox")
            # the crop's own caption across the crop's width: a frame drawn around figure and caption
            # goes on past the crop beside the caption, which the crop leaves out on purpose
            band = [(min(r[0], c[0]) - tol, c[1], max(r[2], c[2]) + tol, c[3])] if c else []
            blockers = body + captions + band + others
            cuts = crop_cuts(tuple(r), marks, blockers, page.rect.height, tol)
            beside = ink_beside(tuple(r), marks, blockers, page.rect.height, near) if near > 0 else []
            if cuts or beside:
                out.append({"key": key, "page": page_no, "region": f["region"], "cuts": cuts, "beside": beside})
    return out


def sheet(root: pathlib.Path, snap: dict, flagged: dict, out: pathlib.Path) -> None:
    from PIL import Image, ImageDraw

    out.mkdir(parents=True, exist_ok=True)
    tiles = []
    for pdf, items in sorted(flagged.items()):
        for it in items:
            doc = pymupdf.open(root / pdf)
            page = doc[it["page"] - 1]
            boxes = [it["region"]] + [c[1] for c in it["cuts"] + it["beside"]]
            u = pymupdf.Rect(min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes),
                             max(b[3] for b in boxes))
            clip = pymupdf.Rect(u.x0 - 30, u.y0 - 30, u.x1 + 30, u.y1 + 30) & page.rect
            for k, f in snap[pdf]["figures"].items():
                if f["page"] == it["page"] and f.get("region") and k != it["key"]:
                    page.draw_rect(f["region"], color=(0, 0, 1), width=0.8)
            for _, b in it["cuts"]:
                page.draw_rect(pymupdf.Rect(b) + (-1, -1, 1, 1), color=(1, 0, 0), width=0.8)
            for _, b in it["beside"]:
                page.draw_rect(pymupdf.Rect(b) + (-1, -1, 1, 1), color=(1, 0.5, 0), width=0.8)
            page.draw_rect(pymupdf.Rect(it["region"]), color=(0, 0.7, 0), width=1.2)
            zoom = min(2.0, 470 / max(clip.width, 1), 400 / max(clip.height, 1))
            pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=clip)
            tile = Image.new("RGB", (480, 430), "white")
            tile.paste(Image.frombytes("RGB", (pix.width, pix.height), pix.samples), (5, 25))
            ImageDraw.Draw(tile).text((5, 5), f"{pdf[-40:]} p{it['page']} {it['key']} cuts {len(it['cuts'])} beside {len(it['beside'])}",
                                      fill=(0, 0, 0))
            tiles.append(tile)
    save_sheets(tiles, out, "cuts")
    print(f"{len(tiles)} flagged crops -> {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=pathlib.Path)
    ap.add_argument("snapshot", type=pathlib.Path)
    ap.add_argument("--tol", type=float, default=3.0, help="points a drawing must go past the padded crop")
    ap.add_argument("--near", type=float, default=0.0,
                    help="also flag ink set apart from the crop by at most this many points (0: off)")
    ap.add_argument("--kind", action="append", choices=["figure", "table"],
                    help="kinds of crop to check (default: both)")
    ap.add_argument("--sheet", type=pathlib.Path)
    ap.add_argument("--json", type=pathlib.Path)
    a = ap.parse_args()
    kinds = set(a.kind or ["figure", "table"])
    snap = json.loads(a.snapshot.read_text())
    flagged: dict[str, list[dict]] = {}
    n_crops = 0
    for pdf in sorted(snap):
        figs = snap[pdf].get("figures", {})
        n_crops += sum(1 for k, f in figs.items() if f.get("region") and k.split()[0] in kinds)
        if not figs:
            continue
        got = check_pdf(a.root / pdf, figs, a.tol, a.near, kinds)
        if got:
            flagged[pdf] = got
    items = [it for v in flagged.values() for it in v]
    for what in ("cuts", "beside"):
        if what == "beside" and not a.near:
            continue
        hit = [it for it in items if it[what]]
        by_kind = {k: sum(it["key"].startswith(k) for it in hit) for k in sorted(kinds)}
        print(f"{what}: {len(hit)} of {n_crops} crops ({', '.join(f'{k} {n}' for k, n in by_kind.items())}); "
              f"{sum(len(it[what]) for it in hit)} segments or images, in {len({id(v) for v in flagged.values() for it in v if it[what]})} PDFs")
    for pdf, its in sorted(flagged.items()):
        for it in its:
            print(f"  {pdf} | {it['key']} p{it['page']} cuts {len(it['cuts'])} beside {len(it['beside'])}")
    if a.json:
        a.json.write_text(json.dumps(flagged, indent=0))
    if a.sheet:
        sheet(a.root, snap, flagged, a.sheet)


if __name__ == "__main__":
    main()
