"""Image encoders: the simple CNN of Kuzi & Zhai's figure recommender (2 conv layers x 32 filters
3x3, max-pool, dropout 0.5, dense 100 ReLU, dense 50) and the VGG-style vision branch of Gomez-Perez
& Ortega's figure-caption correspondence (conv-conv-pool blocks, BN + ReLU).

Deviation from the papers, for CPU: inputs are `size` x `size` (default 96) instead of 224, and the
simple CNN pools the last feature map to 8x8 before the dense layer (the paper flattens a 111x111x32
map into a 100-unit dense layer: 39M weights; this keeps 205k)."""
from __future__ import annotations

import torch
from torch import nn

from models.base import SavableModule


class SimpleCNN(SavableModule):
    """images (B, C, H, W) in [0, 1] -> (B, out)."""

    def __init__(self, in_ch: int = 3, filters: int = 32, dense: int = 100, out_dim: int = 50,
                 dropout: float = 0.5, pool_to: int = 8):
        self._remember(locals())
        self.features = nn.Sequential(
            nn.Conv2d(in_ch, filters, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(filters, filters, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.AdaptiveAvgPool2d(pool_to))
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(dropout), nn.Linear(filters * pool_to * pool_to, dense),
                                  nn.ReLU(), nn.Linear(dense, out_dim))
        self.out_dim = out_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


class VGGBranch(SavableModule):
    """Gomez-Perez & Ortega's vision branch: blocks of conv-BN-ReLU-conv-BN-ReLU-maxpool, global max -> out."""

    def __init__(self, in_ch: int = 3, widths: tuple = (16, 32, 64, 128), out_dim: int = 128):
        self._remember(locals())
        layers, c = [], in_ch
        for w in widths:
            layers += [nn.Conv2d(c, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(),
                       nn.Conv2d(w, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2)]
            c = w
        self.features = nn.Sequential(*layers)
        self.out = nn.Linear(c, out_dim)
        self.out_dim = out_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.features(x).amax(dim=(2, 3)))


class StyleCNN(SavableModule):
    """Figure *style* encoder (figsearch's default image branch): a small fully-convolutional net
    whose feature maps are summarised by global average and max pooling (texture statistics:
    line widths, fonts, markers, fills), concatenated with global colour / grey-level / aspect
    statistics (`app.learn.images.image_stats`), then dense 100 ReLU -> dense out. Figures of one
    paper share these; SSIM (pixel alignment) mostly does not."""

    def __init__(self, in_ch: int = 3, widths: tuple = (16, 32, 48), stats_dim: int = 76, dense: int = 100,
                 out_dim: int = 50, dropout: float = 0.3):
        self._remember(locals())
        w1, w2, w3 = widths
        self.features = nn.Sequential(
            nn.Conv2d(in_ch, w1, 5, stride=2, padding=2), nn.BatchNorm2d(w1), nn.ReLU(),
            nn.Conv2d(w1, w2, 3, padding=1), nn.BatchNorm2d(w2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(w2, w3, 3, padding=1), nn.BatchNorm2d(w3), nn.ReLU())
        self.stats_dim = stats_dim
        n_in = 2 * w3 + stats_dim
        self.stats_bn = nn.BatchNorm1d(stats_dim) if stats_dim else None
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(n_in, dense), nn.ReLU(), nn.Linear(dense, out_dim))
        self.out_dim = out_dim

    def forward(self, x: torch.Tensor, stats: torch.Tensor | None = None) -> torch.Tensor:
        f = self.features(x)
        parts = [f.mean(dim=(2, 3)), f.amax(dim=(2, 3))]
        if self.stats_dim:
            if stats is None:
                stats = torch.zeros(x.shape[0], self.stats_dim, device=x.device)
            parts.append(self.stats_bn(stats))
        return self.head(torch.cat(parts, dim=1))
