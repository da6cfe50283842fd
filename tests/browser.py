"""What the browser tests share: the Debian Chromium they drive (Playwright with executable_path,
never a downloaded browser), the marks that skip them without it, one browser per test module, a
page's console errors, waits the server's Content-Security-Policy allows, screenshots, and a
server on a fresh copy of the sample data."""
from __future__ import annotations

import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from app.pdfs import attach_pdfs
from app.settings import Settings
from tests.servers import ROOT, running_server
from tests.test_api import build_sample_data

CHROMIUM = Path("/usr/bin/chromium")
# where browser tests save their screenshots, for a person to look at
SHOTS = Path(os.environ.get("FIGSEARCH_SHOTS", ROOT / "artifacts" / "screenshots"))
BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason="needs the Debian chromium package (/usr/bin/chromium): apt-get install -y chromium"),
]


def launch_chromium(pw):
    """Debian's Chromium, headless, from a Playwright session (no sandbox: tests may run as root)."""
    return pw.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])


@pytest.fixture(scope="module")
def browser():
    pw_api = pytest.importorskip("playwright.sync_api")
    with pw_api.sync_playwright() as pw:
        b = launch_chromium(pw)
        yield b
        b.close()


class Console:
    """Console errors and uncaught page errors of one page."""

    def __init__(self, page):
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(f"console: {m.text} @ {m.location}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        # a request the page aborted itself (the user went to another page first) is not a failure
        page.on("requestfailed", lambda r: self.errors.append(f"requestfailed: {r.url} {r.failure}")
                if "/api/" in r.url and "ERR_ABORTED" not in (r.failure or "") else None)


def wait_js(page, expression: str, timeout: float = 30) -> None:
    """Poll a JavaScript condition. (Playwright's wait_for_function evaluates a string inside the
    page, which the server's Content-Security-Policy forbids, as it should: no eval.)"""
    deadline = time.time() + timeout
    while not page.evaluate(expression):
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for: {expression}")
        time.sleep(0.2)


def wait_page(page, timeout: float = 30) -> None:
    """Wait until the page of the current address has finished loading (the router marks the view
    with the address it shows), so that cards of the page before are never counted."""
    wait_js(page, "document.getElementById('view').getAttribute('aria-busy') === 'false'"
                  " && document.getElementById('view').dataset.hash === location.hash", timeout)


def save_shot(folder: Path, page, name: str) -> None:
    """A full-page screenshot `folder/name.png` (a module binds its folder: partial(save_shot, SHOTS))."""
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


@contextmanager
def sample_server(tmp_path_factory, name: str, env: dict[str, str | None], pdfs: bool = False,
                  **server_options) -> Iterator[tuple[str, Path, Path]]:
    """(base URL, root, data dir) of a server on a copy of the sample data (a test may change it),
    with the sample's PDFs attached when `pdfs`; its log is in root."""
    root = tmp_path_factory.mktemp(name)
    sample = build_sample_data(tmp_path_factory.mktemp(f"{name}-sample"))
    data = root / "data"
    shutil.copytree(sample, data)
    if pdfs:
        attach_pdfs(Settings(data_dir=data, database_url="", broker_url=""), [sample.parent / "pdfs"])
    with running_server(data, root, env, **server_options) as base:
        yield base, root, data
