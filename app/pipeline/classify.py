"""Figure types of stored figures: the crops of figures without a type go through the pretrained
backbone once (app/vision/pictures.py), which gives their figure types (app/vision/figure_types.py)
and their picture vectors (kept in app/vision/picture_store.py for the index); a type their
caption names is weighed against the pixels (app/vision/caption_evidence.py), and the dominant
type and the list of types shown are stored. The PDF text layer is not read here: its rule
(scripts/text_layer_rule.py) turned more right types wrong than wrong ones right with the current
pixel head (README, "figure types, caption evidence weighed against the pixels"). Tables are
`table` by construction. Runs after each ingest job that refreshes the index, and before
`figsearch index` builds, so old collections get types too; a failure is logged and never loses
the ingest."""
from __future__ import annotations

import logging

from sqlalchemy import or_, select, update

from app.db.schema import Figure, Paper
from app.db.session import session_scope
from app.settings import Settings
from app.vision.caption_evidence import with_caption_evidence
from app.vision.figure_types import type_head
from app.vision.picture_store import PictureStore
from app.vision.pictures import encode_pictures, picture_model_name, read_crop

log = logging.getLogger(__name__)
TABLE_TYPES = [{"type": "table", "score": 1.0}]
TABLE_SCORES = {"table": 1.0}


def classify_figures(settings: Settings, paper_ids: list[int] | None = None, redo: bool = False,
                     batch: int = 64, progress: bool = False, captions: bool = True) -> int:
    """Classify the figures of `paper_ids` (all papers when None) that have no type scores yet
    (every figure with `redo`); `captions=False` types by pixels alone. Returns how many
    figures got a type."""
    model = type_head(settings.data_dir)
    with session_scope(settings.db_url) as s:
        q = select(Figure.id, Figure.kind, Figure.image_path, Figure.caption).join(Paper)
        if paper_ids is not None:
            q = q.where(Figure.paper_id.in_(paper_ids))
        if not redo:
            q = q.where(or_(Figure.figure_type.is_(None), Figure.type_scores.is_(None)))
        rows = s.execute(q.order_by(Figure.id)).all()
        tables = [r[0] for r in rows if r[1] == "table"]
        if tables:
            s.execute(update(Figure).where(Figure.id.in_(tables))
                      .values(figure_type="table", figure_types=TABLE_TYPES, type_scores=TABLE_SCORES))
    figures = [(fid, path, caption) for fid, kind, path, caption, *_ in rows if kind != "table"]
    if model is None:
        if figures:
            log.warning("no figure-type weights installed: %d figures stay untyped", len(figures))
        return len(tables)
    store = PictureStore(settings.data_dir, picture_model_name(settings.data_dir))
    done = 0
    bar = None
    if progress and figures:
        from tqdm import tqdm

        bar = tqdm(total=len(figures), desc="figure types", unit="fig")
    for i in range(0, len(figures), batch):
        part = figures[i:i + batch]
        images = [read_crop(settings.data_dir / rel) for _, rel, _ in part]
        encoded = encode_pictures(images, data_dir=settings.data_dir)
        store.put([(fid, rel or "") for fid, rel, _ in part], encoded.vectors)
        results = encoded.types
        if captions:
            results = [with_caption_evidence(r, caption) for (_, _, caption), r in zip(part, results)]
        with session_scope(settings.db_url) as s:
            for (fid, _, _), r in zip(part, results):
                s.execute(update(Figure).where(Figure.id == fid)
                          .values(figure_type=r.figure_type, figure_types=r.figure_types,
                                  type_scores=r.scores))
        done += len(part)
        if bar:
            bar.update(len(part))
    if bar:
        bar.close()
    if figures:
        store.save()
    return done + len(tables)


def classify_new(settings: Settings, paper_ids: list[int]) -> None:
    """After an ingest job: types for its papers' figures; errors are logged, never raised."""
    if not paper_ids:
        return
    try:
        classify_figures(settings, paper_ids)
    except Exception:
        log.exception("figure-type classification failed for papers %s", paper_ids[:10])
