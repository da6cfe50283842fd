"""Papers spread over a text search's results: one paper with many matching figures (every t-SNE
plot of a paper that draws one per data set) would otherwise fill the first page, and a researcher
looking for a kind of figure wants to see it in several papers.

The ranking is read in blocks of `block` results; a block takes the best results left, but at most
`per_block` figures of one paper, and a paper's further figures wait for the next block (moved
down, never removed). A block that other papers' results cannot fill ends with the waiting figures
in their order, so a search filtered to one paper keeps its ranking. Papers in `keep` are not limited
(a query that names a paper by its title: `names_paper`). Only the first `depth` results are
spread, so the cost is bounded by the page asked for, not by the collection.
"""
from __future__ import annotations

from typing import Collection, Sequence

import numpy as np


def spread(papers: Sequence[int], per_block: int, block: int, depth: int,
           keep: Collection[int] = ()) -> tuple[np.ndarray, set[int]]:
    """(positions of `papers`, a ranking's paper per result best first, in spread order; the papers
    whose figures were moved down within the first `depth` results). `per_block` <= 0: unchanged."""
    papers = [int(p) for p in papers]
    n = len(papers)
    if per_block <= 0 or block <= 0 or n == 0:
        return np.arange(n, dtype=np.int64), set()
    out: list[int] = []
    waiting: list[int] = []  # positions moved out of an earlier block, best first (all before `fresh`)
    fresh = 0
    depth = min(depth, n)
    while len(out) < depth and (waiting or fresh < n):
        taken: list[int] = []
        counts: dict[int, int] = {}
        left: list[int] = []

        def fits(pos: int) -> bool:
            p = papers[pos]
            if p in keep or counts.get(p, 0) < per_block:
                counts[p] = counts.get(p, 0) + 1
                return True
            return False

        for pos in waiting:
            (taken if len(taken) < block and fits(pos) else left).append(pos)
        while len(taken) < block and fresh < n:
            if fits(fresh):
                taken.append(fresh)
            else:
                left.append(fresh)
            fresh += 1
        if len(taken) < block:  # only limited papers' figures are left: they end the block, in order
            left.sort()
            fill, left = left[:block - len(taken)], left[block - len(taken):]
            taken += fill
        out += taken
        waiting = sorted(left)
    order = np.asarray(out + waiting + list(range(fresh, n)), dtype=np.int64)
    moved = order[np.arange(n) > order]  # results now further down than they ranked
    return order, {papers[int(pos)] for pos in moved}


def names_paper(query_words: Sequence[str], title_words: Sequence[str]) -> bool:
    """Whether a query names a paper by its title: at least two words, every one of them a word of
    the title, and together at least half of the title's words (analysed words: text.analyze).
    "deep residual learning" names "Deep Residual Learning for Image Recognition"; "image
    recognition" or "t-SNE" alone name no paper, however many titles hold them."""
    q, t = set(query_words), set(title_words)
    return len(q) >= 2 and q <= t and 2 * len(q) >= len(t)
