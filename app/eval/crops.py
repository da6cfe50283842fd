"""`figsearch eval-crops`: extracted figure/table crops against hand-labelled boxes.

The gold (tests/data/crop_gold.jsonl, made by looking at rendered pages) holds, per figure or
table, the paper's sha256, the 1-based page, "Figure N"/"Table N", the box of the graphic without
its caption (PDF points) and the first characters of the caption. A record with `label: null`
marks a labelled paper that has no figure or table.

Gold and extracted items are matched by (paper, kind, number). Per gold item:
  found         an extracted item with that paper, kind and number exists
  caption_ok    SequenceMatcher ratio >= 0.8 between the gold caption start and as many first
                characters of the extracted caption (0 when not found)
  iou           IoU of the gold box and the extracted region_bbox (its bbox, caption included,
                when no region was found); 0 when not found or on another page
Per extracted item of a labelled paper: spurious when no gold item has its kind and number.
Means come with a 95% interval that resamples papers (all items of a paper together), since the
items of one paper share its layout.
"""
from __future__ import annotations

import io
import json
import re
from collections import defaultdict
from difflib import SequenceMatcher
from pathlib import Path

from sqlalchemy import select

from app.stats import cluster_ci
from app.db.schema import Paper
from app.db.session import session_scope
from app.pdfs import render_region, stored_pdf
from app.settings import Settings

CAPTION_MATCH = 0.8
IOU_GOOD, IOU_FAIR = 0.8, 0.5


def read_gold(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def gold_key(record: dict) -> tuple[str, str, int]:
    """(sha256, kind, number) of a gold record ("Figure 3" -> figure, 3)."""
    number = int(re.findall(r"\d+", record["label"])[-1])
    return record["sha256"], record["kind"], number


def iou(a: list[float] | None, b: list[float] | None) -> float:
    """Intersection over union of two (x0, y0, x1, y1) boxes; 0 when either is missing."""
    if not a or not b or len(a) != 4 or len(b) != 4:
        return 0.0
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def caption_ratio(gold_start: str, caption: str) -> float:
    """Similarity of the gold caption start and the same number of first characters extracted."""
    g = " ".join((gold_start or "").split())
    c = " ".join((caption or "").split())[:len(g)]
    return SequenceMatcher(None, g, c).ratio() if g else 0.0


def extracted_items(settings: Settings, shas: set[str]) -> tuple[dict[str, dict], dict[str, list[dict]]]:
    """The data dir's papers among `shas` ({sha: {file, status}}) and their figures/tables."""
    papers, items = {}, defaultdict(list)
    with session_scope(settings.db_url) as s:
        for p in s.execute(select(Paper).where(Paper.sha256.in_(shas))).scalars():
            papers[p.sha256] = {"source": p.source, "status": p.status}
            for f in p.figures:
                items[p.sha256].append({"kind": f.kind, "number": f.number, "page": f.page, "caption": f.caption,
                                        "box": f.region_bbox or f.bbox, "has_region": f.region_bbox is not None})
    return papers, items


def score(gold: list[dict], papers: dict[str, dict], items: dict[str, list[dict]]) -> dict:
    """Per-item rows and per-paper / overall summaries (see the module docstring)."""
    labelled = {g["sha256"]: g["file"] for g in gold}
    absent = sorted(labelled[s] for s in labelled if s not in papers)
    by_key = {(sha, it["kind"], it["number"]): it for sha, its in items.items() for it in its}
    rows = []
    for g in gold:
        if g["label"] is None or g["sha256"] not in papers:
            continue
        key = gold_key(g)
        it = by_key.get(key)
        same_page = it is not None and it["page"] == g["page"]
        rows.append({"file": g["file"], "sha256": g["sha256"], "label": g["label"], "kind": g["kind"],
                     "page": g["page"], "gold_bbox": g["bbox"], "found": it is not None,
                     "extracted_page": it["page"] if it else None, "extracted_bbox": it["box"] if it else None,
                     "region_found": bool(it and it["has_region"]),
                     "caption_ratio": round(caption_ratio(g["caption_start"], it["caption"]), 3) if it else 0.0,
                     "iou": round(iou(g["bbox"], it["box"]), 4) if same_page else 0.0,
                     "gold_caption": g["caption_start"], "extracted_caption": (it["caption"] or "")[:120] if it else ""})
    gold_keys = {gold_key(g) for g in gold if g["label"] is not None}
    extracted = [{"file": labelled[sha], "sha256": sha, "kind": it["kind"], "number": it["number"], "page": it["page"],
                  "box": it["box"], "caption": (it["caption"] or "")[:120],
                  "spurious": (sha, it["kind"], it["number"]) not in gold_keys}
                 for sha in labelled if sha in papers for it in items.get(sha, [])]
    report = {"gold_items": len(rows), "papers": len({g["sha256"] for g in gold if g["sha256"] in papers}),
              "papers_not_in_data_dir": absent,
              "overall": _summary(rows, extracted),
              "by_kind": {k: _summary([r for r in rows if r["kind"] == k], [e for e in extracted if e["kind"] == k])
                          for k in ("figure", "table")},
              "per_paper": {}, "spurious": [e for e in extracted if e["spurious"]], "items": rows}
    for sha in sorted(papers, key=lambda s: labelled[s]):
        report["per_paper"][labelled[sha]] = {
            "status": papers[sha]["status"],
            **_summary([r for r in rows if r["sha256"] == sha], [e for e in extracted if e["sha256"] == sha], ci=False)}
    return report


def _summary(rows: list[dict], extracted: list[dict], ci: bool = True) -> dict:
    """Means over gold items (recall, caption match, IoU) and over extracted items (spurious share)."""
    papers = [r["file"] for r in rows]
    found_ious = [r["iou"] for r in rows if r["found"]]
    values = {"recall": [float(r["found"]) for r in rows],
              "caption_match": [float(r["caption_ratio"] >= CAPTION_MATCH) for r in rows],
              "iou_mean": [r["iou"] for r in rows],
              f"iou_ge_{IOU_GOOD}": [float(r["iou"] >= IOU_GOOD) for r in rows],
              f"iou_ge_{IOU_FAIR}": [float(r["iou"] >= IOU_FAIR) for r in rows]}
    out: dict = {"n_gold": len(rows), "n_extracted": len(extracted),
                 "n_spurious": sum(1 for e in extracted if e["spurious"]),
                 "iou_mean_found": round(sum(found_ious) / len(found_ious), 4) if found_ious else None}
    for name, vals in values.items():
        out[name] = round(sum(vals) / len(vals), 4) if vals else None
        if ci and vals:
            out[name + "_ci"] = cluster_ci(papers, vals)
    spur = [float(e["spurious"]) for e in extracted]
    out["spurious_share"] = round(sum(spur) / len(spur), 4) if spur else None
    if ci and spur:
        out["spurious_share_ci"] = cluster_ci([e["file"] for e in extracted], spur)
    return out


def contact_sheet(settings: Settings, report: dict, out: Path, n: int = 16, cols: int = 4, width: int = 420) -> Path | None:
    """A PNG of the `n` worst gold items (missed ones first, then by IoU): the page with the gold box
    in green and the extracted box in red, captioned with the paper, label and scores."""
    import pymupdf
    from PIL import Image, ImageDraw

    worst = sorted(report["items"], key=lambda r: (r["found"], r["iou"], r["caption_ratio"]))[:n]
    if not worst:
        return None
    tiles = []
    for r in worst:
        pdf = stored_pdf(settings.data_dir, r["sha256"])
        if pdf is None:
            continue
        with pymupdf.open(pdf) as doc:
            page_w = doc[r["page"] - 1].rect.width
        im = Image.open(io.BytesIO(render_region(pdf, r["page"], None, width / page_w, 4_000_000))).convert("RGB")
        z = im.width / page_w
        draw = ImageDraw.Draw(im)
        draw.rectangle([v * z for v in r["gold_bbox"]], outline=(0, 170, 0), width=3)
        if r["found"] and r["extracted_page"] == r["page"] and r["extracted_bbox"]:
            draw.rectangle([v * z for v in r["extracted_bbox"]], outline=(220, 0, 0), width=2)
        state = ("missed" if not r["found"] else
                 f"extracted on p{r['extracted_page']}" if r["extracted_page"] != r["page"] else f"IoU {r['iou']:.2f}")
        head = Image.new("RGB", (im.width, 30), "white")
        hd = ImageDraw.Draw(head)
        hd.text((3, 2), f"{Path(r['file']).name[:60]}", fill=(0, 0, 0))
        hd.text((3, 16), f"{r['label']} p{r['page']}  {state}  caption {r['caption_ratio']:.2f}", fill=(180, 0, 0))
        tile = Image.new("RGB", (im.width, im.height + 30), "white")
        tile.paste(head, (0, 0))
        tile.paste(im, (0, 30))
        tiles.append(tile)
    if not tiles:
        return None
    tw, th = max(t.width for t in tiles), max(t.height for t in tiles)
    rows = (len(tiles) + cols - 1) // cols
    sheet = Image.new("RGB", (cols * tw, rows * th), (235, 235, 235))
    for k, t in enumerate(tiles):
        sheet.paste(t, ((k % cols) * tw, (k // cols) * th))
    path = out / "worst_crops.png"
    sheet.save(path)
    return path


def summary_text(report: dict) -> str:
    """The overall and per-kind numbers, one line each, with their intervals."""
    names = ["recall", "caption_match", "iou_mean", f"iou_ge_{IOU_GOOD}", f"iou_ge_{IOU_FAIR}", "spurious_share"]
    lines = [f"{report['papers']} papers, {report['gold_items']} gold items"
             + (f"; not in the data dir: {', '.join(report['papers_not_in_data_dir'])}" if report["papers_not_in_data_dir"] else "")]
    for part, summ in [("all", report["overall"]), *report["by_kind"].items()]:
        cells = [f"{n} {summ[n]:.3f} [{summ[n + '_ci'][0]:.3f}, {summ[n + '_ci'][1]:.3f}]"
                 for n in names if summ.get(n) is not None]
        lines.append(f"{part} (gold {summ['n_gold']}, extracted {summ['n_extracted']}, spurious {summ['n_spurious']}): "
                     + "; ".join(cells))
    return "\n".join(lines)


def evaluate_crops(settings: Settings, gold_path: Path, out: Path, n_sheet: int = 16) -> dict:
    gold = read_gold(gold_path)
    papers, items = extracted_items(settings, {g["sha256"] for g in gold})
    report = score(gold, papers, items)
    report["gold"] = str(gold_path)
    out.mkdir(parents=True, exist_ok=True)
    sheet = contact_sheet(settings, report, out, n=n_sheet)
    report["contact_sheet"] = str(sheet) if sheet else None
    (out / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return report
