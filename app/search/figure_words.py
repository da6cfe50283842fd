"""The words printed inside each figure (axis titles, legend entries, node labels: the text layer of
its graphic region, `Figure.region_text`) as a small tf.idf view, for the `figure_words` signal of
related figures: two plots that both print "recall" and "embedding size" plot the same kind of
thing, whatever their captions say.

The figure's caption and mention sentences are the lexical part's; this view holds only the words
inside the graphic. Analysed like every text (text.analyze: tick values, panel letters and stop
words are dropped), sublinear tf times idf, each row L2-normalised and cut to its `MAX_TERMS`
strongest terms (bounded memory at millions of figures). A raster figure has no words: its row is
empty and its cosine with anything 0.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

from app.search.text import analyze

MAX_TERMS = 48  # strongest terms kept per figure


class FigureWords:
    """Rows of unit tf.idf vectors over the words inside figures (CSR: `indptr`, `terms`, `weights`)."""

    def __init__(self, vocab: list[str], df: np.ndarray, n_docs: int, indptr: np.ndarray, terms: np.ndarray,
                 weights: np.ndarray):
        self.vocab = list(vocab)
        self.df = np.asarray(df, dtype=np.int64)
        self.n_docs = int(n_docs)  # rows with at least one word (the idf's document count)
        self.idf = np.log((1 + self.n_docs) / (1 + self.df)) + 1.0
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.terms = np.asarray(terms, dtype=np.int32)
        self.weights = np.asarray(weights, dtype=np.float32)

    @property
    def n(self) -> int:
        return len(self.indptr) - 1

    def __len__(self) -> int:
        return self.n

    @classmethod
    def build(cls, texts: Sequence[str], max_terms: int = MAX_TERMS) -> "FigureWords":
        """One row per text (row i: the words inside figure i; "" for none)."""
        analysed = [analyze(t) for t in texts]
        ids: dict[str, int] = {}
        rows = []
        for toks in analysed:
            counts: dict[int, int] = {}
            for t in toks:
                j = ids.setdefault(t, len(ids))
                counts[j] = counts.get(j, 0) + 1
            rows.append(counts)
        df = np.zeros(len(ids), np.int64)
        for counts in rows:
            if counts:
                df[list(counts)] += 1
        n_docs = sum(1 for c in rows if c)
        idf = np.log((1 + n_docs) / (1 + df)) + 1.0
        indptr, terms, weights = [0], [], []
        for counts in rows:
            if counts:
                t = np.fromiter(counts, np.int64, len(counts))
                w = (1.0 + np.log(np.fromiter(counts.values(), np.float64, len(counts)))) * idf[t]
                keep = np.argsort(-w, kind="stable")[:max_terms]
                t, w = t[keep], w[keep]
                o = np.argsort(t)
                t, w = t[o], w[o] / np.linalg.norm(w)
                terms.append(t)
                weights.append(w)
            indptr.append(indptr[-1] + min(len(counts), max_terms))
        vocab = [None] * len(ids)
        for t, j in ids.items():
            vocab[j] = t
        return cls(vocab, df, n_docs, np.asarray(indptr),
                   np.concatenate(terms) if terms else np.zeros(0, np.int32),
                   np.concatenate(weights) if weights else np.zeros(0, np.float32))

    def _row(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = self.indptr[r], self.indptr[r + 1]
        return self.terms[a:b], self.weights[a:b]

    def similarity(self, row: int, rows: np.ndarray) -> np.ndarray:
        """Cosine of the words inside figure `row` with those inside each of `rows` (0 when
        either has none)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros(len(rows), dtype=np.float64)
        qt, qw = self._row(int(row))
        if not len(qt) or not len(rows):
            return out
        starts, ends = self.indptr[rows], self.indptr[rows + 1]
        lengths = ends - starts
        if not lengths.sum():
            return out
        owner = np.repeat(np.arange(len(rows)), lengths)
        pos = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths) + np.repeat(starts, lengths)
        terms = self.terms[pos]
        at = np.minimum(np.searchsorted(qt, terms), len(qt) - 1)  # a row's terms are sorted: no vocabulary-wide array
        hit = qt[at] == terms
        np.add.at(out, owner[hit], qw[at[hit]].astype(np.float64) * self.weights[pos[hit]])
        return out

    def shared_terms(self, row: int, other: int) -> list[str]:
        """The stems both figures print, the strongest shared first."""
        at, aw = self._row(int(row))
        bt, bw = self._row(int(other))
        common, ia, ib = np.intersect1d(at, bt, return_indices=True)
        o = np.argsort(-(aw[ia] * bw[ib]), kind="stable")
        return [self.vocab[int(t)] for t in common[o]]

    # --------------------------------------------------------- persistence
    def save(self, d: str | Path) -> None:
        """indptr.npy, terms.npy, weights.npy, df.npy and meta.json (vocabulary, counts)."""
        d = Path(d)
        d.mkdir(parents=True, exist_ok=True)
        for name in ("indptr", "terms", "weights", "df"):
            np.save(d / f"{name}.npy", getattr(self, name))
        (d / "meta.json").write_text(json.dumps({"n": self.n, "n_docs": self.n_docs, "vocab": self.vocab,
                                                 "format": 1}))

    @classmethod
    def load(cls, d: str | Path, mmap: bool = False) -> "FigureWords":
        d = Path(d)
        meta = json.loads((d / "meta.json").read_text())
        mode = "r" if mmap else None
        arrays = {name: np.load(d / f"{name}.npy", mmap_mode=mode) for name in ("indptr", "terms", "weights", "df")}
        return cls(meta["vocab"], arrays["df"], meta["n_docs"], arrays["indptr"], arrays["terms"], arrays["weights"])
