"""ONNX Runtime session options shared by every model the project runs in it (the page-layout model,
the visual backbone): a fixed number of threads that wait without spinning, as OpenMP's do
(app/__init__.py), so an idle pool thread never keeps a core busy."""
from __future__ import annotations

import importlib


def session_options(threads: int = 1, options=None):
    """Options for `onnxruntime.InferenceSession` (`options` set in place, else new ones): `threads`
    intra-op threads, one inter-op thread, no spinning."""
    if options is None:
        options = importlib.import_module("onnxruntime").SessionOptions()
    options.intra_op_num_threads = max(1, threads)
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options
