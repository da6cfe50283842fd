"""OCR-free retrieval of scanned pages and figures: a small vision encoder over page pixels that
predicts topic vectors, so a text query mapped into the same topic space finds scanned figures
without reading them.

Training needs no labels (topic distillation, after Molina's OCR-free retrieval thesis): an LDA
topic model is fitted on the text of born-digital pages, which are rendered as scan-like images.
The page image is cut into word-shaped ink blobs (ink joined horizontally); the pseudo-label of
a blob is the topic profile of the word printed there in the born-digital page. A small network
maps a blob's shape (grey levels on a fixed grid, at a resolution where word shapes are legible)
to the topic space, trained with the circle loss (m = 0.4, gamma = 80) against the other words of
the batch, plus a head that says whether a blob is a topical word at all. It never outputs
characters or words, only topic votes. A scanned figure is the weighted mean vote of the blobs in
its region (graphic + caption) plus its page; a query is mapped with the LDA model alone.
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

DPI = 150  # page resolution seen by the encoder: word shapes stay legible
SHAPE_H, SHAPE_W = 12, 36  # word-blob descriptor (grey levels after area resampling)
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

    def word_vectors(self) -> tuple[dict[str, int], np.ndarray]:
        """Vocabulary and each word's topic embedding (its topic profile in the fitted model)."""
        comp = self.lda.components_.T
        return self.vectorizer.vocabulary_, self.from_mixtures(comp / comp.sum(1, keepdims=True))

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
    """Word-shaped ink blobs of one page image: centres (points), shape descriptors and, once
    encoded, each blob's topic vote and weight."""

    centres: np.ndarray  # (n, 2) x, y in points
    shapes: np.ndarray  # (n, N_FEATURES) descriptors
    votes: np.ndarray | None = None  # (n, n_topics) unit-length topic embedding per blob
    weights: np.ndarray | None = None  # (n,) how likely the blob is a topical word


N_FEATURES = SHAPE_H * SHAPE_W + 2


def page_words(grey: np.ndarray, dpi: int = DPI) -> PageWords:
    """Blobs of ink joined horizontally (letters of a word, not words of a line), each resampled
    by area to a fixed grid (grey levels keep thin strokes) plus its aspect ratio and height
    relative to the page's text; no character is recognised."""
    from app.ingest.scanned.ocr import otsu_threshold

    ink = grey < min(otsu_threshold(grey), 200)
    joined = ndimage.binary_closing(ink, structure=np.ones((1, max(3, round(dpi / 30))), bool))  # gaps < ~2 pt
    labels, _n = ndimage.label(joined)
    objs = ndimage.find_objects(labels)
    heights = np.array([o[0].stop - o[0].start for o in objs]) if objs else np.zeros(0)
    if len(heights) == 0:
        return PageWords(np.zeros((0, 2), np.float32), np.zeros((0, N_FEATURES), np.float32))
    med = float(np.median(heights[heights >= 3])) if (heights >= 3).any() else 3.0
    cents, descs = [], []
    s = dpi / 72.0
    for i, o in enumerate(objs):
        h, w = o[0].stop - o[0].start, o[1].stop - o[1].start
        if h < 0.5 * med or h > 3 * med or w < 2 or w > 40 * med:
            continue  # specks, rules, graphics
        blob = (ink[o] & (labels[o] == i + 1)).astype(np.uint8) * 255
        sample = np.asarray(Image.fromarray(blob).resize((SHAPE_W, SHAPE_H), Image.BOX), np.float32) / 255.0
        descs.append(np.concatenate([sample.ravel(), [np.log(w / h), np.log(h / med)]]).astype(np.float32))
        cents.append(((o[1].start + o[1].stop) / 2 / s, (o[0].start + o[0].stop) / 2 / s))
    return PageWords(np.array(cents, np.float32).reshape(-1, 2), np.array(descs, np.float32).reshape(-1, N_FEATURES))


def _shape_net(n_topics: int):
    """Per-blob network: word shape -> a unit vector in the topic space, and a logit for "this
    blob is a topical word" (not a stop word, number or symbol)."""
    import torch.nn as nn

    class ShapeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(N_FEATURES, 512), nn.ReLU(), nn.Dropout(0.1),
                                      nn.Linear(512, 256), nn.ReLU())
            self.topic = nn.Linear(256, n_topics)
            self.topical = nn.Linear(256, 1)

        def forward(self, x):
            h = self.body(x)
            return nn.functional.normalize(self.topic(h), dim=1), self.topical(h)[:, 0]

    return ShapeNet()


def _pool(pw: PageWords, box) -> np.ndarray:
    """Weighted mean of the topic votes of the blobs whose centre lies in `box` (None: page)."""
    sel = np.ones(len(pw.centres), bool)
    if box is not None:
        x, y = pw.centres[:, 0], pw.centres[:, 1]
        sel = (x >= box[0]) & (x < box[2]) & (y >= box[1]) & (y < box[3])
    if not sel.any():
        return np.zeros(pw.votes.shape[1], np.float32)
    v = (pw.weights[sel, None] * pw.votes[sel]).sum(0)
    return v / max(float(np.linalg.norm(v)), 1e-8)


# ------------------------------------------------------------------ page images
def page_image(page, dpi: int = DPI, clean: bool = True) -> np.ndarray:
    """Grey page at the encoder's resolution, median-filtered (as scanned pages are cleaned)."""
    import pymupdf

    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False, annots=False)
    im = Image.frombytes("L", (pix.width, pix.height), pix.samples)
    return np.asarray(im.filter(ImageFilter.MedianFilter(3)) if clean else im)


def _scan_noise(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Cheap scan look for training pages: noise/JPEG, then the same cleaning as scanned pages,
    so born-digital and scanned pages meet."""
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
    n_blobs: int
    epochs: int
    seconds: float
    final_loss: float


def _training_pages(pdfs: list[Path], max_pages: int, rng: np.random.Generator):
    """(paper index, word blobs of the page, the page's words with boxes) for born-digital pages
    rendered with scan-like noise."""
    import pymupdf

    for gi, path in enumerate(pdfs):
        try:
            with pymupdf.open(path) as doc:
                for pno in range(min(doc.page_count, max_pages)):
                    page = doc[pno]
                    words = page.get_text("words")
                    if len(words) < 50:
                        continue
                    yield gi, page_words(_scan_noise(page_image(page, clean=False), rng)), words
        except Exception:  # noqa: BLE001 - a broken training PDF is skipped
            log.warning("skipping %s", path, exc_info=True)


def _blob_words(pw: PageWords, words) -> list[str]:
    """The PDF word under each blob's centre ('' for none): the blob's pseudo-label source."""
    if not len(pw.centres) or not words:
        return [""] * len(pw.centres)
    boxes = np.array([w[:4] for w in words], np.float32)
    x, y = pw.centres[:, 0:1], pw.centres[:, 1:2]
    hit = (x >= boxes[:, 0]) & (x <= boxes[:, 2]) & (y >= boxes[:, 1]) & (y <= boxes[:, 3])
    first = np.where(hit.any(1), hit.argmax(1), -1)
    return ["" if j < 0 else words[j][4].lower().strip(".,;:!?()[]{}\"'`") for j in first]


def train(pdfs: list[Path], out: Path, n_topics: int = 64, max_pages: int = 4, epochs: int = 8,
          batch: int = 512, seed: int = 0, threads: int = 1) -> TrainReport:
    """Fit the topic space on the pages' text and distil it into the word-shape network with the
    circle loss: each blob of a topical word is pulled to its word's topic profile and pushed
    from the other words of the batch; a second head learns which blobs are topical words."""
    import time

    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    pages = list(_training_pages(pdfs, max_pages, rng))
    space = TopicSpace(n_topics, seed).fit([" ".join(w[4] for w in words) for _g, _pw, words in pages])
    vocab, wvec = space.word_vectors()
    xs, ids = [], []
    for _g, pw, words in pages:
        xs.append(pw.shapes)
        ids += [vocab.get(t, -1) for t in _blob_words(pw, words)]
    x = torch.from_numpy(np.concatenate(xs))
    wid = torch.tensor(ids)
    targets = torch.from_numpy(wvec.astype(np.float32))
    net = _shape_net(n_topics)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=1e-4)
    net.train()
    loss_v = float("nan")
    for _ep in range(epochs):
        order = torch.randperm(len(x))
        for i in range(0, len(x), batch):
            idx = order[i:i + batch]
            emb, logit = net(x[idx])
            w = wid[idx]
            topical = w >= 0
            loss = F.binary_cross_entropy_with_logits(logit, topical.float())
            if int(topical.sum()) >= 4:
                tw = w[topical]
                tb = targets[tw]
                same = (tw[:, None] == tw[None, :]) | ((tb @ tb.T) > 0.9)  # the same word: not a negative
                loss = loss + circle_loss(emb[topical], tb, same)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_v = loss.item()
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"encoder": net.state_dict(), "n_topics": n_topics, "space": pickle.dumps(space)}, out)
    return TrainReport(len(pdfs), len(pages), len(x), epochs, time.perf_counter() - t0, loss_v)


class OcrFreeModel:
    """A trained word-shape network and topic space: figure and query embeddings."""

    def __init__(self, path: Path):
        import torch

        state = torch.load(path, map_location="cpu", weights_only=False)
        self.space: TopicSpace = pickle.loads(state["space"])
        self.net = _shape_net(state["n_topics"])
        self.net.load_state_dict(state["encoder"])
        self.net.eval()

    def feature_map(self, grey: np.ndarray) -> PageWords:
        """The page's word shapes with their topic votes (computed once per page)."""
        import torch

        pw = page_words(grey)
        with torch.no_grad():
            emb, logit = self.net(torch.from_numpy(pw.shapes))
        pw.votes, pw.weights = emb.numpy(), torch.sigmoid(logit).numpy()
        return pw

    def figure_vector(self, pw: PageWords, box, page_w: float, page_h: float) -> np.ndarray:
        """Region (graphic + caption) plus half its page, unit length."""
        v = _pool(pw, box) + 0.5 * _pool(pw, None)
        return v / max(float(np.linalg.norm(v)), 1e-8)

    def query_vectors(self, texts: list[str]) -> np.ndarray:
        return self.space.embed(texts)
