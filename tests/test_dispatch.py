"""The ingestion core is free of Celery: the dispatcher is chosen in app/dispatch.py."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from app.dispatch import dispatcher_for
from app.settings import Settings

INGEST = Path(__file__).resolve().parents[1] / "app" / "ingest"


def _imported_modules(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_ingest_modules_never_import_celery_or_workers():
    for path in INGEST.glob("*.py"):
        bad = {m for m in _imported_modules(path) if m.split(".")[0] in ("celery", "workers")}
        assert not bad, f"{path.name} imports {bad}"


def test_importing_the_pipeline_loads_no_celery():
    code = ("import sys, app.pipeline.ingest_jobs, app.ingest.extract; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('celery', 'workers')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_dispatcher_follows_the_mode(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr("app.pipeline.ingest_jobs.run_job_embedded",
                        lambda settings, job_id, workers, on_file=None: calls.append(job_id))
    embedded = Settings(data_dir=tmp_path, database_url="", broker_url="")
    dispatcher_for(embedded)("job-1")
    assert calls == ["job-1"]
    distributed = Settings(data_dir=tmp_path, database_url="postgresql://u@127.0.0.1/x",
                           broker_url="redis://127.0.0.1:6379/0")
    assert distributed.distributed
    assert dispatcher_for(distributed).__qualname__.startswith("celery_workers")
    assert dispatcher_for(embedded).__qualname__.startswith("in_process")
