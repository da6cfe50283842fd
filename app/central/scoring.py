"""Central-figure scores: content (bi-encoder, tf.idf) + position, figure type and crop quality,
combined linearly; the job that stores `Figure.central_score` / `Figure.central_rank`.

Content scores of a paper (figures of kind "figure" only):
  model  sum over the abstract's sentences (at most `central_max_sentences`) of the content model's
         pair score: the cosine between the sentence and the caption under the fine-tuned
         bi-encoder (models/central.py) plus `lexical_weight` x their tf.idf cosine (a hybrid: the
         weight is fitted on dev papers after training, meta.json; 0 = the bi-encoder alone)
  tfidf  cosine between the tf.idf vectors of the whole abstract and the caption (baselines.py)

Combined score = w . x, a linear model over per-figure features (FEATURES); content features are
standardised within the paper (z-scores), so the weights do not depend on the abstract length:
  model          z-score of the summed bi-encoder score (0 when no trained model is available)
  tfidf          z-score of the tf.idf cosine
  first          1 for the paper's first figure (lowest number)
  order          figure index / (n - 1): 0 = first, 1 = last
  page           (page - 1) / (n_pages - 1): where in the paper the figure sits
  area           figure area (bbox, else crop pixels) / the largest figure area of the paper
  caption_kind   +1 when the caption describes a diagram (architecture, overview, pipeline, ...),
                 -1 when it describes results (performance, comparison, effect of, ...), else 0
  mentions       log(1 + mentions in the body) / log(1 + the most mentioned figure's count)
  name           1 when the caption names the paper's own method: the title's short prefix before
                 ":", an acronym in parentheses in the title, or a name the abstract introduces
                 ("we propose ... called X", used at least twice in the abstract)
  diagram        the pixel classifier's diagram score of the crop (app/vision; 0 when unclassified)
  early_diagram  diagram * (1 - page position): an overview diagram in the first pages is the
                 typical visual summary of a paper
  panels         min(panels, 6) / 6: compound figures are mostly grids of result plots
A figure whose crop is not a real graphic (`crop_quality` other than "ok": text only, tiny, page
number, caption without a region) is never central: it is ranked after every good crop.

Default weights (shipped as the model store's `central-weights`, app/central/defaults.py) were
fitted on the first hand-labelled gold set; where they came from and how to refit them is written
there. `eval-central --gold` reports the combined
score with weights fitted leave-one-paper-out on the other gold papers (pulled towards zero, not
towards the defaults), so its numbers never come from weights fitted on the paper they rank.
`eval-central --save-weights` publishes the weights fitted on all gold papers as a data dir
`central-weights` version, which the scorer then uses instead of the shipped ones.

Without a trained model (or with `central_use_model=False`) the scorer is the non-learned
fallback: the same features with the model weight set to zero; the product always works.
"""
from __future__ import annotations

import json
import logging
import math
import re
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from app.central.baselines import Tfidf, fit_tfidf_for_papers
from app.central.data import PaperInfo, Segmenter, abstract_sentences, load_papers
from app.central.defaults import WEIGHTS_ARTIFACT, WEIGHTS_FILE, default_weights
from app.model_store import Artifact, at_path, resolve
from app.settings import Settings

log = logging.getLogger(__name__)

FEATURES = ("model", "tfidf", "first", "order", "page", "area", "caption_kind", "mentions", "name",
            "diagram", "early_diagram", "panels")
MODEL_ARTIFACT = "central"  # the model store's name of the content model
BAD_CROP_PENALTY = 1000.0  # subtracted from the score of a figure whose crop is not a real graphic

_DIAGRAM_RE = re.compile(
    r"\b(architecture|framework|overview|illustrat\w*|pipeline|structure|workflow|schematic|diagram|"
    r"overall|proposed|system|procedure|design|flowchart|module|our (?:model|method|approach))\b", re.I)
_RESULT_RE = re.compile(
    r"\b(performance|results?|comparisons?|compared|accuracy|error|effects?|impacts?|influence|versus|"
    r"vs\.?|varying|ablation|sensitivity|convergence|curves?|histogram|distribution|"
    r"visuali[sz]ation|runtime|examples?|samples?|statistics|improvement)\b", re.I)
_ACRO = r"[A-Z][A-Za-z0-9\-]*[A-Z][A-Za-z0-9\-]*"
_INTRO_RE = re.compile(r"\b(?:propose[sd]?|present(?:s|ed)?|introduce[sd]?|called|named|dubbed|termed|coined)\s+"
                       r"(?:[\w\-]+\s+){0,4}?\(?(" + _ACRO + r")\)?", re.S)
_PAREN_ACRO_RE = re.compile(r"\((" + _ACRO + r")\)")


def method_names(paper: PaperInfo) -> set[str]:
    """Names the paper gives its own method (see `name` in the module doc); case-sensitive."""
    names: set[str] = set()
    title = paper.title or ""
    if ":" in title:
        head = title.split(":", 1)[0].strip()
        if 0 < len(head.split()) <= 3 and len(head) >= 2:
            names.add(head)
    names.update(_PAREN_ACRO_RE.findall(title))
    abstract = paper.abstract or ""
    names.update(n for n in _INTRO_RE.findall(abstract) if len(re.findall(re.escape(n), abstract)) >= 2)
    return {n for n in names if len(n) >= 2}


def names_in(text: str, names: set[str]) -> float:
    return 1.0 if any(re.search(r"(?<![A-Za-z0-9])" + re.escape(n) + r"(?![A-Za-z])", text or "") for n in names) else 0.0


def caption_type(text: str) -> float:
    d = bool(_DIAGRAM_RE.search(text or ""))
    r = bool(_RESULT_RE.search(text or ""))
    return 1.0 if d and not r else (-1.0 if r and not d else 0.0)


def _z(x: Sequence[float]) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.size < 2:
        return np.zeros_like(a)
    sd = a.std()
    return (a - a.mean()) / sd if sd > 1e-9 else np.zeros_like(a)


def _area(f) -> float:
    if f.bbox and len(f.bbox) == 4:
        x0, y0, x1, y1 = f.bbox
        a = abs(x1 - x0) * abs(y1 - y0)
        if a > 0:
            return a
    return float(max(f.width, 0) * max(f.height, 0))


def _diagram_score(f) -> float:
    return max([float(t.get("score", 0.0)) for t in f.figure_types or [] if t.get("type") == "diagram"] + [0.0])


def position_features(paper: PaperInfo, numbers: Sequence[int] | None = None) -> np.ndarray:
    """(n, len(FEATURES) - 2) non-content features (first ... panels) for `numbers` (default all)."""
    figs = {f.number: f for f in paper.figures}
    allnums = sorted(figs)
    nums = list(numbers) if numbers is not None else allnums
    n_all = len(allnums)
    pages = max([paper.n_pages] + [figs[k].page for k in allnums] + [1])
    max_area = max([_area(figs[k]) for k in allnums] + [0.0])
    max_ment = max([figs[k].n_mentions for k in allnums] + [0])
    names = method_names(paper)
    rows = []
    for k in nums:
        f = figs[k]
        idx = allnums.index(k)
        page_pos = (f.page - 1) / (pages - 1) if pages > 1 else 0.0
        diagram = _diagram_score(f)
        rows.append([
            1.0 if idx == 0 else 0.0,
            idx / (n_all - 1) if n_all > 1 else 0.0,
            page_pos,
            _area(f) / max_area if max_area > 0 else 0.0,
            caption_type(f.text or f.caption),
            math.log1p(f.n_mentions) / math.log1p(max_ment) if max_ment > 0 else 0.0,
            names_in(f.text or f.caption, names),
            diagram,
            diagram * (1.0 - page_pos),
            min(f.n_panels, 6) / 6.0,
        ])
    return np.asarray(rows, dtype=np.float64).reshape(len(nums), len(FEATURES) - 2)


def crop_ok(paper: PaperInfo, numbers: Sequence[int] | None = None) -> np.ndarray:
    """True where the figure's crop is a real graphic (crop_quality "ok")."""
    figs = {f.number: f for f in paper.figures}
    nums = list(numbers) if numbers is not None else sorted(figs)
    return np.asarray([figs[k].crop_quality == "ok" for k in nums], dtype=bool)


def feature_matrix(paper: PaperInfo, model_scores: Sequence[float] | None, tfidf_scores: Sequence[float],
                   numbers: Sequence[int] | None = None) -> np.ndarray:
    """(n, len(FEATURES)) for `numbers` (default: all figures); content scores given in that order."""
    n = len(numbers) if numbers is not None else len(paper.figures)
    m = _z(model_scores) if model_scores is not None else np.zeros(n)
    t = _z(tfidf_scores)
    return np.column_stack([m, t, position_features(paper, numbers)])


def weight_vector(weights: dict[str, float]) -> np.ndarray:
    return np.asarray([float(weights.get(k, 0.0)) for k in FEATURES])


def combine(X: np.ndarray, weights: dict[str, float], ok: np.ndarray | None = None) -> np.ndarray:
    """w . x per figure; figures with a bad crop (ok False) sink below every good one."""
    s = X @ weight_vector(weights)
    if ok is not None:
        s = s - BAD_CROP_PENALTY * (~ok)
    return s


# ---------------------------------------------------------------------------------------------
# fitting the combination on gold labels


def _target(numbers: Sequence[int], gold: Sequence[int]) -> np.ndarray:
    gains = {k: float(len(gold) - i) for i, k in enumerate(gold)}
    t = np.asarray([gains.get(k, 0.0) for k in numbers])
    return t / t.sum() if t.sum() > 0 else t


def fit_weights(items: list[tuple[np.ndarray, Sequence[int], Sequence[int]]], prior: dict[str, float],
                l2: float = 1.0, use: Sequence[str] = FEATURES) -> dict[str, float]:
    """Fit w on [(X, numbers, gold)]: softmax cross-entropy against the graded gold distribution,
    + l2 * ||w - prior||^2. Features not in `use` stay at their prior value."""
    from scipy.optimize import minimize

    w0 = weight_vector(prior)
    mask = np.asarray([k in use for k in FEATURES])
    data = [(X, _target(nums, gold)) for X, nums, gold in items if _target(nums, gold).sum() > 0]
    if not data:
        return dict(prior)

    def loss(v):
        w = w0.copy()
        w[mask] = v
        total, grad = 0.0, np.zeros_like(w)
        for X, t in data:
            s = X @ w
            s = s - s.max()
            p = np.exp(s) / np.exp(s).sum()
            total -= float(t @ np.log(p + 1e-12))
            grad += X.T @ (p - t)
        d = w - w0
        total += l2 * float(d @ d)
        grad += 2 * l2 * d
        return total / len(data), grad[mask] / len(data)

    res = minimize(loss, w0[mask], jac=True, method="L-BFGS-B")
    w = w0.copy()
    w[mask] = res.x
    return {k: round(float(v), 4) for k, v in zip(FEATURES, w)}


# ---------------------------------------------------------------------------------------------
# the scorer


def central_model(settings: Settings) -> Artifact | None:
    """The trained content model in use: the folder `central_model_dir` names, else the data dir's
    `central` version in the model store; None when none is trained."""
    if settings.central_model_dir:
        path = Path(settings.central_model_dir)
        return at_path(MODEL_ARTIFACT, path) if path.exists() else None
    return resolve(MODEL_ARTIFACT, settings.data_dir, shipped=False)


def stored_weights(settings: Settings) -> dict[str, float] | None:
    """Combined-score weights fitted by `eval-central --save-weights` for this data dir (the
    store's `central-weights`; older saves kept them next to the model), or None: the shipped
    defaults apply."""
    found = resolve(WEIGHTS_ARTIFACT, settings.data_dir, shipped=False)
    if found is not None:
        wf = found.path / WEIGHTS_FILE
    else:
        model = central_model(settings)
        wf = model.path / WEIGHTS_FILE if model is not None else None
    if wf is None or not wf.is_file():
        return None
    try:
        return json.loads(wf.read_text())["weights"]
    except Exception:  # pragma: no cover - a broken file must not break scoring
        log.warning("ignoring unreadable %s", wf)
        return None


class CentralScorer:
    """Scores the figures of papers: content scores, features, combined score."""

    def __init__(self, tfidf: Tfidf, model=None, weights: dict[str, float] | None = None,
                 max_sentences: int = 16, segmenter: Segmenter | None = None):
        self.tfidf = tfidf
        self.model = model
        self.weights = dict(weights or default_weights())
        if model is None:
            self.weights["model"] = 0.0
        self.max_sentences = max_sentences
        self.segmenter = segmenter

    @classmethod
    def from_settings(cls, settings: Settings, papers: Sequence[PaperInfo] | None = None) -> "CentralScorer":
        """Model from the model store when present (and enabled), combined weights from the store
        when fitted, tf.idf/segmenter from the collection (or `papers`)."""
        model = load_model(settings) if settings.central_use_model else None
        weights = stored_weights(settings)
        if papers is None:
            seg, tfidf = collection_resources(settings.db_url)
        else:
            seg, tfidf = None, fit_tfidf_for_papers(papers)
        return cls(tfidf, model=model, weights=weights, max_sentences=settings.central_max_sentences,
                   segmenter=seg)

    @property
    def uses_model(self) -> bool:
        return self.model is not None

    @property
    def lexical_weight(self) -> float:
        """Weight of the tf.idf cosine in the content model's pair score (meta.json `lexical_weight`,
        fitted on dev papers after training; 0 = the bi-encoder's cosine alone)."""
        return float(self.model.meta.get("lexical_weight", 0.0)) if self.model is not None else 0.0

    def pair_scores(self, sentences: Sequence[str], captions: Sequence[str]) -> list[float]:
        """Content model score of each (sentences[i], captions[i]) pair: bi-encoder cosine plus
        `lexical_weight` x tf.idf cosine (the hybrid: rare words shared by both texts count too)."""
        cos = self.model.score(sentences, captions)
        w = self.lexical_weight
        if not w:
            return cos
        return [c + w * t for c, t in zip(cos, self.tfidf.pair_scores(sentences, captions))]

    def content_scores(self, paper: PaperInfo) -> dict[str, list[float] | None]:
        """Per figure: `tfidf` (abstract vs caption), `model` (content model: pair scores summed over
        the abstract's sentences) and `bi_encoder` (the same sum of the cosines alone)."""
        caps = [f.text for f in paper.figures]
        out: dict[str, list[float] | None] = {"tfidf": self.tfidf.scores(paper.abstract or paper.title, caps),
                                              "model": None, "bi_encoder": None}
        if self.model is not None and caps:
            sents = abstract_sentences(paper.abstract, self.max_sentences) or ([paper.title] if paper.title else [])
            if sents:
                cos = self.model.score_matrix(sents, caps)
                out["bi_encoder"] = cos.sum(axis=0).tolist()
                w = self.lexical_weight
                pair = cos + w * np.asarray(self.tfidf.matrix(sents, caps)) if w else cos
                out["model"] = pair.sum(axis=0).tolist()
        return out

    def combined(self, paper: PaperInfo, content: dict | None = None) -> list[float]:
        content = content or self.content_scores(paper)
        X = feature_matrix(paper, content["model"], content["tfidf"])
        return combine(X, self.weights, crop_ok(paper)).tolist()


_MODEL_CACHE: dict[tuple, object] = {}
_MODEL_LOCK = threading.Lock()


def load_model(settings: Settings):
    """The trained bi-encoder, or None (no model yet). Cached per directory and file mtime."""
    from models.central import META_FILE, load_meta

    found = central_model(settings)
    if found is None or load_meta(found.path) is None:
        return None
    d = found.path
    key = (str(d), (d / META_FILE).stat().st_mtime)
    with _MODEL_LOCK:
        if key not in _MODEL_CACHE:
            import torch

            from models.central import CentralBiEncoder

            if not torch.cuda.is_available():
                import os

                torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", 0)) or (os.cpu_count() or 1)))
            _MODEL_CACHE.clear()
            _MODEL_CACHE[key] = CentralBiEncoder.load(d)
        return _MODEL_CACHE[key]


def collection_resources(db_url: str, limit: int = 20000) -> tuple[Segmenter, Tfidf]:
    """Segmenter vocabulary and tf.idf document frequencies from (at most `limit` of) the
    collection's abstracts and captions."""
    from sqlalchemy import select

    from app.central.data import clean_caption
    from app.db.schema import Figure, Paper
    from app.db.session import session_scope

    with session_scope(db_url) as s:
        abstracts = [a for a in s.scalars(select(Paper.abstract).order_by(Paper.id.desc()).limit(limit)) if a]
        captions = [c for c in s.scalars(select(Figure.caption).where(Figure.kind == "figure")
                                         .order_by(Figure.id.desc()).limit(limit * 8)) if c]
    seg = Segmenter.from_texts(abstracts)
    tfidf = Tfidf.fit(abstracts + [clean_caption(c, seg) for c in captions])
    return seg, tfidf


def score_papers(settings: Settings, paper_ids: Sequence[int] | None = None, scorer: CentralScorer | None = None,
                 progress: bool = False) -> dict:
    """Compute and store central_score / central_rank (1 = central) for the figures (kind "figure")
    of the given papers (default: all papers with status ok). Returns counts."""
    from sqlalchemy import select

    from app.db.schema import Figure
    from app.db.session import session_scope

    scorer = scorer or CentralScorer.from_settings(settings)
    papers = load_papers(settings.db_url, paper_ids, segmenter=scorer.segmenter or True)
    results: dict[int, tuple[float, int]] = {}
    it = papers
    if progress:
        from tqdm import tqdm

        it = tqdm(papers, desc="score-central", unit="paper", dynamic_ncols=True)
    for p in it:
        if not p.figures:
            continue
        scores = scorer.combined(p)
        order = sorted(range(len(p.figures)), key=lambda i: (-scores[i], p.figures[i].number))
        for rank, i in enumerate(order, 1):
            results[p.figures[i].id] = (float(scores[i]), rank)
    with session_scope(settings.db_url) as s:
        for fid_chunk in _chunks(sorted(results), 500):
            for f in s.scalars(select(Figure).where(Figure.id.in_(fid_chunk))):
                f.central_score, f.central_rank = results[f.id]
    return {"papers": len(papers), "figures": len(results), "model": scorer.uses_model}


def _chunks(xs: list, n: int):
    for i in range(0, len(xs), n):
        yield xs[i:i + n]
