"""Text encoders of the figure-recommendation paper (Kuzi & Zhai): LSTM / Bi-LSTM over the first 100 words (vocabulary = the 1000 most
frequent training words, 100-d embeddings learned from scratch, 50 hidden units), and a dense head
over frozen MiniLM sentence vectors (the pretrained-transformer variant; the MiniLM vectors are
precomputed and cached, which is what makes training fast on CPU)."""
from __future__ import annotations

import torch
from torch import nn

from models.base import SavableModule

PAD, UNK = 0, 1


class LSTMText(SavableModule):
    """token ids (B, L), 0 = padding -> (B, out). bidirectional=True is the paper's Bi-LSTM."""

    def __init__(self, vocab_size: int = 1002, emb_dim: int = 100, hidden: int = 50, out_dim: int = 50,
                 bidirectional: bool = False, dropout: float = 0.5):
        self._remember(locals())
        self.emb = nn.Embedding(vocab_size, emb_dim, padding_idx=PAD)
        self.lstm = nn.LSTM(emb_dim, hidden, batch_first=True, bidirectional=bidirectional)
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(hidden * (2 if bidirectional else 1), out_dim)
        self.out_dim = out_dim

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        lengths = (ids != PAD).sum(1).clamp(min=1).cpu()
        x = self.emb(ids)
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, (h, _) = self.lstm(packed)           # h: (directions, B, hidden): the last states
        h = torch.cat(list(h), dim=1)
        return self.out(self.drop(h))


class MiniLMHead(SavableModule):
    """Frozen MiniLM sentence vector (B, 384) -> dense ReLU -> dense (B, out)."""

    def __init__(self, in_dim: int = 384, hidden: int = 256, out_dim: int = 50, dropout: float = 0.5):
        self._remember(locals())
        self.net = nn.Sequential(nn.Dropout(0.1), nn.Linear(in_dim, hidden), nn.ReLU(), nn.Dropout(dropout),
                                 nn.Linear(hidden, out_dim))
        self.out_dim = out_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class ConvText(SavableModule):
    """Gomez-Perez & Ortega's language branch: word embeddings -> 3 x (conv window 5 + ReLU +
    max-pool) -> global max -> out. Smaller widths than the paper's (512 filters, 300-d) for CPU training."""

    def __init__(self, vocab_size: int = 5002, emb_dim: int = 100, filters: int = 128, out_dim: int = 128,
                 window: int = 5, dropout: float = 0.3):
        self._remember(locals())
        self.emb = nn.Embedding(vocab_size, emb_dim, padding_idx=PAD)
        layers, c = [], emb_dim
        for _ in range(3):
            layers += [nn.Conv1d(c, filters, window, padding=window // 2), nn.BatchNorm1d(filters), nn.ReLU(),
                       nn.MaxPool1d(2, ceil_mode=True)]
            c = filters
        self.convs = nn.Sequential(*layers)
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(filters, out_dim)
        self.out_dim = out_dim

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.emb(ids).transpose(1, 2)
        x = self.convs(x).amax(dim=2)
        return self.out(self.drop(x))
