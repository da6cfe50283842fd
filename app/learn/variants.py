"""Named training configurations of the learned figure embeddings (the default is "fused")."""
from __future__ import annotations

from dataclasses import replace

from app.learn.train import TrainConfig

DEFAULT_CONFIG = TrainConfig()

# name -> config overrides (Kuzi & Zhai's fusion models and figure-caption correspondence models); the default is "fused"
VARIANTS: dict[str, dict] = {
    "fused": {},                                   # text + style image + paper context (default)
    "fused_nopaper": {"paper": False},             # text + style image only
    "lstm_cnn": {"text": "lstm", "paper": False},
    "bilstm_cnn": {"text": "bilstm", "paper": False},
    "minilm_text": {"image": False, "paper": False},
    "style_image": {"text": None, "paper": False},
    "lstm_seedcnn": {"text": "lstm", "image_kind": "simple", "image_size": 96, "paper": False},
    "fused_ssim": {"ssim_filter": True},
    "fused_ce": {"loss": "ce"},
    "fused_triplet": {"loss": "triplet"},
}
FCC_VARIANTS: dict[str, dict] = {
    "fcc_ce": {"kind": "fcc", "loss": "ce", "lr": 1e-3, "image_size": 64},
    "fcc_pearson": {"kind": "fcc", "loss": "pearson", "lr": 1e-3, "image_size": 64},
}


def config_for(name: str, base: TrainConfig | None = None, **over) -> TrainConfig:
    base = base or DEFAULT_CONFIG
    spec = {**VARIANTS.get(name, FCC_VARIANTS.get(name, {})), **over}
    return replace(base, **spec)
