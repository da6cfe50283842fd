"""Hostile and careless requests: bodies without a token, chunked floods, image bombs, quota,
archives without PDFs, wrong methods, leaked internals, slow headers, killed CLI ingests."""
from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import socket
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.api.main import create_app
from app.settings import Settings
from tests import badfiles

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "hardening-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
UPLOAD = "/api/v1/admin/collections"


def make_settings(data: Path, **kw) -> Settings:
    kw.setdefault("auto_index", False)
    return Settings(data_dir=data, database_url="", broker_url="", admin_token=TOKEN, warm_encoder=False,
                    dense=False, **kw)


def area_bytes(data: Path) -> int:
    return sum(p.stat().st_size for area in ("uploads", "incoming") if (data / area).exists()
               for p in (data / area).rglob("*") if p.is_file())


def multipart_chunks(total: int, boundary: bytes = b"xyzBOUNDARY", chunk: int = 256 * 1024):
    """A multipart body of one 'PDF' file part of `total` bytes, sent chunked (no Content-Length)."""
    yield (b"--" + boundary + b"\r\nContent-Disposition: form-data; name=\"files\"; filename=\"big.pdf\"\r\n"
           b"Content-Type: application/pdf\r\n\r\n%PDF-1.4\n")
    sent = 0
    block = b"0" * chunk
    while sent < total:
        yield block
        sent += len(block)
    yield b"\r\n--" + boundary + b"--\r\n"


@pytest.fixture()
def client(tmp_path):
    with TestClient(create_app(make_settings(tmp_path / "data", max_upload_mb=1))) as c:
        yield c


# ------------------------------------------------------------------ bodies and the token
def test_chunked_upload_without_token_is_refused_unread(client, tmp_path):
    consumed = []

    def body():
        for part in multipart_chunks(50 << 20):
            consumed.append(len(part))
            yield part

    r = client.post(UPLOAD, content=body(), headers={"Content-Type": "multipart/form-data; boundary=xyzBOUNDARY"})
    assert r.status_code == 401 and r.json()["status"] == 401
    assert area_bytes(tmp_path / "data") == 0
    r = client.post(UPLOAD, content=body(), headers={"Content-Type": "multipart/form-data; boundary=xyzBOUNDARY",
                                                     "Authorization": "Bearer wrong-token"})
    assert r.status_code == 403 and area_bytes(tmp_path / "data") == 0


def test_chunked_upload_with_token_stops_at_the_limit(client, tmp_path):
    r = client.post(UPLOAD, content=multipart_chunks(20 << 20),
                    headers={"Content-Type": "multipart/form-data; boundary=xyzBOUNDARY", **AUTH})
    assert r.status_code == 413, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.headers.get("connection") == "close"
    assert area_bytes(tmp_path / "data") == 0  # the partial file is removed with its job folder


def test_chunked_body_on_a_public_route_is_bounded(client):
    r = client.post("/api/v1/search/by-image", content=multipart_chunks(30 << 20),
                    headers={"Content-Type": "multipart/form-data; boundary=xyzBOUNDARY"})
    assert r.status_code == 413
    r = client.post("/api/v1/search?q=x", content=(b"x" * 65536 for _ in range(100)))
    assert r.status_code in (405, 413)


def test_upload_quota(tmp_path, demo_pdfs):
    data = tmp_path / "data"
    (data / "uploads" / "someone-else").mkdir(parents=True)
    (data / "uploads" / "someone-else" / "x.pdf").write_bytes(b"0" * 1_000_000)
    with TestClient(create_app(make_settings(data, upload_quota_mb=1.0))) as c:
        pdf = demo_pdfs[0].read_bytes()
        assert len(pdf) > 60_000  # more than the 1 MiB quota leaves
        r = c.post(UPLOAD, headers=AUTH, files={"files": ("a.pdf", pdf, "application/pdf")})
        assert r.status_code == 507, r.text
        assert "quota" in r.json()["detail"].lower()
    assert area_bytes(data) == 1_000_000  # the refused upload left nothing


def test_upload_without_any_pdf_is_400_with_reasons(client):
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr("paper.pdf", b"%PDF-1.4 nested")
    outer = io.BytesIO()
    with zipfile.ZipFile(outer, "w") as z:
        z.writestr("notes.txt", b"hello")
        z.writestr("more.zip", inner.getvalue())
    r = client.post(UPLOAD, headers=AUTH, files={"files": ("bundle.zip", outer.getvalue(), "application/zip")})
    assert r.status_code == 400, r.text
    detail = r.json()["detail"]
    assert "no PDF" in detail and "notes.txt: skipped: not a PDF" in detail and "zip inside a zip" in detail
    assert "/" not in detail.replace("bundle.zip:", "").split("(", 1)[1].replace("zip inside a zip", "")
    empty = io.BytesIO()
    zipfile.ZipFile(empty, "w").close()
    r = client.post(UPLOAD, headers=AUTH, files={"files": ("empty.zip", empty.getvalue(), "application/zip")})
    assert r.status_code == 400


def test_nested_zip_is_listed_as_skipped_next_to_pdfs(tmp_path, demo_pdfs):
    from app.ingest.sources import expand_inputs

    buf = tmp_path / "mixed.zip"
    with zipfile.ZipFile(buf, "w") as z:
        z.write(demo_pdfs[0], "a.pdf")
        z.writestr("inner.zip", b"PK\x05\x06" + b"\0" * 18)
        z.writestr("figure.png", b"\x89PNG")
    files = expand_inputs([buf], make_settings(tmp_path / "data"), tmp_path / "staging")
    by = {f.name.split(":", 1)[1]: f for f in files}
    assert by["a.pdf"].path and not by["a.pdf"].error
    assert by["inner.zip"].skipped and "zip inside a zip" in by["inner.zip"].error
    assert by["figure.png"].skipped and "not a PDF" in by["figure.png"].error


# ------------------------------------------------------------------ images
def test_image_bomb_and_truncated_image_are_refused(tmp_path, monkeypatch):
    import app.learn.image_search as image_search

    seen = []
    monkeypatch.setattr(image_search, "image_model", lambda *a, **k: object())
    monkeypatch.setattr(image_search, "search_by_image", lambda loaded, engine, img, k: seen.append(img) or [])
    with TestClient(create_app(make_settings(tmp_path / "data"))) as c:
        bomb = badfiles.png_bomb(12_000, 12_000)
        r = c.post("/api/v1/search/by-image", files={"image": ("bomb.png", bomb, "image/png")})
        assert r.status_code == 413 and "megapixel" in r.json()["detail"], r.text
        r = c.post("/api/v1/search/by-image", files={"image": ("cut.png", badfiles.truncated_png(), "image/png")})
        assert r.status_code == 422 and "truncated" in r.json()["detail"], r.text
        r = c.post("/api/v1/search/by-image", files={"image": ("x.png", b"\x89PNG\r\n\x1a\n" + b"junk" * 10, "image/png")})
        assert r.status_code == 422
        assert not seen  # nothing reached the model
        from PIL import Image

        buf = io.BytesIO()
        Image.new("RGB", (3000, 2000), "white").save(buf, "JPEG")
        r = c.post("/api/v1/search/by-image", files={"image": ("ok.jpg", buf.getvalue(), "image/jpeg")})
        assert r.status_code == 200, r.text  # a big but honest image passes (no index here: no results)


def test_pixel_budget_is_read_from_the_header():
    from fastapi import HTTPException

    from app.api.query_image import decode_query_image

    with pytest.raises(HTTPException) as err:
        decode_query_image(badfiles.png_bomb(8000, 8000), max_megapixels=25)
    assert err.value.status_code == 413 and "64.0 megapixels" in err.value.detail
    img = decode_query_image(badfiles.png_bomb(4000, 4000), max_megapixels=25)
    assert max(img.size) == 512


# ------------------------------------------------------------------ HTTP contract
def test_wrong_method_is_405_with_allow(client):
    r = client.put("/api/v1/papers")
    assert r.status_code == 405 and r.headers["allow"] == "GET"
    assert r.headers["content-type"].startswith("application/problem+json")
    r = client.delete("/api/v1/search", params={"q": "x"})
    assert r.status_code == 405 and "GET" in r.headers["allow"]
    r = client.get(UPLOAD, headers=AUTH)
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    assert client.get("/api/v1/nothing-here").status_code == 404


def test_security_headers(client):
    for path in ("/", "/api/v1/info", "/api/v1/papers/999999", "/docs", "/redoc"):
        h = client.get(path).headers
        assert h["x-content-type-options"] == "nosniff" and h["x-frame-options"] == "DENY"
        assert "default-src 'self'" in h["content-security-policy"]  # the API docs too (local assets)
        assert h["referrer-policy"] == "no-referrer"


def test_schema_page_limits_equal_server_limits(tmp_path):
    with TestClient(create_app(make_settings(tmp_path / "data", max_page_size=30))) as c:
        schema = c.get("/api/v1/openapi.json").json()
        maxima = {(path, p["name"]): p["schema"]["maximum"] for path, ops in schema["paths"].items()
                  for op in ops.values() for p in op.get("parameters", []) if p["name"] in ("k", "limit")}
        assert maxima and set(maxima.values()) == {30}, maxima
        assert c.get("/api/v1/search", params={"q": "x", "k": 31}).status_code == 422
        assert c.get("/api/v1/search", params={"q": "x", "k": 30}).status_code == 200


def test_readyz_hides_database_errors(client):
    class Broken:
        def __call__(self):
            raise RuntimeError('connection to server at "db.internal" (10.1.2.3), port 5432 failed: '
                               'password authentication failed for user "figsearch"')

    client.app.state.session_factory = Broken()
    r = client.get("/readyz")
    assert r.status_code == 503
    assert "db.internal" not in r.text and "5432" not in r.text and "password" not in r.text
    assert r.json()["database"].startswith("unreachable")


def test_job_timestamps_are_timezone_aware(tmp_path, demo_pdfs):
    import datetime as dt

    from app.db.schema import Job
    from app.db.session import session_scope
    from app.ingest import pipeline

    settings = make_settings(tmp_path / "data")
    job_id = pipeline.prepare_job([demo_pdfs[0]], settings)
    with session_scope(settings.db_url) as s:
        assert s.get(Job, job_id).created_at.utcoffset() == dt.timedelta(0)
    with TestClient(create_app(settings)) as c:
        item = c.get("/api/v1/admin/jobs", headers=AUTH).json()["items"][0]
        assert dt.datetime.fromisoformat(item["created_at"]).utcoffset() == dt.timedelta(0)


def test_job_errors_show_no_server_paths(tmp_path):
    from app.api.jobs import public_error

    settings = make_settings(tmp_path / "data")
    up = settings.data_dir / "uploads" / "J1" / "000" / "my paper.pdf"
    err = f"cannot read file: [Errno 2] No such file or directory: '{up}'; also /srv/x/incoming/J1/00003_b.pdf"
    shown = public_error(settings, "J1", err)
    assert str(settings.data_dir) not in shown and "/srv" not in shown
    assert "my paper.pdf" in shown and "00003_b.pdf" in shown


# ------------------------------------------------------------------ served configuration
def test_served_configuration_drops_slow_headers(tmp_path):
    import uvicorn

    from app.api.serving import uvicorn_options

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    opts = uvicorn_options(make_settings(tmp_path / "data", header_timeout_s=1.0))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **opts))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.time() + 10
        while not server.started and time.time() < deadline:
            time.sleep(0.05)
        slow = socket.create_connection(("127.0.0.1", port))
        slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # never finishes its headers
        silent = socket.create_connection(("127.0.0.1", port))  # never sends anything
        quick = socket.create_connection(("127.0.0.1", port))
        quick.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert quick.recv(1000).startswith(b"HTTP/1.1 200")
        for sock in (slow, silent):
            sock.settimeout(5)
            t0 = time.time()
            assert sock.recv(1000) == b""  # closed by the server
            assert time.time() - t0 < 4.5
    finally:
        server.should_exit = True
        thread.join(10)


# ------------------------------------------------------------------ tokens and the CLI
def cli(args, env_extra=None, timeout=300, **kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIGSEARCH_")}
    env.update({"FIGSEARCH_AUTO_INDEX": "false", **(env_extra or {})})
    return subprocess.run([sys.executable, "-m", "app.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout, **kw)


@pytest.mark.parametrize("token", ["change-me", "short-token"])
def test_serve_refuses_bad_tokens_in_one_line(tmp_path, token):
    for broker in ("", "redis://127.0.0.1:6379/0"):
        r = cli(["serve", "--data-dir", str(tmp_path / "d"), "--port", "1"],
                {"FIGSEARCH_ADMIN_TOKEN": token, "FIGSEARCH_BROKER_URL": broker}, timeout=60)
        assert r.returncode == 2
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: FIGSEARCH_ADMIN_TOKEN"), r.stderr


def test_admin_token_command(tmp_path):
    """Generating and reading the token: tests/test_admin_setup.py; here what it refuses."""
    data = tmp_path / "d"
    first = cli(["admin-token", "--data-dir", str(data)], timeout=60)
    assert first.returncode == 1 and not (data / "admin-token").exists()  # no collection there
    r = cli(["admin-token", "--data-dir", str(data)], {"FIGSEARCH_BROKER_URL": "redis://127.0.0.1:6379/0"}, timeout=60)
    assert r.returncode == 2 and "distributed mode needs FIGSEARCH_ADMIN_TOKEN" in r.stderr


def _job_status(data: Path, job_id: str) -> tuple[str, int, int]:
    from app.ingest import pipeline

    return pipeline.job_progress(Settings(data_dir=data, database_url="", broker_url=""), job_id)


def _peek_job(db: Path):
    """(id, status, done, total) of the only job, read with sqlite3, or None."""
    if not db.exists():
        return None
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            return con.execute("SELECT id, status, done, total FROM jobs").fetchone()
    except sqlite3.Error:
        return None


def test_killed_cli_ingest_is_interrupted_and_resumable(tmp_path, demo_pdfs, real_papers):
    data = tmp_path / "data"
    zbuf = tmp_path / "bundle.zip"  # a zip, so the job has staging copies
    with zipfile.ZipFile(zbuf, "w") as z:
        for p in demo_pdfs:
            z.write(p, p.name)
    env = {"FIGSEARCH_INGEST_WORKERS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "ingest", str(zbuf), *map(str, real_papers),
                             "--data-dir", str(data)], cwd=ROOT, start_new_session=True,
                            env={**{k: v for k, v in os.environ.items() if not k.startswith("FIGSEARCH_")},
                                 "FIGSEARCH_AUTO_INDEX": "false", **env},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    job_id = None
    while time.time() < deadline:  # read the job row directly: cheap, and never migrates beside the CLI
        row = _peek_job(data / "figsearch.db")
        if row and row[2] >= 1:
            job_id = row[0]
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    assert job_id, "no job made progress before the deadline"
    proc.wait(10)
    status, done, total = _job_status(data, job_id)
    assert status == "running" and done < total, "the job finished before the kill; the test proves nothing"
    assert (data / "incoming" / job_id).exists()

    # the next run notices the dead job and says how to finish it
    other = cli(["ingest", str(demo_pdfs[0]), "--data-dir", str(data)], env)
    assert other.returncode == 0, other.stderr
    assert f"figsearch ingest --resume {job_id}" in other.stderr
    assert _job_status(data, job_id)[0] == "interrupted"
    r = cli(["ingest", "--resume", job_id, "--data-dir", str(data), "--json"], env)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    status, done, total = _job_status(data, job_id)
    assert status == "done" and done == total == len(demo_pdfs) + len(real_papers)
    assert summary["ok"] + summary["duplicate"] == total
    assert not (data / "incoming" / job_id).exists()  # staging removed with the finished job


def test_sigterm_marks_the_cli_job_interrupted(tmp_path, real_papers, demo_pdfs):
    data = tmp_path / "data"
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "ingest", *map(str, real_papers), *map(str, demo_pdfs),
                             "--data-dir", str(data)], cwd=ROOT,
                            env={**{k: v for k, v in os.environ.items() if not k.startswith("FIGSEARCH_")},
                                 "FIGSEARCH_AUTO_INDEX": "false", "FIGSEARCH_INGEST_WORKERS": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    job_id = None
    while time.time() < deadline:  # read the job row directly: cheap and never blocks on migrations
        row = _peek_job(data / "figsearch.db")
        if row and row[1] == "running" and row[2] < row[3] - 2:  # mid-job: files still to go
            job_id = row[0]
            break
        time.sleep(0.05)
    assert job_id, "the job was never seen running with files to go"
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"--resume {job_id}" in err
    status, done, total = _job_status(data, job_id)
    assert status == "interrupted" and done < total


def test_startup_removes_leftovers_no_job_needs(tmp_path, demo_pdfs):
    from app.ingest import pipeline

    data = tmp_path / "data"
    settings = make_settings(data)
    finished = pipeline.prepare_job([demo_pdfs[0]], settings)
    pipeline.run_job_embedded(settings, finished, workers=1)
    stale = data / "uploads" / "0123456789abcdef0123456789abcdef" / "000"
    stale.mkdir(parents=True)
    (stale / "half.pdf").write_bytes(b"0" * 1000)
    old = time.time() - 3600
    for p in (stale / "half.pdf", stale, stale.parent):
        os.utime(p, (old, old))
    fresh = data / "uploads" / "fedcba9876543210fedcba9876543210"  # still streaming in another process
    fresh.mkdir()
    (fresh / "part.pdf").write_bytes(b"1")
    leftover = data / "incoming" / finished
    leftover.mkdir(parents=True)
    (leftover / "copy.pdf").write_bytes(b"2")
    with TestClient(create_app(settings)):
        pass
    assert not stale.parent.exists() and not leftover.exists()
    assert fresh.exists()
