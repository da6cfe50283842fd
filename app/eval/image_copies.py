"""Image search on uploaded copies: collection figures rescaled and re-encoded as JPEG (what a
figure copied out of a PDF or a screenshot looks like) are searched by picture alone, as
`POST /search/by-image` without a caption does on a default install; the figure itself should
come first.

With `--labels` (figure types labelled by looking: JSON lines with sha256, number, type), each
labelled figure is also uploaded as such a copy and the first five results from *other* papers are
judged: the share whose labelled dominant type is the uploaded figure's (`same_type_at_5`), as
served (picture vector + type scores) and by the picture vector alone, with a paper-cluster
bootstrap interval of the difference. `hit_at_1_other_margins`: the same with screenshots taken with
more white margin than the crop, or cut into the drawing, and with the figure's region rendered again
from its PDF at another resolution with its edges moved ("rendered again": a screenshot from a PDF
viewer). `copy_keeps_type`: the share of copies whose dominant type by pixels
is the original crop's (how stable picture typing is under rescaling and JPEG). `kinds`: copies of
figures and of tables, whether each is searched among its own kind (tables among tables) and found
first.

    figsearch eval-image-copies --data-dir DIR [--n 300] [--seed 0] [--labels FILE]
"""
from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps

from app.pipeline.indexing import index_root
from app.pdfs import stored_pdf
from app.pipeline.searching import open_searcher
from app.search.looks import COPY_MAX_BITS, HASH_BYTES, hash_distances
from app.search.searcher import Searcher
from app.settings import Settings
from app.vision.pictures import picture_query
from app.vision.real_crops import read_labels


def jpeg_copy(img: Image.Image, rng: random.Random) -> Image.Image:
    """What a user uploads of a figure: rescaled x0.4-1.5, saved as JPEG of quality 50-90."""
    scale = rng.uniform(0.4, 1.5)
    w, h = max(8, int(img.width * scale)), max(8, int(img.height * scale))
    out = io.BytesIO()
    img.convert("RGB").resize((w, h), Image.Resampling.BICUBIC).save(out, "JPEG", quality=rng.randint(50, 90))
    return Image.open(io.BytesIO(out.getvalue())).convert("RGB")


def with_margin(img: Image.Image, fraction: float) -> Image.Image:
    """A screenshot with more white margin than the crop (`fraction` > 0 of its longer side on
    each side) or cut into the drawing (`fraction` < 0 of each side's length)."""
    if fraction >= 0:
        return ImageOps.expand(img, border=int(max(img.size) * fraction), fill="white")
    dx, dy = int(img.width * -fraction), int(img.height * -fraction)
    return img.crop((dx, dy, img.width - dx, img.height - dy))


# screenshots taken with other margins than the stored crop: uploaded as rescaled JPEG copies too
MARGINS = {"margin +5%": 0.05, "margin +15%": 0.15, "cut 2%": -0.02}
VIEWER_DPI = (72, 96, 110, 144, 200)


def viewer_screenshot(pdf: Path, page: int, box, rng: random.Random) -> Image.Image:
    """What a screenshot of the figure in a PDF viewer looks like: its region rendered again at
    another resolution, each edge moved from 2% inside to 5% outside."""
    import pymupdf

    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    edge = lambda: rng.uniform(-0.02, 0.05)  # noqa: E731
    clip = pymupdf.Rect(x0 - edge() * w, y0 - edge() * h, x1 + edge() * w, y1 + edge() * h)
    with pymupdf.open(pdf) as doc:
        pix = doc[page - 1].get_pixmap(dpi=rng.choice(VIEWER_DPI), clip=clip)
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


def evaluate_image_copies(settings: Settings, n: int = 300, seed: int = 0, labels: Path | None = None) -> dict:
    from sqlalchemy import select

    from app.db.schema import Figure, Paper
    from app.db.session import session_scope

    engine = open_searcher(index_root(settings))
    if engine.visual is None:
        raise ValueError("the index has no visual vectors: run `figsearch index`")
    with session_scope(settings.db_url) as s:
        rows = s.execute(select(Figure.id, Figure.image_path, Figure.paper_id, Paper.sha256, Figure.number)
                         .join(Paper, Paper.id == Figure.paper_id)
                         .where(Figure.id.in_([int(x) for x in engine.figure_ids]), Figure.kind == "figure")).all()
        regions = {fid: (sha, page, region or box) for fid, sha, page, region, box in s.execute(
            select(Figure.id, Paper.sha256, Figure.page, Figure.region_bbox, Figure.bbox)
            .join(Paper, Paper.id == Figure.paper_id)
            .where(Figure.id.in_([int(x) for x in engine.figure_ids]), Figure.kind == "figure")).all()}
    paths = {fid: path for fid, path, *_ in rows}  # figures (tables are searched as tables)
    rng = random.Random(seed)
    ids = sorted(paths)
    picked = rng.sample(ids, min(n, len(ids)))
    ranks, same_type, copy_cos, other_cos, copy_bits, other_bits = [], [], [], [], [], []
    margin_first: dict[str, list[bool]] = {}
    margin_rng = random.Random(seed + 1)  # its own stream: the plain copies stay those of earlier runs
    looks = engine.looks
    for fid in picked:
        with Image.open(settings.data_dir / paths[fid]) as im:
            original = im.convert("RGB")
        upload = picture_query(jpeg_copy(original, rng), settings.data_dir)
        kinds = upload.types
        hits = engine.by_picture(upload.vector, k=10, type_scores=kinds.scores if kinds else None, look=upload.look)
        got = [h.figure_id for h in hits]
        ranks.append(got.index(fid) + 1 if fid in got else None)
        orig = picture_query(original, settings.data_dir)
        copy_cos.append(float(upload.vector @ orig.vector))
        near = [h for h in engine.by_picture(upload.vector, k=2) if h.figure_id != fid]  # by picture vector alone
        if near:
            other_cos.append(float((near[0].signals or {}).get("visual", 0.0)))
        if looks is not None:  # perceptual hashes: bits from the copy to its figure, and to the nearest other
            row = engine.row_of(fid)
            live = engine.docs.live_rows
            bits = hash_distances(upload.look, looks.hashes[live])
            bits[~looks.known[live]] = HASH_BYTES * 8
            own = live == row
            copy_bits.append(int(bits[own][0]))
            other_bits.append(int(bits[~own].min()) if (~own).any() else HASH_BYTES * 8)
        if kinds is not None:  # does the copy keep the original crop's dominant type (pixels alone)?
            same_type.append(kinds.figure_type == orig.types.figure_type)
        for name, fraction in MARGINS.items():
            shot = picture_query(jpeg_copy(with_margin(original, fraction), margin_rng), settings.data_dir)
            hits = engine.by_picture(shot.vector, k=1, type_scores=shot.types.scores if shot.types else None,
                                     look=shot.look)
            margin_first.setdefault(name, []).append(bool(hits) and hits[0].figure_id == fid)
        sha, page, box = regions.get(fid, (None, None, None))
        pdf = stored_pdf(settings.data_dir, sha)
        if pdf is not None and page and box:
            shot = picture_query(viewer_screenshot(pdf, page, box, margin_rng), settings.data_dir)
            hits = engine.by_picture(shot.vector, k=1, type_scores=shot.types.scores if shot.types else None,
                                     look=shot.look)
            margin_first.setdefault("rendered again", []).append(bool(hits) and hits[0].figure_id == fid)
    found = [r for r in ranks if r is not None]
    report = {"n_queries": len(ranks), "n_figures": len(ids),
              "hit_at_1": round(sum(r == 1 for r in found) / len(ranks), 3),
              "hit_at_5": round(sum(r <= 5 for r in found) / len(ranks), 3),
              "mrr_at_10": round(float(np.mean([1 / r if r else 0.0 for r in ranks])), 3),
              "copy_keeps_type": round(float(np.mean(same_type)), 3) if same_type else None,
              "copies": "rescaled x0.4-1.5, JPEG quality 50-90",
              # the same copies of screenshots with other margins: how often the figure comes first
              "hit_at_1_other_margins": {name: round(float(np.mean(v)), 3) for name, v in margin_first.items()},
              # where "same picture" may start: copies' cosine to their figure vs the nearest other figure's
              "copy_cosine_quantiles": _quantiles(copy_cos), "nearest_other_cosine_quantiles": _quantiles(other_cos),
              # the same with perceptual hashes (app/search/looks.py): bits apart, copies count up to copy_max_bits
              "copy_max_bits": COPY_MAX_BITS, "copy_bits_quantiles": _quantiles(copy_bits),
              "nearest_other_bits_quantiles": _quantiles(other_bits),
              "copies_within_copy_max_bits": round(float(np.mean(np.array(copy_bits) <= COPY_MAX_BITS)), 3)
              if copy_bits else None,
              "others_within_copy_max_bits": round(float(np.mean(np.array(other_bits) <= COPY_MAX_BITS)), 3)
              if other_bits else None}
    if labels is not None:
        report["same_kind"] = _same_kind(settings, engine, rows, labels, rng)
    report["panels"] = _panel_uploads(settings, engine, n, random.Random(seed + 2))
    report["kinds"] = _kind_of_uploads(settings, engine, n, random.Random(seed + 3))
    return report


def _kind_of_uploads(settings: Settings, engine: Searcher, n: int, rng: random.Random) -> dict:
    """Rescaled JPEG copies of figures and of tables (n of each at most): how often the upload is
    searched among its own kind (Searcher.picture_kind) as held by the collection (its copy
    decides) and as new to it (its own paper left out: its nearest pictures decide), and how often
    a copy finds its item first as served (the kind chosen, then by_picture)."""
    from sqlalchemy import select

    from app.db.schema import Figure
    from app.db.session import session_scope

    with session_scope(settings.db_url) as s:
        items = s.execute(select(Figure.id, Figure.kind, Figure.image_path, Figure.paper_id)
                          .where(Figure.id.in_([int(x) for x in engine.figure_ids]))).all()
    out: dict = {}
    for kind in ("figure", "table"):
        mine = sorted((f for f in items if f.kind == kind and f.image_path), key=lambda f: f.id)
        picked = rng.sample(mine, min(n, len(mine)))
        held, new, first = [], [], []
        for f in picked:
            with Image.open(settings.data_dir / f.image_path) as im:
                q = picture_query(jpeg_copy(im, rng), settings.data_dir)
            chosen = engine.picture_kind(q.vector, q.look)
            held.append(chosen == kind)
            new.append(engine.picture_kind(q.vector, q.look, exclude_paper=f.paper_id) == kind)
            hits = engine.by_picture(q.vector, k=1, kind=chosen, type_scores=q.types.scores if q.types else None,
                                     look=q.look)
            first.append(bool(hits) and hits[0].figure_id == f.id)
        out[kind] = {"n": len(picked),
                     "own_kind_held": round(float(np.mean(held)), 3) if held else None,
                     "own_kind_new": round(float(np.mean(new)), 3) if new else None,
                     "hit_at_1": round(float(np.mean(first)), 3) if first else None}
    return out


def _panel_uploads(settings: Settings, engine: Searcher, n: int, rng: random.Random) -> dict:
    """Uploads of one panel of compound figures (two panels or more), cut from the stored crop as
    the panel route cuts it: how often the figure comes first / in the first five, for a rescaled
    JPEG of the panel, the same with 5% more margin, and the panel rendered again from the PDF."""
    from sqlalchemy import select

    from app.db.schema import Figure, Paper
    from app.db.session import session_scope
    from app.ingest.render import panel_box

    with session_scope(settings.db_url) as s:
        figs = [f for f in s.execute(
            select(Figure.id, Figure.image_path, Figure.panels, Figure.region_bbox, Figure.bbox, Figure.page, Paper.sha256)
            .join(Paper, Paper.id == Figure.paper_id)
            .where(Figure.id.in_([int(x) for x in engine.figure_ids]), Figure.kind == "figure")).all()
            if len(f.panels or []) >= 2 and f.image_path]
    picked = rng.sample(sorted(figs, key=lambda f: f.id), min(n, len(figs)))
    found: dict[str, list[int | None]] = {}
    for f in picked:
        panel = rng.choice(f.panels)
        region = list(f.region_bbox or f.bbox)
        with Image.open(settings.data_dir / f.image_path) as im:
            cut = im.convert("RGB").crop(panel_box(im.size, region, panel["bbox"]))
        shots = {"panel copy": jpeg_copy(cut, rng), "panel margin +5%": jpeg_copy(with_margin(cut, 0.05), rng)}
        pdf = stored_pdf(settings.data_dir, f.sha256)
        if pdf is not None and f.page:
            shots["panel rendered again"] = viewer_screenshot(pdf, f.page, panel["bbox"], rng)
        for name, shot in shots.items():
            q = picture_query(shot, settings.data_dir)
            got = [h.figure_id for h in engine.by_picture(q.vector, k=5, type_scores=q.types.scores if q.types else None,
                                                          look=q.look)]
            found.setdefault(name, []).append(got.index(f.id) + 1 if f.id in got else None)
    return {"n_figures_with_panels": len(figs), "n_queries": len(picked),
            **{name: {"hit_at_1": round(float(np.mean([r == 1 for r in ranks])), 3),
                      "hit_at_5": round(float(np.mean([r is not None for r in ranks])), 3)}
               for name, ranks in found.items()}}


def _quantiles(values: list[float]) -> dict | None:
    if not values:
        return None
    return {f"p{q}": round(float(np.percentile(values, q)), 4) for q in (1, 5, 50, 95, 99)}


def _same_kind(settings: Settings, engine: Searcher, rows, labels: Path, rng: random.Random) -> dict:
    """Uploads of labelled figures: the share of the first five results from other papers with the
    uploaded figure's labelled dominant type, served and by the picture vector alone."""
    from app.stats import cluster_ci

    by_key = {(d["sha256"], int(d["number"])): d["type"] for d in read_labels(labels)}
    label = {fid: by_key[(sha, num)] for fid, _, _, sha, num in rows if (sha, num) in by_key}
    paper = {fid: pid for fid, _, pid, _, _ in rows}
    path = {fid: p for fid, p, *_ in rows}

    def same_type(fid: int, upload, scores) -> float | None:
        hits = [h for h in engine.by_picture(upload.vector, 60, type_scores=scores, look=upload.look)
                if h.paper_id != paper[fid]][:5]
        judged = [label[h.figure_id] == label[fid] for h in hits if h.figure_id in label]
        return float(np.mean(judged)) if judged else None

    served, alone, papers = [], [], []
    for fid in sorted(label):
        with Image.open(settings.data_dir / path[fid]) as im:
            upload = picture_query(jpeg_copy(im, rng), settings.data_dir)
        a, b = same_type(fid, upload, upload.types.scores if upload.types else None), same_type(fid, upload, None)
        if a is not None and b is not None:
            served.append(a)
            alone.append(b)
            papers.append(str(paper[fid]))
    diff = [x - y for x, y in zip(served, alone)]
    return {"n_queries": len(served), "n_papers": len(set(papers)),
            "same_type_at_5": round(float(np.mean(served)), 3) if served else None,
            "same_type_at_5_vector_only": round(float(np.mean(alone)), 3) if alone else None,
            "difference_ci95": [round(x, 3) for x in cluster_ci(papers, diff)] if diff else None}
