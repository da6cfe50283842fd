"""Score extracted crops against hand-labelled boxes straight from the PDFs (no ingest).

    python scripts/eval_crops_pdfs.py tests/data/crop_gold_naacl2.jsonl [more gold files] \
        [--root ../shared/corpus] [--workers 2] [--rows] [--snapshot A.json]

Gold records name their PDF relative to `--root` (`file`); the scorer is `figsearch eval-crops`'s
(`app.eval.crops.score`), so the numbers are the same as with an ingested data dir. `--rows` prints
each gold item with its IoU, worst first. `--snapshot` scores the crops of a
`scripts/crop_diff.py snapshot` of `--root` instead of extracting the PDFs again.
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

from app.eval.crops import read_gold, score, summary_text  # noqa: E402
from app.ingest.extract import Limits, extract_pdf  # noqa: E402


def _items(pdf: str) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="evalcrops-") as tmp:
        ex = extract_pdf(pdf, tmp, Limits())
    return [{"kind": f.kind, "number": f.number, "page": f.page, "caption": f.caption,
             "box": f.region_bbox or f.bbox, "has_region": f.region_bbox is not None} for f in ex.figures]


def _from_snapshot(snap: dict, file: str) -> list[dict]:
    return [{"kind": key.split()[0], "number": int(key.split()[1]), "page": f["page"], "caption": f["caption"],
             "box": f.get("region") or f["bbox"], "has_region": f.get("region") is not None}
            for key, f in snap[file]["figures"].items()]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("gold", nargs="+")
    ap.add_argument("--root", default=str(ROOT.parent / "shared" / "corpus"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rows", action="store_true")
    ap.add_argument("--snapshot", type=pathlib.Path, help="a crop_diff.py snapshot of --root (with regions)")
    a = ap.parse_args()
    snap = json.loads(a.snapshot.read_text()) if a.snapshot else None
    for path in a.gold:
        gold = read_gold(pathlib.Path(path))
        files = {g["sha256"]: g["file"] for g in gold}
        shas = sorted(files)
        if snap is not None:
            got = [_from_snapshot(snap, files[s]) for s in shas]
        else:
            with mp.get_context("spawn").Pool(a.workers) as pool:
                got = pool.map(_items, [str(pathlib.Path(a.root) / files[s]) for s in shas], chunksize=1)
        papers = {s: {"source": files[s], "status": "ok"} for s in shas}
        report = score(gold, papers, dict(zip(shas, got)))
        print(f"== {path}")
        print(summary_text(report))
        if a.rows:
            for r in sorted(report["items"], key=lambda r: r["iou"]):
                print(f"  {r['iou']:.3f} {r['file'][:40]} {r['label']} p{r['page']} gold {r['gold_bbox']} got {r['extracted_bbox']}")


if __name__ == "__main__":
    main()
