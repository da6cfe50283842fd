"""Weak supervision (Kuzi & Zhai): R = 1 for two figures of the same paper, 0.6 when one paper cites the
other (either direction), 0 for random pairs. Figures of excluded papers (evaluation targets) take
part in no pair. Image pairs are filtered by visual similarity: positives kept when SSIM >= 0.5,
negatives when SSIM < 0.3 (image labels are binary).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SAME, CITING, RANDOM = 1.0, 0.6, 0.0
SSIM_POS, SSIM_NEG = 0.5, 0.3


@dataclass
class Pair:
    a: int
    b: int
    r: float


class PairBuilder:
    """Rows 0..n-1 are figures; paper_of[row] its paper; neighbours: paper -> citing/cited papers."""

    def __init__(self, paper_of, neighbours: dict[int, set[int]], exclude_papers=(), seed: int = 0):
        self.paper_of = np.asarray(paper_of, dtype=np.int64)
        self.neighbours = {int(k): {int(x) for x in v} for k, v in neighbours.items()}
        self.excluded = {int(p) for p in exclude_papers}
        self.rng = np.random.default_rng(seed)
        self.rows = np.array([i for i, p in enumerate(self.paper_of.tolist()) if p not in self.excluded], np.int64)
        self.by_paper: dict[int, np.ndarray] = {}
        for i in self.rows.tolist():
            self.by_paper.setdefault(int(self.paper_of[i]), []).append(i)
        self.by_paper = {p: np.array(v, np.int64) for p, v in self.by_paper.items()}
        self.papers = np.array(sorted(self.by_paper), np.int64)

    def label(self, a: int, b: int) -> float:
        pa, pb = int(self.paper_of[a]), int(self.paper_of[b])
        if pa in self.excluded or pb in self.excluded:
            raise ValueError("a figure of an excluded paper cannot be in a training pair")
        if pa == pb:
            return SAME
        if pb in self.neighbours.get(pa, ()):
            return CITING
        return RANDOM

    def label_matrix(self, rows) -> np.ndarray:
        """R for all pairs of `rows` (diagonal = 1)."""
        p = self.paper_of[np.asarray(rows)]
        if self.excluded and np.isin(p, list(self.excluded)).any():
            raise ValueError("a figure of an excluded paper cannot be in a training pair")
        r = np.where(p[:, None] == p[None, :], SAME, RANDOM).astype(np.float32)
        for i, pi in enumerate(p.tolist()):
            nb = self.neighbours.get(pi)
            if nb:
                m = np.isin(p, list(nb)) & (p != pi)
                r[i, m] = CITING
        return r

    def sample(self, n_per_figure: int = 2) -> list[Pair]:
        """For every non-excluded figure: up to n same-paper, n citing and 2n random pairs."""
        rng, out = self.rng, []
        for a in self.rows.tolist():
            pa = int(self.paper_of[a])
            same = self.by_paper[pa][self.by_paper[pa] != a]
            for b in rng.permutation(same)[:n_per_figure].tolist():
                out.append(Pair(a, b, SAME))
            nb = [q for q in self.neighbours.get(pa, ()) if q in self.by_paper and q != pa]
            if nb:
                for _ in range(n_per_figure):
                    q = nb[rng.integers(len(nb))]
                    out.append(Pair(a, int(rng.choice(self.by_paper[q])), CITING))
            k = 0
            for _ in range(20 * n_per_figure):
                if k >= 2 * n_per_figure:
                    break
                b = int(self.rows[rng.integers(len(self.rows))])
                if self.label(a, b) == RANDOM:
                    out.append(Pair(a, b, RANDOM))
                    k += 1
        return out

    def batch_rows(self, n_papers: int = 12, per_paper: int = 4) -> np.ndarray:
        """A training batch of figures: random papers (and a citing/cited paper of some), up to
        `per_paper` figures each, so same, citing and random pairs all occur in the batch."""
        rng = self.rng
        chosen: list[int] = []
        for p in rng.choice(self.papers, size=min(n_papers, len(self.papers)), replace=False).tolist():
            if p not in chosen:
                chosen.append(p)
            if rng.random() < 0.5:
                nb = [q for q in self.neighbours.get(p, ()) if q in self.by_paper and q not in chosen]
                if nb:
                    chosen.append(nb[rng.integers(len(nb))])
        rows = [rng.permutation(self.by_paper[p])[:per_paper] for p in chosen]
        return np.concatenate(rows) if rows else np.zeros(0, np.int64)


def ssim_filter(pairs: list[Pair], thumbs: np.ndarray, pos: float = SSIM_POS, neg: float = SSIM_NEG) -> list[Pair]:
    """Image pairs: positives (R > 0) with SSIM >= pos become label 1, negatives with SSIM < neg
    stay 0; the rest is dropped."""
    if not pairs:
        return []
    from app.learn.images import ssim_pairs

    a = np.array([p.a for p in pairs])
    b = np.array([p.b for p in pairs])
    s = ssim_pairs(thumbs[a], thumbs[b])
    out = []
    for p, v in zip(pairs, s.tolist()):
        if p.r > 0 and v >= pos:
            out.append(Pair(p.a, p.b, 1.0))
        elif p.r == 0 and v < neg:
            out.append(Pair(p.a, p.b, 0.0))
    return out


def ssim_mask(rows: np.ndarray, r: np.ndarray, stats, pos: float = SSIM_POS,
              neg: float = SSIM_NEG) -> tuple[np.ndarray, np.ndarray]:
    """The SSIM filter over a batch label matrix: (mask of kept pairs, binary image labels).
    `stats`: an `app.learn.images.SSIMStats` over the thumbnails of all rows."""
    n = len(rows)
    ia, ib = np.triu_indices(n, 1)
    s = np.zeros((n, n), np.float32)
    s[ia, ib] = stats.pairs(rows[ia], rows[ib])
    s = s + s.T
    keep = ((r > 0) & (s >= pos)) | ((r == 0) & (s < neg))
    np.fill_diagonal(keep, False)
    return keep, (r > 0).astype(np.float32)
