"""A new user's first hour, API side: the search-by-picture error names its form field, /info says
where the admin token comes from, a duplicate file names the paper it repeats, and
`figsearch admin-token` never makes a token for a data dir without a collection."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from fastapi.testclient import TestClient

from app.api.main import create_app
from app.settings import Settings
from tests.conftest import copy_data_dir
from tests.test_api import AUTH, TOKEN, assert_problem

ROOT = Path(__file__).resolve().parents[1]


def _png() -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (40, 30), "white").save(buf, format="PNG")
    return buf.getvalue()


def test_picture_under_another_form_field_gets_a_422_naming_image(tmp_path):
    client = TestClient(create_app(Settings(data_dir=tmp_path / "d", database_url="", broker_url="",
                                            admin_token=TOKEN, warm_encoder=False)))
    r = client.post("/api/v1/search/by-image", files={"file": ("f.png", _png(), "image/png")})
    body = assert_problem(r, 422)
    assert "multipart/form-data field 'image'" in body["detail"] and "-F 'image=@FILE'" in body["detail"], body


def test_info_says_where_the_admin_token_comes_from(tmp_path):
    base = dict(database_url="", broker_url="", warm_encoder=False)
    with TestClient(create_app(Settings(data_dir=tmp_path / "a", admin_token=TOKEN, **base))) as c:
        assert c.get("/api/v1/info").json()["admin_token_source"] == "environment"
    with TestClient(create_app(Settings(data_dir=tmp_path / "b", **base))) as c:
        assert c.get("/api/v1/info").json()["admin_token_source"] == "data_dir"
    assert (tmp_path / "b" / "admin-token").exists()


def test_duplicates_and_skipped_members_in_the_job_view(tmp_path, demo_pdfs):
    from app.pipeline import ingest_jobs

    settings = Settings(data_dir=tmp_path / "d", database_url="", broker_url="", admin_token=TOKEN, auto_index=False)
    first = ingest_jobs.prepare_job([demo_pdfs[0]], settings)
    ingest_jobs.run_job_embedded(settings, first, workers=1)
    bundle = tmp_path / "bundle.zip"
    with zipfile.ZipFile(bundle, "w") as z:
        z.write(demo_pdfs[0], "again.pdf")
        z.writestr("notes.txt", "not a paper")
    second = ingest_jobs.prepare_job([bundle], settings)
    ingest_jobs.run_job_embedded(settings, second, workers=1)
    with TestClient(create_app(settings)) as c:
        original = c.get(f"/api/v1/admin/jobs/{first}", headers=AUTH).json()["files"][0]
        files = {f["name"]: f for f in c.get(f"/api/v1/admin/jobs/{second}", headers=AUTH).json()["files"]}
        job = c.get(f"/api/v1/admin/jobs/{second}", headers=AUTH).json()
    assert original["status"] == "ok" and original["duplicate_of"] is None
    dup = files["bundle.zip:again.pdf"]
    assert dup["status"] == "duplicate" and dup["duplicate_of"] == original["paper_id"], dup
    assert files["bundle.zip:notes.txt"]["status"] == "skipped" and files["bundle.zip:notes.txt"]["duplicate_of"] is None
    assert job["created_at"] and job["finished_at"]


def _cli(args: list[str], env: dict | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    e = {**os.environ, "PYTHONPATH": str(ROOT), "FIGSEARCH_BROKER_URL": "", "FIGSEARCH_DATABASE_URL": "",
         "FIGSEARCH_ADMIN_TOKEN": "", **(env or {})}
    e.pop("FIGSEARCH_DATA_DIR", None)
    return subprocess.run([sys.executable, "-m", "app.cli", *args], cwd=cwd, env=e, capture_output=True,
                          text=True, timeout=120)


def test_admin_token_never_makes_a_token_for_a_data_dir_without_a_collection(tmp_path):
    # no --data-dir: ./data of the working directory, which holds nothing
    r = _cli(["admin-token"], cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == ""
    assert str((tmp_path / "data").resolve()) in r.stderr and "--data-dir" in r.stderr, r.stderr
    assert not (tmp_path / "data" / "admin-token").exists()
    empty = tmp_path / "empty"
    r = _cli(["admin-token", "--data-dir", str(empty)])
    assert r.returncode == 1 and str(empty.resolve()) in r.stderr and not (empty / "admin-token").exists()


def test_admin_token_of_a_served_or_ingested_data_dir(tmp_path, demo_ingested_one):
    data = copy_data_dir(demo_ingested_one, tmp_path)  # a collection from `figsearch ingest`
    first = _cli(["admin-token", "--data-dir", str(data)])  # a collection: its server will read this token
    assert first.returncode == 0, first.stderr
    token = first.stdout.strip()
    assert len(token) >= 24 and (data / "admin-token").read_text().strip() == token
    assert str(data.resolve()) in first.stderr
    again = _cli(["admin-token", "--data-dir", str(data)])
    assert again.stdout.strip() == token
    env_token = "an-environment-token-of-enough-length"
    assert _cli(["admin-token", "--data-dir", str(tmp_path / "none")],
                {"FIGSEARCH_ADMIN_TOKEN": env_token}).stdout.strip() == env_token
    shutil.rmtree(data)
