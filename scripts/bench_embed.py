"""Embedding throughput of the learned figure model: figures per second for *new* figures (nothing
cached: figure text -> frozen MiniLM, paper text -> MiniLM, image file -> pixels + style statistics,
fusion model forward), on the CPU threads torch gets here. Runs the production code path
(`LearnData` feature builders + `embed_rows`) on a scratch copy of the data dir whose caches are
empty. Prints JSON with the time of each part.

    python scripts/bench_embed.py --data-dir DIR [--model fused]

Needs an ingested collection; uses the CURRENT trained model of `--model` when there is one, else
a freshly initialised model of the default configuration (same architecture, same cost).
"""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--model", default="fused")
    args = ap.parse_args()

    import torch

    from app.learn.data import load_learn_data
    from app.learn.embed import embed_rows
    from app.learn.registry import load_current
    from app.settings import settings_for

    loaded = load_current(args.data_dir, args.model)
    if loaded is None:
        from app.learn.train import TrainConfig
        from models.fusion import FusionModel

        cfg = TrainConfig()
        model = FusionModel(text_kind=cfg.text, image=cfg.image, dim=cfg.dim, image_kind=cfg.image_kind,
                            paper=cfg.paper)
        loaded = type("Fresh", (), {"model": model, "config": cfg, "vocab": None})()
        source = "untrained (default configuration)"
    else:
        source = f"{loaded.name}/{loaded.version}"
    cfg = loaded.config
    with tempfile.TemporaryDirectory(prefix="bench-embed-") as tmp:
        scratch = Path(tmp) / "data"
        shutil.copytree(args.data_dir, scratch, ignore=shutil.ignore_patterns("index", "models", "*.tmp*"))
        data = load_learn_data(settings_for(scratch))
        parts: dict[str, float] = {}

        def timed(name, fn):
            t = time.perf_counter()
            fn()
            parts[name] = time.perf_counter() - t

        t0 = time.perf_counter()
        if cfg.text == "minilm":
            timed("figure_text_minilm", data.minilm)
        if getattr(cfg, "paper", False):
            timed("paper_text_minilm", data.paper_minilm)
        if cfg.image:
            timed("image_pixels", lambda: data.images(cfg.image_size))
            if cfg.image_kind == "style":
                timed("image_stats", data.stats)
        timed("model_forward", lambda: embed_rows(loaded, data))
        total = time.perf_counter() - t0
    print(json.dumps({
        "model": source, "figures": len(data), "torch_threads": torch.get_num_threads(),
        "seconds": round(total, 2), "figures_per_s": round(len(data) / total, 1),
        "parts_s": {k: round(v, 2) for k, v in parts.items()},
    }, indent=1))


if __name__ == "__main__":
    main()
