"""Figures per second of the two pixel stages an ingest adds: figure-type classification
(reads each crop, CNN) and the visual fingerprint used by search by picture.

    python scripts/bench_vision.py --data-dir DIR [--n 500]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sqlalchemy import select  # noqa: E402

from app.db.schema import Figure  # noqa: E402
from app.db.session import session_scope  # noqa: E402
from app.settings import settings_for  # noqa: E402
from app.vision.figure_types import classifier  # noqa: E402
from app.vision.fingerprint import embed_images  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--n", type=int, default=500)
    args = ap.parse_args()
    settings = settings_for(args.data_dir)
    with session_scope(settings.db_url) as s:
        paths = list(s.scalars(select(Figure.image_path).where(Figure.kind == "figure").limit(args.n)))
    model = classifier()
    model.classify([Image.new("RGB", (64, 64), "white")])  # load outside the timing

    def load():
        out = []
        for rel in paths:
            with Image.open(settings.data_dir / rel) as im:
                im.draft("RGB", (448, 448))
                out.append(im.convert("RGB"))
        return out

    t0 = time.perf_counter()
    images = load()
    t1 = time.perf_counter()
    model.classify(images)
    t2 = time.perf_counter()
    embed_images(images)
    t3 = time.perf_counter()
    n = len(paths)
    print(f"{n} crops: read {n / (t1 - t0):.1f} fig/s, types {n / (t2 - t1):.1f} fig/s, "
          f"fingerprint {n / (t3 - t2):.1f} fig/s; read + types + fingerprint {n / (t3 - t0):.1f} fig/s")


if __name__ == "__main__":
    main()
