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

import heapq
from typing import Collection, Sequence

import numpy as np


def spread(papers: Sequence[int], per_block: int, block: int, depth: int,
           keep: Collection[int] = ()) -> tuple[np.ndarray, set[int]]:
    """(positions of `papers`, a ranking's paper per result best first, in spread order; the papers
    whose figures were moved down within the first `depth` results). `per_block` <= 0: unchanged.

    Each paper's next result waits in a heap by its position, so a block costs O(block log papers)
    however many results follow (a paper at its limit is set aside once per block)."""
    papers = np.asarray(papers)
    n = len(papers)
    if per_block <= 0 or block <= 0 or n == 0:
        return np.arange(n, dtype=np.int64), set()
    by_paper = np.argsort(papers, kind="stable")  # each paper's positions, best first
    ids, starts = np.unique(papers[by_paper], return_index=True)
    ends = np.r_[starts[1:], n]
    nxt = starts.copy()
    unlimited = {int(g) for g in np.flatnonzero(np.isin(ids, list(keep)))} if len(keep) else set()
    heads = [(int(by_paper[s]), g) for g, s in enumerate(starts.tolist())]
    heapq.heapify(heads)

    def take(g: int, pos: int, into: list[int], heap: list) -> None:
        into.append(pos)
        nxt[g] += 1
        if nxt[g] < ends[g]:
            heapq.heappush(heap, (int(by_paper[nxt[g]]), g))

    out: list[int] = []
    depth = min(depth, n)
    while len(out) < depth and heads:
        counts: dict[int, int] = {}
        taken: list[int] = []
        aside: list[tuple[int, int]] = []  # heads of papers at their limit in this block
        while len(taken) < block and heads:
            pos, g = heapq.heappop(heads)
            if g in unlimited or counts.get(g, 0) < per_block:
                counts[g] = counts.get(g, 0) + 1
                take(g, pos, taken, heads)
            else:
                aside.append((pos, g))
        heapq.heapify(aside)
        while len(taken) < block and aside:  # only limited papers are left: they end the block, in order
            pos, g = heapq.heappop(aside)
            take(g, pos, taken, aside)
        for item in aside:
            heapq.heappush(heads, item)
        out += taken
    rest = np.ones(n, dtype=bool)
    rest[out] = False
    order = np.r_[np.asarray(out, dtype=np.int64), np.flatnonzero(rest)]
    moved = order[np.arange(n) > order]  # results now further down than they ranked
    return order, {int(papers[pos]) for pos in moved}


def names_paper(query_words: Sequence[str], title_words: Sequence[str]) -> bool:
    """Whether a query names a paper by its title: at least two words, every one of them a word of
    the title, and together at least half of the title's words (analysed words: text.analyze).
    "deep residual learning" names "Deep Residual Learning for Image Recognition"; "image
    recognition" or "t-SNE" alone name no paper, however many titles hold them."""
    q, t = set(query_words), set(title_words)
    return len(q) >= 2 and q <= t and 2 * len(q) >= len(t)
