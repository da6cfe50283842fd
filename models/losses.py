"""Losses of the figure-recommendation paper (CE on sigmoid(dot), MSE of dot vs R, triplet hinge) and of visual-textual fusion (Pearson
correlation between similarities of matched / shuffled pairs and +1/-1 labels)."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def pair_loss(sim: torch.Tensor, target: torch.Tensor, kind: str = "mse", weight: torch.Tensor | None = None,
              scale: float = 5.0) -> torch.Tensor:
    """sim: similarities of pairs (cosine in [-1, 1]); target: R in [0, 1]."""
    if kind == "mse":
        per = (sim - target) ** 2
    elif kind == "ce":  # binary cross-entropy on sigmoid(scale * sim) with soft labels R
        per = F.binary_cross_entropy_with_logits(scale * sim, target, reduction="none")
    else:
        raise ValueError(f"unknown pair loss {kind!r}")
    if weight is None:
        return per.mean()
    return (per * weight).sum() / weight.sum().clamp(min=1.0)


def triplet_matrix_loss(sim: torch.Tensor, target: torch.Tensor, mask: torch.Tensor, margin: float = 1.0):
    """Kuzi & Zhai's triplet hinge max(0, m + q.neg - q.pos) over all (anchor, pos, neg) in a batch
    similarity matrix: pos = target > 0, neg = target == 0 (both within `mask`)."""
    pos = (target > 0) & mask
    neg = (target == 0) & mask
    # (a, p, n): sim[a, n] - sim[a, p]
    diff = margin + sim.unsqueeze(1) - sim.unsqueeze(2)  # [a, p, n] = m + sim[a,n] - sim[a,p]
    valid = pos.unsqueeze(2) & neg.unsqueeze(1)
    if not valid.any():
        return sim.sum() * 0.0
    return F.relu(diff[valid]).mean()


def pearson_loss(sim: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """1 - Pearson correlation between similarities and labels (+1 matched, -1 shuffled)."""
    s = sim - sim.mean()
    l = labels - labels.mean()
    r = (s * l).sum() / (s.norm() * l.norm()).clamp(min=1e-8)
    return 1.0 - r
