"""Paper-level relatedness for "related figures in other papers".

Two figures from different papers are more likely related when their papers are about the same
thing. Four views of a paper, each compared by cosine:
  paper          dense embedding of title + abstract (MiniLM)
  paper_text     tf.idf of title + abstract
  paper_figures  tf.idf of all of the paper's figure texts (captions + mention contexts) together
  paper_body     tf.idf of the body text's most frequent terms (stored at ingest; references and
                 in-text citation markers left out)
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

PAPER_SIGNALS = ("paper", "paper_text", "paper_figures", "paper_body")


def csr_rows(row_ptr: np.ndarray, row_terms: np.ndarray, row_tf: np.ndarray):
    """rows(docs) -> (indptr, term ids, counts) of the chosen rows of a (term, count) CSR."""
    from app.search.lexical import _gather_rows

    def rows(docs: np.ndarray):
        pos, owner = _gather_rows(row_ptr, docs)
        indptr = np.zeros(len(docs) + 1, np.int64)
        np.cumsum(row_ptr[docs + 1] - row_ptr[docs], out=indptr[1:])
        return indptr, row_terms[pos], row_tf[pos]
    return rows


def _grouped_counts(rows_of, order: np.ndarray, bounds: np.ndarray, n_terms: int, chunk: int):
    """Yield (first group, local group of each entry, term, summed count) per chunk of groups,
    where group g is made of the rows order[bounds[g]:bounds[g + 1]] (read with `rows_of`)."""
    n = len(bounds) - 1
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        rows = order[bounds[s]:bounds[e]]
        group_of_row = np.repeat(np.arange(e - s), np.diff(bounds[s:e + 1]))
        indptr, terms, tf = rows_of(np.asarray(rows, dtype=np.int64))
        owner = np.repeat(np.arange(len(rows)), np.diff(indptr))
        key = group_of_row[owner].astype(np.int64) * n_terms + terms
        uniq, inv = np.unique(key, return_inverse=True)
        counts = np.bincount(inv, weights=tf.astype(np.float64))
        yield s, e, uniq // n_terms, (uniq % n_terms).astype(np.int32), counts


def strongest_terms_index(row_ptr: np.ndarray, row_terms: np.ndarray, row_tf: np.ndarray, vocab: list[str],
                          order: np.ndarray, bounds: np.ndarray, max_terms: int,
                          chunk: int = 2_000) -> LexicalIndex:
    """`strongest_rows_index` of the rows of a (term, count) CSR."""
    return strongest_rows_index(csr_rows(row_ptr, row_terms, row_tf), vocab, order, bounds, max_terms, chunk)


def strongest_rows_index(rows_of, vocab: list[str], order: np.ndarray, bounds: np.ndarray, max_terms: int,
                         chunk: int = 2_000) -> LexicalIndex:
    """tf.idf index of groups of CSR rows (a paper = its figures, or one row of its own), each group
    kept to its `max_terms` terms of highest (1 + log tf) * idf, ties broken alphabetically (not by
    term id, so the kept terms do not depend on the order the index first saw its words). Two
    chunked passes (document frequencies, then the pruned rows), so millions of figures need no
    large temporaries."""
    n, n_terms = len(bounds) - 1, len(vocab)
    alphabetical = np.empty(n_terms, np.int64)
    alphabetical[np.argsort(np.asarray(vocab, dtype=object), kind="stable")] = np.arange(n_terms)
    df = np.zeros(n_terms, dtype=np.int64)
    for _s, _e, _g, terms, _c in _grouped_counts(rows_of, order, bounds, n_terms, chunk):
        df += np.bincount(terms, minlength=n_terms)
    idf = np.log(max(n, 1) / np.maximum(df, 1))
    nnz = np.zeros(n, dtype=np.int64)
    doc_len = np.zeros(n, dtype=np.float64)
    terms_parts, tf_parts = [], []
    for s, e, g, terms, counts in _grouped_counts(rows_of, order, bounds, n_terms, chunk):
        by = np.lexsort((alphabetical[terms], -(1.0 + np.log(counts)) * idf[terms], g))  # sorted by group
        first = np.searchsorted(g[by], np.arange(e - s))
        keep = np.sort(by[(np.arange(len(by)) - first[g[by]]) < max_terms])
        terms_parts.append(terms[keep])
        tf_parts.append(np.minimum(counts[keep], 65535).astype(np.uint16))
        nnz[s:e] = np.bincount(g[keep], minlength=e - s)
        doc_len[s:e] = np.bincount(g[keep], weights=counts[keep], minlength=e - s)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(nnz, out=ptr[1:])
    cat = (lambda parts, dt: np.concatenate(parts) if parts else np.zeros(0, dt))
    return LexicalIndex.from_counts(ptr, cat(terms_parts, np.int32), cat(tf_parts, np.uint16), doc_len, vocab,
                                    method="tfidf")


def csr_from_tokens(indptr: np.ndarray, tokens: np.ndarray, n_terms: int):
    """Documents given as a token-id stream -> (row_ptr, sorted unique term ids, counts)."""
    from app.search.lexical import _csr_from_tokens

    return _csr_from_tokens(np.asarray(indptr, dtype=np.int64), np.asarray(tokens, dtype=np.int32), n_terms)


def text_view(indptr: np.ndarray, tokens: np.ndarray, vocab: list[str], max_terms: int) -> LexicalIndex:
    """One document per paper, given as a token-id stream."""
    row_ptr, row_terms, row_tf = csr_from_tokens(indptr, tokens, len(vocab))
    n = len(indptr) - 1
    return strongest_terms_index(row_ptr, row_terms, row_tf, vocab, np.arange(n), np.arange(n + 1), max_terms)


def counts_view(term_counts: Sequence[dict[str, int] | None], max_terms: int) -> LexicalIndex:
    """One document per {term: count} (a paper's body terms, a figure's printed words; None or empty: no terms)."""
    ids: dict[str, int] = {}
    lens = np.fromiter((len(c or ()) for c in term_counts), dtype=np.int64, count=len(term_counts))
    terms = np.fromiter((ids.setdefault(t, len(ids)) for c in term_counts for t in (c or ())), dtype=np.int32,
                        count=int(lens.sum()))
    tf = np.fromiter((min(int(v), 65535) for c in term_counts for v in (c or {}).values()), dtype=np.uint16,
                     count=int(lens.sum()))
    ptr = np.r_[0, np.cumsum(lens)].astype(np.int64)  # rows need no order: the index groups them
    vocab = [""] * len(ids)
    for t, i in ids.items():
        vocab[i] = t
    n = len(term_counts)
    return strongest_terms_index(ptr, terms, tf, vocab, np.arange(n), np.arange(n + 1), max_terms)


def figures_view(figures, row_paper: np.ndarray, paper_ids: np.ndarray, max_terms: int) -> LexicalIndex:
    """All figure texts of each paper together, from the figure index's own (term, count) rows
    (a LexicalIndex or a SegmentedIndex: both read rows with `rows`)."""
    row_paper = np.asarray(row_paper, dtype=np.int64)
    order = np.argsort(row_paper, kind="stable")
    bounds = np.searchsorted(row_paper[order], np.r_[paper_ids, np.iinfo(np.int64).max])
    bounds[-1] = len(order)
    return strongest_rows_index(figures.rows, figures.vocab, order, bounds, max_terms)


class PaperIndex:
    """Per-paper vectors, addressed by paper id."""

    def __init__(self, paper_ids, dense: VectorIndex | None = None, text: LexicalIndex | None = None,
                 figures: LexicalIndex | None = None, body: LexicalIndex | None = None):
        self.paper_ids = np.asarray(paper_ids, dtype=np.int64)
        order = np.argsort(self.paper_ids, kind="stable")
        self._sorted, self._order = self.paper_ids[order], order
        self.dense, self.text, self.figures, self.body = dense, text, figures, body

    @classmethod
    def build(cls, paper_ids, dense_vectors: np.ndarray | None, text_tokens: Sequence[Sequence[str]],
              figures: LexicalIndex, row_paper: np.ndarray, max_terms: int = 100,
              vector_kind: str = "auto", body_terms: Sequence[dict[str, int] | None] | None = None) -> "PaperIndex":
        """Views of the papers `paper_ids` (sorted): title + abstract vectors and analysed tokens,
        the figure index with the paper of each of its rows, and the body terms of each paper
        (no body view when no paper has them)."""
        ids: dict[str, int] = {}
        lens = np.fromiter((len(d) for d in text_tokens), dtype=np.int64, count=len(text_tokens))
        tokens = np.fromiter((ids.setdefault(t, len(ids)) for d in text_tokens for t in d), dtype=np.int32,
                             count=int(lens.sum()))
        vocab = [""] * len(ids)
        for t, i in ids.items():
            vocab[i] = t
        body = counts_view(list(body_terms), max_terms) if body_terms is not None and any(body_terms) else None
        return cls.from_parts(paper_ids, dense_vectors, text_view(np.r_[0, np.cumsum(lens)], tokens, vocab, max_terms),
                              figures_view(figures, row_paper, np.asarray(paper_ids, dtype=np.int64), max_terms),
                              vector_kind, body)

    @classmethod
    def from_parts(cls, paper_ids, dense_vectors: np.ndarray | None, text: LexicalIndex | None,
                   figures: LexicalIndex | None, vector_kind: str = "auto",
                   body: LexicalIndex | None = None) -> "PaperIndex":
        paper_ids = np.asarray(paper_ids, dtype=np.int64)
        dense = None
        if dense_vectors is not None:
            if vector_kind == "auto":  # the related-papers query runs on every request: ANN early
                vector_kind = "ivf" if len(paper_ids) >= 20_000 else "flat"
            dense = VectorIndex(np.asarray(dense_vectors).shape[1], kind=vector_kind)
            dense.add(np.arange(len(paper_ids)), dense_vectors)
        return cls(paper_ids, dense, text, figures, body)

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
        for name, lex in (("paper_text", self.text), ("paper_figures", self.figures), ("paper_body", self.body)):
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
            ids, _ = self.dense.nearest_candidates(self.dense.vectors_for([me]), pool * n + 1)
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
        for name in ("dense", "text", "figures", "body"):
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
        body = LexicalIndex.load(d / "body", mmap=mmap) if parts.get("body") else None
        return cls(np.load(d / "paper_ids.npy"), dense, text, figures, body)
