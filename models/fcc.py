"""Figure-caption correspondence (FCC, Gomez-Perez & Ortega): a vision branch and a language branch trained only
on (figure, caption) pairs, positives = real pairs, negatives = random captions (balanced).

Two objectives:
  * "ce" (figure-caption correspondence): element-wise product of the branch outputs -> 2 dense layers -> 2-way softmax;
  * "pearson" (visual-textual fusion): 1 - Pearson correlation between the cosines of matched / shuffled pairs
    and +1 / -1 labels.
Retrieval (caption -> figure, figure -> caption) scores a pair by `score(v, l)`: the head's
log-odds for "ce", the cosine for "pearson". Figure -> figure (image-only queries) uses the cosine of
the normalised vision features in both cases.
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import nn

from models.base import SavableModule
from models.image import VGGBranch
from models.text import ConvText


class FCCModel(SavableModule):
    def __init__(self, vocab_size: int = 5002, dim: int = 128, objective: str = "ce",
                 widths: tuple = (16, 32, 64, 128), in_ch: int = 3):
        self._remember(locals())
        if objective not in ("ce", "pearson"):
            raise ValueError("objective must be 'ce' or 'pearson'")
        self.objective = objective
        self.vision = VGGBranch(in_ch=in_ch, widths=tuple(widths), out_dim=dim)
        self.language = ConvText(vocab_size=vocab_size, out_dim=dim)
        self.head = nn.Sequential(nn.Linear(dim, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 2))

    def encode_image(self, x):
        return F.normalize(self.vision(x), dim=-1)

    def encode_text(self, ids):
        return F.normalize(self.language(ids), dim=-1)

    def pair_logits(self, v, l):
        """v, l: normalised branch outputs (B, dim) -> (B, 2) logits."""
        return self.head(v * l * v.shape[1] ** 0.5)

    def score(self, v, l):
        if self.objective == "ce":
            lg = self.pair_logits(v, l)
            return lg[:, 1] - lg[:, 0]
        return (v * l).sum(-1)

    def forward(self, image, ids):
        return self.score(self.encode_image(image), self.encode_text(ids))
