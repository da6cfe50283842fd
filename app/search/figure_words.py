"""The words printed inside each figure (axis titles, legend entries, node labels: the text layer of
its graphic region, `Figure.region_text`) as a small tf.idf view, for the `figure_words` signal of
related figures: two plots that both print "recall" and "embedding size" plot the same kind of
thing, whatever their captions say.

The figure's caption and mention sentences are the lexical part's; this view holds only the words
inside the graphic. Analysed like every text (text.analyze: tick values, panel letters and stop
words are dropped) and weighted, pruned and compared by the tf.idf view the paper index uses
(papers.counts_view: each row kept to its `MAX_TERMS` strongest terms, so memory stays bounded at
millions of figures; cosine by LexicalIndex.score_docs). Only figures that print words are rows of
the view, so the idf counts figures with words; a raster figure has none and its cosine with
anything is 0.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Sequence

import numpy as np

from app.search.lexical import LexicalIndex
from app.search.papers import counts_view
from app.search.text import analyze

MAX_TERMS = 200  # strongest terms kept per figure: a bound for text-heavy figures (prompts); at 48 the
# document frequencies counted after pruning missed words common to many figures ("answer", "layer")
FORMAT = 2  # 1: an earlier layout with its own tf.idf, not read (the next `figsearch index` remakes the part)


class FigureWords:
    """A tf.idf view (`view`) of the figures that print words, and each index row's row in it
    (`view_row`, -1 for a figure without words)."""

    def __init__(self, view: LexicalIndex, view_row: np.ndarray):
        self.view = view
        self.view_row = np.asarray(view_row, dtype=np.int64)

    @property
    def n(self) -> int:
        return len(self.view_row)

    def __len__(self) -> int:
        return self.n

    @classmethod
    def build(cls, texts: Sequence[str], max_terms: int = MAX_TERMS) -> "FigureWords":
        """One index row per text (row i: the words inside figure i; "" for none)."""
        counts = [Counter(analyze(t)) for t in texts]
        has = np.fromiter((bool(c) for c in counts), dtype=bool, count=len(counts))
        view_row = np.full(len(counts), -1, dtype=np.int64)
        view_row[has] = np.arange(int(has.sum()))
        return cls(counts_view([c for c in counts if c], max_terms), view_row)

    def similarity(self, row: int, rows: np.ndarray) -> np.ndarray:
        """Cosine of the words inside figure `row` with those inside each of `rows` (0 when
        either has none)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros(len(rows), dtype=np.float64)
        me = int(self.view_row[int(row)])
        if me < 0 or not len(rows):
            return out
        theirs = self.view_row[rows]
        has = theirs >= 0
        q, qtf = self.view.doc_terms(me)
        out[has] = self.view.score_docs(q, self.view.query_weights(q, qtf), theirs[has])
        return out

    # --------------------------------------------------------- persistence
    def save(self, d: str | Path) -> None:
        """view/ (the tf.idf view), view_row.npy and meta.json."""
        d = Path(d)
        d.mkdir(parents=True, exist_ok=True)
        self.view.save(d / "view")
        np.save(d / "view_row.npy", self.view_row)
        (d / "meta.json").write_text(json.dumps({"n": self.n, "format": FORMAT}))

    @classmethod
    def load(cls, d: str | Path, mmap: bool = False) -> "FigureWords | None":
        """The saved part; None for a part of the earlier layout (the signal is then absent until
        the next `figsearch index` writes the part again)."""
        d = Path(d)
        if json.loads((d / "meta.json").read_text()).get("format") != FORMAT:
            return None
        return cls(LexicalIndex.load(d / "view", mmap=mmap),
                   np.load(d / "view_row.npy", mmap_mode="r" if mmap else None))
