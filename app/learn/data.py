"""One view of a data dir for training and embedding: the figures (caption + mention text, as the
search engine sees them), their papers and citation links, and cached input features.

Feature caches (under data_dir/models/.cache, rebuilt incrementally):
  * MiniLM sentence vectors: the search index's own cache (index/embeddings-minilm128.npz), so the
    frozen transformer runs once per figure text for indexing and training alike;
  * images: uint8 (n, 3, S, S) keyed by figure id + image file size/mtime.

Pixels come from the figure's thumbnail (longest side `thumbnail_px`, 256 by default) when it is
at least PIXEL_MIN_SIDE pixels, else from the full crop: the models see at most 128 px and the
style statistics are computed after shrinking to 256 px anyway, and decoding a 256-px PNG instead
of a 150-dpi crop is what makes embedding new figures fast (scripts/bench_embed.py).
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app.learn.images import DEFAULT_SIZE, STATS_DIM, figure_inputs, image_stats, thumbnails
from app.search.collection import Collection
from app.search.doc_table import FigureDoc


def cache_dir(data_dir: Path) -> Path:
    d = Path(data_dir) / "models" / ".cache"
    d.mkdir(parents=True, exist_ok=True)
    return d


@dataclass
class LearnData:
    data_dir: Path
    docs: list[FigureDoc]
    image_paths: list[str]
    sha_of_paper: dict[int, str]
    neighbours: dict[int, set[int]]
    paper_of: np.ndarray = field(init=False)
    _text: np.ndarray | None = None
    _images: dict[int, np.ndarray] = field(default_factory=dict)
    _stats: np.ndarray | None = None
    _fresh_stats: dict = field(default_factory=dict)
    paper_text: dict[int, str] = field(default_factory=dict)
    _paper: np.ndarray | None = None
    thumb_paths: list[str] = field(default_factory=list)  # aligned with docs; "" = none
    _pixel_paths: list[str] | None = None

    def __post_init__(self):
        self.paper_of = np.array([d.paper_id for d in self.docs], dtype=np.int64)

    def __len__(self):
        return len(self.docs)

    @property
    def texts(self) -> list[str]:
        return [d.text for d in self.docs]

    @property
    def captions(self) -> list[str]:
        return [d.caption for d in self.docs]

    def data_hash(self, exclude_papers=()) -> str:
        """Hash of what training sees: figure ids, texts, papers, links, excluded papers."""
        h = hashlib.sha256()
        for d, p in zip(self.docs, self.image_paths):
            h.update(f"{d.figure_id}|{d.paper_id}|{p}|".encode())
            h.update(d.text.encode("utf-8", "replace"))
            h.update(self.paper_text.get(d.paper_id, "").encode("utf-8", "replace"))
        for a in sorted(self.neighbours):
            h.update(f"{a}:{sorted(self.neighbours[a])}".encode())
        h.update(",".join(sorted(map(str, exclude_papers))).encode())
        return h.hexdigest()[:16]

    # -------------------------------------------------------------- features
    def minilm(self, progress: bool = False) -> np.ndarray:
        if self._text is None:
            from app.search.embeddings import default_text_encoder, embed_docs

            enc, name = default_text_encoder()
            self._text, _ = embed_docs(self.docs, Path(self.data_dir) / "index", enc, name, progress=progress)
        return self._text

    def images(self, size: int = DEFAULT_SIZE, progress: bool = False) -> np.ndarray:
        if size in self._images:
            return self._images[size]
        path = cache_dir(self.data_dir) / f"images-{size}.npz"
        have: dict[tuple[int, str], np.ndarray] = {}
        if path.exists():
            z = np.load(path, allow_pickle=False)
            have = {(int(i), str(k)): a for i, k, a in zip(z["ids"], z["keys"], z["images"])}
        keys, out, changed = [], np.zeros((len(self.docs), 3, size, size), np.uint8), False
        from tqdm import tqdm

        for i, (d, p) in enumerate(tqdm(list(zip(self.docs, self.pixel_paths())), desc=f"images {size}px",
                                        unit="fig", disable=not progress)):
            full = self.resolve(p)
            try:
                st = os.stat(full)
                key = f"{p}|{st.st_size}|{int(st.st_mtime)}"
            except OSError:
                key = f"{p}|missing"
            keys.append(key)
            a = have.get((d.figure_id, key))
            if a is None:  # decode once for both the pixels and the style statistics
                (a, st), changed = figure_inputs(full, size), True
                self._fresh_stats[(d.figure_id, key.replace(f"|{size}px", ""))] = st
            out[i] = a
        if changed or len(have) != len(self.docs):
            tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npz")
            np.savez(tmp, ids=np.array([d.figure_id for d in self.docs], np.int64), keys=np.array(keys), images=out)
            tmp.replace(path)
        self._images[size] = out
        return out

    def paper_minilm(self, progress: bool = False) -> np.ndarray:
        """Per figure: the frozen MiniLM vector of its paper's title + abstract (paper context)."""
        if self._paper is not None:
            return self._paper
        from app.search.embeddings import embed_docs

        papers = sorted(set(self.paper_of.tolist()))
        pdocs = [FigureDoc(p, p, "", self.paper_text.get(p, "")) for p in papers]
        from app.search.encoder import default_encoder

        enc = default_encoder()
        vecs, _ = embed_docs(pdocs, cache_dir(self.data_dir), lambda t: enc.encode(t, max_length=256),
                             "paper-minilm256", progress=progress)
        pos = {p: i for i, p in enumerate(papers)}
        self._paper = vecs[[pos[int(p)] for p in self.paper_of.tolist()]] if len(papers) else np.zeros((0, 384), np.float32)
        return self._paper

    def stats(self, progress: bool = False) -> np.ndarray:
        """Global style statistics (images.image_stats) per figure, cached like the images."""
        if self._stats is not None:
            return self._stats
        path = cache_dir(self.data_dir) / "image-stats.npz"
        have = {}
        if path.exists():
            z = np.load(path, allow_pickle=False)
            if z["stats"].shape[1:] == (STATS_DIM,):
                have = {(int(i), str(k)): a for i, k, a in zip(z["ids"], z["keys"], z["stats"])}
        keys, out, changed = [], np.zeros((len(self.docs), STATS_DIM), np.float32), False
        for i, (d, p) in enumerate(zip(self.docs, self.pixel_paths())):
            key = self._file_key(p)
            keys.append(key)
            a = have.get((d.figure_id, key))
            if a is None:
                a = self._fresh_stats.get((d.figure_id, key))
                if a is None:
                    a = image_stats(self.resolve(p))
                changed = True
            out[i] = a
        if changed or len(have) != len(self.docs):
            tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npz")
            np.savez(tmp, ids=np.array([d.figure_id for d in self.docs], np.int64), keys=np.array(keys), stats=out)
            tmp.replace(path)
        self._stats = out
        return out

    def pixel_paths(self) -> list[str]:
        """Per figure, the file its pixels are read from: the thumbnail when it is big enough."""
        if self._pixel_paths is None:
            out = []
            for i, p in enumerate(self.image_paths):
                t = self.thumb_paths[i] if i < len(self.thumb_paths) else ""
                out.append(t if t and _thumb_ok(self.resolve(t), self.resolve(p)) else p)
            self._pixel_paths = out
        return self._pixel_paths

    def _file_key(self, p: str) -> str:
        try:
            st = os.stat(self.resolve(p))
            return f"{p}|{st.st_size}|{int(st.st_mtime)}"
        except OSError:
            return f"{p}|missing"

    def thumbs(self, size: int = DEFAULT_SIZE) -> np.ndarray:
        return thumbnails(self.images(size))

    def resolve(self, image_path: str) -> Path:
        p = Path(image_path)
        return p if p.is_absolute() else Path(self.data_dir) / p

    def papers_trained_on(self, excluded: set[int]) -> list[str]:
        """SHA-256 of the papers whose figures training sees (all but the excluded paper ids)."""
        return sorted(s for p, s in self.sha_of_paper.items() if s and p not in excluded)

    def rows_of_papers(self, shas: set[str]) -> set[int]:
        """Paper ids of the given sha256s."""
        return {p for p, s in self.sha_of_paper.items() if s and s.lower() in shas}


PIXEL_MIN_SIDE = 256


def _side(path: Path) -> int:
    """Longest side of an image file from its header (0 when unreadable)."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            return max(im.size)
    except Exception:
        return 0


def _thumb_ok(thumb: Path, crop: Path) -> bool:
    """The thumbnail loses nothing the models use: its longest side is >= PIXEL_MIN_SIDE, or it is
    as big as the crop itself (small crops are not shrunk)."""
    t = _side(thumb)
    return t >= PIXEL_MIN_SIDE or (t > 0 and t >= _side(crop))


def load_learn_data(settings, kinds: tuple[str, ...] = ("figure",)) -> LearnData:
    from sqlalchemy import select

    from app.db.schema import Figure, Paper
    from app.db.session import session_scope
    from app.search.collection import load_collection

    with session_scope(settings.db_url) as s:
        col: Collection = load_collection(s, kinds)
        rows = s.execute(select(Figure.id, Figure.image_path, Figure.thumbnail_path)).all()
        paths = {i: p for i, p, _t in rows}
        thumbs = {i: t for i, _p, t in rows}
        ptext = {pid: ". ".join(x for x in (t or "", a or "") if x)
                 for pid, t, a in s.execute(select(Paper.id, Paper.title, Paper.abstract))}
    return LearnData(settings.data_dir, col.docs, [paths.get(d.figure_id) or "" for d in col.docs],
                     dict(col.sha_of_paper), {k: set(v) for k, v in col.neighbours.items()}, paper_text=ptext,
                     thumb_paths=[thumbs.get(d.figure_id) or "" for d in col.docs])
