"""Neural model components (models/): forward shapes, save/load round trips, seeded reproducibility,
losses."""
from __future__ import annotations

import json

import pytest
import torch

from models.base import SavableModule, seed_everything
from models.fcc import FCCModel
from models.fusion import FusionModel
from models.image import SimpleCNN, StyleCNN, VGGBranch
from models.losses import pair_loss, pearson_loss, triplet_matrix_loss
from models.text import ConvText, LSTMText, MiniLMHead

B = 3


def _inputs(kind: str):
    if kind == "ids":
        ids = torch.randint(2, 50, (B, 12))
        ids[0, 5:] = 0  # padding
        return (ids,)
    if kind == "vec":
        return (torch.randn(B, 384),)
    if kind == "img":
        return (torch.rand(B, 3, 32, 32),)
    raise AssertionError(kind)


CASES = [
    (lambda: LSTMText(vocab_size=60, out_dim=7), "ids", 7),
    (lambda: LSTMText(vocab_size=60, out_dim=7, bidirectional=True), "ids", 7),
    (lambda: MiniLMHead(out_dim=9), "vec", 9),
    (lambda: ConvText(vocab_size=60, filters=8, out_dim=5), "ids", 5),
    (lambda: SimpleCNN(out_dim=6, filters=4, pool_to=2), "img", 6),
    (lambda: StyleCNN(out_dim=6, widths=(4, 4, 4), stats_dim=0), "img", 6),
    (lambda: VGGBranch(widths=(4, 8), out_dim=6), "img", 6),
]


@pytest.mark.parametrize("make,kind,dim", CASES)
def test_component_shapes_roundtrip_and_seed(make, kind, dim, tmp_path):
    seed_everything(1)
    m = make().eval()
    x = _inputs(kind)
    y = m(*x)
    assert y.shape == (B, dim)
    m.save(tmp_path / "m", data_hash="abc", metrics={"acc": 0.5})
    meta = json.loads((tmp_path / "m" / "meta.json").read_text())
    assert meta["class"] == type(m).__name__ and meta["meta"]["data_hash"] == "abc"
    m2 = SavableModule.load(tmp_path / "m")
    assert type(m2) is type(m) and m2.meta["metrics"] == {"acc": 0.5}
    assert torch.allclose(m2(*x), y, atol=1e-6)
    seed_everything(1)
    m3 = make().eval()
    assert torch.allclose(m3(*x), y, atol=1e-6)  # same seed, same weights


@pytest.mark.parametrize("text,image,image_kind", [("minilm", True, "style"), ("lstm", True, "simple"),
                                                     ("bilstm", False, "style"), (None, True, "style")])
def test_fusion_model(text, image, image_kind, tmp_path):
    seed_everything(0)
    m = FusionModel(text_kind=text, image=image, image_kind=image_kind, dim=16, branch_dim=8, vocab_size=60).eval()
    t = None if text is None else (torch.randn(B, 384) if text == "minilm" else torch.randint(1, 60, (B, 10)))
    im = torch.rand(B, 3, 32, 32) if image else None
    st = torch.rand(B, 76) if image else None
    out = m(t, im, st)
    assert out["fused"].shape == (B, 16)
    assert torch.allclose(out["fused"].norm(dim=1), torch.ones(B), atol=1e-5)
    if text:
        assert out["text"].shape == (B, 8)
        assert m(t, None)["fused"].shape == (B, 16)  # text-only query path
    if image:
        assert out["image"].shape == (B, 8)
        assert m(None, im, st)["fused"].shape == (B, 16)  # image-only query path
    m.save(tmp_path / "f")
    m2 = FusionModel.load(tmp_path / "f")
    assert torch.allclose(m2(t, im, st)["fused"], out["fused"], atol=1e-5)
    m.train()
    m(t, im, st)["fused"].sum().backward()  # modality dropout path is differentiable


@pytest.mark.parametrize("objective", ["ce", "pearson"])
def test_fcc_model(objective, tmp_path):
    seed_everything(0)
    m = FCCModel(vocab_size=60, dim=16, objective=objective, widths=(4, 8)).eval()
    im, ids = torch.rand(B, 3, 32, 32), torch.randint(1, 60, (B, 20))
    s = m(im, ids)
    assert s.shape == (B,)
    assert m.encode_image(im).shape == (B, 16) and m.encode_text(ids).shape == (B, 16)
    m.save(tmp_path / "fcc")
    assert torch.allclose(SavableModule.load(tmp_path / "fcc")(im, ids), s, atol=1e-5)
    with pytest.raises(ValueError):
        FCCModel(objective="nope")


def test_losses():
    sim = torch.tensor([0.9, 0.1, 0.5])
    target = torch.tensor([1.0, 0.0, 0.6])
    assert pair_loss(sim, target, "mse").item() == pytest.approx(((0.1 ** 2) + 0.1 ** 2 + 0.1 ** 2) / 3, abs=1e-6)
    assert pair_loss(sim, target, "ce").item() > 0
    assert pearson_loss(torch.tensor([1.0, 0.8, -0.5, -1.0]), torch.tensor([1.0, 1.0, -1.0, -1.0])).item() < 0.1
    assert pearson_loss(torch.tensor([-1.0, -0.8, 0.5, 1.0]), torch.tensor([1.0, 1.0, -1.0, -1.0])).item() > 1.9
    s = torch.tensor([[1.0, 0.9, 0.1], [0.9, 1.0, 0.2], [0.1, 0.2, 1.0]])
    r = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    mask = ~torch.eye(3, dtype=torch.bool)
    assert triplet_matrix_loss(s, r, mask, margin=1.0).item() == pytest.approx(((1 + 0.1 - 0.9) + (1 + 0.2 - 0.9)) / 2)
    with pytest.raises(ValueError):
        pair_loss(sim, target, "hinge?")
