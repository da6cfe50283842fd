"""Snapshot what extraction finds in a folder of PDFs, and diff two snapshots.

    python scripts/crop_diff.py snapshot ../shared/corpus/recsys /tmp/before.json [--workers 2]
    python scripts/crop_diff.py diff /tmp/before.json /tmp/after.json [--tol 1.0 | --iou 0.95]
    python scripts/crop_diff.py sheet ../shared/corpus/recsys /tmp/before.json /tmp/after.json /tmp/sheets/
    python scripts/crop_diff.py missing /tmp/after.json

`sheet` draws every crop that moved, appeared or went (before red, after green) on its page, 12 to a
contact sheet, so each change can be looked at.

A snapshot holds, per PDF, every extracted figure/table (kind, number, page, box with the caption, the
region alone, caption box, caption) and
the parsed paper fields (title, authors, year, abstract, sentence and mention counts). `diff`
prints boxes (or regions, the crops) that moved by more than `--tol` points (or, with `--iou`, whose
crop overlaps its old self by less than that intersection over union), figures found or lost, caption, panel and
paper-field changes, so a refactoring can be shown to keep the crops (or a fix to change only what it should).
`missing` lists the figures and tables the body text refers to that extraction did not find.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.ingest.extract import Limits, extract_pdf  # noqa: E402


def _one(args: tuple[str, str]) -> tuple[str, dict]:
    pdf, root = args
    rel = str(pathlib.Path(pdf).relative_to(root))
    with tempfile.TemporaryDirectory(prefix="cropdiff-") as tmp:
        ex = extract_pdf(pdf, tmp, Limits())
    p = ex.paper
    return rel, {
        "status": ex.status,
        "paper": {"title": p.title, "authors": p.authors, "year": p.year, "abstract": p.abstract,
                  "sentences": len(p.sentences), "references": len(p.references), "mentions": len(ex.mentions)},
        "figures": {f"{f.kind} {f.number}": {"page": f.page, "bbox": f.bbox, "caption": f.caption,
                                              "region": f.region_bbox, "caption_bbox": f.caption_bbox,
                                              "crop_quality": getattr(f, "crop_quality", "ok"),
                                              "size": [f.width, f.height],
                                              "panels": [[q["label"], q["bbox"]] for q in f.panels]}
                    for f in ex.figures},
        "dropped": [dict(d) for d in getattr(ex, "dropped_figures", [])],
    }


def snapshot(root: pathlib.Path, out: pathlib.Path, workers: int) -> None:
    pdfs = sorted(str(p) for p in root.rglob("*.pdf"))
    with mp.get_context("spawn").Pool(workers) as pool:
        res = dict(pool.imap(_one, [(p, str(root)) for p in pdfs], chunksize=1))
    out.write_text(json.dumps(res, indent=0, sort_keys=True))
    print(f"{len(res)} PDFs, {sum(len(v['figures']) for v in res.values())} figures/tables -> {out}")


def diff(a_path: pathlib.Path, b_path: pathlib.Path, tol: float, iou: float | None = None) -> int:
    a, b = json.loads(a_path.read_text()), json.loads(b_path.read_text())
    n_same = n_moved = n_lost = n_new = n_cap = n_field = n_panels = 0
    for pdf in sorted(set(a) | set(b)):
        fa, fb = a.get(pdf, {}).get("figures", {}), b.get(pdf, {}).get("figures", {})
        for key in sorted(set(fa) | set(fb)):
            x, y = fa.get(key), fb.get(key)
            if x is None:
                n_new += 1
                print(f"NEW   {pdf} | {key} p{y['page']} {y['bbox']}")
            elif y is None:
                n_lost += 1
                print(f"LOST  {pdf} | {key} p{x['page']} {x['bbox']}")
            else:
                if _moved(x, y, tol, iou):
                    n_moved += 1
                    print(f"MOVED {pdf} | {key} p{x['page']} {x['bbox']} -> p{y['page']} {y['bbox']}"
                          + (f" (crop {x.get('region')} -> {y.get('region')})" if x.get("region") != y.get("region") else ""))
                else:
                    n_same += 1
                if [q[0] for q in x.get("panels", [])] != [q[0] for q in y.get("panels", [])]:
                    n_panels += 1
                    print(f"PANELS {pdf} | {key} {''.join(q[0] for q in x.get('panels', [])) or '-'} -> "
                          f"{''.join(q[0] for q in y.get('panels', [])) or '-'}")
                if x["caption"] != y["caption"]:
                    n_cap += 1
                    print(f"CAPTION {pdf} | {key}\n   - {x['caption'][:300]}\n   + {y['caption'][:300]}")
        pa, pb = a.get(pdf, {}).get("paper", {}), b.get(pdf, {}).get("paper", {})
        for k in sorted(set(pa) | set(pb)):
            if pa.get(k) != pb.get(k):
                n_field += 1
                print(f"FIELD {pdf} | {k}: {str(pa.get(k))[:200]!r} -> {str(pb.get(k))[:200]!r}")
    print(f"same boxes {n_same}, moved {n_moved}, lost {n_lost}, new {n_new}, caption changes {n_cap}, "
          f"paper-field changes {n_field}, figures whose panel letters changed {n_panels}")
    return n_moved + n_lost + n_new


def missing(a_path: pathlib.Path) -> int:
    """Figures and tables referred to in the body text ("Figure 6") with no extracted caption."""
    a = json.loads(a_path.read_text())
    n = 0
    for pdf in sorted(a):
        labels = [d["label"] for d in a[pdf].get("dropped", []) if d["reason"].startswith("mentioned in the text")]
        if labels:
            n += len(labels)
            print(f"{pdf} | {', '.join(labels)}")
    kinds = {k: sum(d["label"].startswith(k) for v in a.values() for d in v.get("dropped", [])
                    if d["reason"].startswith("mentioned in the text")) for k in ("Figure", "Table")}
    print(f"{n} referred to but not extracted ({kinds['Figure']} figures, {kinds['Table']} tables) in {len(a)} PDFs")
    return n


def _crop(x: dict) -> list:
    """The crop of a snapshot entry: its region (the graphic alone) when the snapshot holds it,
    else its box with the caption."""
    return x.get("region") or x["bbox"]


def _iou(p: list, q: list) -> float:
    ix = max(0.0, min(p[2], q[2]) - max(p[0], q[0])) * max(0.0, min(p[3], q[3]) - max(p[1], q[1]))
    area = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - ix
    return ix / area if area > 0 else 1.0


def _moved(x: dict, y: dict, tol: float, iou: float | None = None) -> bool:
    """Another page, or the box (graphic + caption) or the region (the crop) moved by more than tol;
    given `iou`, another page or a crop overlapping the old one by less than that (small shifts of a
    point or two, the size of the changes a print state makes to a caption's box, do not count)."""
    if iou is not None:
        return x["page"] != y["page"] or _iou(_crop(x), _crop(y)) < iou
    def far(p, q):
        return (p is None) != (q is None) or (p is not None and max(abs(u - v) for u, v in zip(p, q)) > tol)
    return x["page"] != y["page"] or far(x["bbox"], y["bbox"]) or (
        "region" in x and "region" in y and far(x["region"], y["region"]))


def _changes(a: dict, b: dict, tol: float, iou: float | None = None) -> list[tuple]:
    """(pdf, key, page, before box or None, after box or None) of boxes that moved, appeared or went."""
    out = []
    for pdf in sorted(set(a) | set(b)):
        fa, fb = a.get(pdf, {}).get("figures", {}), b.get(pdf, {}).get("figures", {})
        for key in sorted(set(fa) | set(fb)):
            x, y = fa.get(key), fb.get(key)
            if x and y and not _moved(x, y, tol, iou):
                continue
            out.append((pdf, key, (y or x)["page"], _crop(x) if x else None, _crop(y) if y else None))
    return out


def sheet(root: pathlib.Path, a_path: pathlib.Path, b_path: pathlib.Path, out: pathlib.Path, tol: float,
          iou: float | None = None) -> None:
    import pymupdf
    from PIL import Image, ImageDraw

    a, b = json.loads(a_path.read_text()), json.loads(b_path.read_text())
    out.mkdir(parents=True, exist_ok=True)
    tiles = []
    for pdf, key, page_no, before, after in _changes(a, b, tol, iou):
        doc = pymupdf.open(root / pdf)
        page = doc[page_no - 1]
        boxes = [r for r in (before, after) if r]
        u = pymupdf.Rect(min(r[0] for r in boxes), min(r[1] for r in boxes), max(r[2] for r in boxes),
                         max(r[3] for r in boxes))
        clip = pymupdf.Rect(u.x0 - 20, u.y0 - 20, u.x1 + 20, u.y1 + 20) & page.rect
        if before:
            page.draw_rect(before, color=(1, 0, 0), width=1.2)
        if after:
            page.draw_rect(pymupdf.Rect(after) + (1, 1, -1, -1), color=(0, 0.7, 0), width=1.2)
        zoom = min(2.0, 470 / max(clip.width, 1), 400 / max(clip.height, 1))
        pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=clip)
        tile = Image.new("RGB", (480, 430), "white")
        tile.paste(Image.frombytes("RGB", (pix.width, pix.height), pix.samples), (5, 25))
        ImageDraw.Draw(tile).text((5, 5), f"{pdf[-45:]} p{page_no} {key}", fill=(0, 0, 0))
        tiles.append(tile)
    save_sheets(tiles, out, "changes")
    print(f"{len(tiles)} changed boxes -> {out}")


def save_sheets(tiles: list, out: pathlib.Path, stem: str) -> None:
    """480x430 tiles, 12 a sheet (3 across), as out/<stem>-00.png, -01.png, ..."""
    from PIL import Image

    for i in range(0, len(tiles), 12):
        s = Image.new("RGB", (1440, 1720), (190, 190, 190))
        for j, t in enumerate(tiles[i:i + 12]):
            s.paste(t, ((j % 3) * 480, (j // 3) * 430))
        s.save(out / f"{stem}-{i // 12:02d}.png")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("root", type=pathlib.Path)
    s.add_argument("out", type=pathlib.Path)
    s.add_argument("--workers", type=int, default=2)
    d = sub.add_parser("diff")
    d.add_argument("a", type=pathlib.Path)
    d.add_argument("b", type=pathlib.Path)
    d.add_argument("--tol", type=float, default=1.0)
    d.add_argument("--iou", type=float, default=None, help="count a crop as moved below this overlap instead")
    c = sub.add_parser("sheet")
    c.add_argument("root", type=pathlib.Path)
    c.add_argument("a", type=pathlib.Path)
    c.add_argument("b", type=pathlib.Path)
    c.add_argument("out", type=pathlib.Path)
    c.add_argument("--tol", type=float, default=1.0)
    c.add_argument("--iou", type=float, default=None)
    m = sub.add_parser("missing")
    m.add_argument("a", type=pathlib.Path)
    args = ap.parse_args()
    if args.cmd == "missing":
        missing(args.a)
    elif args.cmd == "snapshot":
        snapshot(args.root, args.out, args.workers)
    elif args.cmd == "sheet":
        sheet(args.root, args.a, args.b, args.out, args.tol, args.iou)
    else:
        diff(args.a, args.b, args.tol, args.iou)


if __name__ == "__main__":
    main()
