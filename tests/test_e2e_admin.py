"""The admin's first hour in a real headless Chromium, on a server whose admin token was generated
into its data dir (embedded mode without FIGSEARCH_ADMIN_TOKEN, as `make demo` runs): the sign-in
page says where the token comes from, jobs show when they ran, a skipped zip member is not styled
as an error, a duplicate links to the paper it repeats, the index line counts tables, and a paper is
removed from its own page after a confirmation. Screenshots (1366 x 768 and 390 px wide) go to
FIGSEARCH_SHOTS or artifacts/screenshots/."""
from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.servers import running_server

from tests.test_api import build_sample_data, extra_pdf
from tests.test_e2e_browser import CHROMIUM, Console, browser, wait_js, wait_page  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[1]
SHOTS = Path(os.environ.get("FIGSEARCH_SHOTS", ROOT / "artifacts" / "screenshots"))
WIDE = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason="needs the Debian chromium package (/usr/bin/chromium): apt-get install -y chromium"),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e-admin")
    data = root / "data"
    shutil.copytree(build_sample_data(tmp_path_factory.mktemp("e2e-admin-sample")), data)
    with running_server(data, root, {"FIGSEARCH_WARM_ENCODER": "false", "FIGSEARCH_ADMIN_TOKEN": None}) as base:
        # the server generates its token into the data dir
        yield {"base": base, "root": root, "data": data, "token": (data / "admin-token").read_text().strip()}


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def overflow(page) -> tuple[int, list[str]]:
    """Pixels the page is wider than the window, and the elements sticking out (for the message)."""
    wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    out = page.evaluate("() => [...document.querySelectorAll('#view *')].filter(e => e.getBoundingClientRect().right"
                        " > window.innerWidth + 1).slice(0, 8).map(e => `${e.tagName}.${e.className}: "
                        "${(e.textContent || '').slice(0, 50)}`)")
    return wide, out


def sign_in(page, base: str, token: str) -> None:
    page.goto(base + "/#/admin")
    page.wait_for_selector("#admin-token")
    page.fill("#admin-token", token)
    page.click("#login")
    page.wait_for_selector("#upload-pdfs")


def test_sign_in_page_says_where_the_token_comes_from(server, browser):
    for viewport, tag in ((WIDE, "wide"), (PHONE, "phone")):
        page = browser.new_page(viewport=viewport)
        console = Console(page)
        page.goto(server["base"] + "/#/admin")
        page.wait_for_selector("#token-help")
        help_text = page.inner_text("#token-help")
        assert "generated" in help_text and "figsearch admin-token --data-dir" in help_text, help_text
        assert "make demo" in help_text and "data/demo" in help_text
        wide, out = overflow(page)
        assert wide <= 0, out
        shot(page, f"admin-sign-in-{tag}")
        assert console.errors == [], console.errors
        page.close()


def test_job_view_times_skipped_duplicates_and_index_counts(server, browser, tmp_path):
    base, token = server["base"], server["token"]
    original = httpx.get(f"{base}/api/v1/papers/1").json()
    pdf = tmp_path / "copy-of-paper-1.pdf"
    pdf.write_bytes(httpx.get(f"{base}/api/v1/papers/1/pdf").content)
    bundle = tmp_path / "bundle.zip"
    with zipfile.ZipFile(bundle, "w") as z:
        z.write(pdf, "copy-of-paper-1.pdf")
        z.write(extra_pdf(tmp_path / "extra"), "new-paper.pdf")
        z.writestr("readme.txt", "not a paper")

    page = browser.new_page(viewport=WIDE)
    page.set_default_timeout(20_000)
    console = Console(page)
    sign_in(page, base, token)
    wait_js(page, "/\\d+ figures?, \\d+ tables?\\b/.test(document.getElementById('index-state').textContent)")
    page.set_input_files("#pdf-files", str(bundle))
    page.click("#upload-submit")
    page.wait_for_selector("#jobs .job:first-child[data-status=done] .files", timeout=120_000)
    job = page.locator("#jobs .job").first
    times = job.locator(".job-times time")
    assert times.count() == 2  # started and finished, each with a machine-readable timestamp
    assert times.first.get_attribute("datetime")
    assert any(w in job.locator(".job-times").inner_text() for w in ("ago", "just now", "now")), job.inner_text()
    assert "took" in job.locator(".job-times").inner_text()

    rows = {r.locator("td.name").inner_text(): r for r in job.locator(".files tbody tr").all()}
    skipped = rows["bundle.zip:readme.txt"]
    assert skipped.locator("td.err").count() == 0 and skipped.locator("td.note").count() == 1
    colour = skipped.locator("td.note").evaluate("el => getComputedStyle(el).color")
    bad = page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--bad')").strip()
    assert colour != "rgb(207, 34, 46)" and bad == "#cf222e", colour  # not the error red
    dup = rows["bundle.zip:copy-of-paper-1.pdf"]
    link = dup.locator("a.original-paper")
    assert link.get_attribute("href") == f"#/paper/{original['paper_id']}"
    assert rows["bundle.zip:new-paper.pdf"].locator("a.paper-result").count() == 1
    shot(page, "admin-jobs-wide")
    page.set_viewport_size(PHONE)
    wide, out = overflow(page)
    assert wide <= 0, out
    shot(page, "admin-jobs-phone")
    page.set_viewport_size(WIDE)
    link.click()
    page.wait_for_selector("#paper-title")
    assert original["title"] in page.inner_text("#paper-title")
    assert console.errors == [], console.errors


def test_remove_a_paper_from_its_page_after_confirming(server, browser):
    base, token = server["base"], server["token"]
    papers = httpx.get(f"{base}/api/v1/papers?limit=100").json()["items"]
    victim = papers[-1]

    # visitors do not see the control
    page = browser.new_page(viewport=WIDE)
    console = Console(page)
    page.goto(f"{base}/#/paper/{victim['paper_id']}")
    wait_page(page)
    page.wait_for_selector("#paper-title")
    assert page.locator("#remove-paper").count() == 0
    page.close()

    for viewport, tag in ((PHONE, "phone"), (WIDE, "wide")):
        page = browser.new_page(viewport=viewport)
        page.set_default_timeout(20_000)
        console = Console(page)
        sign_in(page, base, token)
        page.goto(f"{base}/#/paper/{victim['paper_id']}")
        wait_page(page)
        page.click("#remove-paper-open")
        ask = page.locator("#remove-paper .confirm")
        assert victim["title"] in ask.inner_text() and "cannot be undone" in ask.inner_text()
        wide, out = overflow(page)
        assert wide <= 0, out
        shot(page, f"paper-remove-confirm-{tag}")
        if tag == "phone":  # cancelling keeps the paper
            page.click("#remove-paper-cancel")
            assert ask.count() == 0
            assert httpx.get(f"{base}/api/v1/papers/{victim['paper_id']}").status_code == 200
            page.close()
            continue
        page.click("#remove-paper-confirm")
        page.wait_for_selector("#remove-paper .notice.ok")
        assert "Removed" in page.inner_text("#remove-paper")
        shot(page, f"paper-removed-{tag}")
        assert httpx.get(f"{base}/api/v1/papers/{victim['paper_id']}").status_code == 404
        assert console.errors == [], console.errors
        page.close()
