"""Reading and writing trained weights without pickle.

A pickle file runs code when it is loaded, so a model folder someone hands over could take over the
server. Weights are therefore kept as safetensors, JSON or NumPy files written with
`allow_pickle=False`; PyTorch state dicts of older saves are read with `weights_only=True`. Files
that are pickles (by name, or by the pickle opcode a pickle stream starts with) are refused before
anything is read.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from app.model_store.versions import VersionCorrupt

PICKLE_SUFFIXES = frozenset({".pkl", ".pickle", ".joblib", ".dill"})
PICKLE_PROTO = 0x80  # first byte of a pickle stream of protocol 2 or later (also legacy torch.save files)


class UnsafeArtifact(VersionCorrupt):
    """A model folder holds a file that would be unpickled when loaded (never served)."""


def is_pickle(path: Path) -> bool:
    path = Path(path)
    if path.suffix.lower() in PICKLE_SUFFIXES:
        return True
    if path.suffix == ".safetensors":  # starts with its header's length, which may begin with any byte
        return False
    with open(path, "rb") as f:
        return f.read(1) == bytes([PICKLE_PROTO])


def refuse_pickles(folder: Path) -> None:
    """Raise UnsafeArtifact naming the first pickle file under `folder`."""
    for p in sorted(Path(folder).rglob("*")):
        if p.is_file() and is_pickle(p):
            raise UnsafeArtifact(f"{p} is a pickle file; model folders hold only safetensors, JSON or "
                                 "NumPy files (a pickle runs code when it is loaded)")


def save_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Named NumPy arrays as one safetensors file."""
    from safetensors.numpy import save_file

    save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(path))


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """Named arrays of a safetensors or .npz file (never unpickled)."""
    path = Path(path)
    if path.suffix == ".safetensors":
        from safetensors.numpy import load_file

        return load_file(str(path))
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    raise UnsafeArtifact(f"{path}: arrays are read from .safetensors or .npz files only")


def save_tensors(path: Path, state: dict) -> None:
    """A PyTorch state dict as safetensors."""
    from safetensors.torch import save_file

    save_file({k: v.detach().contiguous().cpu() for k, v in state.items()}, str(path))


def load_tensors(path: Path) -> dict:
    """A PyTorch state dict from safetensors, or from a torch.save zip file with weights_only=True
    (tensors and plain containers only, never arbitrary objects)."""
    path = Path(path)
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path))
    if is_pickle(path):
        raise UnsafeArtifact(f"{path} is a pickle file, not a state dict that loads without running code")
    import torch

    return torch.load(path, map_location="cpu", weights_only=True)
