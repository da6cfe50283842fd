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
from pathlib import Path
from typing import Sequence

import numpy as np

from app.search.lexical import LexicalIndex
from app.search.vectors import VectorIndex

PAPER_SIGNALS = ("paper", "paper_text", "paper_figures")


def strongest_counts(row_ptr: np.ndarray, row_terms: np.ndarray, row_tf: np.ndarray, n_terms: int,
                     max_terms: int, chunk: int = 20_000):
    """Per-row (term, count) lists reduced to each row's `max_terms` terms of highest
    (1 + log tf) * idf; chunked, so millions of figures need no large temporaries."""
    n = len(row_ptr) - 1
    idf = np.log(max(n, 1) / np.maximum(np.bincount(row_terms, minlength=n_terms), 1))
    nnz = np.zeros(n, dtype=np.int64)
    terms_parts, tf_parts = [], []
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        lo, hi = int(row_ptr[s]), int(row_ptr[e])
        rows = np.repeat(np.arange(e - s), np.diff(row_ptr[s:e + 1]))
        t, f = row_terms[lo:hi], row_tf[lo:hi]
        order = np.lexsort((-(1.0 + np.log(f.astype(np.float64))) * idf[t], rows))
        first = np.searchsorted(rows[order], np.arange(e - s))
        rank = np.arange(len(order)) - first[rows[order]]
        keep = np.sort(order[rank < max_terms])
        terms_parts.append(t[keep])
        tf_parts.append(f[keep])
        nnz[s:e] = np.bincount(rows[keep], minlength=e - s)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(nnz, out=ptr[1:])
    cat = (lambda parts, dt: np.concatenate(parts) if parts else np.zeros(0, dt))
    return ptr, cat(terms_parts, np.int32), cat(tf_parts, np.uint16)


def tfidf_of_token_ids(indptr: np.ndarray, tokens: np.ndarray, vocab: list[str], max_terms: int) -> LexicalIndex:
    """A tf.idf index of documents given as a token-id stream, each kept to its strongest terms."""
    from app.search.lexical import _csr_from_tokens

    indptr = np.asarray(indptr, dtype=np.int64)
    per_doc = max(1, int(np.diff(indptr).mean())) if len(indptr) > 1 else 1
    row_ptr, row_terms, row_tf = _csr_from_tokens(indptr, np.asarray(tokens, dtype=np.int32), len(vocab),
                                                  chunk=max(1, 4_000_000 // per_doc))
    ptr, terms, tf = strongest_counts(row_ptr, row_terms, row_tf, len(vocab), max_terms)
    doc_len = np.add.reduceat(tf.astype(np.float64), ptr[:-1]) if len(tf) else np.zeros(len(ptr) - 1)
    doc_len[np.diff(ptr) == 0] = 0
    return LexicalIndex.from_counts(ptr, terms, tf, doc_len, vocab, method="tfidf")


def _token_ids(docs: Sequence[Sequence[str]], ids: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    lens = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
    tokens = np.fromiter((ids.setdefault(t, len(ids)) for d in docs for t in d), dtype=np.int32,
                         count=int(lens.sum()))
    indptr = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(lens, out=indptr[1:])
    return indptr, tokens


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
        ids: dict[str, int] = {}
        text = _token_ids(text_tokens, ids)
        figures = _token_ids(figure_tokens, ids)
        vocab = [""] * len(ids)
        for t, i in ids.items():
            vocab[i] = t
        return cls.from_token_ids(paper_ids, dense_vectors, text, figures, vocab, max_terms)

    @classmethod
    def from_token_ids(cls, paper_ids, dense_vectors: np.ndarray | None, text: tuple[np.ndarray, np.ndarray],
                       figures: tuple[np.ndarray, np.ndarray], vocab: list[str], max_terms: int = 100,
                       vector_kind: str = "auto") -> "PaperIndex":
        """Fast path: the two text views as (indptr, token ids) streams over one vocabulary."""
        paper_ids = np.asarray(paper_ids, dtype=np.int64)
        dense = None
        if dense_vectors is not None:
            dense = VectorIndex(np.asarray(dense_vectors).shape[1], kind=vector_kind)
            dense.add(np.arange(len(paper_ids)), dense_vectors)
        return cls(paper_ids, dense, tfidf_of_token_ids(*text, vocab, max_terms),
                   tfidf_of_token_ids(*figures, vocab, max_terms))

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

    def related(self, paper_id: int, n: int, pool: int = 3) -> np.ndarray:
        """Up to `n` other papers: the `pool * n` nearest by the dense view (one ANN query, cheap at
        any scale; by the title + abstract tf.idf view without one), re-ranked by the sum of every
        view's cosine."""
        me = int(self.rows([paper_id])[0])
        if self.dense is not None:
            ids, _ = self.dense.search(self.dense.vectors_for([me]), pool * n + 1)
            rows = ids[0][(ids[0] >= 0) & (ids[0] != me)]
        elif self.text is not None:
            q, qtf = self.text.doc_terms(me)
            rows, _ = self.text.search_terms(q, qtf, k=pool * n, exclude=me)
        else:
            return np.zeros(0, np.int64)
        if not len(rows):
            return np.zeros(0, np.int64)
        total = sum(self.similarity(paper_id, self.paper_ids[rows]).values())
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
