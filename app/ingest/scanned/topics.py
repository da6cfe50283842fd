"""OCR-free retrieval of scanned pages and figures: a small vision encoder over page pixels that
predicts topic vectors, so a text query mapped into the same topic space finds scanned figures
without reading them.

Training needs no labels (topic distillation, after Molina's OCR-free retrieval thesis): an LDA
topic model is fitted on the text of born-digital pages, which are rendered as (scan-like)
images; the pseudo-label of a region of a page is the topic mixture of the words inside it. The
encoder never recognises characters: it cuts the page image into word-shaped blobs (ink joined
horizontally), quantises each blob's shape against a codebook of word shapes learnt on the
training pages (k-means), and an MLP maps the region's tf-idf histogram of shapes to the topic
space, trained with the circle loss (m = 0.4, gamma = 80) against the pseudo-labels of the batch.
A scanned figure is its region (graphic + caption) plus its page; a query is mapped with the LDA
model alone.
"""
from __future__ import annotations

import io
import logging
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter
from scipy import ndimage

log = logging.getLogger(__name__)

DPI = 120  # page resolution seen by the encoder
SHAPE_H, SHAPE_W = 10, 30  # word-blob descriptor (pixels after resampling)
N_SHAPES = 3000  # codebook size: close to one entry per frequent word shape
MARGIN, GAMMA = 0.4, 80.0


# ------------------------------------------------------------------ topic space
class TopicSpace:
    """LDA over page texts; texts -> centred, unit-length square-root topic mixtures (so cosine
    compares mixtures, not the shared background topic)."""

    def __init__(self, n_topics: int = 32, seed: int = 0):
        from sklearn.decomposition import LatentDirichletAllocation
        from sklearn.feature_extraction.text import CountVectorizer

        self.vectorizer = CountVectorizer(stop_words="english", token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z]{2,}\b",
                                          min_df=3, max_df=0.4, lowercase=True)
        self.lda = LatentDirichletAllocation(n_components=n_topics, learning_method="batch", max_iter=30,
                                             random_state=seed, n_jobs=1)
        self.centre = np.zeros(n_topics, dtype=np.float32)

    @property
    def n_topics(self) -> int:
        return self.lda.n_components

    def fit(self, texts: list[str]) -> "TopicSpace":
        if len(texts) < 50:  # a toy collection: keep every word
            self.vectorizer.set_params(min_df=1, max_df=1.0)
        counts = self.vectorizer.fit_transform(texts)
        self.lda.fit(counts)
        self.centre = np.sqrt(self.lda.transform(counts)).mean(0).astype(np.float32)
        return self

    def mixtures(self, texts: list[str]) -> np.ndarray:
        return self.lda.transform(self.vectorizer.transform(texts)).astype(np.float32)

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.from_mixtures(self.mixtures(texts))

    def from_mixtures(self, mix: np.ndarray) -> np.ndarray:
        v = np.sqrt(mix) - self.centre
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-8)

    def top_words(self, k: int = 8) -> list[list[str]]:
        names = self.vectorizer.get_feature_names_out()
        return [[names[i] for i in np.argsort(-comp)[:k]] for comp in self.lda.components_]


def circle_loss(emb, targets, same_group=None, m: float = MARGIN, gamma: float = GAMMA):
    """Circle loss (Sun et al. 2020) with one positive per row: embedding i vs pseudo-label i,
    all other pseudo-labels of the batch are negatives (except those of `same_group`)."""
    import torch
    import torch.nn.functional as F

    sim = emb @ targets.T  # both unit length
    sp = sim.diagonal()
    ap = torch.clamp_min(1 + m - sp.detach(), 0)
    an = torch.clamp_min(sim.detach() + m, 0)
    logit_p = -gamma * ap * (sp - (1 - m))
    logit_n = gamma * an * (sim - m)
    mask = torch.eye(len(sim), dtype=torch.bool, device=sim.device)
    if same_group is not None:
        mask = mask | same_group
    logit_n = logit_n.masked_fill(mask, float("-inf"))
    return F.softplus(torch.logsumexp(logit_n, dim=1) + logit_p).mean()


# ------------------------------------------------------------------ word shapes
@dataclass
class PageWords:
    """Word-shaped ink blobs of one page image: centres (points) and shape descriptors."""

    centres: np.ndarray  # (n, 2) x, y in points
    shapes: np.ndarray  # (n, SHAPE_H * SHAPE_W + 1) descriptors
    codes: np.ndarray | None = None  # (n,) codebook entries once quantised


def page_words(grey: np.ndarray, dpi: int = DPI) -> PageWords:
    """Blobs of ink joined horizontally (letters of a word, not words of a line), each resampled
    to a fixed grid plus its aspect ratio; no character is recognised."""
    from app.ingest.scanned.ocr import otsu_threshold

    ink = grey < min(otsu_threshold(grey), 200)
    joined = ndimage.binary_closing(ink, structure=np.ones((1, 3), bool))
    labels, _n = ndimage.label(joined)
    objs = ndimage.find_objects(labels)
    heights = np.array([o[0].stop - o[0].start for o in objs]) if objs else np.zeros(0)
    if len(heights) == 0:
        return PageWords(np.zeros((0, 2), np.float32), np.zeros((0, SHAPE_H * SHAPE_W + 1), np.float32))
    med = float(np.median(heights[heights >= 3])) if (heights >= 3).any() else 3.0
    cents, descs = [], []
    rr = (np.arange(SHAPE_H) + 0.5) / SHAPE_H
    cc = (np.arange(SHAPE_W) + 0.5) / SHAPE_W
    s = dpi / 72.0
    for i, o in enumerate(objs):
        h, w = o[0].stop - o[0].start, o[1].stop - o[1].start
        if h < 0.5 * med or h > 3 * med or w < 2 or w > 40 * med:
            continue  # specks, rules, graphics
        blob = ink[o] & (labels[o] == i + 1)
        sample = blob[(rr * h).astype(int)][:, (cc * w).astype(int)]
        descs.append(np.append(sample.ravel().astype(np.float32), np.float32(np.log(w / h))))
        cents.append(((o[1].start + o[1].stop) / 2 / s, (o[0].start + o[0].stop) / 2 / s))
    return PageWords(np.array(cents, np.float32).reshape(-1, 2), np.array(descs, np.float32).reshape(-1, SHAPE_H * SHAPE_W + 1))


def _histogram(pw: PageWords, box, n_codes: int) -> np.ndarray:
    if box is None:
        sel = pw.codes
    else:
        x, y = pw.centres[:, 0], pw.centres[:, 1]
        sel = pw.codes[(x >= box[0]) & (x < box[2]) & (y >= box[1]) & (y < box[3])]
    return np.bincount(sel, minlength=n_codes).astype(np.float32)


def _mlp(n_in: int, n_topics: int):
    """Linear: each word shape votes for topics (generalises to unseen papers better than an MLP)."""
    import torch.nn as nn

    return nn.Sequential(nn.Dropout(0.3), nn.Linear(n_in, n_topics))


# ------------------------------------------------------------------ page images
def page_image(page, dpi: int = DPI) -> np.ndarray:
    """Grey page at the encoder's resolution, median-filtered (as scanned pages are cleaned)."""
    import pymupdf

    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False, annots=False)
    im = Image.frombytes("L", (pix.width, pix.height), pix.samples).filter(ImageFilter.MedianFilter(3))
    return np.asarray(im)


def _scan_noise(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Cheap scan look for training crops: blur/noise/JPEG, so born-digital and scanned pages meet."""
    x = a.astype(np.float32) + rng.normal(0, rng.uniform(0, 12), a.shape)
    im = Image.fromarray(np.clip(x, 0, 255).astype(np.uint8))
    if rng.random() < 0.5:
        buf = io.BytesIO()
        im.save(buf, format="JPEG", quality=int(rng.integers(40, 90)))
        im = Image.open(io.BytesIO(buf.getvalue()))
    return np.asarray(im.filter(ImageFilter.MedianFilter(3)))


@dataclass
class TrainReport:
    n_papers: int
    n_pages: int
    n_regions: int
    epochs: int
    seconds: float
    final_loss: float


def _training_pages(pdfs: list[Path], max_pages: int, rng: np.random.Generator):
    """(words of the page, word boxes with text, page text) for born-digital pages rendered with
    scan-like noise."""
    import pymupdf

    for gi, path in enumerate(pdfs):
        try:
            with pymupdf.open(path) as doc:
                for pno in range(min(doc.page_count, max_pages)):
                    page = doc[pno]
                    words = page.get_text("words")
                    if len(words) < 50:
                        continue
                    grey = _scan_noise(page_image(page), rng)
                    yield gi, page_words(grey), words, page.rect.width, page.rect.height
        except Exception:  # noqa: BLE001 - a broken training PDF is skipped
            log.warning("skipping %s", path, exc_info=True)


def train(pdfs: list[Path], out: Path, n_topics: int = 32, max_pages: int = 8, per_page: int = 12,
          epochs: int = 30, batch: int = 64, seed: int = 0, threads: int = 1) -> TrainReport:
    """Fit the topic space on the pages' text, the shape codebook on their word blobs, and distil
    the topics into the encoder with the circle loss; save to `out`."""
    import time

    import torch
    from sklearn.cluster import MiniBatchKMeans

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    pages = list(_training_pages(pdfs, max_pages, rng))
    space = TopicSpace(n_topics, seed).fit([" ".join(w[4] for w in words) for _g, _pw, words, _w, _h in pages])
    sample = np.concatenate([pw.shapes[rng.permutation(len(pw.shapes))[:400]] for _g, pw, *_ in pages])
    n_codes = int(min(N_SHAPES, max(8, len(sample) // 20)))
    codebook = MiniBatchKMeans(n_clusters=n_codes, random_state=seed, n_init=1, batch_size=8192).fit(sample)
    hists, texts, groups = [], [], []
    for g, pw, words, w, h in pages:
        pw.codes = codebook.predict(pw.shapes) if len(pw.shapes) else np.zeros(0, np.int64)
        wx = np.array([(a[0] + a[2]) / 2 for a in words])
        wy = np.array([(a[1] + a[3]) / 2 for a in words])
        boxes = [None] + [_random_box(rng, w, h) for _ in range(per_page)]
        for box in boxes:
            inside = np.ones(len(words), bool) if box is None else \
                (wx >= box[0]) & (wx < box[2]) & (wy >= box[1]) & (wy < box[3])
            if inside.sum() < 15:
                continue
            hists.append(_histogram(pw, box, n_codes))
            texts.append(" ".join(words[i][4] for i in np.nonzero(inside)[0]))
            groups.append(g)
    counts = np.stack(hists)
    idf = np.log((1 + len(counts)) / (1 + (counts > 0).sum(0))).astype(np.float32) + 1
    x = torch.from_numpy(_tfidf(counts, idf))
    targets = torch.from_numpy(space.embed(texts))
    g = torch.tensor(groups)
    net = _mlp(n_codes, n_topics)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=1e-3)
    net.train()
    loss_v = float("nan")
    for _ep in range(epochs):
        order = torch.randperm(len(x))
        for i in range(0, len(x), batch):
            idx = order[i:i + batch]
            if len(idx) < 4:
                continue
            emb = torch.nn.functional.normalize(net(x[idx]), dim=1)
            tb = targets[idx]
            same = ((tb @ tb.T) > 0.9) | (g[idx][:, None] == g[idx][None, :])  # same paper: not a negative
            loss = circle_loss(emb, tb, same)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_v = loss.item()
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"encoder": net.state_dict(), "n_topics": n_topics, "n_codes": n_codes, "idf": idf,
                "space": pickle.dumps(space), "codebook": pickle.dumps(codebook)}, out)
    return TrainReport(len(pdfs), len(pages), len(x), epochs, time.perf_counter() - t0, loss_v)


def _random_box(rng: np.random.Generator, w: float, h: float) -> tuple[float, float, float, float]:
    """A region the size of a figure or a few paragraphs."""
    bw, bh = rng.uniform(0.3, 1.0) * w, rng.uniform(0.12, 0.45) * h
    x0, y0 = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
    return (x0, y0, x0 + bw, y0 + bh)


def _tfidf(counts: np.ndarray, idf: np.ndarray) -> np.ndarray:
    v = np.log1p(counts) * idf
    return (v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-8)).astype(np.float32)


class OcrFreeModel:
    """A trained encoder (shape codebook + MLP) and topic space: figure and query embeddings."""

    def __init__(self, path: Path):
        import torch

        state = torch.load(path, map_location="cpu", weights_only=False)
        self.space: TopicSpace = pickle.loads(state["space"])
        self.codebook = pickle.loads(state["codebook"])
        self.n_codes, self.idf = state["n_codes"], state["idf"]
        self.net = _mlp(self.n_codes, state["n_topics"])
        self.net.load_state_dict(state["encoder"])
        self.net.eval()

    def feature_map(self, grey: np.ndarray) -> PageWords:
        """The page's word shapes, quantised (computed once per page)."""
        pw = page_words(grey)
        pw.codes = self.codebook.predict(pw.shapes) if len(pw.shapes) else np.zeros(0, np.int64)
        return pw

    def embed(self, pw: PageWords, box) -> np.ndarray:
        import torch

        x = torch.from_numpy(_tfidf(_histogram(pw, box, self.n_codes)[None], self.idf))
        with torch.no_grad():
            v = self.net(x)[0].numpy()
        return v / max(float(np.linalg.norm(v)), 1e-8)

    def figure_vector(self, pw: PageWords, box, page_w: float, page_h: float) -> np.ndarray:
        """Region (graphic + caption) plus its page, unit length."""
        v = self.embed(pw, box) + 0.5 * self.embed(pw, None)
        return v / max(float(np.linalg.norm(v)), 1e-8)

    def query_vectors(self, texts: list[str]) -> np.ndarray:
        return self.space.embed(texts)
