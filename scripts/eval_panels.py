"""Panel letters found against hand labels (tests/data/panel_gold.jsonl), with and without reading
the crop's pixels.

    python scripts/eval_panels.py ../shared/corpus [--gold tests/data/panel_gold.jsonl]

For each labelled figure the PDF is extracted as ingestion does; a figure counts as right when its
panel letters are the labelled ones (no panels for a figure without letters) and its panels fall
into the labelled number of rows. Prints the counts by label form (brackets, bare, period, none).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import resource
import sys
import tempfile
import time
from collections import Counter

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pymupdf  # noqa: E402

import app.ingest  # noqa: E402,F401  (PyMuPDF set up as ingestion uses it)
from app.ingest.figures import extract_figures  # noqa: E402


def _rows(panels: list[dict]) -> int:
    tops = sorted({round(p["bbox"][1]) for p in panels})
    return len([t for i, t in enumerate(tops) if i == 0 or t - tops[i - 1] > 4])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=pathlib.Path, help="folder holding the gold's `file` paths")
    ap.add_argument("--gold", type=pathlib.Path, default=ROOT / "tests/data/panel_gold.jsonl")
    args = ap.parse_args()
    gold = [json.loads(x) for x in args.gold.read_text().splitlines() if x.strip()]
    by_file: dict[str, list[dict]] = {}
    for g in gold:
        by_file.setdefault(g["file"], []).append(g)
    for read_pixels in (False, True):
        right, total, wrong = Counter(), Counter(), []
        t0 = time.process_time()
        ch = resource.getrusage(resource.RUSAGE_CHILDREN)
        c0 = ch.ru_utime + ch.ru_stime
        for file, rows in sorted(by_file.items()):
            with tempfile.TemporaryDirectory() as tmp, pymupdf.open(args.corpus / file) as doc:
                figs = {f.label: f for f in extract_figures(doc, pathlib.Path(tmp), "x", read_panel_pixels=read_pixels)}
            for g in rows:
                f = figs.get(g["label"])
                panels = f.panels if f is not None else []
                letters = "".join(p["label"] for p in panels)
                ok = letters == g["panels"] and (not panels or _rows(panels) == g["rows"])
                total[g["form"]] += 1
                right[g["form"]] += ok
                if not ok:
                    wrong.append(f"{g['form']:8} {file[-50:]} {g['label']}: want {g['panels'] or '-'} "
                                 f"({g['rows']} rows), got {letters or '-'} ({_rows(panels)} rows)")
        ch = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(f"read_panel_pixels={read_pixels}: " + ", ".join(
            f"{k} {right[k]}/{total[k]}" for k in ("brackets", "bare", "period", "none") if total[k])
            + f"; extraction CPU {time.process_time() - t0:.1f} s, Tesseract CPU {ch.ru_utime + ch.ru_stime - c0:.1f} s")
        for w in wrong:
            print("   ", w)


if __name__ == "__main__":
    main()
