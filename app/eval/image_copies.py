"""Image search on uploaded copies: collection figures rescaled and re-encoded as JPEG (what a
figure copied out of a PDF or a screenshot looks like) are searched by picture alone, as
`POST /search/by-image` without a caption does on a default install; the figure itself should
come first.

    figsearch eval-image-copies --data-dir DIR [--n 300] [--seed 0]
"""
from __future__ import annotations

import io
import random

import numpy as np
from PIL import Image

from app.search.engine import SearchEngine
from app.search.indexing import index_root
from app.settings import Settings
from app.vision.fingerprint import embed_images


def _copy(img: Image.Image, rng: random.Random) -> Image.Image:
    scale = rng.uniform(0.4, 1.5)
    w, h = max(8, int(img.width * scale)), max(8, int(img.height * scale))
    out = io.BytesIO()
    img.convert("RGB").resize((w, h), Image.Resampling.BICUBIC).save(out, "JPEG", quality=rng.randint(50, 90))
    return Image.open(io.BytesIO(out.getvalue())).convert("RGB")


def evaluate_image_copies(settings: Settings, n: int = 300, seed: int = 0) -> dict:
    from sqlalchemy import select

    from app.db.schema import Figure
    from app.db.session import session_scope

    engine = SearchEngine.load_current(index_root(settings))
    if engine.visual is None:
        raise ValueError("the index has no visual vectors: run `figsearch index`")
    with session_scope(settings.db_url) as s:
        paths = dict(s.execute(select(Figure.id, Figure.image_path).where(Figure.id.in_(
            [int(x) for x in engine.figure_ids]))).all())
    rng = random.Random(seed)
    ids = sorted(paths)
    picked = rng.sample(ids, min(n, len(ids)))
    ranks = []
    for fid in picked:
        with Image.open(settings.data_dir / paths[fid]) as im:
            query = _copy(im, rng)
        hits = engine.by_picture(embed_images([query])[0], k=10)
        got = [h.figure_id for h in hits]
        ranks.append(got.index(fid) + 1 if fid in got else None)
    found = [r for r in ranks if r is not None]
    return {"n_queries": len(ranks), "n_figures": len(ids),
            "hit_at_1": round(sum(r == 1 for r in found) / len(ranks), 3),
            "hit_at_5": round(sum(r <= 5 for r in found) / len(ranks), 3),
            "mrr_at_10": round(float(np.mean([1 / r if r else 0.0 for r in ranks])), 3),
            "copies": "rescaled x0.4-1.5, JPEG quality 50-90"}
