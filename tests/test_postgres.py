"""The same ingestion code against the real PostgreSQL server."""
from __future__ import annotations

import pytest
from sqlalchemy import func, select

from app.db.schema import Citation, Figure, Paper
from app.db.session import session_scope
from app.pipeline import ingest_jobs
from app.settings import Settings

pytestmark = pytest.mark.postgres


def test_ingest_on_postgres(demo_pdfs, pg_url, tmp_path):
    settings = Settings(data_dir=tmp_path / "data", database_url=pg_url, broker_url="")
    job_id = ingest_jobs.prepare_job(demo_pdfs[:4] + [demo_pdfs[0]], settings)
    ingest_jobs.run_job_embedded(settings, job_id, workers=2)
    summary = ingest_jobs.summarise(settings, job_id)
    assert summary.counts["ok"] == 4 and summary.counts["duplicate"] == 1, summary
    with session_scope(settings.db_url) as s:
        assert s.scalar(select(func.count(Paper.id))) == 4
        assert s.scalar(select(func.count(Figure.id))) >= 12
        assert s.scalar(select(func.count(Citation.id))) >= 1
    # the papers list's search and sorts on PostgreSQL (ILIKE with escapes, NULLS LAST, a count subquery)
    from app.api.routes.papers import list_papers

    with session_scope(settings.db_url) as s:
        by = {sort: list_papers(s, settings, 0, 50, None, None, sort).items for sort in ("id", "year", "title", "figures")}
        assert all(len(items) == 4 for items in by.values())
        assert [p.n_figures for p in by["figures"]] == sorted((p.n_figures for p in by["id"]), reverse=True)
        assert [p.title.lower() for p in by["title"]] == sorted(p.title.lower() for p in by["id"])
        assert all(p.central_figure is not None for p in by["id"] if p.n_figures)
        word = max(by["id"][0].title.split(), key=len)
        assert by["id"][0].paper_id in [p.paper_id for p in list_papers(s, settings, 0, 50, None, word.upper(), "id").items]
        assert list_papers(s, settings, 0, 50, None, "100%_", "id").total == 0
