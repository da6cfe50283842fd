"""The fusion model of Kuzi & Zhai's figure recommender: text features and image features
concatenated, batch norm, one dense layer -> the figure embedding. Branch outputs are also kept
(L2-normalised) so a text-only query (free-text search) and an image-only query (uploaded figure)
have embeddings of their own.

Modality dropout (training only): with probability `modality_dropout` a sample's text or image
features are zeroed before the fusion, so `fused` stays meaningful when a modality is missing
(`text=None` or `image=None` at inference zeroes that branch for every sample).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from models.base import SavableModule
from models.image import SimpleCNN, StyleCNN
from models.text import LSTMText, MiniLMHead


class FusionModel(SavableModule):
    def __init__(self, text_kind: str | None = "minilm", image: bool = True, dim: int = 64,
                 branch_dim: int = 50, vocab_size: int = 1002, text_in: int = 384, in_ch: int = 3,
                 modality_dropout: float = 0.2, dropout: float = 0.5, image_kind: str = "style",
                 stats_dim: int = 76, paper: bool = False, paper_in: int = 384):
        self._remember(locals())
        if text_kind is None and not image:
            raise ValueError("a fusion model needs text or image")
        self.text_kind, self.use_image = text_kind, image
        if text_kind == "minilm":
            self.text = MiniLMHead(in_dim=text_in, out_dim=branch_dim, dropout=dropout)
        elif text_kind in ("lstm", "bilstm"):
            self.text = LSTMText(vocab_size=vocab_size, out_dim=branch_dim, bidirectional=text_kind == "bilstm",
                                 dropout=dropout)
        elif text_kind is None:
            self.text = None
        else:
            raise ValueError(f"unknown text_kind {text_kind!r}")
        if not image:
            self.image = None
        elif image_kind == "simple":  # Kuzi & Zhai's simple CNN
            self.image = SimpleCNN(in_ch=in_ch, out_dim=branch_dim, dropout=dropout)
        elif image_kind == "style":
            self.image = StyleCNN(in_ch=in_ch, stats_dim=stats_dim, out_dim=branch_dim)
        else:
            raise ValueError(f"unknown image_kind {image_kind!r}")
        self.image_kind = image_kind
        # paper context (optional): the frozen MiniLM vector of the figure's paper title + abstract
        self.paper = MiniLMHead(in_dim=paper_in, out_dim=branch_dim, dropout=dropout) if paper else None
        n_in = branch_dim * ((self.text is not None) + (self.image is not None) + (self.paper is not None))
        self.bn = nn.BatchNorm1d(n_in)
        self.fuse = nn.Linear(n_in, dim)
        self.branch_dim, self.dim = branch_dim, dim

    def encode_image(self, image: torch.Tensor, stats: torch.Tensor | None = None) -> torch.Tensor:
        """Image-branch features (unnormalised)."""
        return self.image(image, stats) if self.image_kind == "style" else self.image(image)

    def forward(self, text: torch.Tensor | None = None, image: torch.Tensor | None = None,
                stats: torch.Tensor | None = None, paper: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        n = next(x for x in (text, image, paper) if x is not None).shape[0]
        dev = self.fuse.weight.device
        parts, out = [], {}
        for name, branch, x in (("text", self.text, text), ("image", self.image, image), ("paper", self.paper, paper)):
            if branch is None:
                continue
            if x is None:
                parts.append(torch.zeros(n, self.branch_dim, device=dev))
                continue
            f = self.encode_image(x, stats) if name == "image" else branch(x)
            out[name] = F.normalize(f, dim=-1)
            parts.append(f)
        if self.training and len(parts) >= 2 and self.hparams["modality_dropout"] > 0:
            p = self.hparams["modality_dropout"]
            drop = torch.rand(n, len(parts), device=dev) < p
            all_dropped = drop.all(dim=1)
            drop[all_dropped, 0] = False                       # never drop every modality
            parts = [x * (~drop[:, j]).float().unsqueeze(1) for j, x in enumerate(parts)]
        out["fused"] = F.normalize(self.fuse(self.bn(torch.cat(parts, dim=1))), dim=-1)
        return out
