"""Loading the page-layout model: its sessions run on the calling thread and its table-grid model
(whose cell grid is not among the boxes) is not run."""
from pathlib import Path

import pymupdf
import pytest

from app.ingest import layout_model


def test_sessions_created_while_the_model_loads_take_one_thread_without_spinning():
    ort = pytest.importorskip("onnxruntime")
    make = ort.InferenceSession
    model_file = next((Path(pymupdf.__file__).parent / "layout" / "resources" / "onnx").glob("*.onnx"), None)
    if model_file is None:
        pytest.skip("pymupdf-layout not installed")
    with layout_model._single_threaded_sessions():
        session = ort.InferenceSession(str(model_file), providers=["CPUExecutionProvider"])
    options = session.get_session_options()
    assert options.intra_op_num_threads == 1 and options.inter_op_num_threads == 1
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert ort.InferenceSession is make  # only the plug-in's own loading is affected


def test_the_loaded_model_does_not_predict_table_grids():
    if not layout_model.available():
        pytest.skip("pymupdf-layout not installed")
    models = [getattr(c.cell_contents, "_model", None) for c in pymupdf._get_layout.__closure__ or ()]
    assert any(hasattr(m, "table_grid_extractor") for m in models)
    assert all(getattr(m, "table_grid_extractor", None) is None for m in models)
