"""Data for the central-figure task: papers with their figures and figure mentions, text clean-up,
the self-supervised queries, and the held-out split.

Self-supervised signal (as in central-figure work on PubMed and CS papers): a body paragraph that explicitly mentions "Figure k" is about
figure k. The database keeps, per mention, the mentioning sentence and its two neighbours
(`Mention.before/sentence/after`), not the full paragraph, so **the paragraph proxy is that
3-sentence window**; training samples one sentence from it, the evaluation uses the mentioning
sentence itself.

Leakage guards (the model must match *content*, not numbers):
  * figure/table references in sentences are masked ("as shown in Figure 3(b)" -> "as shown in
    figure"), so the sentence never carries the number;
  * the caption's own label ("Figure 3:", "Fig. 3.") is stripped.

Many PDFs lose the spaces inside captions ("Figure1:DropoutNeuralNetModel.Left:..."); 38% of the
figure captions of the shared corpus have a glued run. `despace` re-segments long letter runs with
a unigram Viterbi over a vocabulary built from the (well-spaced) abstracts and mention sentences of
the collection, backed by the whole-word entries of the MiniLM vocabulary.
"""
from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Sequence

from sqlalchemy import select

from app.labels import LABEL_PREFIX_RE, MENTION_RE

__all__ = [
    "FigureInfo", "MentionInfo", "PaperInfo", "Query", "load_papers", "clean_caption",
    "mask_refs", "abstract_sentences", "build_queries", "split_papers",
    "data_hash", "Segmenter",
]

# ---------------------------------------------------------------------------------------------
# records


@dataclass
class FigureInfo:
    id: int
    number: int
    caption: str  # raw caption as stored
    page: int = 1
    bbox: list = field(default_factory=list)
    width: int = 0
    height: int = 0
    kind: str = "figure"
    n_mentions: int = 0
    figure_types: list = field(default_factory=list)  # [{"type", "score"}] from the pixel classifier
    crop_quality: str = "ok"  # "ok" or why the crop is not a real graphic (text_only, tiny, ...)
    n_panels: int = 0  # sub-figures found in a compound figure
    text: str = ""  # cleaned caption: label stripped, glued words re-spaced (set by load_papers)


@dataclass
class MentionInfo:
    number: int  # figure number referred to
    sentence: str
    before: str = ""
    after: str = ""
    position: int = 0


@dataclass
class PaperInfo:
    id: int
    sha256: str
    title: str = ""
    abstract: str = ""
    n_pages: int = 0
    figures: list[FigureInfo] = field(default_factory=list)  # kind "figure", sorted by number
    mentions: list[MentionInfo] = field(default_factory=list)  # mentions of those figures

    @property
    def numbers(self) -> list[int]:
        return [f.number for f in self.figures]


@dataclass
class Query:
    """One self-supervised ranking item: which caption of the paper does this sentence talk about?"""

    paper_sha: str
    sentence: str  # the mentioning sentence, references masked
    context: list[str]  # the 3-sentence window (paragraph proxy), references masked
    target: int  # figure number mentioned
    candidates: list[int]  # figure numbers to rank (target included, co-mentioned figures excluded)


# ---------------------------------------------------------------------------------------------
# text clean-up

_LABEL_RE = LABEL_PREFIX_RE  # a caption's own label ("Figure 3:")
_REF_RE = MENTION_RE  # references in running text ("Figs. 2 and 3")
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"})
_RUN_RE = re.compile(r"[A-Za-z]{10,}")
_WORD_RE = re.compile(r"[a-z]+")


def mask_refs(text: str) -> str:
    """Replace figure/table references by their bare label word: no number survives."""
    if not text:
        return ""

    def repl(m: re.Match) -> str:
        lab = m.group("label").lower()
        return "figure" if lab.startswith("f") else "table"

    return _REF_RE.sub(repl, text.translate(_LIGATURES))


class Segmenter:
    """Unigram Viterbi word segmentation for glued letter runs ("DropoutNeuralNetModel")."""

    WORD_PENALTY = 4.0  # log-prob cost per extra word: prefer fewer, longer words

    def __init__(self, counts: Counter | None = None, max_word: int = 20):
        self.max_word = max_word
        counts = Counter(counts or {})
        for w in _bert_words():  # fallback vocabulary, low weight
            counts[w] += 0.3
        total = sum(counts.values()) or 1
        self.logp = {w: math.log(c / total) for w, c in counts.items() if len(w) > 1 or w in ("a", "i")}
        self.unk = math.log(1.0 / (total * 10))

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> "Segmenter":
        counts: Counter = Counter()
        for t in texts:
            for tok in (t or "").translate(_LIGATURES).split():
                if len(tok) <= 13:  # spaced text only: long tokens may be glued themselves
                    counts.update(_WORD_RE.findall(tok.lower()))
        return cls(counts)

    def split_run(self, run: str) -> list[str]:
        s = run.lower()
        if s in self.logp:  # a known word: leave it alone
            return [run]
        n = len(s)
        best = [0.0] + [-math.inf] * n
        back = [0] * (n + 1)
        for i in range(1, n + 1):
            for j in range(max(0, i - self.max_word), i):
                w = s[j:i]
                lp = self.logp.get(w)
                if lp is None:
                    lp = self.unk * (i - j)  # unknown: pay per character
                v = best[j] + lp - self.WORD_PENALTY
                if v > best[i]:
                    best[i], back[i] = v, j
        out, i = [], n
        while i > 0:
            j = back[i]
            out.append(run[j:i])
            i = j
        return out[::-1]

    def __call__(self, text: str) -> str:
        if not text:
            return ""
        text = text.translate(_LIGATURES)
        # split after sentence punctuation glued to the next word ("Model.Left:A")
        text = re.sub(r"(?<=[a-z0-9\)])([.:;,])(?=[A-Z])", r"\1 ", text)
        return _RUN_RE.sub(lambda m: " ".join(self.split_run(m.group(0))), text)


@lru_cache(maxsize=1)
def _bert_words() -> tuple[str, ...]:
    try:
        from models.central import minilm_path

        vocab = (minilm_path() / "vocab.txt").read_text(encoding="utf-8").split("\n")
    except Exception:
        return ()
    return tuple(w for w in vocab if w.isalpha() and w.isascii() and w.islower() and len(w) > 1)


def clean_caption(caption: str, segmenter: Segmenter | None = None) -> str:
    """Caption without its own label; glued words re-spaced when a segmenter is given."""
    text = (caption or "").translate(_LIGATURES).strip()
    text = _LABEL_RE.sub("", text, count=1)
    if segmenter is not None:
        text = segmenter(text)
    return mask_refs(text).strip()


def abstract_sentences(abstract: str, max_sentences: int = 16) -> list[str]:
    """Sentences of the abstract (the parser's splitter), references masked, at most `max_sentences`."""
    from app.ingest.parse import split_sentences

    sents = [mask_refs(s).strip() for s in split_sentences((abstract or "").replace("\n", " "))]
    sents = [s for s in sents if len(s) >= 3]
    return sents[:max_sentences]


# ---------------------------------------------------------------------------------------------
# loading


def load_papers(db_url: str, paper_ids: Sequence[int] | None = None, segmenter: Segmenter | None | bool = True,
                kind: str = "figure") -> list[PaperInfo]:
    """Papers with status ok and their figures (kind "figure" only), ordered by paper id.

    `segmenter=True` builds one from this collection's abstracts and mention sentences.
    `kind="table"` loads the tables instead (extra self-supervised training data: a sentence that
    mentions "Table 3" is about table 3's caption just as well)."""
    from sqlalchemy.orm import selectinload

    from app.db.schema import Figure, Paper, PaperStatus
    from app.db.session import session_scope

    papers: list[PaperInfo] = []
    with session_scope(db_url) as s:
        q = select(Paper).where(Paper.status == PaperStatus.OK).order_by(Paper.id)
        if paper_ids is not None:
            q = q.where(Paper.id.in_(list(paper_ids)))
        opts = selectinload(Paper.figures).selectinload(Figure.mentions)
        for p in s.scalars(q.options(opts)):
            figs, ments = [], []
            for f in sorted((f for f in p.figures if f.kind == kind), key=lambda f: f.number):
                fm = list(f.mentions)
                figs.append(FigureInfo(id=f.id, number=f.number, caption=f.caption or "", page=f.page or 1,
                                       bbox=list(f.bbox or []), width=f.width or 0, height=f.height or 0,
                                       kind=f.kind, n_mentions=len(fm), figure_types=list(f.figure_types or []),
                                       crop_quality=f.crop_quality or "ok", n_panels=len(f.panels or [])))
                ments.extend(MentionInfo(number=f.number, sentence=m.sentence or "", before=m.before or "",
                                         after=m.after or "", position=m.position or 0) for m in fm)
            ments.sort(key=lambda m: (m.position, m.number))
            papers.append(PaperInfo(id=p.id, sha256=p.sha256, title=p.title or "", abstract=p.abstract or "",
                                    n_pages=p.n_pages or 0, figures=figs, mentions=ments))
    if segmenter is True:
        texts = [p.abstract for p in papers] + [m.sentence for p in papers for m in p.mentions]
        segmenter = Segmenter.from_texts(texts)
    for p in papers:
        for f in p.figures:
            f.text = clean_caption(f.caption, segmenter or None)
    return papers


# ---------------------------------------------------------------------------------------------
# self-supervised items


def build_queries(papers: Iterable[PaperInfo]) -> list[Query]:
    """One query per (mentioning sentence, mentioned figure).

    A sentence that mentions several figures ("Figures 2 and 3") yields one query per figure; the
    other co-mentioned figures are removed from that query's candidates (they are not negatives).
    Papers with fewer than 2 figures give nothing (nothing to rank)."""
    out: list[Query] = []
    for p in papers:
        numbers = p.numbers
        if len(numbers) < 2:
            continue
        groups: dict[tuple[int, str], dict] = {}
        for m in p.mentions:
            g = groups.setdefault((m.position, m.sentence), {"nums": [], "m": m})
            if m.number not in g["nums"]:
                g["nums"].append(m.number)
        for (_pos, _sent), g in groups.items():
            m = g["m"]
            sent = mask_refs(m.sentence).strip()
            if not sent:
                continue
            ctx = [mask_refs(x).strip() for x in (m.before, m.sentence, m.after) if x and x.strip()]
            for n in g["nums"]:
                cands = [k for k in numbers if k == n or k not in g["nums"]]
                if n in numbers and len(cands) >= 2:
                    out.append(Query(paper_sha=p.sha256, sentence=sent, context=ctx, target=n, candidates=cands))
    return out


def split_papers(shas: Iterable[str], val_frac: float = 0.2, seed: int = 0) -> tuple[list[str], list[str]]:
    """(train, held-out) paper sha256 lists, by a seeded hash of the sha: stable when papers are added."""
    shas = sorted(set(shas))
    key = lambda s: hashlib.sha256(f"{seed}:{s}".encode()).hexdigest()  # noqa: E731
    ordered = sorted(shas, key=key)
    n_val = max(1, round(len(ordered) * val_frac)) if len(ordered) > 1 and val_frac > 0 else 0
    val = sorted(ordered[:n_val])
    return sorted(ordered[n_val:]), val


def data_hash(queries: Sequence[Query], papers: Sequence[PaperInfo]) -> str:
    """Content hash of the training data (queries + the captions they use)."""
    h = hashlib.sha256()
    caps = {p.sha256: {f.number: f.text for f in p.figures} for p in papers}
    for q in sorted(queries, key=lambda q: (q.paper_sha, q.target, q.sentence)):
        h.update(f"{q.paper_sha}\t{q.target}\t{q.sentence}\t{q.candidates}\n".encode())
        for k in q.candidates:
            h.update(caps.get(q.paper_sha, {}).get(k, "").encode())
    return h.hexdigest()[:16]
