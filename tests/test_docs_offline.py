"""The API docs (/docs: Swagger UI, /redoc: ReDoc) work without network: every asset they load is
served by the app itself, and they render under the app's Content-Security-Policy."""
from __future__ import annotations

import os
import re
import subprocess
import time
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient

from app.api.main import create_app
from app.settings import Settings
from tests.browser import CHROMIUM, launch_chromium
from tests.servers import base_url, listening_socket, start_api_process

TOKEN = "docs-admin-token-0123456789abcdef"
ASSET_RE = re.compile(r'(?:src|href)="([^"]+)"')


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    data = tmp_path_factory.mktemp("docs") / "data"
    with TestClient(create_app(Settings(data_dir=data, database_url="", broker_url="", admin_token=TOKEN,
                                        warm_encoder=False))) as c:
        yield c


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_reference_only_local_assets_that_exist(client, page):
    r = client.get(page)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "<script>" not in r.text and "onload=" not in r.text  # no inline script (CSP)
    assets = ASSET_RE.findall(r.text)
    scripts = [a for a in assets if a.endswith(".js")]
    assert len(scripts) == 2, assets  # the vendor bundle and its start-up script
    for url in assets:
        parts = urlsplit(url)
        assert not parts.scheme and not parts.netloc and url.startswith("/"), url
        got = client.get(url)
        assert got.status_code == 200, url
        assert len(got.content) > 100 or url.endswith(".css"), url
    spec_url = re.search(r'data-openapi-url="([^"]+)"', r.text).group(1)
    assert client.get(spec_url).json()["openapi"].startswith("3.")


def test_docs_asset_of_another_name_is_404(client):
    assert client.get("/docs-assets/nothing.js").status_code == 404
    assert client.get("/docs-assets/own/../../app/settings.py").status_code == 404


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium")
def test_docs_render_offline_without_console_errors(tmp_path):
    """Any request to another host is aborted (offline); the pages must still render their
    operations, with no console error (a CSP violation is one)."""
    pw_api = pytest.importorskip("playwright.sync_api")
    sock = listening_socket()
    env = {**os.environ, "FIGSEARCH_DATA_DIR": str(tmp_path / "data"), "FIGSEARCH_ADMIN_TOKEN": TOKEN,
           "FIGSEARCH_BROKER_URL": "", "FIGSEARCH_DATABASE_URL": "", "FIGSEARCH_WARM_ENCODER": "false"}
    proc = start_api_process(sock, env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = base_url(sock)
    try:
        for _ in range(300):
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        with pw_api.sync_playwright() as pw:
            browser = launch_chromium(pw)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(30_000)
            errors, foreign = [], []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))

            def offline(route):
                if route.request.url.startswith(base):
                    route.continue_()
                else:
                    foreign.append(route.request.url)
                    route.abort()

            page.route("**/*", offline)
            page.goto(base + "/docs")
            page.wait_for_selector("#swagger-ui .opblock-summary-path")
            assert page.locator("#swagger-ui .opblock").count() > 10
            assert "/api/v1/search" in page.inner_text("#swagger-ui")
            # a link to the web UI from the docs (the page had none; Swagger UI opens it in a new tab)
            assert page.locator("#swagger-ui .info .description a[href='/']").inner_text() == "figsearch"
            assert "Search figures" in httpx.get(base + "/").text
            page.goto(base + "/redoc")
            page.wait_for_selector("#redoc h2")
            assert "/api/v1/search" in page.inner_text("#redoc") or page.locator("#redoc [data-section-id]").count() > 10
            browser.close()
        assert not foreign, foreign
        assert not errors, errors
    finally:
        proc.terminate()
        proc.wait(10)
        sock.close()
