"""Paper-level relatedness for "related figures in other papers".

Two figures from different papers are more likely related when their papers are about the same
thing. Three views of a paper, each compared by cosine:
  paper          dense embedding of title + abstract (MiniLM)
  paper_text     tf.idf of title + abstract
  paper_figures  tf.idf of all of the paper's figure texts (captions + mention contexts) together
Each paper keeps only its `max_terms` strongest terms, which bounds memory at millions of figures.
Citation links are deliberately *not* a signal: they are what the evaluation counts as relevant.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Sequence

import numpy as np

from app.search.lexical import LexicalIndex
from app.search.vectors import VectorIndex

PAPER_SIGNALS = ("paper", "paper_text", "paper_figures")


def strongest_terms(docs: Sequence[Sequence[str]], max_terms: int) -> list[list[str]]:
    """Each token list reduced to its `max_terms` distinct terms of highest (1 + log tf) * idf,
    repeated tf times (so the tf.idf weights of the kept terms are unchanged)."""
    counts = [Counter(d) for d in docs]
    df = Counter(t for c in counts for t in c)
    n = max(len(docs), 1)
    out = []
    for c in counts:
        if len(c) > max_terms:
            keep = sorted(c, key=lambda t: -(1 + np.log(c[t])) * np.log(n / df[t]))[:max_terms]
            c = {t: c[t] for t in keep}
        out.append([t for t, k in c.items() for _ in range(k)])
    return out


class PaperIndex:
    """Per-paper vectors, addressed by paper id."""

    def __init__(self, paper_ids, dense: VectorIndex | None = None, text: LexicalIndex | None = None,
                 figures: LexicalIndex | None = None):
        self.paper_ids = np.asarray(paper_ids, dtype=np.int64)
        order = np.argsort(self.paper_ids, kind="stable")
        self._sorted, self._order = self.paper_ids[order], order
        self.dense, self.text, self.figures = dense, text, figures

    @classmethod
    def build(cls, paper_ids, dense_vectors: np.ndarray | None, text_tokens: Sequence[Sequence[str]],
              figure_tokens: Sequence[Sequence[str]], max_terms: int = 100) -> "PaperIndex":
        paper_ids = np.asarray(paper_ids, dtype=np.int64)
        dense = None
        if dense_vectors is not None:
            dense = VectorIndex(np.asarray(dense_vectors).shape[1])
            dense.add(np.arange(len(paper_ids)), dense_vectors)
        text = LexicalIndex.build(strongest_terms(text_tokens, max_terms), method="tfidf")
        figures = LexicalIndex.build(strongest_terms(figure_tokens, max_terms), method="tfidf")
        return cls(paper_ids, dense, text, figures)

    def __len__(self) -> int:
        return len(self.paper_ids)

    def rows(self, paper_ids) -> np.ndarray:
        ids = np.asarray(paper_ids, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self._sorted, ids), max(len(self._sorted) - 1, 0))
        if len(ids) and (len(self._sorted) == 0 or (self._sorted[pos] != ids).any()):
            raise KeyError("unknown paper id")
        return self._order[pos]

    def similarity(self, paper_id: int, paper_ids) -> dict[str, np.ndarray]:
        """Cosines of `paper_id` with each of `paper_ids`, per view."""
        me = int(self.rows([paper_id])[0])
        rows = self.rows(paper_ids)
        out = {}
        if self.dense is not None:
            out["paper"] = (self.dense.vectors_for(rows) @ self.dense.vectors_for([me])[0]).astype(np.float64)
        for name, lex in (("paper_text", self.text), ("paper_figures", self.figures)):
            if lex is not None:
                q, qtf = lex.doc_terms(me)
                out[name] = lex.score_docs(q, lex.query_weights(q, qtf), rows).astype(np.float64)
        return out

    def related(self, paper_id: int, n: int) -> np.ndarray:
        """Up to `n` other papers, by the sum of the views' cosines over the union of each view's
        top `n` (the first stage of cross-paper candidates)."""
        me = int(self.rows([paper_id])[0])
        pool = []
        if self.dense is not None:
            ids, _ = self.dense.search(self.dense.vectors_for([me]), n + 1)
            pool.append(ids[0][ids[0] >= 0])
        for lex in (self.text, self.figures):
            if lex is not None:
                q, qtf = lex.doc_terms(me)
                rows, _ = lex.search_terms(q, qtf, k=n, exclude=me)
                pool.append(rows)
        if not pool:
            return np.zeros(0, np.int64)
        rows = np.unique(np.concatenate(pool))
        rows = rows[rows != me]
        if not len(rows):
            return np.zeros(0, np.int64)
        sims = self.similarity(paper_id, self.paper_ids[rows])
        total = sum(sims.values())
        return self.paper_ids[rows[np.argsort(-total, kind="stable")[:n]]]

    # ------------------------------------------------------------ persistence
    def save(self, d: str | Path) -> None:
        d = Path(d)
        d.mkdir(parents=True, exist_ok=True)
        np.save(d / "paper_ids.npy", self.paper_ids)
        parts = {}
        for name in ("dense", "text", "figures"):
            part = getattr(self, name)
            if part is not None:
                part.save(d / name)
            parts[name] = part is not None
        (d / "meta.json").write_text(json.dumps({"parts": parts, "format": 1}))

    @classmethod
    def load(cls, d: str | Path, gpu: str = "auto", mmap: bool = False) -> "PaperIndex":
        d = Path(d)
        parts = json.loads((d / "meta.json").read_text())["parts"]
        dense = VectorIndex.load(d / "dense", gpu=gpu, mmap=mmap) if parts.get("dense") else None
        text = LexicalIndex.load(d / "text", mmap=mmap) if parts.get("text") else None
        figures = LexicalIndex.load(d / "figures", mmap=mmap) if parts.get("figures") else None
        return cls(np.load(d / "paper_ids.npy"), dense, text, figures)
