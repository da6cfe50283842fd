"""OCR-free retrieval of scanned pages and figures: a small vision encoder over page pixels that
predicts word vectors of a text space, so a text query mapped into the same space finds scanned
figures without reading them.

Training needs no labels (distillation of a text model, after Molina's OCR-free retrieval
thesis): a latent semantic space (tf.idf + truncated SVD, 128 dimensions) is fitted on the text
of born-digital pages (the first 6 of each paper), which go through the same scan simulation as
the evaluation's scans (skew, noise, specks, JPEG, rendered again and cleaned). The page image is
cut into word-shaped ink blobs (ink joined horizontally); the pseudo-label of a blob is the vector
of the word printed there in the born-digital page. A small network maps a blob's shape (grey
levels on a fixed grid, at a resolution where word shapes are legible) to the space, trained with
the circle loss (m = 0.4, gamma = 80) against the other words of the batch, plus a head that says
whether a blob is a topical word at all. It never outputs characters or words, only vectors. A
scanned figure is the mean vote of the blobs in its region (graphic + caption), weighted by the
cube of their topical-word probability, plus half its page and its whole paper; a query is the
sum of its words' vectors. (LDA topic profiles as pseudo-labels, with LDA inference for queries,
found fewer figures: short captions get poor topic mixtures.)
"""
from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter
from scipy import ndimage

from app.model_store import at_path, load_arrays, load_tensors, make_meta, publish, save_tensors

log = logging.getLogger(__name__)

DPI = 150  # page resolution seen by the encoder: word shapes stay legible
SHAPE_H, SHAPE_W = 12, 36  # word-blob descriptor (grey levels after area resampling)
MARGIN, GAMMA = 0.4, 80.0
TOPICAL_POWER = 3  # a blob's vote counts by P(topical word)^3: the few sure words outvote the many doubtful blobs
ARTIFACT = "scan-topics"  # the model store's name of a trained encoder + its text space
ENCODER_FILE, SPACE_FILE = "encoder.safetensors", "space.npz"


# ------------------------------------------------------------------ topic space
class TopicSpace:
    """Latent semantic space of the training pages' text (tf.idf + truncated SVD). A word's vector
    is its unit-length row of the SVD's term factors; a text is the sum of its words' vectors, so
    a short caption and the words found in a region meet in the same space."""

    TOKEN = r"(?u)\b[a-zA-Z][a-zA-Z]{2,}\b"

    def __init__(self, n_topics: int = 128, seed: int = 0):
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.vectorizer = TfidfVectorizer(stop_words="english", token_pattern=self.TOKEN, min_df=3, max_df=0.4,
                                          sublinear_tf=True, lowercase=True)
        self.svd = TruncatedSVD(n_topics, random_state=seed)
        self.vocab: dict[str, int] = {}
        self.vectors = np.zeros((0, n_topics), dtype=np.float32)

    @property
    def n_topics(self) -> int:
        return int(self.vectors.shape[1])

    def fit(self, texts: list[str]) -> "TopicSpace":
        if len(texts) < 50:  # a toy collection: keep every word
            self.vectorizer.set_params(min_df=1, max_df=1.0)
        self.svd.fit(self.vectorizer.fit_transform(texts))
        terms = self.svd.components_.T * self.svd.singular_values_[None, :]
        self.vectors = _unit(terms).astype(np.float32)
        self.vocab = {w: int(i) for w, i in self.vectorizer.vocabulary_.items()}
        return self

    def save(self, path: Path) -> None:
        """The words (in row order) and their vectors: all `embed` needs, no pickle."""
        words = sorted(self.vocab, key=self.vocab.get)
        np.savez(path, words=np.array(words, dtype=str), vectors=self.vectors)

    @classmethod
    def load(cls, path: Path) -> "TopicSpace":
        arrays = load_arrays(path)
        space = cls(n_topics=int(arrays["vectors"].shape[1]))
        space.vocab = {str(w): i for i, w in enumerate(arrays["words"].tolist())}
        space.vectors = arrays["vectors"].astype(np.float32)
        return space

    def embed(self, texts: list[str]) -> np.ndarray:
        """Sum of the vectors of each text's words (repeats count), unit length."""
        from sklearn.feature_extraction.text import CountVectorizer

        counts = CountVectorizer(vocabulary=self.vocab, token_pattern=self.TOKEN,
                                 lowercase=True).transform(texts)
        return _unit(np.asarray(counts @ self.vectors, dtype=np.float32))

    def word_vectors(self) -> tuple[dict[str, int], np.ndarray]:
        """Vocabulary and each word's unit vector."""
        return self.vocab, self.vectors


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-8)


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
    """Weighted mean of the topic votes of the blobs whose centre lies in `box` (None: page),
    each weighted by how sure the encoder is that it is a topical word (sharpened)."""
    sel = np.ones(len(pw.centres), bool)
    if box is not None:
        x, y = pw.centres[:, 0], pw.centres[:, 1]
        sel = (x >= box[0]) & (x < box[2]) & (y >= box[1]) & (y < box[3])
    if not sel.any():
        return np.zeros(pw.votes.shape[1], np.float32)
    v = (pw.weights[sel, None] ** TOPICAL_POWER * pw.votes[sel]).sum(0)
    return v / max(float(np.linalg.norm(v)), 1e-8)


# ------------------------------------------------------------------ page images
def page_image(page, dpi: int = DPI, clean: bool = True) -> np.ndarray:
    """Grey page at the encoder's resolution, median-filtered (as scanned pages are cleaned)."""
    import pymupdf

    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False, annots=False)
    im = Image.frombytes("L", (pix.width, pix.height), pix.samples)
    return np.asarray(im.filter(ImageFilter.MedianFilter(3)) if clean else im)


def _scan_like_page(page, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """A training page as a scanned page reaches the encoder: the evaluation's scan simulation
    (grey at 200 dpi, skew, noise, specks, JPEG) placed in a page of its own and rendered again at
    the encoder's resolution and cleaned, so training and scanned word shapes are resampled alike.
    Returns the image and its skew (degrees, counter-clockwise), to find the word under a blob."""
    import pymupdf

    from app.ingest.scanned.simulate import ScanStyle, scan_page_image

    style = ScanStyle()
    skew = float(rng.uniform(-style.max_skew_deg, style.max_skew_deg))
    buf = io.BytesIO()
    scan_page_image(page, style, rng, skew=skew).save(buf, format="JPEG", quality=style.jpeg_quality)
    with pymupdf.open() as sheet:
        sheet.new_page(width=page.rect.width, height=page.rect.height).insert_image(page.rect, stream=buf.getvalue())
        return page_image(sheet[0]), skew


def _unskewed(centres: np.ndarray, skew: float, width: float, height: float) -> np.ndarray:
    """Blob centres (points) of a page turned by `skew` degrees about its centre, turned back."""
    t = np.deg2rad(skew)
    dx, dy = centres[:, 0] - width / 2, centres[:, 1] - height / 2
    return np.stack([dx * np.cos(t) - dy * np.sin(t) + width / 2, dx * np.sin(t) + dy * np.cos(t) + height / 2],
                    1).astype(np.float32)


@dataclass
class TrainReport:
    n_papers: int
    n_pages: int
    n_blobs: int
    epochs: int
    seconds: float
    final_loss: float
    version: str = ""


def _paper_training_pages(path: Path, max_pages: int, seed: int) -> list[tuple[PageWords, list]]:
    """(word blobs, the page's PDF words with boxes) of a born-digital paper's first pages, scanned
    like the evaluation's scans (seeded per page, so results do not depend on the workers); blob
    centres are in the unskewed page, where the PDF's word boxes are."""
    import pymupdf

    out = []
    try:
        with pymupdf.open(path) as doc:
            for pno in range(min(doc.page_count, max_pages)):
                page = doc[pno]
                words = page.get_text("words")
                if len(words) >= 50:
                    grey, skew = _scan_like_page(page, np.random.default_rng([seed, pno]))
                    pw = page_words(grey)
                    pw.centres = _unskewed(pw.centres, skew, page.rect.width, page.rect.height)
                    out.append((pw, words))
    except Exception:  # noqa: BLE001 - a broken training PDF is skipped
        log.warning("skipping %s", path, exc_info=True)
    return out


def _training_pages(pdfs: list[Path], max_pages: int, seed: int, workers: int) -> list[tuple[PageWords, list]]:
    """Word blobs and words of every training page, papers read by `workers` processes."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    args = [(p, max_pages, seed * 100_003 + i) for i, p in enumerate(pdfs)]
    if workers <= 1:
        return [page for a in args for page in _paper_training_pages(*a)]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return [page for pages in pool.map(_paper_training_pages, *zip(*args)) for page in pages]


def _blob_words(pw: PageWords, words) -> list[str]:
    """The PDF word under each blob's centre ('' for none): the blob's pseudo-label source."""
    if not len(pw.centres) or not words:
        return [""] * len(pw.centres)
    boxes = np.array([w[:4] for w in words], np.float32)
    x, y = pw.centres[:, 0:1], pw.centres[:, 1:2]
    hit = (x >= boxes[:, 0]) & (x <= boxes[:, 2]) & (y >= boxes[:, 1]) & (y <= boxes[:, 3])
    first = np.where(hit.any(1), hit.argmax(1), -1)
    return ["" if j < 0 else words[j][4].lower().strip(".,;:!?()[]{}\"'`") for j in first]


def train(pdfs: list[Path], out: Path, n_topics: int = 128, max_pages: int = 6, epochs: int = 8,
          batch: int = 512, seed: int = 0, threads: int = 1, workers: int = 1, keep: int | None = 3) -> TrainReport:
    """Fit the topic space on the pages' text and distil it into the word-shape network with the
    circle loss: each blob of a topical word is pulled to its word's vector and pushed from the
    other words of the batch; a second head learns which blobs are topical words. Pages are
    rendered and cut into blobs by `workers` processes. The model is published as a version of
    `scan-topics` in the model store rooted at `out`."""
    import time

    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    pages = _training_pages(pdfs, max_pages, seed, workers)
    space = TopicSpace(n_topics, seed).fit([" ".join(w[4] for w in words) for _pw, words in pages])
    vocab, wvec = space.word_vectors()
    xs, ids = [], []
    for pw, words in pages:
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
    from app.pdfs import file_sha256

    report = TrainReport(len(pdfs), len(pages), len(x), epochs, time.perf_counter() - t0, loss_v)

    def fill(folder: Path) -> None:
        save_tensors(folder / ENCODER_FILE, net.state_dict())
        space.save(folder / SPACE_FILE)

    meta = make_meta(ARTIFACT, "OCR-free scanned-page encoder (word shapes -> text space) and its text space",
                     papers={file_sha256(p) for p in pdfs},
                     data={"description": f"born-digital pages (first {max_pages} of each paper) through the "
                                          "scan simulation", "pages": len(pages), "word_blobs": len(x)},
                     metrics={"final_loss": round(loss_v, 4)}, n_topics=n_topics, epochs=epochs, seed=seed)
    report.version = publish(ARTIFACT, fill, meta, root=Path(out), keep=keep).version
    return report


class OcrFreeModel:
    """A trained word-shape network and topic space: figure and query embeddings."""

    def __init__(self, path: Path):
        """`path`: a model store root (its CURRENT scan-topics version is used) or a version folder."""
        path = Path(path)
        if (path / ARTIFACT).is_dir():
            path = path / ARTIFACT
        found = at_path(ARTIFACT, path)
        self.space = TopicSpace.load(found.path / SPACE_FILE)
        self.net = _shape_net(self.space.n_topics)
        self.net.load_state_dict(load_tensors(found.path / ENCODER_FILE))
        self.net.eval()

    def feature_map(self, grey: np.ndarray) -> PageWords:
        """The page's word shapes with their topic votes (computed once per page)."""
        import torch

        pw = page_words(grey)
        with torch.no_grad():
            emb, logit = self.net(torch.from_numpy(pw.shapes))
        pw.votes, pw.weights = emb.numpy(), torch.sigmoid(logit).numpy()
        return pw

    @staticmethod
    def paper_vector(pages: list[PageWords]) -> np.ndarray:
        """Weighted mean vote of all the blobs of a paper's pages (what the paper is about)."""
        if not pages:
            return np.zeros(0, np.float32)
        return _pool(PageWords(np.concatenate([p.centres for p in pages]), np.zeros((0, N_FEATURES), np.float32),
                               np.concatenate([p.votes for p in pages]), np.concatenate([p.weights for p in pages])),
                     None)

    def figure_vector(self, pw: PageWords, box, paper: np.ndarray | None = None) -> np.ndarray:
        """Region (graphic + caption) plus half its page plus its paper, unit length: a caption's
        few words rarely single out its region, but they do say which paper it is in (weights
        chosen on papers held out from training, not on the evaluation papers)."""
        v = _pool(pw, box) + 0.5 * _pool(pw, None)
        if paper is not None and len(paper):
            v = v + paper
        return v / max(float(np.linalg.norm(v)), 1e-8)

    def query_vectors(self, texts: list[str]) -> np.ndarray:
        return self.space.embed(texts)
