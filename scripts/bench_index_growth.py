"""Time `figsearch index` after new papers: growing the current version by a segment against a
full rebuild, on copies of one data dir, and check that both rank alike.

    python scripts/bench_index_growth.py --data-dir DIR --work WORK [--papers 1 10] [--warm]

DIR is copied (never changed); WORK gets the copies. The new papers are generated ones
(app.demo.generate). For each count: the copy of DIR is indexed in full first (so its version has
fingerprints), the papers are ingested without indexing, and `figsearch index` (grown) and
`figsearch index --full` each run in a fresh process on their own copy of that state, so both
embed the same new figures. With --warm the new figures' embeddings are computed before the
copies are made, so the times are the index's own. Prints one JSON line per count.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from app.demo.generate import generate_collection
from app.model_store.versions import point_current, read_current
from app.pipeline.classify import classify_figures
from app.pipeline.indexing import build_index, index_root
from app.search.embeddings import DENSE_FILE
from app.search.searcher import Searcher
from app.settings import Settings

LINE = re.compile(r"index (\S+): (\d+) figures, (\d+) newly embedded, ([\d.]+) s \((\w+), (\d+) segment")


def figsearch(*args: str) -> tuple[float, str]:
    env = {**os.environ, "FIGSEARCH_AUTO_INDEX": "false"}
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "app.cli", *args], env=env, check=True, capture_output=True,
                         text=True).stdout
    return time.perf_counter() - t0, out


def index(data_dir: Path, *options: str) -> dict:
    wall, out = figsearch("index", *options, "--data-dir", str(data_dir))
    m = LINE.search(out)
    return {"how": m.group(5), "segments": int(m.group(6)), "figures": int(m.group(2)),
            "embedded": int(m.group(3)), "build_s": float(m.group(4)), "wall_s": round(wall, 2)}


def warm(data_dir: Path) -> None:
    """Type and embed what a build needs (figure texts, pictures, paper texts) -- by building a
    version and removing it again: the caches stay, the CURRENT version is the one before."""
    settings = Settings(data_dir=data_dir, auto_index=False)
    classify_figures(settings)
    root = index_root(settings)
    before, dense = read_current(root), (root / DENSE_FILE).read_text()
    version = build_index(settings, mode="full").version
    shutil.rmtree(root / version)
    point_current(root, before)
    (root / DENSE_FILE).write_text(dense)


def same_top10(a_dir: Path, b_dir: Path, n: int = 150) -> dict:
    a, b = Searcher.load_current(a_dir / "index"), Searcher.load_current(b_dir / "index")
    live = a.figure_ids[~a.docs.deleted]
    same = total = 0
    for fid in np.random.default_rng(0).choice(live, min(n, len(live)), replace=False).tolist():
        for scope in ("other_papers", "same_paper", "all"):
            total += 1
            same += [h.figure_id for h in a.similar(fid, k=10, scope=scope)] == \
                [h.figure_id for h in b.similar(fid, k=10, scope=scope)]
    return {"identical_top10": same, "compared": total}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--papers", type=int, nargs="+", default=[1, 10])
    ap.add_argument("--warm", action="store_true")
    args = ap.parse_args()
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    pdfs = generate_collection(work / "pdfs", n_papers=max(args.papers), seed=42)
    base = work / "base"
    shutil.copytree(args.data_dir, base, symlinks=True)
    first = index(base, "--full")
    for n in args.papers:
        state = work / f"plus{n}"
        shutil.copytree(base, state, symlinks=True)
        folder = work / f"pdfs{n}"
        folder.mkdir()
        for p in pdfs[:n]:
            shutil.copy(p, folder)
        figsearch("ingest", str(folder), "--data-dir", str(state))
        if args.warm:
            warm(state)
        grown, full = state.with_name(state.name + "-grown"), state.with_name(state.name + "-full")
        shutil.copytree(state, grown, symlinks=True)
        shutil.copytree(state, full, symlinks=True)
        row = {"papers_added": n, "before": first["figures"], "warm": args.warm,
               "load": os.getloadavg()[0], "grown": index(grown), "full": index(full, "--full")}
        row.update(same_top10(grown, full))
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
