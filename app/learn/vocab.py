"""Word ids for the from-scratch text branches: the recommender's preprocessing (`app.search.text.analyze`:
stop words out, stemming), vocabulary = the `size` most frequent words of the training texts,
0 = padding, 1 = unknown; texts cut to the first `max_len` words (caption first)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np

from app.search.text import analyze


class Vocab:
    def __init__(self, words: list[str]):
        self.words = list(words)
        self.index = {w: i + 2 for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words) + 2

    @classmethod
    def build(cls, texts, size: int = 1000) -> "Vocab":
        c = Counter()
        for t in texts:
            c.update(analyze(t))
        return cls([w for w, _ in sorted(c.items(), key=lambda x: (-x[1], x[0]))[:size]])

    def encode(self, texts, max_len: int = 100) -> np.ndarray:
        out = np.zeros((len(texts), max_len), np.int64)
        for i, t in enumerate(texts):
            ids = [self.index.get(w, 1) for w in analyze(t)[:max_len]] or [1]
            out[i, :len(ids)] = ids
        return out

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.words))

    @classmethod
    def load(cls, path: Path) -> "Vocab":
        return cls(json.loads(Path(path).read_text()))
