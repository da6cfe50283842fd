"""OCR-free retrieval of scanned pages and figures: a small CNN over page pixels that predicts
topic vectors, so a text query mapped into the same topic space finds scanned figures without
reading them.

Training needs no labels (topic distillation, after Molina's OCR-free retrieval thesis): an LDA
topic model is fitted on the text of born-digital pages; crops of those pages rendered as images
are the inputs and the topic mixture of the words inside each crop is the pseudo-label. The
encoder is trained with the circle loss (m = 0.4, gamma = 80) between its crop embeddings and the
pseudo-labels of the batch. A page is embedded fully convolutionally; a figure is the mean of
the embedding cells over its region (graphic + caption) plus its page's embedding. Queries are
mapped with the LDA model only.
"""
from __future__ import annotations

import io
import logging
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter

log = logging.getLogger(__name__)

DPI = 100  # page resolution seen by the encoder
CROP_PX = 192
MIN_CROP_WORDS = 15
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


# ------------------------------------------------------------------ encoder
def _encoder(n_topics: int):
    import torch.nn as nn

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    # 5 stride-2 blocks: one cell = 32 px = ~23 pt at 100 dpi (about two text lines)
    return nn.Sequential(block(1, 16), block(16, 32), block(32, 64), block(64, 96), block(96, 128),
                         nn.Conv2d(128, n_topics, 1))


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
    n_crops: int
    epochs: int
    seconds: float
    final_loss: float


def _crops_from_pdf(path: Path, max_pages: int, per_page: int, rng: np.random.Generator):
    import pymupdf

    out_imgs, out_texts, page_texts = [], [], []
    with pymupdf.open(path) as doc:
        for pno in range(min(doc.page_count, max_pages)):
            page = doc[pno]
            words = page.get_text("words")
            if len(words) < 50:
                continue
            page_texts.append(" ".join(w[4] for w in words))
            img = page_image(page)
            s = DPI / 72
            h, w = img.shape
            if h < CROP_PX or w < CROP_PX:
                continue
            wx = np.array([(ww[0] + ww[2]) / 2 * s for ww in words])
            wy = np.array([(ww[1] + ww[3]) / 2 * s for ww in words])
            for _ in range(per_page * 3):
                if len(out_imgs) >= per_page * (len(page_texts)):
                    break
                x0 = int(rng.integers(0, w - CROP_PX + 1))
                y0 = int(rng.integers(0, h - CROP_PX + 1))
                inside = (wx >= x0) & (wx < x0 + CROP_PX) & (wy >= y0) & (wy < y0 + CROP_PX)
                if inside.sum() < MIN_CROP_WORDS:
                    continue
                out_imgs.append(_scan_noise(img[y0:y0 + CROP_PX, x0:x0 + CROP_PX], rng))
                out_texts.append(" ".join(words[i][4] for i in np.nonzero(inside)[0]))
    return out_imgs, out_texts, page_texts


def train(pdfs: list[Path], out: Path, n_topics: int = 32, max_pages: int = 8, per_page: int = 4,
          epochs: int = 3, batch: int = 48, seed: int = 0, threads: int = 1) -> TrainReport:
    """Fit the topic space on the pages' text, distil it into the page encoder; save to `out`."""
    import time

    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    imgs, texts, pages, groups = [], [], [], []
    for gi, p in enumerate(pdfs):
        try:
            ci, ct, pt = _crops_from_pdf(p, max_pages, per_page, rng)
        except Exception:  # noqa: BLE001 - a broken training PDF is skipped
            log.warning("skipping %s", p, exc_info=True)
            continue
        imgs += ci
        texts += ct
        pages += pt
        groups += [gi] * len(ci)
    space = TopicSpace(n_topics, seed).fit(pages)
    targets = torch.from_numpy(space.embed(texts))
    x = torch.from_numpy(np.stack(imgs)).unsqueeze(1)
    g = torch.tensor(groups)
    net = _encoder(n_topics)
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=1e-4)
    steps = epochs * ((len(x) + batch - 1) // batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=max(steps, 1))
    net.train()
    loss_v = float("nan")
    for _ep in range(epochs):
        order = torch.randperm(len(x))
        for i in range(0, len(x), batch):
            idx = order[i:i + batch]
            if len(idx) < 4:
                continue
            xb = 1.0 - x[idx].float() / 255.0  # ink = 1
            emb = torch.nn.functional.normalize(net(xb).mean((2, 3)), dim=1)
            tb = targets[idx]
            same = (tb @ tb.T) > 0.9  # near-identical pseudo-labels are not negatives
            loss = circle_loss(emb, tb, same)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            loss_v = loss.item()
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"encoder": net.state_dict(), "n_topics": n_topics, "space": pickle.dumps(space)}, out)
    return TrainReport(len(pdfs), len(pages), len(x), epochs, time.perf_counter() - t0, loss_v)


class OcrFreeModel:
    """A trained page encoder + topic space: page feature maps, figure and query embeddings."""

    def __init__(self, path: Path):
        import torch

        state = torch.load(path, map_location="cpu", weights_only=False)
        self.space: TopicSpace = pickle.loads(state["space"])
        self.net = _encoder(state["n_topics"])
        self.net.load_state_dict(state["encoder"])
        self.net.eval()

    def feature_map(self, grey: np.ndarray) -> np.ndarray:
        """(H/32, W/32, K) unit-length cell embeddings of a page image at DPI."""
        import torch

        with torch.no_grad():
            x = 1.0 - torch.from_numpy(np.array(grey, dtype=np.float32))[None, None] / 255.0
            f = self.net(x)[0].permute(1, 2, 0).numpy()
        return f

    @staticmethod
    def pool(fmap: np.ndarray, box: tuple[float, float, float, float] | None, page_w: float, page_h: float) -> np.ndarray:
        """Unit-length mean of the cells inside `box` (points) or of the whole page."""
        h, w = fmap.shape[:2]
        if box is None:
            cells = fmap.reshape(-1, fmap.shape[2])
        else:
            c0 = int(np.clip(np.floor(box[0] / page_w * w), 0, w - 1))
            c1 = int(np.clip(np.ceil(box[2] / page_w * w), c0 + 1, w))
            r0 = int(np.clip(np.floor(box[1] / page_h * h), 0, h - 1))
            r1 = int(np.clip(np.ceil(box[3] / page_h * h), r0 + 1, h))
            cells = fmap[r0:r1, c0:c1].reshape(-1, fmap.shape[2])
        v = cells.mean(0)
        return v / max(float(np.linalg.norm(v)), 1e-8)

    def figure_vector(self, fmap: np.ndarray, box, page_w: float, page_h: float) -> np.ndarray:
        v = self.pool(fmap, box, page_w, page_h) + 0.5 * self.pool(fmap, None, page_w, page_h)
        return v / max(float(np.linalg.norm(v)), 1e-8)

    def query_vectors(self, texts: list[str]) -> np.ndarray:
        return self.space.embed(texts)
