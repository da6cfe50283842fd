"""Quality report for figure/table extraction over a folder of PDFs.

Usage: .venv/bin/python scripts/extraction_report.py /work/shared/corpus/recsys --out artifacts/extraction

Measures (written to <out>/report.json):
* coverage: share of (paper, figure number) pairs mentioned in the body text for
  which a figure with that number and a non-empty caption was extracted; misses listed;
* tables labelled as figures (must be 0);
* seconds per PDF for extract_figures alone;
* a seeded contact sheet of 40 random crops (<out>/contact_sheet.png).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import pathlib
import random
import re
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pymupdf  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from app.ingest.figures import extract_figures  # noqa: E402
from app.labels import CAPTION_RE  # noqa: E402

# "Figure 3", "Fig. 3b", "Figure 3(a)", "Figs. 3 and 4", "Figures 3-5", "Fig. 3, 4"
MENTION_RE = re.compile(
    r"\b(?:Figures?|Figs?\.?|FIGURES?|FIGS?\.?)\s*~?(?P<list>\d{1,3}(?:\s*\(?[a-z]\)?(?![a-z]))?"
    r"(?:\s*(?:,|and|&|-|\u2013|to)\s*\d{1,3}(?:\s*\(?[a-z]\)?(?![a-z]))?)*)"
)


def mention_numbers(text: str) -> set[int]:
    """Figure numbers referenced in a piece of text, expanding lists and ranges."""
    nums: set[int] = set()
    for m in MENTION_RE.finditer(text):
        toks = re.findall(r"\d{1,3}|-|\u2013|to|,|and|&", m.group("list"))
        prev, rng = None, False
        for t in toks:
            if t.isdigit():
                n = int(t)
                if rng and prev is not None and 0 < n - prev <= 10:
                    nums.update(range(prev, n + 1))
                nums.add(n)
                prev, rng = n, False
            elif t in ("-", "\u2013", "to"):
                rng = True
    return nums


def body_mentions(doc: pymupdf.Document) -> set[int]:
    """Figure numbers mentioned in the text, skipping caption lines themselves."""
    nums: set[int] = set()
    for page in doc:
        for block in page.get_text("dict", flags=0)["blocks"]:
            for li, line in enumerate(block.get("lines", [])):
                text = "".join(s["text"] for s in line["spans"]).strip()
                m = CAPTION_RE.match(text)
                if m:
                    rest = m.group("rest").lstrip()
                    if li == 0 or rest[:1] in ":.|-\u2013\u2014" or not rest:
                        text = text[m.end("num"):]  # the caption's own label is not a mention
                nums |= mention_numbers(text)
    return {n for n in nums if 0 < n < 100}


def process(args: tuple[str, str, str]) -> dict:
    """Extract one PDF (timed) and compute its mentions."""
    pdf, root, out = args
    rel = str(pathlib.Path(pdf).relative_to(root))
    slug = hashlib.sha1(rel.encode()).hexdigest()[:10]
    res = {"paper": rel, "slug": slug, "figures": [], "mentions": [], "error": None, "seconds": 0.0}
    try:
        doc = pymupdf.open(pdf)
        res["pages"] = len(doc)
        t, c = time.perf_counter(), time.process_time()
        figs = extract_figures(doc, pathlib.Path(out) / "crops" / slug, f"crops/{slug}")
        res["seconds"] = time.perf_counter() - t
        res["cpu_seconds"] = time.process_time() - c
        res["figures"] = [f.__dict__ for f in figs]
        res["mentions"] = sorted(body_mentions(doc))
    except Exception as e:  # noqa: BLE001
        res["error"] = repr(e)
    return res


def contact_sheet(items: list[tuple[str, dict]], out_dir: pathlib.Path, path: pathlib.Path, n: int = 40,
                  seed: int = 0, cell: int = 300) -> list[str]:
    """Grid of n random crops with their labels, for eyeballing crop quality."""
    rng = random.Random(seed)
    pick = rng.sample(items, min(n, len(items)))
    cols = 5
    rows = (len(pick) + cols - 1) // cols
    sheet = Image.new("RGB", (cols * cell, rows * (cell + 28)), "white")
    draw = ImageDraw.Draw(sheet)
    names = []
    for k, (paper, f) in enumerate(pick):
        x, y = (k % cols) * cell, (k // cols) * (cell + 28)
        try:
            im = Image.open(out_dir / f["image_path"]).convert("RGB")
            im.thumbnail((cell - 8, cell - 8))
            sheet.paste(im, (x + 4, y + 4))
        except OSError:
            pass
        draw.rectangle([x, y, x + cell - 1, y + cell + 27], outline="gray")
        tag = f"#{k} {f['label']} p{f['page']} {paper[:28]}"
        draw.text((x + 4, y + cell + 2), tag, fill="black")
        draw.text((x + 4, y + cell + 14), f["caption"][:44], fill="blue")
        names.append(f"#{k} {paper} {f['label']} -> {f['image_path']}")
    sheet.save(path)
    return names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("root", type=pathlib.Path)
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "artifacts" / "extraction")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    pdfs = sorted(a.root.rglob("*.pdf"))
    if a.limit:
        pdfs = pdfs[: a.limit]
    t0 = time.perf_counter()
    jobs = [(str(p), str(a.root), str(a.out)) for p in pdfs]
    with mp.Pool(a.workers) as pool:
        results = pool.map(process, jobs, chunksize=1)
    wall = time.perf_counter() - t0

    mentioned = found = 0
    misses, bad_kind, no_caption = [], [], []
    for r in results:
        have = {f["number"] for f in r["figures"] if f["kind"] == "figure" and f["caption"].strip()}
        for n in r["mentions"]:
            mentioned += 1
            if n in have:
                found += 1
            else:
                misses.append([r["paper"], n])
        for f in r["figures"]:
            word = f["caption"].split(" ", 1)[0].lower()
            if (f["kind"] == "figure") == word.startswith("tab") or not f["label"].lower().startswith(f["kind"][:3]):
                bad_kind.append([r["paper"], f["label"], f["caption"][:60]])
            if not f["caption"].strip():
                no_caption.append([r["paper"], f["label"]])
    secs = [r["seconds"] for r in results if not r["error"]]
    cpu = [r["cpu_seconds"] for r in results if not r["error"]]
    items = [(r["paper"], f) for r in results for f in r["figures"] if f["kind"] == "figure"]
    sheet_names = contact_sheet(items, a.out, a.out / "contact_sheet.png")
    tables = [(r["paper"], f) for r in results for f in r["figures"] if f["kind"] == "table"]
    contact_sheet(tables, a.out, a.out / "contact_sheet_tables.png", n=20, seed=1)
    report = {
        "pdfs": len(results),
        "errors": [[r["paper"], r["error"]] for r in results if r["error"]],
        "figures": sum(1 for r in results for f in r["figures"] if f["kind"] == "figure"),
        "tables": sum(1 for r in results for f in r["figures"] if f["kind"] == "table"),
        "mentioned_pairs": mentioned,
        "covered_pairs": found,
        "coverage_pct": round(100.0 * found / mentioned, 2) if mentioned else None,
        "misses": misses,
        "tables_labelled_as_figures": bad_kind,
        "empty_captions": no_caption,
        "sec_per_pdf_mean": round(statistics.mean(secs), 4) if secs else None,
        "sec_per_pdf_median": round(statistics.median(secs), 4) if secs else None,
        "cpu_sec_per_pdf_mean": round(statistics.mean(cpu), 4) if cpu else None,
        "sec_per_pdf_max": round(max(secs), 3) if secs else None,
        "slowest": sorted(([r["paper"], round(r["seconds"], 2)] for r in results), key=lambda x: -x[1])[:5],
        "wall_seconds": round(wall, 2),
        "workers": a.workers,
        "contact_sheet": str(a.out / "contact_sheet.png"),
        "contact_sheet_items": sheet_names,
        "per_paper": [{"paper": r["paper"], "slug": r["slug"], "n": len(r["figures"]),
                       "labels": [f["label"] for f in r["figures"]], "mentions": r["mentions"]} for r in results],
    }
    (a.out / "report.json").write_text(json.dumps(report, indent=1))
    print(f"PDFs: {len(results)}  figures: {report['figures']}  tables: {report['tables']}")
    print(f"coverage: {report['coverage_pct']}% ({found}/{mentioned} mentioned figure numbers)")
    print(f"tables labelled as figures: {len(bad_kind)}")
    print(f"time/PDF (extract_figures): mean {report['sec_per_pdf_mean']}s median "
          f"{report['sec_per_pdf_median']}s max {report['sec_per_pdf_max']}s; CPU mean "
          f"{report['cpu_sec_per_pdf_mean']}s; wall {wall:.1f}s on {a.workers} workers")
    print("misses:")
    for p, n in misses:
        print(f"  {p}  Figure {n}")
    if report["errors"]:
        print("errors:", report["errors"])


if __name__ == "__main__":
    main()
