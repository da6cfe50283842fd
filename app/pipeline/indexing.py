"""Build or refresh the search index of a data dir from its database.

Embeddings are cached per figure (embeddings.py), so a refresh after new papers only encodes the
new figures. A refresh grows the current version by a segment of the new and changed figures
(app/search/growth.py): the lexical postings and vectors of the others are reused by hard links,
removed figures become deleted rows, and the parts that describe the whole collection (type
index, paper views, spelling, the words inside the figures) are made again; past `index_max_segments` segments, or with
mode "merge", the segments are merged into one, and mode "full" rebuilds everything. The result
is written as a new index version and CURRENT is switched atomically, so running services pick it
up without downtime. `refresh_index` / `reembed_all` are the jobs the ingest pipeline and the
workers run after new papers or a new trained model.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.db.session import session_scope
from app.search.collection import Collection, load_collection
from app.search.embeddings import DENSE_FILE, PAPER_TEXT_TOKENS, Encoder, default_text_encoder, embed_docs
from app.search.doc_table import DocTable, FigureDoc
from app.search.figure_words import FigureWords
from app.search.growth import changes, fingerprints, grow, merge, segmented_lexical, segmented_vectors
from app.search.searcher import Searcher
from app.search.lexical import LexicalIndex
from app.search.papers import PaperIndex
from app.search.ranking import RankingConfig
from app.search.segments import SegmentedIndex
from app.search.spelling import Spelling
from app.search.looks import LookIndex
from app.search.type_index import TypeIndex
from app.search.vectors import l2_normalize
from app.model_store.versions import current_version, work_dir
from app.search.text import analyze
from app.settings import Settings

log = logging.getLogger(__name__)


def index_root(settings: Settings) -> Path:
    return settings.data_dir / "index"


@dataclass
class IndexReport:
    version: str
    n_figures: int
    n_encoded: int
    seconds: float
    how: str = "full"      # full (rebuilt), grown (a segment added) or merged (segments merged into one)
    n_segments: int = 1    # segments of the lexical index


def paper_index(col: Collection, root: Path, figures: LexicalIndex, row_paper: np.ndarray,
                encoder: Encoder | None = None, encoder_name: str | None = None,
                progress: bool = False) -> PaperIndex | None:
    """Paper-level views of the papers that have figures in `col` (papers.py): title + abstract by
    MiniLM (or the given encoder; cached like figure embeddings) and by tf.idf, and all figure
    texts of each paper from the figure index `figures` (row i belongs to paper row_paper[i]), and
    the body terms stored at ingest."""
    pids = sorted({d.paper_id for d in col.docs})
    if not pids:
        return None
    if encoder is None:
        from app.search.encoder import default_encoder

        enc = default_encoder()
        encoder = lambda texts: enc.encode(texts, max_length=PAPER_TEXT_TOKENS)  # noqa: E731
        encoder_name = f"minilm{PAPER_TEXT_TOKENS}"
    texts = [col.paper_text.get(p, "") or " " for p in pids]
    pseudo = [FigureDoc(p, p, "", t) for p, t in zip(pids, texts)]
    vecs, _ = embed_docs(pseudo, root, encoder, f"paper-{encoder_name or 'custom'}", progress=progress)
    return PaperIndex.build(pids, vecs, [analyze(t) for t in texts], figures, row_paper,
                            body_terms=[col.body_terms.get(p) for p in pids])


def visual_embeddings(settings: Settings, col: Collection, progress: bool = False) -> np.ndarray | None:
    """Picture vectors (app/vision/pictures.py) of the figures' crops, aligned with col.docs: the
    ones computed when the figures were typed at ingest are read back (app/vision/picture_store.py),
    the others (tables, collections typed before) are computed now and kept."""
    from app.vision.picture_store import PictureStore
    from app.vision.pictures import encode_pictures, picture_model_name, read_crop

    if not col.docs:
        return None
    store = PictureStore(settings.data_dir, picture_model_name(settings.data_dir))
    items = [(d.figure_id, col.image_path.get(d.figure_id, "") or "") for d in col.docs]
    todo = store.missing(items)
    if todo:
        from tqdm import tqdm

        with tqdm(total=len(todo), desc="pictures", unit="fig", disable=not progress) as bar:
            for s in range(0, len(todo), 64):
                part = todo[s:s + 64]
                images = [read_crop(settings.data_dir / rel) for _, rel in part]
                store.put(part, encode_pictures(images, data_dir=settings.data_dir).vectors)
                bar.update(len(part))
        store.save()
    return store.get([fid for fid, _ in items])


def picture_looks(settings: Settings, col: Collection, progress: bool = False) -> dict[int, np.ndarray]:
    """{figure id: perceptual hash of its crop} (app/vision/looks.py) for the collection's figures
    and tables: kept once computed, so only new or re-cropped figures are hashed. A crop that does
    not open gets none (its copies are then told by the picture-vector cosine)."""
    from PIL import Image

    from app.vision.looks import LookStore, look_hash

    store = LookStore(settings.data_dir)
    items = [(d.figure_id, col.image_path.get(d.figure_id, "") or "") for d in col.docs]
    todo = [(fid, rel) for fid, rel in store.missing(items) if rel]
    if todo:
        from tqdm import tqdm

        done, hashes = [], []
        for fid, rel in tqdm(todo, desc="picture hashes", unit="fig", disable=not progress):
            try:
                with Image.open(settings.data_dir / rel) as im:
                    hashes.append(look_hash(im.convert("RGB")))
                done.append((fid, rel))
            except (OSError, ValueError):
                continue
        store.put(done, hashes)
        store.save()
    return store.hashes([fid for fid, _ in items])


def panel_looks(settings: Settings, col: Collection, progress: bool = False) -> dict[int, dict[str, np.ndarray]]:
    """{figure id: {panel letter: perceptual hash}} of the compound figures' panels, each cut from
    the figure's crop as the panel route cuts it (app/ingest/render.py); kept once computed, like
    the figures' hashes. A panel without drawing enough to tell copies by gets none."""
    from PIL import Image

    from app.ingest.render import panel_box
    from app.vision.looks import PANEL_LETTERS, PanelLookStore, has_drawing, look_hash

    store = PanelLookStore(settings.data_dir)
    items = [(fid, f"{col.image_path.get(fid) or ''}|{json.dumps([p.get('bbox') for p in panels])}")
             for fid, (_, panels) in col.panels.items() if col.image_path.get(fid)]
    todo = store.missing(items)
    if todo:
        from tqdm import tqdm

        done, rows = [], []
        for fid, key in tqdm(todo, desc="panel hashes", unit="fig", disable=not progress):
            region, panels = col.panels[fid]
            try:
                with Image.open(settings.data_dir / col.image_path[fid]) as im:
                    crop = im.convert("RGB")
            except (OSError, ValueError):
                continue
            by_letter = {}
            for p in panels:
                box = panel_box(crop.size, region, p["bbox"])
                cut = crop.crop(box)
                if p.get("label") in PANEL_LETTERS and box != (0, 0, *crop.size) and has_drawing(cut):
                    by_letter[p["label"]] = look_hash(cut)
            done.append((fid, key))
            rows.append(store.pack(by_letter))
        store.put(done, rows)
        store.save()
    return store.panels([fid for fid, _ in items])


def learned_embeddings(settings: Settings, docs: list[FigureDoc], progress: bool = False):
    """(fused vectors aligned with docs, n newly embedded, info) from the CURRENT trained default
    model (app.learn), or None when no model is trained / learned embeddings are switched off.
    Only figures the model has not embedded yet are run through it (the store is per version)."""
    if not getattr(settings, "learned_embeddings", True):
        return None
    from app.learn.registry import DEFAULT_MODEL, load_current

    name = getattr(settings, "learned_model", "") or DEFAULT_MODEL
    try:
        loaded = load_current(settings.data_dir, name)
    except Exception:  # a broken model must not break indexing: fall back to MiniLM
        log.exception("trained model %s could not be loaded; indexing with MiniLM", name)
        return None
    if loaded is None or loaded.config.kind != "fusion":
        return None
    from app.learn.data import load_learn_data
    from app.learn.embed import refresh_store

    data = load_learn_data(settings)
    store, n_new = refresh_store(loaded, data, progress=progress)
    # the model embeds figures; tables (not in its data) get zero vectors: found by their words only
    have = np.isin([d.figure_id for d in docs], store.ids)
    fused = store.lookup([d.figure_id for d, ok in zip(docs, have) if ok])["fused"]
    vecs = np.zeros((len(docs), fused.shape[1]), dtype=fused.dtype)
    vecs[have] = fused
    return vecs, n_new, {"kind": "learned", "model": name, "model_version": loaded.version,
                         "dim": int(vecs.shape[1]) if vecs.ndim == 2 else 0}


MODES = ("auto", "full", "merge")


def build_index(settings: Settings, encoder: Encoder | None = None, encoder_name: str | None = None,
                dense: bool = True, progress: bool = False, mode: str = "auto") -> IndexReport:
    """Index the figures and tables of the database; write and publish a new version.

    mode "auto": grow the CURRENT version by a segment of the new and changed figures when it
    can (`_grown`), else rebuild; "full": rebuild; "merge": grow, then merge the segments into one.
    Dense vectors: the trained default model's fused figure embeddings when one exists (text +
    image, app.learn), else MiniLM text embeddings; an explicit `encoder` always wins."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    t0 = time.perf_counter()
    explicit = (encoder, encoder_name) if encoder is not None else (None, None)
    with session_scope(settings.db_url) as s:
        col = load_collection(s, kinds=("figure", "table"))  # tables are searched by caption and cells
    root = index_root(settings)
    emb, n_new = None, 0
    info = {"kind": "minilm"}
    if dense and col.docs:
        learned = learned_embeddings(settings, col.docs, progress) if encoder is None else None
        if learned is not None:
            emb, n_new, info = learned
        else:
            if encoder is None:
                encoder, encoder_name = default_text_encoder()
            emb, n_new = embed_docs(col.docs, root, encoder, encoder_name or "custom", progress=progress)
            info = {"kind": encoder_name or "custom"}
    # the ranking config of the version before is carried forward (it names the version it was fitted on)
    previous = current_version(root)
    ranking = RankingConfig.load(root / previous) if previous else None
    visual = visual_embeddings(settings, col, progress) if dense and col.docs else None
    prints = fingerprints(col.docs, [col.image_path.get(d.figure_id, "") for d in col.docs])
    looks = picture_looks(settings, col, progress) if col.docs else {}
    panels = panel_looks(settings, col, progress) if col.docs else {}
    with work_dir(root) as work:
        grown = None
        if mode != "full" and previous and col.docs:
            grown = _grown(settings, root / previous, col, prints, emb, visual, work, mode == "merge")
        if grown is None:
            how = "full"
            engine = Searcher.build(col.docs, embeddings=emb, ranking=ranking,
                                    vector_kind=settings.vector_index, gpu=settings.faiss_gpu,
                                    visual_embeddings=visual,
                                    figure_types=[col.figure_type.get(d.figure_id) for d in col.docs],
                                    type_scores=[col.type_scores.get(d.figure_id) for d in col.docs],
                                    fingerprints=prints,
                                    region_words=[col.region_words.get(d.figure_id, "") for d in col.docs])
        else:
            how, parts = grown
            engine = Searcher(parts.docs, parts.lexical, vectors=parts.vectors, visual=parts.visual,
                              types=_row_types(col, parts.docs),
                              spelling=Spelling(captions=[parts.docs.captions[int(r)] for r in parts.docs.live_rows],
                                                lexical=parts.lexical),
                              ranking=ranking, figure_words=_row_words(col, parts.docs))
        engine.looks = LookIndex.build(engine.docs.figure_ids, looks, engine.docs.deleted, panels)
        if dense and col.docs:
            # a paper's "all figure texts" view is of its figures only (row paper -1 leaves a table
            # out, and a deleted row)
            kinds = engine.types.kinds
            row_paper = engine.paper_ids if kinds is None else np.where(kinds == 0, engine.paper_ids, -1)
            row_paper = np.where(engine.docs.deleted, -1, row_paper)
            engine.papers = paper_index(col, root, engine.lexical(), row_paper, *explicit, progress=progress)
        version = engine.save(root)
    info["index_version"] = version
    tmp = root / f".{DENSE_FILE}.tmp"
    tmp.write_text(json.dumps(info))
    tmp.replace(root / DENSE_FILE)
    lexical = engine.lexical()
    return IndexReport(version, len(col.docs), n_new, time.perf_counter() - t0, how,
                       len(lexical.segments) if isinstance(lexical, SegmentedIndex) else 1)


def _row_types(col: Collection, docs: DocTable) -> TypeIndex:
    """The type index of a grown version's rows (a deleted row: a figure of no type)."""
    live = ~docs.deleted
    fids = docs.figure_ids.tolist()
    kind_of = {d.figure_id: d.kind for d in col.docs}
    return TypeIndex.build([kind_of[f] if ok else "figure" for f, ok in zip(fids, live)],
                           [col.figure_type.get(f) if ok else None for f, ok in zip(fids, live)],
                           [col.type_scores.get(f) if ok else None for f, ok in zip(fids, live)])


def _row_words(col: Collection, docs: DocTable) -> FigureWords:
    """The figure words of a grown version's rows (remade whole: they are small; a deleted row has none)."""
    return FigureWords.build(["" if dead else col.region_words.get(int(f), "")
                              for f, dead in zip(docs.figure_ids.tolist(), docs.deleted.tolist())])


def _same_vectors(part, vectors: np.ndarray | None, docs: DocTable, col: Collection, todo, sample: int = 256) -> bool:
    """Whether a previous version's vector part holds the vectors computed now for the figures
    that did not change (checked on an even sample of them): not when one of the two has none,
    or the model behind them changed (a new trained model, another encoder)."""
    if part is None or vectors is None:
        return part is None and vectors is None
    keep = np.setdiff1d(docs.live_rows, todo.deleted_rows)
    if not len(keep):
        return True
    rows = keep[np.linspace(0, len(keep) - 1, min(sample, len(keep))).astype(np.int64)]
    position = {d.figure_id: i for i, d in enumerate(col.docs)}
    now = l2_normalize(vectors[[position[int(f)] for f in docs.figure_ids[rows]]])
    before = part.vectors_for(rows)
    return before.shape == now.shape and bool(np.abs(before - now).max() < 1e-2)


def _grown(settings: Settings, previous_dir: Path, col: Collection, prints: np.ndarray, emb, visual,
           work: Path, merge_all: bool):
    """("grown" or "merged", growth.Grown) of the previous version plus the collection's changes,
    or None when the previous version cannot be grown: it was written before fingerprints, its
    lexical index scores tf.idf, its vectors are of another model or kind, or most rows changed
    (a rebuild is then as cheap)."""
    previous = Searcher.load(previous_dir, gpu=settings.faiss_gpu, mmap=True, check=False)
    if previous.ranking.first_stage != "bm25":
        return None
    todo = changes(previous.docs, np.array([d.figure_id for d in col.docs], np.int64), prints)
    if todo is None or todo.size > len(col.docs) // 2:
        return None
    if not (_same_vectors(previous.vectors, emb, previous.docs, col, todo)
            and _same_vectors(previous.visual, visual, previous.docs, col, todo)):
        return None
    lexical = segmented_lexical(previous.lexical(), work / "lexical")
    if lexical is None:
        return None
    add = todo.added.tolist()
    parts = grow(previous.docs, lexical,
                 segmented_vectors(previous.vectors, previous_dir / "vectors"),
                 segmented_vectors(previous.visual, previous_dir / "visual"),
                 [col.docs[i] for i in add], prints[todo.added], todo.deleted_rows,
                 None if emb is None else emb[todo.added], None if visual is None else visual[todo.added],
                 settings.vector_index, settings.faiss_gpu)
    if merge_all or len(parts.lexical.segments) > settings.index_max_segments:
        return "merged", merge(parts, settings.vector_index, settings.faiss_gpu)
    return "grown", parts


# ------------------------------------------------------------------ jobs (in-process or Celery)
def embed_new_figures(settings: Settings, progress: bool = False) -> dict:
    """Embed the figures the current trained model has not embedded yet (new papers, changed
    text or crops); the store lives next to the model version."""
    from app.learn.data import load_learn_data
    from app.learn.embed import refresh_store
    from app.learn.registry import DEFAULT_MODEL, load_current

    loaded = load_current(settings.data_dir, getattr(settings, "learned_model", DEFAULT_MODEL) or DEFAULT_MODEL)
    if loaded is None:
        return {"model": None, "embedded": 0}
    t0 = time.perf_counter()
    data = load_learn_data(settings)
    store, n = refresh_store(loaded, data, progress=progress)
    return {"model": loaded.name, "version": loaded.version, "figures": len(store.ids), "embedded": n,
            "seconds": round(time.perf_counter() - t0, 2)}


def refresh_index(settings: Settings, progress: bool = False) -> dict:
    """Index the new and changed figures (a segment, or a rebuild: build_index) and publish a new
    version (running services swap it in)."""
    rep = build_index(settings, dense=settings.dense, progress=progress)
    return {"index_version": rep.version, "figures": rep.n_figures, "encoded": rep.n_encoded,
            "seconds": round(rep.seconds, 2), "how": rep.how, "segments": rep.n_segments}


def reembed_all(settings: Settings, progress: bool = False) -> dict:
    """After a new model version: embed every figure with it, then publish a new index version;
    the old version serves until CURRENT switches, so search has no downtime."""
    emb = embed_new_figures(settings, progress=progress)  # a new version has an empty store: all figures
    out = refresh_index(settings, progress=progress)
    out["embedded"] = emb.get("embedded", 0)
    out["model_version"] = emb.get("version")
    return out
