"""Browser tests (Debian chromium, headless) of navigation: search filters kept in the URL, the
figure page's PDF link, high-resolution crop and citation, the paper page's order switch and PDF
link, and the header search box. Screenshots at desktop and phone width go to FIGSEARCH_SHOTS or artifacts/screenshots/;
console errors fail the tests."""
from __future__ import annotations

import re
import time
from functools import partial
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from app.settings import Settings
from tests.browser import SHOTS, BROWSER_MARKS, Console, browser, sample_server, save_shot, wait_js, wait_page  # noqa: F401 (fixture)

TOKEN = "nav-admin-token-0123456789abcdef"
SERVER_DATA: list[Path] = []  # the data dir of the module's server

pytestmark = BROWSER_MARKS
shot = partial(save_shot, SHOTS)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    env = {"FIGSEARCH_ADMIN_TOKEN": TOKEN, "FIGSEARCH_SEARCH_RERANK": "false", "FIGSEARCH_WARM_ENCODER": "false"}
    with sample_server(tmp_path_factory, "nav-e2e", env, pdfs=True) as (base, _root, data):
        SERVER_DATA[:] = [data]
        yield base


RENDER_TIMEOUT_S = 120  # how long a render may take before the test gives up (not a speed check)


def hash_params(page) -> dict:
    frag = urlsplit(page.url).fragment
    return {k: v[0] for k, v in parse_qs(frag.split("?", 1)[1] if "?" in frag else "").items()}


@pytest.mark.parametrize("width,tag", [(1366, "desktop"), (390, "phone")])
def test_filters_figure_and_paper_pages(server, browser, width, tag):
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(20_000)
    console = Console(page)
    papers = httpx.get(f"{server}/api/v1/papers").json()["items"]

    # --- filters: kind, years and paper are reflected in the URL and survive a reload
    page.goto(server + "/#/?q=model")
    page.wait_for_selector("#results .card")
    page.wait_for_selector("#filters")
    everything = page.locator("#results .card").count()
    # the header counts all of the query's matches, as the type chips do
    total = httpx.get(f"{server}/api/v1/search/facets", params={"q": "model"}).json()["total"]
    shown = f"{everything} of {total} result" if total > everything else f"{everything} result"
    wait_js(page, f"document.getElementById('result-info').textContent.startsWith('{shown}')")
    shot(page, f"{tag}-01-search")
    if tag == "phone":  # the fields are folded behind "Filters" there
        page.click("#filters-toggle")
    page.fill("#f-year-from", str(papers[1]["year"]))
    page.press("#f-year-from", "Enter")
    wait_js(page, "location.hash.includes('year_from=')")
    wait_page(page)
    page.wait_for_selector("#results .card")
    assert hash_params(page) == {"q": "model", "year_from": str(papers[1]["year"])}
    assert 0 < page.locator("#results .card").count() < everything
    page.select_option("#f-paper", str(papers[2]["paper_id"]))
    wait_js(page, "location.hash.includes('paper_id=')")
    wait_page(page)
    page.wait_for_selector("#results .card")
    page.reload()
    page.wait_for_selector("#results .card")
    assert page.input_value("#f-paper") == str(papers[2]["paper_id"])
    assert page.input_value("#f-year-from") == str(papers[1]["year"])
    assert page.input_value("#q") == "model"
    ids = {page.locator("#results .card").nth(i).get_attribute("data-figure-id")
           for i in range(page.locator("#results .card").count())}
    own = {str(f["figure_id"]) for f in httpx.get(f"{server}/api/v1/papers/{papers[2]['paper_id']}").json()["figures"]}
    assert ids and ids <= own
    shot(page, f"{tag}-02-filtered")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # nothing overflows
    # a new query from the header keeps the filters on the search page
    page.fill("#q", "training")
    page.press("#q", "Enter")
    wait_js(page, "location.hash.includes('q=training')")
    wait_page(page)
    assert hash_params(page)["paper_id"] == str(papers[2]["paper_id"])
    wait_js(page, "!!document.querySelector('#filters') && !!document.getElementById('result-info').textContent")
    # browsing tables (no query)
    page.goto(server + "/#/?kind=table")
    page.wait_for_selector("#results .card")
    assert page.input_value("#f-kind") == "table"
    assert "Recently added tables" in page.inner_text("h1")
    shot(page, f"{tag}-03-tables")
    # searching tables: a word of a table's cells, shown as the matching snippet; its page relates tables
    table = httpx.get(f"{server}/api/v1/figures", params={"kind": "table"}).json()["items"][0]
    word = next(w for w in reversed(table["caption"].replace(",", " ").split()) if w.isalpha() and len(w) > 4)
    page.goto(server + f"/#/?q={word}&kind=table")
    page.wait_for_selector("#results .card .snippet")
    labels = page.locator("#results .card .label").all_inner_texts()
    assert labels and all(c.lower().startswith("table ") for c in labels), labels
    page.goto(f"{server}/#/figure/{table['figure_id']}")
    wait_js(page, "(document.getElementById('similar-title')?.textContent || '').startsWith('Related tables')")

    # --- figure page: open in PDF at the page, high resolution, citation
    page.goto(server + "/#/?q=model")
    page.wait_for_selector("#results .card")
    page.locator("#results .card").first.click()
    page.wait_for_selector("#open-pdf")
    fid = page.url.rsplit("/", 1)[1]
    f = httpx.get(f"{server}/api/v1/figures/{fid}").json()
    assert page.get_attribute("#open-pdf", "href") == f"/api/v1/papers/{f['paper_id']}/pdf#page={f['page']}"
    assert f"page {f['page']}" in page.inner_text("#open-pdf")
    # a PDF and a high-resolution render: generous read timeouts, a loaded machine renders slowly
    assert httpx.get(server + page.get_attribute("#open-pdf", "href").split("#")[0],
                     timeout=RENDER_TIMEOUT_S).content.startswith(b"%PDF")
    hires = page.get_attribute("#hires", "href")
    assert httpx.get(server + hires, timeout=RENDER_TIMEOUT_S).headers["content-type"] == "image/png"
    assert page.inner_text("#citation") == f["citation"] and f["label"] in f["citation"]
    assert page.input_value("#q") == ""  # the header box keeps no old query on other pages
    shot(page, f"{tag}-04-figure")

    # --- paper page: order switch and the PDF
    page.goto(f"{server}/#/paper/{papers[0]['paper_id']}")
    page.wait_for_selector("#paper-figures .card")
    assert page.get_attribute("#paper-pdf", "href") == f"/api/v1/papers/{papers[0]['paper_id']}/pdf"
    if page.locator("#order-switch").count():
        page.click("#order-switch [data-order=paper]")
        wait_js(page, "location.hash.endsWith('?order=paper')")
        wait_page(page)
        page.wait_for_selector("#paper-figures .card")
    cards = _settled_cards(page)  # (label, height) of each card, read at once after re-rendering
    got = [int(re.search(r"\d+", label).group()) for label, _ in cards]
    assert got == sorted(got)
    heights = {h for _, h in cards}
    assert len(heights) == 1 or tag == "phone", heights  # even card heights (a phone's list: as tall as each)
    shot(page, f"{tag}-05-paper")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    # every paper page, also of papers without tables or links: only elements, never a stray word
    # (a part the paper lacks once came out as the text "null")
    for p in papers:
        page.goto(f"{server}/#/paper/{p['paper_id']}")
        wait_page(page)
        assert page.evaluate("[...document.getElementById('view').childNodes].every(n => n.nodeType === 1)"), p
    assert not console.errors, console.errors
    page.close()


def boxes_right(locator) -> float:
    box = locator.bounding_box()
    return box["x"] + box["width"]


def test_phone_filters_fold_and_type_chips_keep_one_line(server, browser):
    """On a phone the filter fields fold behind "Filters" and the type chips scroll sideways in
    one line, so that the filters take one line above the results (they took four or more); the
    chosen type comes first in that line; the button opens the fields, and a page whose filters
    are set shows them open."""
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.set_default_timeout(20_000)
    console = Console(page)
    page.goto(server + "/#/?q=model")
    wait_page(page)
    page.wait_for_selector("#type-facets .chip")
    assert page.locator("#f-year-from").is_hidden()
    assert page.evaluate("document.getElementById('filters').getBoundingClientRect().height") < 60
    tops = page.evaluate("[...document.querySelectorAll('#type-facets .chip')].map(c => Math.round(c.getBoundingClientRect().top))")
    assert len(tops) > 1 and len(set(tops)) == 1, tops
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, "phone-06-filters-folded")
    last = page.locator("#type-facets .chip").last  # off the screen's edge in its line
    chosen = last.get_attribute("data-type")
    last.click()
    wait_js(page, f"location.hash.includes('type={chosen}')")
    wait_page(page)
    on = page.locator("#type-facets .chip.on")
    assert on.get_attribute("data-type") == chosen and boxes_right(on) <= 390  # the chosen type shows
    page.go_back()
    wait_page(page)
    toggle = page.locator("#filters-toggle")
    assert toggle.get_attribute("aria-expanded") == "false"
    toggle.click()
    assert page.locator("#f-year-from").is_visible() and toggle.get_attribute("aria-expanded") == "true"
    page.select_option("#f-kind", "both")
    wait_js(page, "location.hash.includes('kind=both')")
    wait_page(page)
    assert page.locator("#f-year-from").is_visible() and page.inner_text("#filters-toggle").startswith("Filters (1)")
    shot(page, "phone-07-filters-open")
    page.set_viewport_size({"width": 1366, "height": 900})  # wider: every field and no button
    assert page.locator("#filters-toggle").is_hidden() and page.locator("#f-year-from").is_visible()
    assert not console.errors, console.errors
    page.close()


@pytest.mark.parametrize("width,tag", [(1366, "desktop"), (390, "phone")])
def test_results_do_not_jump_when_the_filters_arrive(server, browser, width, tag):
    """The filter box above the results needs the list of papers, fetched once per tab and slower
    than the search on a first visit (held back here): the results wait for it instead of being
    pushed down by it once a reader may be tapping them. Every position the first card takes
    while the page builds is its final one."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(20_000)
    console = Console(page)

    def late(route):
        time.sleep(1.0)  # the list of papers answers after the search (the order of a first visit)
        route.continue_()
    page.route("**/api/v1/papers?*", late)
    page.add_init_script("""new MutationObserver(() => {
        const c = document.querySelector('#results .card');
        if (c) (window.firstCardTops ||= []).push(Math.round(c.getBoundingClientRect().top + scrollY));
      }).observe(document, {childList: true, subtree: true});""")
    page.goto(server + "/#/?q=model")
    wait_page(page)
    page.wait_for_selector("#filters")
    tops = page.evaluate("window.firstCardTops")
    assert tops and len(set(tops)) == 1, tops
    assert not console.errors, console.errors
    page.close()


def _settled_cards(page, timeout: float = 10.0) -> list:
    """The paper page's cards as (label, height), once two reads 0.2 s apart agree: the order
    switch re-renders the list, and reading card by card could straddle that."""
    read = ("[...document.querySelectorAll('#paper-figures .card')].map(c => "
            "[c.querySelector('.label').innerText, Math.round(c.getBoundingClientRect().height)])")
    deadline = time.time() + timeout
    last = page.evaluate(read)
    while time.time() < deadline:
        page.wait_for_timeout(200)
        now = page.evaluate(read)
        if now and now == last:
            return now
        last = now
    return last


def test_order_switch_reorders(server, browser):
    """A paper whose central figure is its last: central order (the default) shows it first, paper
    order shows the figures by number; the switch is a link, so the order survives a reload."""
    from sqlalchemy import update

    from app.db.schema import Figure
    from app.db.session import session_scope

    papers = httpx.get(f"{server}/api/v1/papers").json()["items"]
    pid = papers[1]["paper_id"]
    figs = sorted((f for f in httpx.get(f"{server}/api/v1/papers/{pid}").json()["figures"] if f["kind"] == "figure"),
                  key=lambda f: f["number"])
    assert len(figs) >= 2
    url = Settings(data_dir=SERVER_DATA[0], database_url="", broker_url="").db_url
    with session_scope(url) as s:
        s.execute(update(Figure).where(Figure.paper_id == pid).values(central_rank=None))
        for rank, f in enumerate(reversed(figs), 1):
            s.execute(update(Figure).where(Figure.id == f["figure_id"]).values(central_rank=rank))
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    console = Console(page)
    shown = lambda: [page.locator("#paper-figures .card").nth(i).get_attribute("data-figure-id")
                     for i in range(page.locator("#paper-figures .card").count())]
    page.goto(f"{server}/#/paper/{pid}")
    page.wait_for_selector("#paper-figures .card")
    assert shown() == [str(f["figure_id"]) for f in reversed(figs)]
    assert page.locator("#paper-figures .card .badge.central").count() == 1
    shot(page, "desktop-06-paper-central-order")
    page.click("#order-switch [data-order=paper]")
    wait_js(page, "location.hash.endsWith('?order=paper') && document.querySelector('#paper-figures .card')?"
                  f".dataset.figureId === '{figs[0]['figure_id']}'")
    page.reload()
    page.wait_for_selector("#paper-figures .card")
    assert shown() == [str(f["figure_id"]) for f in figs]
    assert page.get_attribute("#order-switch [data-order=paper]", "aria-current") == "true"
    assert not console.errors, console.errors
    page.close()


def test_reversed_year_range_and_missing_figure(server, browser):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.set_default_timeout(20_000)
    console = Console(page)
    page.goto(server + "/#/?q=model")
    page.wait_for_selector("#filters")
    page.fill("#f-year-from", "2020")
    page.press("#f-year-from", "Enter")
    wait_js(page, "location.hash.includes('year_from=2020')")
    wait_page(page)
    page.wait_for_selector("#filters")
    page.fill("#f-year-to", "2010")  # typed the wrong way round: the same years are meant
    page.press("#f-year-to", "Enter")
    wait_js(page, "location.hash.includes('year_to=')")
    assert hash_params(page) == {"q": "model", "year_from": "2010", "year_to": "2020"}
    # a figure that does not exist: the error says so and leads back
    page.goto(server + "/#/figure/999999")
    wait_page(page)
    assert page.inner_text(".notice.error").startswith("Figure 999999")
    assert page.get_attribute("#view p a", "href") == "#/"
    assert [e for e in console.errors if "404" not in e] == []
    page.close()


def test_back_returns_to_the_same_place_and_skip_link_stays(server, browser):
    """Back from a figure opened far down the results gives the results the reader had (the pages
    "Load more" added too) at the same scroll offset with the followed card focused; following a
    card moves the focus into the new page; "Skip to content" moves the focus without leaving the page."""
    page = browser.new_page(viewport={"width": 390, "height": 600})
    page.set_default_timeout(20_000)
    console = Console(page)
    page.goto(server + "/#/?kind=both")
    wait_page(page)
    if page.locator("#more").is_visible():
        page.click("#more")
        wait_js(page, "document.querySelectorAll('#results .card').length > 24")
    cards = page.locator("#results .card")
    n = cards.count()
    card = cards.nth(n - 2)
    card.locator("a.card-link").focus()
    time.sleep(0.4)  # the page keeps its offset once scrolling stops
    fid = card.get_attribute("data-figure-id")
    top = f"Math.round(document.querySelector('#results .card[data-figure-id=\"{fid}\"]').getBoundingClientRect().top)"
    y, at = page.evaluate("window.scrollY"), page.evaluate(top)
    assert y > 600
    page.keyboard.press("Enter")
    wait_js(page, "location.hash.startsWith('#/figure/')")
    wait_page(page)
    assert page.evaluate("document.activeElement.id") == "view"
    page.go_back()
    wait_page(page)
    assert page.locator("#results .card").count() == n
    # the followed card's link has the focus again
    assert page.evaluate("document.activeElement.matches('a.card-link') && document.activeElement.closest('.card').dataset.figureId") == fid
    # the card is where it was on the screen (the filter bar, loaded beside the results, may
    # come in above them: the browser's scroll anchoring keeps the cards in place)
    wait_js(page, f"document.getElementById('filters') && Math.abs({top} - {at}) <= 2")
    # a new visit to the same address starts at the top
    page.click("a[data-nav=papers]")
    wait_page(page)
    page.evaluate("location.hash = '#/?kind=both'")
    wait_page(page)
    assert page.evaluate("window.scrollY") == 0
    # the skip link: focus in the content, the address unchanged
    before = page.url
    page.focus("a.skip")
    page.keyboard.press("Enter")
    assert page.url == before and page.evaluate("document.activeElement.id") == "view"
    assert not page.locator(".notice.warn").count()
    assert not console.errors, console.errors
    page.close()


def test_paper_filter_offers_every_page_of_papers(server, browser):
    """The paper filter lists the papers of every page of the API's answer (a collection of more
    papers than one page holds), and a paper the list lacks still shows as the one filtered on."""
    import json

    real = httpx.get(f"{server}/api/v1/papers", params={"limit": 100, "status": "ok", "sort": "title"}).json()["items"]
    first, second = real[:1], real[1:2]
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(20_000)
    console = Console(page)
    asked = []

    def answer(route):
        offset = int(parse_qs(urlsplit(route.request.url).query).get("offset", ["0"])[0])
        asked.append(offset)
        items = first if offset == 0 else second if offset == 100 else []
        route.fulfill(status=200, content_type="application/json",
                      body=json.dumps({"total": 150, "offset": offset, "limit": 100, "items": items}))

    page.route("**/api/v1/papers?*sort=title*", answer)
    page.goto(server + "/#/?paper_id=999999")
    wait_page(page)
    page.wait_for_selector("#f-paper")
    options = page.evaluate("[...document.querySelectorAll('#f-paper option')].map(o => o.value)")
    assert sorted(asked) == [0, 100]
    assert options == ["", str(first[0]["paper_id"]), str(second[0]["paper_id"]), "999999"]
    assert page.evaluate("document.getElementById('f-paper').value") == "999999"
    assert not console.errors, console.errors
    page.close()


def test_back_link_of_a_figure_opened_directly_stays_on_the_site(server, browser):
    """"← Back" on a figure page returns to the page of this site the reader came from (the
    results, with their query), also after a reload; a figure page opened directly (a new tab, a
    bookmark: the tab's page before is not of this site) goes to the figures instead of leaving."""
    fid = httpx.get(f"{server}/api/v1/figures", params={"limit": 1}).json()["items"][0]["figure_id"]
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.set_default_timeout(20_000)
    console = Console(page)
    page.goto(server + f"/#/figure/{fid}")  # the tab's page before it is about:blank
    wait_page(page)
    assert page.evaluate("history.length") > 1  # so "is there a page before?" cannot be told by the length
    page.click("#back")
    wait_page(page)
    assert page.url == server + "/#/" and page.locator("#results .card").count() > 0

    page.goto(server + "/#/?q=accuracy")
    wait_page(page)
    page.click("#results .card")
    wait_js(page, "location.hash.startsWith('#/figure/')")
    wait_page(page)
    assert page.inner_text("#back") == "← Back"
    page.reload()
    wait_page(page)
    page.click("#back")
    wait_page(page)
    assert page.url == server + "/#/?q=accuracy"
    assert not console.errors, console.errors
    page.close()
