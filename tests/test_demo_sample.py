"""The demo's sample of real papers: what ships (licences, size), the scan-like copy made at first
start, and, after `figsearch demo --no-serve`, that every feature shows on real figures: figure
types, tables, panels, central figures, related figures from other papers, search by picture and
a scanned paper read by OCR. The browser part opens those pages and saves screenshots (1366 x 768
and 390 px wide) to FIGSEARCH_SHOTS or artifacts/screenshots/."""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.browser import SHOTS, CHROMIUM, Console, launch_chromium, wait_page
from tests.servers import running_server

from app.demo.sample import PAPERS_DIR, SCAN_PAGES, SCANNED, prepare_sample, shipped_papers

ROOT = Path(__file__).resolve().parents[1]


def test_shipped_papers_are_real_licensed_and_small():
    import pymupdf

    papers = shipped_papers()
    assert 10 <= len(papers) <= 15
    assert sum(p.stat().st_size for p in papers) < 15 * 1024 * 1024
    notice = " ".join((PAPERS_DIR / "NOTICE.md").read_text().split())
    assert "CC BY 4.0" in notice and "Creative Commons Attribution 4.0" in notice
    for pdf in papers:
        assert f"`{pdf.name}`" in notice, f"{pdf.name} is not named in NOTICE.md"
        with pymupdf.open(pdf) as doc:
            first = " ".join(doc[0].get_text().split())
        assert "©2024 Association for Computational Linguistics" in first, pdf.name
    assert (PAPERS_DIR / SCANNED).exists()


def test_sample_scan_is_an_image_only_copy(tmp_path):
    import pymupdf

    files = prepare_sample(tmp_path / "pdfs")
    scans = [f for f in files if f.parent.name == "scanned"]
    assert len(scans) == 1 and len(files) == len(shipped_papers())
    with pymupdf.open(scans[0]) as doc:
        assert doc.page_count == SCAN_PAGES
        assert all(not page.get_text().strip() for page in doc)  # no text layer: OCR has to read it
    for f in files:
        if f not in scans:
            assert hashlib.sha256(f.read_bytes()).digest() == hashlib.sha256((PAPERS_DIR / f.name).read_bytes()).digest()


@pytest.fixture(scope="module")
def demo_data(tmp_path_factory):
    """`figsearch demo --no-serve` on a clean data dir: the first start's ingest of the sample."""
    data = tmp_path_factory.mktemp("demo") / "data"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FIGSEARCH_BROKER_URL": "", "FIGSEARCH_DATABASE_URL": ""}
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "app.cli", "demo", "--data-dir", str(data), "--no-serve"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    print(f"demo sample ingested in {time.monotonic() - t0:.0f} s: {r.stdout.strip().splitlines()[-1]}")
    assert (data / ".demo-ready").exists()
    return data


@pytest.fixture(scope="module")
def client(demo_data):
    from fastapi.testclient import TestClient

    from app.api.main import create_app
    from app.settings import Settings

    with TestClient(create_app(Settings(data_dir=demo_data, database_url="", broker_url="",
                                        admin_token="demo-test-token-0123456789abcdef"))) as c:
        c.app.state.engine_holder.refresh(block=True)
        yield c


def _all_figures(client) -> list[dict]:
    out, offset = [], 0
    while True:
        page = client.get(f"/api/v1/figures?kind=both&limit=100&offset={offset}").json()
        out += page["items"]
        offset += 100
        if offset >= page["total"]:
            return out


def test_every_feature_shows_on_the_real_sample(client):
    papers = client.get("/api/v1/papers?limit=100").json()["items"]
    assert len(papers) == len(shipped_papers()) and all(p["status"] == "ok" for p in papers)
    scanned = [p for p in papers if p["source_kind"] == "scanned"]
    assert len(scanned) == 1 and scanned[0]["n_figures"] >= 2, scanned  # read by OCR, figures found
    figs = _all_figures(client)
    figures = [f for f in figs if f["kind"] == "figure"]
    assert sum(f["kind"] == "table" for f in figs) >= 50
    types = {f["figure_type"] for f in figures}
    assert {"line_chart", "bar_chart", "scatter_plot", "diagram"} <= types, types
    compound = sum(bool(client.get(f"/api/v1/figures/{f['figure_id']}").json()["panels"]) for f in figures)
    assert compound >= 5  # compound figures split into their labelled panels
    detail = client.get(f"/api/v1/papers/{papers[0]['paper_id']}").json()
    assert any(f.get("central_rank") == 1 for f in detail["figures"])
    # related figures in other papers; search by picture finds the figure itself first
    fid = next(f["figure_id"] for f in figures if f["figure_type"] == "line_chart")
    similar = client.get(f"/api/v1/figures/{fid}/similar?scope=other_papers&k=6").json()["items"]
    assert len(similar) == 6
    png = client.get(f"/api/v1/figures/{fid}/image").content
    hits = client.post("/api/v1/search/by-image", files={"image": ("f.png", png, "image/png")}).json()["items"]
    assert hits and hits[0]["figure_id"] == fid
    assert client.get("/api/v1/search?q=heatmap").json()["items"]


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs the Debian chromium package (/usr/bin/chromium)")
def test_demo_pages_on_real_papers(demo_data, tmp_path):

    pw_api = pytest.importorskip("playwright.sync_api")
    data = tmp_path / "data"
    shutil.copytree(demo_data, data)
    with running_server(data, tmp_path, {"FIGSEARCH_ADMIN_TOKEN": "demo-test-token-0123456789abcdef"},
                        wait_encoder=True, timeout_s=120) as base:
        papers = httpx.get(f"{base}/api/v1/papers?limit=100").json()["items"]
        scanned = next(p for p in papers if p["source_kind"] == "scanned")
        fid = httpx.get(f"{base}/api/v1/search?q=t-SNE").json()["items"][0]["figure_id"]
        SHOTS.mkdir(parents=True, exist_ok=True)
        with pw_api.sync_playwright() as pw:
            b = launch_chromium(pw)
            for viewport, tag in (({"width": 1366, "height": 768}, "wide"), ({"width": 390, "height": 844}, "phone")):
                page = b.new_page(viewport=viewport)
                page.set_default_timeout(30_000)
                console = Console(page)
                for route, ready, name in [("#/", "#results .card", "demo-home"),
                                           ("#/?q=attention+heatmap", "#results .card", "demo-search"),
                                           (f"#/figure/{fid}", "#similar .card", "demo-figure"),
                                           (f"#/paper/{scanned['paper_id']}", "#paper-figures .card", "demo-scanned-paper"),
                                           ("#/papers", "#paper-list", "demo-papers")]:
                    page.goto(f"{base}/{route}")
                    wait_page(page)
                    page.wait_for_selector(ready)
                    page.wait_for_timeout(400)  # thumbnails
                    page.screenshot(path=str(SHOTS / f"{name}-{tag}.png"), full_page=True)
                assert "scanned" in httpx.get(f"{base}/api/v1/papers/{scanned['paper_id']}").json()["source_kind"]
                assert console.errors == [], console.errors
                page.close()
            b.close()


def test_shared_words_of_related_tables_are_shown_as_written(client, demo_data):
    """A table's lexical text holds its cells: the words two tables share only there are shown as
    printed in the cells, never as stems ("necessari", "queri")."""
    with sqlite3.connect(demo_data / "figsearch.db") as db:
        texts = {fid: f"{caption or ''} {cells or ''}" for fid, caption, cells in
                 db.execute("SELECT id, caption, region_text FROM figures")}
        for fid, *parts in db.execute("SELECT figure_id, before, sentence, after FROM mentions"):
            texts[fid] += " " + " ".join(p or "" for p in parts)
        tables = [fid for (fid,) in db.execute("SELECT id FROM figures WHERE kind = 'table'")]
    words_of = {fid: set(re.findall(r"[^\W_]+(?:[@-][^\W_]+)*", t.lower())) | set(re.findall(r"[^\W_]+", t.lower()))
                for fid, t in texts.items()}  # hyphenated compounds ("step-by-step") and their parts
    from_cells = 0
    for tid in tables:
        for item in client.get(f"/api/v1/figures/{tid}/similar", params={"k": 5}).json()["items"]:
            shown = {w.lower() for w in item["matched_terms"]}
            assert shown <= words_of[tid] | words_of[item["figure_id"]], (tid, item["figure_id"], shown)
            from_cells += len(shown - set(re.findall(r"[^\W_]+", item["caption"].lower())))
    assert from_cells  # some shared words are not in the captions
