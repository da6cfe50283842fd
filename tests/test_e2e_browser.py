"""End to end in a real headless Chromium (Debian `chromium` package, Playwright with
executable_path): search, open a figure, see recommendations, upload a figure image, log in as
admin, upload a PDF, watch the job finish, find its figures. Screenshots go to
artifacts/screenshots/; browser console errors fail the test."""
from __future__ import annotations

import time
from functools import partial

import httpx
import pytest

from tests.browser import SHOTS, BROWSER_MARKS, Console, browser, sample_server, save_shot, wait_js, wait_page  # noqa: F401 (fixture)
from tests.test_api import extra_pdf

TOKEN = "e2e-admin-token-0123456789abcdef"

pytestmark = BROWSER_MARKS
shot = partial(save_shot, SHOTS)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with sample_server(tmp_path_factory, "e2e", {"FIGSEARCH_ADMIN_TOKEN": TOKEN}, wait_encoder=True) as (base, root, data):
        yield {"base": base, "root": root, "data": data}


def test_user_journey(server, browser, tmp_path_factory):
    base = server["base"]
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(20_000)
    console = Console(page)

    # --- search
    page.goto(base + "/")
    page.wait_for_selector("#results .card")
    assert page.locator("#results .card").count() == 18
    shot(page, "01-home")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.type("top-1 accuracy")
    page.keyboard.press("Enter")
    wait_js(page, "location.hash.includes('q=top-1')")
    wait_page(page)
    page.wait_for_selector("#results .card")
    assert "Figures for" in page.inner_text("h1")
    first = page.locator("#results .card").first
    first_caption = first.locator(".cap").inner_text()
    assert "accuracy" in first_caption.lower()
    shot(page, "02-search")

    # keyboard: arrows move between cards, Enter opens one
    first.locator("a.card-link").focus()
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.closest('.card').dataset.figureId") == \
        page.locator("#results .card").nth(1).get_attribute("data-figure-id")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Enter")

    # --- figure page with recommendations and their "why"
    page.wait_for_selector("#figure-caption")
    assert page.locator("#figure-caption").inner_text().strip() in first_caption.strip() or \
        first_caption.strip().startswith(page.locator("#figure-caption").inner_text().strip()[:40])
    page.wait_for_selector("#similar .card .why")
    assert page.locator("#similar .card").count() >= 5
    why = page.locator("#similar .card .why").first.inner_text()
    # reasons and shared words, in words: the raw scores stay in the API
    assert why.strip() and "lexical" not in why and "embedding" not in why
    assert page.locator("#similar .card .meter").count() == 0
    # related figures come from other papers; the figure's own paper has its own row
    paper_title = page.locator("#paper-link").inner_text().strip()
    assert paper_title not in page.locator("#similar").inner_text()
    page.wait_for_selector("#same-paper-title", state="attached")
    assert page.evaluate("document.getElementById('figure-image').naturalWidth") > 0
    shot(page, "03-figure")

    # --- its paper: figures, cited and citing papers
    page.click("#paper-link")
    page.wait_for_selector("#paper-figures .card")
    assert page.locator("#cites").is_visible() and page.locator("#cited-by").is_visible()
    shot(page, "04-paper")
    page.click("a[data-nav=papers]")
    page.wait_for_selector("#paper-list li")
    assert page.locator("#paper-list li").count() == 4

    # --- a type's name finds figures whose text does not say it; their cards say how they were found
    page.goto(base + "/#/?q=line%20chart")
    page.wait_for_selector("#results .card .why-found")
    found = page.locator("#results .card .why-found").first
    assert "looks like a line chart" in found.inner_text()
    assert found.locator("mark").count() == 0
    # a card says "close in meaning" only of a text the server counts as close, never of one sharing a query word
    hits = {str(x["figure_id"]): x for x in httpx.get(f"{base}/api/v1/search", params={"q": "line chart", "k": 24}).json()["items"]}
    for card in page.locator("#results .card").all():
        if "close in meaning" in card.inner_text():
            hit = hits[card.get_attribute("data-figure-id")]
            assert not hit["matched_terms"] and hit["embedding_score"] >= 0.3

    # --- search by an uploaded figure image
    sample_png = tmp_path_factory.mktemp("img") / "figure.png"
    r = httpx.get(f"{base}/api/v1/figures/1/image")
    sample_png.write_bytes(r.content)
    page.click("a[data-nav=upload]")
    page.wait_for_selector("#upload-form")
    page.set_input_files("#image-file", str(sample_png))
    page.wait_for_selector(".preview img")
    page.click("#find-similar")
    page.wait_for_selector("#image-results .card")
    assert page.locator("#image-results .card").first.get_attribute("data-figure-id") == "1"
    assert page.inner_text("#query-types").startswith("Your picture looks like: ")
    # the upload is a figure the collection holds (told by its perceptual hash): the page says which
    assert page.inner_text("#held-copy").startswith("Your picture is Figure")
    assert page.locator("#held-copy a").get_attribute("href") == "#/figure/1"
    assert not any(ch.isdigit() for ch in page.inner_text("#query-types"))  # types in words, no scores
    assert "lexical" not in page.locator("#image-results .card .why").first.inner_text()
    page.fill("#caption", "Overview of the architecture from the input image to the detection head")
    page.click("#find-similar")
    page.wait_for_selector("#image-results .card")
    assert "caption" in page.inner_text("#upload-message")
    shot(page, "05-upload")

    # --- admin: sign in, upload a PDF, watch the job
    page.click("a[data-nav=admin]")
    page.wait_for_selector("#admin-token")
    page.fill("#admin-token", TOKEN)
    page.click("#login")
    page.wait_for_selector("#upload-pdfs")
    pdf = extra_pdf(tmp_path_factory.mktemp("e2e-extra"))
    page.set_input_files("#pdf-files", str(pdf))
    assert pdf.name in page.inner_text("#chosen-files")
    page.click("#upload-submit")
    page.wait_for_selector("#upload-pdfs .notice.ok")
    assert "Upload received" in page.inner_text("#upload-pdfs .notice.ok")
    page.wait_for_selector("#jobs .job:first-child[data-status=done] .files", timeout=120_000)
    job = page.locator("#jobs .job").first
    assert "1 / 1 files" in job.inner_text()
    row = job.locator(".files tbody tr").first
    assert pdf.name in row.inner_text() and "ok" in row.inner_text()
    # the admin page follows the index refresh that the job triggers (18 sample figures before)
    wait_js(page, "/ \\d+ figures/.test(document.getElementById('index-state').textContent) && "
                  "!document.getElementById('index-state').textContent.includes(': 18 figures')", timeout=90)
    shot(page, "06-admin")

    # --- find its figures: the paper page, then by search once the index has them
    row.locator("a.paper-result").click()
    page.wait_for_selector("#paper-figures .card")
    new_ids = [int(x) for x in page.eval_on_selector_all("#paper-figures .card", "els => els.map(e => e.dataset.figureId)")]
    title = page.inner_text("#paper-title")
    caption = page.locator("#paper-figures .card .cap").first.inner_text()
    shot(page, "07-new-paper")
    found = False
    deadline = time.time() + 90
    while time.time() < deadline and not found:
        page.fill("#q", caption[:80])
        page.press("#q", "Enter")
        wait_page(page)
        page.wait_for_selector("#results .card, #view .empty")
        ids = [int(x) for x in page.eval_on_selector_all("#results .card", "els => els.map(e => e.dataset.figureId)")]
        found = bool(ids) and ids[0] in new_ids
        if not found:
            page.goto(base + "/#/")  # the index refresh runs in the background
            time.sleep(1)
    assert found, f"figures of {title!r} not found by search"
    shot(page, "08-search-new-paper")

    assert console.errors == [], console.errors


def test_phone_layout(server, browser):
    base = server["base"]
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True,
                              has_touch=True)
    page = ctx.new_page()
    page.set_default_timeout(20_000)
    console = Console(page)
    for route, ready, name in [("#/", "#results .card", "phone-home"),
                               ("#/?q=heatmap", "#results .card", "phone-search"),
                               ("#/figure/1", "#similar .card", "phone-figure"),
                               ("#/paper/1", "#paper-figures .card", "phone-paper"),
                               ("#/upload", "#upload-form", "phone-upload"),
                               ("#/admin", "#admin-token", "phone-admin")]:
        page.goto(f"{base}/{route}")
        page.wait_for_selector(ready)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{route}: horizontal overflow of {overflow}px"
        assert "keyboard" not in page.inner_text(".foot")  # no shortcuts to offer without a keyboard
        shot(page, name)
    # a search sent from the header lets go of the box: the on-screen keyboard closes instead of
    # covering half of the results, and the next step starts in the page
    page.fill("#q", "heatmap")
    page.press("#q", "Enter")
    wait_page(page)
    page.wait_for_selector("#results .card")
    assert page.evaluate("document.activeElement.id") != "q"
    # unknown pages and missing figures say so instead of breaking
    page.goto(f"{base}/#/nowhere")
    page.wait_for_selector(".notice")
    ctx.close()
    assert console.errors == [], console.errors


def test_missing_figure_page_shows_message(server, browser):
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server['base']}/#/figure/999999")
    page.wait_for_selector(".notice.error")
    assert "not found" in page.inner_text(".notice.error")
    # what may have happened, and where to look instead
    assert "may have been removed" in page.inner_text(".notice.error")
    assert page.locator("#view a[href='#/papers']").count() == 1
    assert errors == []
