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
from tests.servers import listening_socket

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
    from app.pipeline import ingest_jobs

    settings = make_settings(tmp_path / "data")
    job_id = ingest_jobs.prepare_job([demo_pdfs[0]], settings)
    with session_scope(settings.db_url) as s:
        assert s.get(Job, job_id).created_at.utcoffset() == dt.timedelta(0)
    with TestClient(create_app(settings)) as c:
        item = c.get("/api/v1/admin/jobs", headers=AUTH).json()["items"][0]
        assert dt.datetime.fromisoformat(item["created_at"]).utcoffset() == dt.timedelta(0)


def test_job_errors_show_no_server_paths(tmp_path):
    from app.public_text import public_text

    settings = make_settings(tmp_path / "data")
    up = settings.data_dir / "uploads" / "J1" / "000" / "my paper.pdf"
    err = f"cannot read file: [Errno 2] No such file or directory: '{up}'; also /srv/x/incoming/J1/00003_b.pdf"
    shown = public_text(settings, err)
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

    sock = listening_socket()
    port = sock.getsockname()[1]
    opts = uvicorn_options(make_settings(tmp_path / "data", header_timeout_s=1.0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", **opts))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
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
            assert sock.recv(1000) == b""  # closed by the server (a socket timeout here fails the test)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


# ------------------------------------------------------------------ tokens and the CLI
def cli(args, env_extra=None, timeout=300, **kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIGSEARCH_")}
    env.update({"FIGSEARCH_AUTO_INDEX": "false", **(env_extra or {})})
    return subprocess.run([sys.executable, "-m", "app.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout, **kw)


@pytest.mark.parametrize("token,why", [("change-me", "placeholder"), ("short-token", "at least 24"),
                                       (" " * 30, "whitespace"), ("a" * 28, "different characters"),
                                       ("abcdefghijklmnopq rstuvwxyz0123", "whitespace"),
                                       ("abababababcdcdcdcdcdefefefefef", "different characters")])
def test_serve_refuses_bad_tokens_in_one_line(tmp_path, token, why):
    for broker in ("", "redis://127.0.0.1:6379/0"):
        r = cli(["serve", "--data-dir", str(tmp_path / "d"), "--port", "1"],
                {"FIGSEARCH_ADMIN_TOKEN": token, "FIGSEARCH_BROKER_URL": broker}, timeout=60)
        assert r.returncode == 2
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: FIGSEARCH_ADMIN_TOKEN"), r.stderr
        assert why in lines[0], lines[0]


def test_token_rule_accepts_generated_tokens():
    import secrets

    from app.settings import AdminTokenError, check_admin_token

    for _ in range(200):  # what the error message tells people to run
        t = secrets.token_urlsafe(32)
        assert check_admin_token(t) == t
    assert check_admin_token("0123456789abcdefghijklmn")  # 24 characters, 24 different
    with pytest.raises(AdminTokenError, match="15 different"):
        check_admin_token("0123456789abcde" * 2)


def test_admin_token_command(tmp_path):
    """Generating and reading the token: tests/test_admin_setup.py; here what it refuses."""
    data = tmp_path / "d"
    first = cli(["admin-token", "--data-dir", str(data)], timeout=60)
    assert first.returncode == 1 and not (data / "admin-token").exists()  # no collection there
    r = cli(["admin-token", "--data-dir", str(data)], {"FIGSEARCH_BROKER_URL": "redis://127.0.0.1:6379/0"}, timeout=60)
    assert r.returncode == 2 and "distributed mode needs FIGSEARCH_ADMIN_TOKEN" in r.stderr


def _job_status(data: Path, job_id: str) -> tuple[str, int, int]:
    from app.pipeline import ingest_jobs

    return ingest_jobs.job_progress(Settings(data_dir=data, database_url="", broker_url=""), job_id)


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
    try:
        _out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _out, err = proc.communicate()
        pytest.fail(f"ingest still running 60 s after SIGTERM; its stderr ends: {err[-2000:]}")
    assert proc.returncode == 130, err
    assert f"--resume {job_id}" in err
    status, done, total = _job_status(data, job_id)
    assert status == "interrupted" and done < total


def test_startup_removes_leftovers_no_job_needs(tmp_path, demo_pdfs):
    from app.pipeline import ingest_jobs

    data = tmp_path / "data"
    settings = make_settings(data)
    finished = ingest_jobs.prepare_job([demo_pdfs[0]], settings)
    ingest_jobs.run_job_embedded(settings, finished, workers=1)
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


# ------------------------------------------------------------------ metrics labels stay bounded
def _series(text: str) -> set[tuple]:
    from prometheus_client.parser import text_string_to_metric_families

    return {(s.name, tuple(sorted(s.labels.items()))) for f in text_string_to_metric_families(text)
            for s in f.samples}


def test_invented_methods_and_paths_leave_metrics_the_same_size(client):
    import random
    import string

    rnd = random.Random(7)

    def invented() -> None:
        method = "".join(rnd.choices(string.ascii_uppercase, k=rnd.randint(3, 2000)))
        path = "/" + "/".join("".join(rnd.choices(string.ascii_lowercase + string.digits, k=rnd.randint(1, 40)))
                              for _ in range(rnd.randint(1, 4)))
        client.request(method, rnd.choice(["/api/v1", "", "/api/v1/figures"]) + path)
        client.get(rnd.choice(["/api/v1", "/api/v1/figures", "", "/static"]) + path)

    for _ in range(60):  # every label value these requests can produce exists now (few: bounded)
        invented()
    client.get("/metrics")
    before = client.get("/metrics").text
    for _ in range(300):
        invented()
    after = client.get("/metrics").text
    assert _series(after) == _series(before)
    assert abs(len(after) - len(before)) < 200, (len(before), len(after))  # only counts grow (a few digits)
    labels = {v for _n, ls in _series(after) for k, v in ls if k in ("method", "route", "status")}
    assert labels <= {"GET", "other", "unmatched", "static", "/metrics", "/api/v1/figures/{figure_id}",
                      "/api/v1/figures", "2xx", "4xx", "5xx"}, labels


def test_by_image_caption_is_capped_like_q(client):
    png = io.BytesIO()
    from PIL import Image

    Image.new("RGB", (40, 30), "white").save(png, "PNG")
    r = client.post("/api/v1/search/by-image", files={"image": ("f.png", png.getvalue(), "image/png")},
                    data={"caption": "accuracy " * 60})
    assert r.status_code == 422 and "caption" in r.text
    r = client.post("/api/v1/search/by-image", files={"image": ("f.png", png.getvalue(), "image/png")},
                    data={"caption": "accuracy " * 50})
    assert r.status_code == 200, r.text


# ------------------------------------------------------------------ index files that go wrong
def _two_versions(data: Path) -> tuple[Path, str, str]:
    """An index root with an older version (figures 1-3) and the CURRENT one (figures 11-14)."""
    from app.search.doc_table import FigureDoc
    from app.search.searcher import Searcher

    root = data / "index"
    old = Searcher.build([FigureDoc(i, 1, f"Figure {i}", f"accuracy of model {i}") for i in (1, 2, 3)])
    v1 = old.save(root)
    time.sleep(0.05)
    new = Searcher.build([FigureDoc(i, 2, f"Figure {i}", f"latency of system {i}") for i in (11, 12, 13, 14)])
    v2 = new.save(root)
    assert (root / "CURRENT").read_text().strip() == v2
    return root, v1, v2


def _served(data: Path) -> tuple[int, dict, object]:
    with TestClient(create_app(make_settings(data))) as c:
        holder = c.app.state.engine_holder
        holder.refresh(block=True)
        r = c.get("/readyz")
        return r.status_code, r.json(), holder.engine


@pytest.mark.parametrize("pointer", ["", "v20990101T000000-abcdef\n"])
def test_empty_or_dangling_current_is_repaired_from_the_newest_intact_version(tmp_path, pointer):
    data = tmp_path / "data"
    root, v1, v2 = _two_versions(data)
    (root / "CURRENT").write_text(pointer)
    code, body, engine = _served(data)
    assert code == 200 and body["status"] == "ready" and body["index"]["version"] == v2, body
    assert (root / "CURRENT").read_text().strip() == v2
    assert sorted(engine.figure_ids.tolist()) == [11, 12, 13, 14]


@pytest.mark.parametrize("damage", ["truncated", "same_size"])
def test_a_damaged_current_version_is_skipped_for_the_intact_older_one(tmp_path, damage):
    from app.search.searcher import Searcher

    data = tmp_path / "data"
    root, v1, v2 = _two_versions(data)
    target = root / v2 / "docs" / "figure_ids.npy"
    raw = bytearray(target.read_bytes())
    if damage == "truncated":
        target.write_bytes(bytes(raw[: len(raw) - 9]))
    else:  # the array still loads, with other figure ids: only the checksum can tell
        raw[-8:] = (999).to_bytes(8, "little")
        target.write_bytes(bytes(raw))
    code, body, engine = _served(data)
    assert code == 200 and body["status"] == "degraded", body
    assert body["index"]["version"] == v1 and v1 in body["index"]["reason"]
    assert sorted(engine.figure_ids.tolist()) == [1, 2, 3]  # the older version's results, never the damaged ones
    assert Searcher.load_current(root).version == v1  # the CLI chooses the same way
    assert (root / "CURRENT").read_text().strip() == v2  # a damaged version is skipped, not forgotten


def test_no_intact_version_is_a_clear_503(tmp_path):
    data = tmp_path / "data"
    root, v1, v2 = _two_versions(data)
    for v in (v1, v2):
        f = root / v / "docs" / "paper_ids.npy"
        f.write_bytes(f.read_bytes()[:-4])
    code, body, engine = _served(data)
    assert code == 503 and body["status"] == "not ready" and engine is None, body
    assert "cannot be loaded" in body["index"]["reason"]


def test_temp_folders_of_dead_builds_are_removed_at_start_and_next_build(tmp_path):
    from app.model_store.versions import BuildLock
    from app.search.doc_table import FigureDoc
    from app.search.searcher import Searcher

    data = tmp_path / "data"
    root, v1, v2 = _two_versions(data)
    dead = root / ".tmp-v20000101T000000-dead00"
    (dead / "lexical").mkdir(parents=True)
    (dead / "lexical" / "x.npy").write_bytes(b"\0" * 1000)
    with BuildLock(root, "v20000101T000000-live00"):  # a build still running keeps its folder
        live = root / ".tmp-v20000101T000000-live00"
        live.mkdir()
        code, body, _engine = _served(data)
        assert code == 200 and body["index"]["version"] == v2
        assert not dead.exists() and live.exists()
    (dead / "lexical").mkdir(parents=True)
    Searcher.build([FigureDoc(5, 1, "Figure 5", "recall")]).save(root)
    assert not dead.exists() and not live.exists()
    assert not [p for p in root.iterdir() if p.name.startswith(".tmp-")]


def test_partial_uploads_of_dead_servers_are_swept_while_running(tmp_path, monkeypatch):
    from app.api import main

    monkeypatch.setattr(main, "LEFTOVER_SWEEP_S", 0.2)
    data = tmp_path / "data"
    with TestClient(create_app(make_settings(data))):
        stale = data / "uploads" / "0123456789abcdef0123456789abcdef" / "000"  # a dead server's upload
        stale.mkdir(parents=True)
        (stale / "half.pdf").write_bytes(b"0" * 1000)
        old = time.time() - 3600
        for p in (stale / "half.pdf", stale, stale.parent):
            os.utime(p, (old, old))
        fresh = data / "uploads" / "fedcba9876543210fedcba9876543210"  # still streaming in
        fresh.mkdir()
        (fresh / "part.pdf").write_bytes(b"1")
        deadline = time.time() + 10
        while stale.parent.exists() and time.time() < deadline:
            time.sleep(0.1)
        assert not stale.parent.exists() and fresh.exists()


# ------------------------------------------------------------------ expensive work: one bounded pool
def test_heavy_pool_bounds_work_and_queue_and_caches():
    from fastapi import HTTPException

    from app.api.heavy import HeavyPool

    pool = HeavyPool(workers=1, queue=1, cache_mb=1)
    gate, started = threading.Event(), threading.Event()

    def slow():
        started.set()
        gate.wait(10)
        return b"x" * 10

    results = []
    running = threading.Thread(target=lambda: results.append(pool.run(slow)))
    running.start()
    assert started.wait(5)
    waiting = threading.Thread(target=lambda: results.append(pool.run(lambda: b"queued")))
    waiting.start()
    time.sleep(0.2)
    with pytest.raises(HTTPException) as busy:  # one running, one waiting: the third is refused at once
        pool.run(lambda: b"never")
    assert busy.value.status_code == 429 and busy.value.headers["Retry-After"].isdigit()
    gate.set()
    running.join(5)
    waiting.join(5)
    assert sorted(results) == [b"queued", b"x" * 10]
    calls = []
    for _ in range(3):
        assert pool.cached(("hires", 1, 4.0), lambda: calls.append(1) or b"png", isolated=False) == b"png"
    assert calls == [1]
    assert pool.run(os.getpid, isolated=True) != os.getpid()  # renders run outside the server process
    pool.shutdown()


# ------------------------------------------------------------------ no server path in public text
def test_no_absolute_path_in_any_public_route_or_cli_output(tmp_path, demo_pdfs):
    """A collection with failed files (uploaded, and ingested from a server path): every public
    GET route of the schema, for every paper and figure, the UI's files, and the CLI's views,
    show no absolute path of the server."""
    data = tmp_path / "data"
    bad = tmp_path / "bad"
    bad.mkdir()
    bad_files = [badfiles.truncated(bad, demo_pdfs[0]), badfiles.random_bytes(bad), badfiles.encrypted(bad),
                 badfiles.html_named_pdf(bad), badfiles.zero_byte(bad)]
    (bad / "unopenable.pdf").write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * 12)  # 'Failed to open file <path>'
    bad_files.append(bad / "unopenable.pdf")
    server_side = tmp_path / "server-side"
    server_side.mkdir()
    (server_side / "broken.pdf").write_bytes(b"%PDF-1.7\n" + b"\0" * 3000)
    settings = make_settings(data, auto_index=True, allow_server_paths=True)
    forbidden = {str(tmp_path), str(tmp_path.resolve()), str(data), "/uploads/", "/incoming/", "/tmp/"}

    def clean(text: str, where: str) -> None:
        leaks = [f for f in forbidden if f in text]
        assert not leaks, f"{where} shows {leaks}: {text[:300]}"

    with TestClient(create_app(settings)) as c:
        files = [("files", (p.name, p.read_bytes(), "application/pdf")) for p in [demo_pdfs[0], *bad_files]]
        jobs = [c.post(UPLOAD, headers=AUTH, files=files).json()["job_id"],
                c.post(UPLOAD, headers=AUTH, data={"path": str(server_side)}).json()["job_id"]]
        deadline = time.time() + 240
        while time.time() < deadline and any(
                c.get(f"/api/v1/admin/jobs/{j}", headers=AUTH).json()["status"] not in ("done", "failed") for j in jobs):
            time.sleep(0.5)
        c.app.state.engine_holder.refresh(block=True)
        failed = c.get("/api/v1/papers?limit=100&status=failed").json()["items"]  # the list leaves them out
        papers = c.get("/api/v1/papers?limit=100").json()["items"] + failed
        assert failed, papers  # the crawl must meet stored errors naming files, or it proves nothing
        assert any("Failed to open file" in c.get(f"/api/v1/papers/{p['paper_id']}").json()["error"] for p in failed)
        figures = [f["figure_id"] for f in c.get("/api/v1/figures?limit=100").json()["items"]]
        assert figures
        values = {"paper_id": [p["paper_id"] for p in papers], "figure_id": figures[:4], "label": ["a"]}
        crawled = 0
        for path, ops in c.get("/api/v1/openapi.json").json()["paths"].items():
            if "get" not in ops or "/admin/" in path:
                continue
            names = [n for n in values if "{" + n + "}" in path]
            combos = [{}] if not names else [{names[0]: v} for v in values[names[0]]]
            for combo in combos:
                url = path
                for k, v in combo.items():
                    url = url.replace("{" + k + "}", str(v)).replace("{label}", "a")
                for params in ({}, {"q": "accuracy"}):
                    r = c.get(url, params=params)
                    if r.headers.get("content-type", "").startswith(("image/", "application/pdf")):
                        continue
                    clean(r.text, url)
                    crawled += 1
        for url in ("/", "/index.html", "/healthz", "/readyz", "/metrics", "/docs", "/redoc"):
            clean(c.get(url).text, url)
        for p in failed:
            assert p["status"] == "failed" and c.get(f"/api/v1/papers/{p['paper_id']}").json()["error"]
        assert crawled > 20
    env = {"FIGSEARCH_DATA_DIR": str(data)}
    for args in (["papers"], ["figures"], ["jobs"], ["jobs", jobs[0]], ["jobs", jobs[1]], ["jobs", jobs[0], "--json"]):
        r = cli(args, env, timeout=120)
        assert r.returncode == 0, r.stderr
        clean(r.stdout + r.stderr, "figsearch " + " ".join(args))


def test_a_failed_background_index_load_lets_the_next_poll_load_again(tmp_path, monkeypatch):
    """A background load that fails in an unexpected way (an index version pruned while it was being
    chosen) is logged and no longer marked as running: otherwise every later version would wait
    behind it and the server would keep its old index for good."""
    from app.api.engine_holder import EngineHolder

    holder = EngineHolder(tmp_path / "index")
    holder._loading = "v20990101T000000-abcdef"

    def broken_load():
        raise FileNotFoundError(2, "No such file or directory", "manifest.json")

    monkeypatch.setattr(holder, "_load", broken_load)
    holder._load_in_background()
    assert holder._loading is None
