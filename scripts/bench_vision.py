"""Figures per second of the pixel stage an ingest adds: reading each crop and one pass of the
pretrained backbone, which gives its figure types and its picture vector (app/vision/pictures.py).

    python scripts/bench_vision.py --data-dir DIR [--n 500] [--threads 2] [--runtime torch]

`--runtime torch` runs the backbone's PyTorch module instead of its ONNX Runtime export (the
comparison behind the served choice).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sqlalchemy import select  # noqa: E402

from app.db.schema import Figure, Paper  # noqa: E402
from app.db.session import session_scope  # noqa: E402
from app.settings import settings_for  # noqa: E402
from app.vision.pictures import backbone_for, encode_pictures  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runtime", choices=("onnx", "torch"), default="onnx")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    settings = settings_for(args.data_dir)
    with session_scope(settings.db_url) as s:
        paths = s.scalars(select(Figure.image_path).join(Paper).where(Figure.kind == "figure").limit(args.n)).all()
    encode_pictures([Image.new("RGB", (64, 64), "white")], data_dir=args.data_dir)  # load outside the timing
    if args.runtime == "torch":
        backbone_for(args.data_dir).session = None

    c0, t0 = time.process_time(), time.perf_counter()
    images = []
    for rel in paths:
        with Image.open(settings.data_dir / rel) as im:
            im.draft("RGB", (448, 448))
            images.append(im.convert("RGB"))
    c1, t1 = time.process_time(), time.perf_counter()
    encode_pictures(images, data_dir=args.data_dir)
    c2, t2 = time.process_time(), time.perf_counter()
    n = len(paths)
    print(f"{n} crops: read {n / (t1 - t0):.1f} fig/s, backbone + types + picture vector {n / (t2 - t1):.1f} fig/s, "
          f"in all {n / (t2 - t0):.1f} fig/s; "
          f"backbone {n / max(c2 - c1, 1e-9):.1f} fig per CPU-s, load {os.getloadavg()[0]:.1f} ({args.runtime})")


if __name__ == "__main__":
    main()
