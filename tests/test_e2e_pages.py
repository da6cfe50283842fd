"""Browser tests (Debian chromium, headless) of what a researcher reads on the pages: search
snippets and counts, the figure page's layout and "why", the papers list, and cards whose badges
and table crops stay readable. Screenshots at 1366x768 and 390 px wide go to
FIGSEARCH_SHOTS or artifacts/screenshots/; console errors fail the tests."""
from __future__ import annotations

import re
import time
from functools import partial

import httpx
import pytest

from tests.browser import SHOTS, BROWSER_MARKS, Console, browser, save_shot, wait_js, wait_page  # noqa: F401 (fixture)
from tests.test_e2e_navigation import server  # noqa: F401 (fixture)

SIZES = [(1366, 768, "desktop"), (390, 844, "phone")]

pytestmark = BROWSER_MARKS
shot = partial(save_shot, SHOTS)


def open_page(browser, server, address: str, width: int = 1366, height: int = 768):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(20_000)
    console = Console(page)
    page.goto(f"{server}/{address}")
    wait_page(page)
    return page, console


def hash_query(page) -> dict:
    from urllib.parse import parse_qs, urlsplit

    frag = urlsplit(page.url).fragment
    return {k: v[0] for k, v in parse_qs(frag.split("?", 1)[1] if "?" in frag else "").items()}


def boxes(page, selector: str) -> list[dict]:
    return page.evaluate(f"[...document.querySelectorAll({selector!r})].map(e => {{"
                         "const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, "
                         "left: r.left, right: r.right, height: r.height}})")


@pytest.mark.parametrize("width,height,tag", SIZES)
def test_search_results_say_only_what_is_true(server, browser, width, height, tag):
    """An empty result is not '0 results · ranked by ...'; snippets are not the caption the card
    shows, and the same sentence is not every result's snippet."""
    page, console = open_page(browser, server, "#/?q=qwertyuiop", width, height)
    page.wait_for_selector(".empty")
    info = page.inner_text("#result-info")
    assert "0 results" not in info and "ranked" not in info
    shot(page, f"{tag}-pages-01-empty-search")

    for n, query in enumerate(("model accuracy", "bar chart")):
        page.goto(f"{server}/#/?q={query.replace(' ', '%20')}")
        wait_page(page)
        page.wait_for_selector("#results .card")
        cards = page.evaluate("""[...document.querySelectorAll('#results .card')].map(c => ({
            cap: c.querySelector('.cap').innerText,
            snippet: c.querySelector('.snippet:not(.why-found)')
              ? c.querySelector('.snippet:not(.why-found)').innerText.replace(/^(caption|body text|table cells)\\s*/i, '') : null}))""")
        snippets = [c["snippet"] for c in cards if c["snippet"]]
        assert snippets
        for c in cards:  # a snippet never repeats the start of the caption on the same card
            if c["snippet"]:
                assert c["snippet"][:60] not in c["cap"][:120], c
        assert len(set(snippets)) == len(snippets), snippets  # no sentence is every result's snippet
        shot(page, f"{tag}-pages-02-search-{n}")
    assert not console.errors, console.errors
    page.close()


def test_card_captions_mark_the_words_sharing_a_stem_with_the_query(server, browser):
    """"curve" marks "Curves" in the cards' captions, as the snippets mark it, and nothing else
    (the label the card shows apart is not counted in the spans)."""
    page, console = open_page(browser, server, "#/?q=curve")
    page.wait_for_selector("#results .card")
    cards = page.evaluate("""[...document.querySelectorAll('#results .card .cap')].map(c => ({
        text: c.textContent, marks: [...c.querySelectorAll('mark')].map(m => m.textContent.toLowerCase())}))""")
    plural = [c for c in cards if "curves" in c["text"].lower()]
    assert plural, cards
    for c in cards:
        words = re.findall(r"\bcurves?\b", c["text"].lower())
        assert sorted(c["marks"]) == sorted(words), c
    shot(page, "desktop-pages-02-search-stems")
    assert not console.errors, console.errors
    page.close()


def test_a_long_matched_sentence_shows_the_words_around_its_match(server, browser):
    """A matched sentence of hundreds of characters (a code line read as prose) is shown on its card
    as the words around its first match, cut ends marked, the whole sentence in its tooltip: shown
    whole it made the card, and every card of its row, a screen tall."""
    page, console = open_page(browser, server, "#/")
    code = ("> dists = dist( t( exprs(full) ) ) A heat map of this distance matrix gives an overview of "
            "similarities between samples: > mat = as.matrix( dists ) > rownames(mat) = colnames(mat) = "
            "with(pData(blind), paste(condition, libType, sep=' : ')) > heatmap.2(mat, trace='none', "
            "col = rev(hmcol), margin=c(13, 13)) > print(plotPCA(full, intgroup=c('condition'))) The "
            "samples cluster by condition, and the second principal component separates the library types.")
    at = code.index("trace")
    shown = page.evaluate("""async ([text, at]) => {
        const ui = await import('/js/ui.js');
        const hit = { snippet: { text, source: 'body', highlights: [[at, at + 5]] }, caption: 'Figure 1: Samples.' };
        const el = ui.snippetBlock(hit, 1);
        return { text: el.textContent, marks: [...el.querySelectorAll('mark')].map((m) => m.textContent),
                 title: el.title };
    }""", [code, at])
    assert shown["marks"] == ["trace"], shown
    assert len(shown["text"]) < 240 < len(code), shown  # a few lines of a card, not the whole sentence
    assert "… " in shown["text"] and shown["text"].rstrip().endswith("…"), shown
    assert shown["title"] == code  # the whole sentence on hover
    short = page.evaluate("""async () => {
        const ui = await import('/js/ui.js');
        const hit = { snippet: { text: 'Loss curves of both models.', source: 'body', highlights: [[0, 4]] }, caption: 'Figure 2: Other.' };
        const el = ui.snippetBlock(hit, 1);
        return { text: el.textContent, title: el.title };
    }""")
    assert short["text"].endswith("Loss curves of both models.") and "…" not in short["text"] and not short["title"]
    assert not console.errors, console.errors
    page.close()


def _figure_with_related(server) -> int:
    """A figure whose related list and citation-linked list are both filled, when there is one."""
    figures = httpx.get(f"{server}/api/v1/figures", params={"limit": 100}).json()["items"]
    for f in figures:
        linked = httpx.get(f"{server}/api/v1/figures/{f['figure_id']}/similar",
                           params={"scope": "linked_papers", "k": 6}).json()["items"]
        if linked:
            return f["figure_id"]
    return figures[0]["figure_id"]


def test_figure_page_layout_and_reasons(server, browser):
    """At 1366x768 the related figures start on the first screen; the cited/citing block repeats
    none of them; the cards say why in words (no raw score meters, no 'semantic match' claim) and
    have equal heights; the BibTeX entry names the venue."""
    fid = _figure_with_related(server)
    page, console = open_page(browser, server, f"#/figure/{fid}")
    page.wait_for_selector("#similar .card")
    page.wait_for_timeout(300)
    first = boxes(page, "#similar .card")[0]
    assert first["top"] < 768 - 100, first  # at least the top of the first row is on the first screen
    related = set(page.evaluate("[...document.querySelectorAll('#similar .card')].map(c => c.dataset.figureId)"))
    linked = page.evaluate("[...document.querySelectorAll('#linked-papers .card')].map(c => c.dataset.figureId)")
    assert not related & set(linked)
    text = page.inner_text("#similar")
    assert "lexical" not in text and "embedding" not in text and "semantic match" not in text
    assert page.locator("#similar .meter").count() == 0
    for grid in ("#similar", "#same-paper"):
        heights = {round(b["height"]) for b in boxes(page, f"{grid} .card")}
        assert len(heights) <= 1, (grid, heights)
    page.click("#cite summary")
    bib = page.inner_text("#bibtex")
    assert bib.startswith("@inproceedings{") and "booktitle = {Proceedings of the" in bib
    page.screenshot(path=str(SHOTS / "desktop-pages-03-figure-first-screen.png"))
    shot(page, "desktop-pages-03-figure")
    assert not console.errors, console.errors
    page.close()

    page, console = open_page(browser, server, f"#/figure/{fid}", 390, 844)
    page.wait_for_selector("#similar .card")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, "phone-pages-03-figure")
    assert not console.errors, console.errors
    page.close()


@pytest.mark.parametrize("width,height,tag", SIZES)
def test_badges_beside_thumbnails_and_readable_tables(server, browser, width, height, tag):
    """The central-figure badge never covers the picture; a table card shows its top rows at a
    legible size (not the whole table shrunk to the card)."""
    page, console = open_page(browser, server, "#/papers", width, height)
    pid = httpx.get(f"{server}/api/v1/papers").json()["items"][0]["paper_id"]
    page.goto(f"{server}/#/paper/{pid}")
    wait_page(page)
    page.wait_for_selector("#paper-figures .card .badge.central")
    overlaps = page.evaluate("""[...document.querySelectorAll('.card')].filter(c => c.querySelector('.badge')).map(c => {
        const t = c.querySelector('.thumb').getBoundingClientRect();
        return [...c.querySelectorAll('.badge')].some(b => { const r = b.getBoundingClientRect();
          return r.left < t.right && r.right > t.left && r.top < t.bottom && r.bottom > t.top; }); })""")
    assert overlaps and not any(overlaps)
    page.wait_for_selector("#paper-tables .card img")
    wait_js(page, "[...document.querySelectorAll('#paper-tables .card img')].every(i => i.complete && i.naturalWidth > 0)")
    scale = page.evaluate("""[...document.querySelectorAll('#paper-tables .card img')].map(i => i.getBoundingClientRect().width / i.naturalWidth)""")
    assert scale and min(scale) >= 0.85, scale
    shot(page, f"{tag}-pages-04-paper")
    assert not console.errors, console.errors
    page.close()


@pytest.mark.parametrize("width,height,tag", SIZES)
def test_papers_list_search_sort_and_thumbnails(server, browser, width, height, tag):
    papers = httpx.get(f"{server}/api/v1/papers", params={"limit": 100}).json()["items"]
    page, console = open_page(browser, server, "#/papers", width, height)
    page.wait_for_selector("#paper-list li")
    wait_js(page, "[...document.querySelectorAll('#paper-list .paper-thumb img')].every(i => i.complete && i.naturalWidth > 0)")
    assert page.locator("#paper-list .paper-thumb img").count() == sum(1 for p in papers if p["n_figures"])
    page.select_option("#paper-sort", "title")
    wait_js(page, "location.hash.includes('sort=title')")
    wait_page(page)
    titles = page.evaluate("[...document.querySelectorAll('#paper-list li > div > a')].map(a => a.textContent)")
    assert titles == sorted((p["title"] for p in papers), key=str.lower)
    target = papers[-1]
    word = max(target["title"].split(), key=len)
    page.fill("#paper-q", word)
    page.press("#paper-q", "Enter")
    wait_js(page, "location.hash.includes('q=')")
    wait_page(page)
    shown = page.evaluate("[...document.querySelectorAll('#paper-list li > div > a')].map(a => a.textContent)")
    assert target["title"] in shown and len(shown) <= len(papers)
    assert page.input_value("#paper-sort") == "title"  # the sort is kept
    shot(page, f"{tag}-pages-05-papers")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert not console.errors, console.errors
    page.close()


def test_related_cards_show_the_same_picture_and_claim_nothing_untrue(server, browser):
    """Answers shaped like the server's, changed in the browser's network layer: the first related
    figure is a copy of the same picture (the ranking puts copies first: test_searcher), and
    one has no reason, no shared word and an embedding cosine of .08. The copy's card says so; the
    unexplained one claims no 'semantic match'."""
    import json

    fid = _figure_with_related(server)
    original = httpx.get(f"{server}/api/v1/figures/{fid}/similar", params={"scope": "other_papers", "k": 12}).json()
    assert len(original["items"]) >= 3
    items = original["items"]
    copy_id, weak_id = items[0]["figure_id"], items[1]["figure_id"]
    items[0]["reasons"] = ["same picture"]
    items[1].update(reasons=[], matched_terms=[], embedding_score=0.08)
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    console = Console(page)
    page.route("**/similar?*scope=other_papers*",
               lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(original)))
    page.goto(f"{server}/#/figure/{fid}")
    wait_page(page)
    page.wait_for_selector("#similar .card")
    order = page.evaluate("[...document.querySelectorAll('#similar .card')].map(c => Number(c.dataset.figureId))")
    assert order[0] == copy_id and "same picture" in page.locator("#similar .card").first.inner_text()
    weak = page.locator(f"#similar .card[data-figure-id='{weak_id}'] .why")
    said = weak.inner_text().lower() if weak.count() else ""
    assert "semantic" not in said and "meaning" not in said and "shared" not in said, said
    assert not console.errors, console.errors
    page.close()


MANY_REASONS = ["similar picture", "same kind of figure (line chart)", "related paper topic", "similar description",
                "both captions mention recall, embedding size", "both plot recall against embedding size"]


@pytest.mark.parametrize("width,height,tag,shown", [(1366, 768, "desktop", 3), (390, 844, "phone", 2)])
def test_related_card_folds_its_reasons_past_the_most_telling(server, browser, width, height, tag, shown):
    """A related card with six reasons and words shows the most telling ones first (what both
    figures plot before 'same kind of figure'), three of them (two on a phone), and folds the rest
    behind '+N more', a button the keyboard reaches that opens them in place without following the
    card's link. The API's answer keeps every reason."""
    import json

    fid = _figure_with_related(server)
    original = httpx.get(f"{server}/api/v1/figures/{fid}/similar", params={"scope": "other_papers", "k": 12}).json()
    assert original["items"]
    full = original["items"][0]
    full.update(reasons=MANY_REASONS, matched_terms=["recall", "beam", "criteo"])  # "recall" is named already
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(20_000)
    console = Console(page)
    page.route("**/similar?*scope=other_papers*",
               lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(original)))
    page.goto(f"{server}/#/figure/{fid}")
    wait_page(page)
    card = page.locator(f"#similar .card[data-figure-id='{full['figure_id']}']")
    visible = "[...document.querySelectorAll('#similar .card[data-figure-id=\"%s\"] .why .chip')]" \
              ".filter(c => c.offsetParent !== null && !c.matches('button')).map(c => c.textContent)" % full["figure_id"]
    chips = page.evaluate(visible)
    assert chips == ["both plot recall against embedding size", "both captions mention recall, embedding size",
                     "similar picture"][:shown], chips
    button = card.locator("button.more-reasons")
    total = len(MANY_REASONS) + 2  # the words "beam" and "criteo"
    assert button.inner_text() == f"+{total - shown} more" and button.get_attribute("aria-expanded") == "false"
    # the button sits beside the card's link, not in it: the link's name (what a screen reader
    # says) is the figure's, without "+N more"
    assert card.locator("a.card-link").count() == 1 and card.locator("a.card-link button").count() == 0
    assert f"+{total - shown} more" not in card.locator("a.card-link").inner_text()
    folded = boxes(page, f"#similar .card[data-figure-id='{full['figure_id']}'] .why")[0]["height"]
    shot(page, f"{tag}-pages-06-folded-reasons")
    card.locator("a.card-link").focus()
    page.keyboard.press("Tab")  # the next stop is the card's button
    assert page.evaluate("document.activeElement.classList.contains('more-reasons')")
    before = page.url
    page.keyboard.press("Enter")
    assert page.url == before and button.get_attribute("aria-expanded") == "true"
    chips = page.evaluate(visible)
    assert len(chips) == total and "beam" in chips and "recall" not in chips, chips
    assert "both mention:" in card.inner_text()
    assert boxes(page, f"#similar .card[data-figure-id='{full['figure_id']}'] .why")[0]["height"] > folded
    page.keyboard.press("Enter")
    assert len(page.evaluate(visible)) == shown and button.inner_text() == f"+{total - shown} more"
    button.click()  # a click opens them too, and stays on the page
    assert page.url == before and len(page.evaluate(visible)) == total
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    # a click elsewhere on the card, even on a reason, opens the figure as before (the link covers the card)
    chip = card.locator(".why .chip.reason").first.bounding_box()
    page.mouse.click(chip["x"] + chip["width"] / 2, chip["y"] + chip["height"] / 2)
    wait_js(page, f"location.hash === '#/figure/{full['figure_id']}'")
    assert not console.errors, console.errors
    page.close()


def test_phone_cards_are_as_tall_as_their_content(server, browser):
    """On a phone a result or related card is one row of the list, its picture beside its label,
    caption and paper (a figure much wider than tall: across the card, above them), as tall as
    its own content: three cards fit a screen, two and a half of the tallest (a grid of equal
    heights made every card as tall as the tallest, about 1.5 a screen), and the reasons and their "+N more" button stay on the card."""
    import json

    fid = _figure_with_related(server)
    original = httpx.get(f"{server}/api/v1/figures/{fid}/similar", params={"scope": "other_papers", "k": 12}).json()
    assert len(original["items"]) >= 3
    original["items"][0].update(reasons=MANY_REASONS, matched_terms=["beam", "criteo"])
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.set_default_timeout(20_000)
    console = Console(page)
    page.route("**/similar?*scope=other_papers*",
               lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(original)))
    for address, grid in ((f"#/figure/{fid}", "#similar"), ("#/?q=model%20accuracy", "#results")):
        page.goto(f"{server}/{address}")
        wait_page(page)
        page.wait_for_selector(f"{grid} .card")
        wait_js(page, f"document.querySelector('{grid} .card img').complete")  # the others load lazily
        cards = boxes(page, f"{grid} .card")
        assert len({round(c["left"]) for c in cards}) == 1, cards  # one card a row
        heights = sorted(c["height"] for c in cards)
        assert heights[len(heights) // 2] <= 844 / 3 and heights[-1] <= 844 / 2.5, heights
        # the picture beside the text, not above it; a row of panels (wide) across the card, above it
        pic, label = boxes(page, f"{grid} .card:not(.wide) .thumb")[0], boxes(page, f"{grid} .card:not(.wide) .label")[0]
        assert label["left"] >= pic["right"] and label["top"] < pic["bottom"], (pic, label)
        for card, pic in zip(boxes(page, f"{grid} .card.wide"), boxes(page, f"{grid} .card.wide .thumb")):
            assert pic["right"] - pic["left"] >= card["right"] - card["left"] - 2, (card, pic)
        shot(page, f"phone-pages-08-cards-{grid[1:]}")
    # a row of panels: beside the text it would be a strip too thin to read
    figures = httpx.get(f"{server}/api/v1/figures", params={"limit": 100}).json()["items"]
    wide = next(f for f in figures if f["width"] >= 2.5 * f["height"])
    page.goto(f"{server}/#/paper/{wide['paper_id']}")
    wait_page(page)
    card = f"#paper-figures .card[data-figure-id='{wide['figure_id']}']"
    box, pic = boxes(page, card)[0], boxes(page, f"{card} .thumb")[0]
    assert pic["right"] - pic["left"] >= box["right"] - box["left"] - 2 and boxes(page, f"{card} .label")[0]["top"] >= pic["bottom"]
    page.goto(f"{server}/#/figure/{fid}")
    wait_page(page)
    first = page.locator("#similar .card").first
    assert first.locator(".why .chip.reason").first.is_visible() and first.locator("button.more-reasons").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert not console.errors, console.errors
    page.close()


@pytest.mark.parametrize("width,height,tag", SIZES)
def test_long_caption_folds_on_a_phone(server, browser, width, height, tag):
    """A long caption on a phone shows its first lines and a button for the whole of it, so that
    the related figures start on the second screen; the button opens it in place. Wider screens
    keep the caption in its scrolling box, without the button."""
    import json
    import re as regex

    fid = _figure_with_related(server)
    figure = httpx.get(f"{server}/api/v1/figures/{fid}").json()
    figure["caption"] = f"{figure['label']}: " + " ".join(["The model's accuracy rises with the number of examples."] * 14)
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(20_000)
    console = Console(page)
    page.route(regex.compile(rf".*/api/v1/figures/{fid}$"),
               lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(figure)))
    page.goto(f"{server}/#/figure/{fid}")
    wait_page(page)
    page.wait_for_selector("#similar .card")
    toggle = page.locator("#caption-toggle")
    if tag == "desktop":
        assert not toggle.is_visible()
    else:
        cap = boxes(page, "#figure-caption")[0]["height"]
        assert toggle.is_visible() and toggle.get_attribute("aria-expanded") == "false"
        assert boxes(page, "#similar .card")[0]["top"] < 2 * height
        toggle.click()
        assert toggle.get_attribute("aria-expanded") == "true" and boxes(page, "#figure-caption")[0]["height"] > 1.5 * cap
        assert page.inner_text("#figure-caption").endswith("examples.")
        shot(page, "phone-pages-07-caption-open")
    assert not console.errors, console.errors
    page.close()


@pytest.mark.parametrize("width,height,tag", SIZES)
def test_long_abstract_folds_on_a_phone(server, browser, width, height, tag):
    """A long abstract on a phone shows its first lines and a button for the whole of it, so that
    the figures start on the second screen; the button opens it in place and folds it back. Wider
    screens show the whole abstract, without the button; a short abstract has no button."""
    import json
    import re as regex

    paper = httpx.get(f"{server}/api/v1/papers/1").json()
    assert paper["figures"]
    long = " ".join(["We study how the accuracy of the model rises with the number of training examples."] * 24)
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(20_000)
    console = Console(page)
    answer = {"abstract": long}
    page.route(regex.compile(r".*/api/v1/papers/1$"), lambda route: route.fulfill(
        status=200, content_type="application/json", body=json.dumps({**paper, **answer})))
    page.goto(f"{server}/#/paper/1")
    wait_page(page)
    page.wait_for_selector("#paper-figures .card")
    toggle = page.locator("#abstract-toggle")
    if tag == "desktop":
        assert not toggle.is_visible()
        assert page.inner_text("#paper-abstract").endswith("examples.")
        assert boxes(page, "#paper-abstract")[0]["height"] > 6 * 24  # not clamped
    else:
        folded = boxes(page, "#paper-abstract")[0]["height"]
        assert toggle.is_visible() and toggle.get_attribute("aria-expanded") == "false"
        assert toggle.get_attribute("aria-controls") == "paper-abstract"
        assert boxes(page, "#paper-figures .card")[0]["top"] < 1.5 * height
        shot(page, "phone-pages-08-abstract-folded")
        toggle.click()
        assert toggle.get_attribute("aria-expanded") == "true" and boxes(page, "#paper-abstract")[0]["height"] > 3 * folded
        assert toggle.inner_text() == "Show less of the abstract"
        toggle.click()
        assert toggle.get_attribute("aria-expanded") == "false" and boxes(page, "#paper-abstract")[0]["height"] == folded
    answer["abstract"] = "A short abstract of one sentence."
    page.goto(f"{server}/#/paper/1?order=paper")
    wait_js(page, "document.querySelector('#paper-abstract')?.textContent.startsWith('A short')")
    assert not page.locator("#abstract-toggle").is_visible()
    assert not console.errors, console.errors
    page.close()


def test_a_failing_related_list_leaves_the_figure_page(server, browser):
    """One related list answering 503 (a busy server) says so in its place; the figure, its
    caption and the other lists stay on the page."""
    import json

    fid = _figure_with_related(server)
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    console = Console(page)
    busy = {"type": "about:blank", "title": "Service Unavailable", "status": 503, "detail": "the server is busy; try again"}
    page.route("**/similar?*scope=other_papers*",
               lambda route: route.fulfill(status=503, content_type="application/problem+json", body=json.dumps(busy)))
    page.goto(f"{server}/#/figure/{fid}")
    wait_page(page)
    assert page.locator("#figure-caption").is_visible()
    warning = page.locator("#similar-title + div .notice.warn")
    assert warning.inner_text() == "Related figures cannot be shown now: the server is busy; try again."
    assert page.locator("#same-paper .card").count() > 0
    assert [e for e in console.errors if "503" not in e] == []
    page.close()


def test_a_figure_read_by_ocr_says_so_on_its_page(server, browser):
    """A figure of a scanned page (text_source "ocr") carries the "scanned · OCR" badge on its own
    page, as its card does: its caption may hold misread words. (The sample has no scan: the
    figure's answer is changed on its way to the page.) A born-digital figure has no badge."""
    import json

    fid = _figure_with_related(server)
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    console = Console(page)
    page.goto(f"{server}/#/figure/{fid}")
    wait_page(page)
    assert page.locator("#figure-scanned").count() == 0

    def as_scanned(route):
        body = route.fetch().json()
        body["text_source"] = "ocr"
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.route(f"**/api/v1/figures/{fid}", as_scanned)
    page.reload()
    wait_page(page)
    badge = page.locator("h1 #figure-scanned")
    assert badge.inner_text() == "scanned · OCR"
    assert "read by OCR" in badge.get_attribute("title")
    shot(page, "desktop-pages-figure-scanned")
    assert not console.errors, console.errors
    page.close()


@pytest.mark.parametrize("width,height,tag", SIZES)
def test_a_figure_search_says_how_many_tables_match(server, browser, width, height, tag):
    """A query searched among figures says how many tables match it too, with a link to them; when
    no figure matches, the empty result offers those tables instead of "Try other words". The
    filter box of an empty result has no empty band where the type chips would be."""
    tables = httpx.get(f"{server}/api/v1/figures", params={"kind": "table", "limit": 100}).json()["items"]
    words = list(dict.fromkeys(w.lower() for t in tables for w in re.findall(r"[A-Za-z][A-Za-z-]{4,}", t["caption"] or "")))

    def total(q, kind):
        return httpx.get(f"{server}/api/v1/search/facets", params={"q": q, "kind": kind}).json()["total"]

    counts = {w: (total(w, "figure"), total(w, "table")) for w in words[:40]}
    only_tables = next(w for w, (nf, nt) in counts.items() if nf == 0 and nt > 0)
    both = next(w for w, (nf, nt) in counts.items() if nf > 0 and nt > 0)

    page, console = open_page(browser, server, f"#/?q={both}", width, height)
    link = page.locator("#also-tables a")
    n = counts[both][1]
    assert link.inner_text() == f"{n} matching table{'' if n == 1 else 's'}"
    link.click()
    wait_page(page)
    assert hash_query(page)["kind"] == "table" and page.locator("#results .card").count() == min(n, 24)

    page.goto(f"{server}/#/?q={only_tables}")
    wait_page(page)
    assert page.locator("#results .card").count() == 0
    offer = page.locator("#search-tables")
    n = counts[only_tables][1]
    assert offer.inner_text() == (f"Show the {n} matching tables" if n > 1 else "Show the matching table")
    if width > 600:
        assert not page.locator("#filters .facet-line").is_visible()
    shot(page, f"{tag}-pages-figure-search-offers-tables")
    offer.click()
    wait_page(page)
    assert page.locator("#results .card").count() == n

    page.goto(f"{server}/#/?q=qwertyuiop")  # nothing matches at all: no link
    wait_page(page)
    assert page.locator("#also-tables").is_hidden() and page.locator("#search-tables").count() == 0
    assert not console.errors, console.errors
    page.close()


def test_a_scanned_paper_is_marked_in_the_papers_list(server, browser):
    """The papers list marks a scan ("scanned", as the paper's own page does); a born-digital
    paper has no mark. (The sample has no scan: the first paper's answer is changed on its way.)"""
    import json

    def first_scanned(route):
        body = route.fetch().json()
        body["items"][0]["source_kind"] = "scanned"
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page = browser.new_page(viewport={"width": 1366, "height": 768})
    console = Console(page)
    page.route("**/api/v1/papers?*", first_scanned)
    page.goto(f"{server}/#/papers")
    wait_page(page)
    rows = page.locator("#paper-list > li")
    assert rows.nth(0).locator(".badge.scanned").inner_text() == "scanned"
    assert all(rows.nth(i).locator(".badge.scanned").count() == 0 for i in range(1, rows.count()))
    shot(page, "desktop-pages-papers-scanned")
    assert not console.errors, console.errors
    page.close()


def test_a_refused_image_drops_the_one_chosen_before(server, browser, tmp_path):
    """Choosing a file that is not a picture after a good one shows why it is refused and leaves
    nothing chosen: "Find similar" then searches with no picture the page does not show."""
    good, bad = tmp_path / "figure.png", tmp_path / "notes.png"
    good.write_bytes(httpx.get(f"{server}/api/v1/figures/1/thumbnail").content)
    bad.write_text("not a picture")
    page, console = open_page(browser, server, "#/upload")
    searched = []
    page.on("request", lambda r: searched.append(r.url) if "/search/by-image" in r.url else None)
    page.set_input_files("#image-file", str(good))
    page.wait_for_selector(".preview img")
    size_kb = max(1, round(good.stat().st_size / 1024))
    assert f"{size_kb} KB" in page.inner_text(".preview")  # a small picture's size is not "0.00 MB"
    page.set_input_files("#image-file", str(bad))
    page.wait_for_selector("#upload-message .notice.error")
    assert "notes.png cannot be read as a picture" in page.inner_text("#upload-message")
    assert page.locator(".preview").is_hidden()
    page.click("#find-similar")
    time.sleep(0.5)
    assert searched == [] and "notes.png" in page.inner_text("#upload-message")
    assert not console.errors, console.errors
    page.close()


@pytest.mark.parametrize("width,height,tag", SIZES)
def test_results_of_a_picture_come_into_view(server, browser, tmp_path, width, height, tag):
    """On a phone the results of a search by picture start below the form: the page brings the
    first of them into view instead of leaving the reader before a button that seemed to do
    nothing."""
    picture = tmp_path / "figure.png"
    picture.write_bytes(httpx.get(f"{server}/api/v1/figures/1/image").content)
    page, console = open_page(browser, server, "#/upload", width, height)
    assert "Choose a figure or table image" in page.inner_text(".drop")
    page.set_input_files("#image-file", str(picture))
    page.wait_for_selector(".preview img")
    page.click("#find-similar")
    page.wait_for_selector("#image-results .card")
    first = boxes(page, "#image-results .card")[0]
    assert 0 <= first["top"] and first["top"] + 100 <= height, first
    assert page.locator("#held-copy").is_visible() and boxes(page, "#held-copy")[0]["top"] >= 0
    shot(page, f"{tag}-pages-09-picture-results")
    assert not console.errors, console.errors
    page.close()


def test_a_picture_file_without_an_extension_is_searched(server, browser):
    """A picture the system names no type for (a file without an extension) is judged by its
    picture, not refused by its missing type: the page shows it and finds the figure it copies."""
    picture = httpx.get(f"{server}/api/v1/figures/1/image").content
    page, console = open_page(browser, server, "#/upload")
    page.set_input_files("#image-file", files=[{"name": "figure", "mimeType": "", "buffer": picture}])
    page.wait_for_selector(".preview img")
    assert not page.locator("#upload-message .notice.error").count()
    page.click("#find-similar")
    page.wait_for_selector("#image-results .card")
    assert page.locator("#held-copy").is_visible()
    assert not console.errors, console.errors
    page.close()


@pytest.mark.parametrize("width,height,tag", SIZES)
def test_a_long_query_is_named_by_its_first_words(server, browser, width, height, tag):
    """A pasted paragraph as the query: the heading and the tab's title name it by its first words
    (the whole query in the heading's tooltip and the search box), so that the results, or the
    notice that it is too long, stay on the first screen."""
    for words in (40, 120):  # searched (under the API's 500 characters), and too long to search
        q = " ".join(["heatmap", "attention"] * (words // 2))
        page, console = open_page(browser, server, f"#/?q={q.replace(' ', '%20')}", width, height)
        heading = page.locator("#view h1")
        assert heading.inner_text().endswith("…”") and len(heading.inner_text()) < 90
        assert heading.get_attribute("title") == q and page.input_value("#q") == q
        assert boxes(page, "#view h1")[0]["height"] <= 5 * 1.25 * 1.45 * 16  # lines of the heading
        below = "#results .card" if len(q) <= 500 else "#view .notice"
        page.wait_for_selector(below)
        assert boxes(page, below)[0]["top"] < height, below
        assert "…" in page.title() and len(page.title()) < 90
        shot(page, f"{tag}-pages-long-query-{words}")
        assert not console.errors, console.errors
        page.close()


def test_a_query_of_common_words_alone_says_what_to_search_for(server, browser):
    """"the of and" was answered "No figure shares these words or is close in meaning. Try other
    or fewer words.": none of its words is searched at all. The page says so and what to search
    for, with no link to tables or unfiltered results that could not help."""
    page, console = open_page(browser, server, "#/?q=the%20of%20and&year_from=2016")
    page.wait_for_selector("#no-match-advice")
    text = page.inner_text("#view")
    assert "Nothing to search for." in text and "reads no word of “the of and”" in text
    assert "fewer words" not in text and not page.locator("#search-unfiltered, #search-tables").count()
    shot(page, "desktop-pages-common-words-query")
    assert not console.errors, console.errors
    page.close()


@pytest.mark.parametrize("width,height,tag", SIZES + [(640, 800, "zoomed")])
def test_tab_goes_through_the_header_in_reading_order(server, browser, width, height, tag):
    """Tab follows the header as it is read, row by row and left to right: on a phone (or a
    desktop zoomed to 200%) the search box is on a row below the links, and Tab went from the
    brand down to the box and back up to the links."""
    page, console = open_page(browser, server, "#/?q=heatmap", width, height)
    stops = []
    for _ in range(8):
        page.keyboard.press("Tab")
        box = page.evaluate("(() => { const e = document.activeElement; const r = e.getBoundingClientRect();"
                            " return {name: e.id || e.textContent.trim(), top: r.top, left: r.left, header: !!e.closest('.top')}; })()")
        if box["header"]:
            stops.append(box)
    names = [s["name"] for s in stops]
    assert names[0] == "figsearch" and "q" in names and "Admin" in names, names
    for a, b in zip(stops, stops[1:]):  # the next stop is right of this one on its row, or on a row below
        same_row = abs(a["top"] - b["top"]) < 12
        assert (same_row and b["left"] > a["left"]) or b["top"] > a["top"] + 12, (a, b)
    assert not console.errors, console.errors
    page.close()


def test_a_reversed_year_range_in_an_address_means_the_same_years(server, browser):
    """#/?q=heatmap&year_from=2022&year_to=2016 (typed or shared) found nothing and said only that
    nothing passes the filters; the year boxes take a reversed range as the same years, and so
    does the address now."""
    page, console = open_page(browser, server, "#/?q=heatmap&year_from=2022&year_to=2016")
    page.wait_for_selector("#results .card")
    assert page.input_value("#f-year-from") == "2016" and page.input_value("#f-year-to") == "2022"
    reversed_count = page.locator("#results .card").count()
    page.close()
    page, console2 = open_page(browser, server, "#/?q=heatmap&year_from=2016&year_to=2022")
    page.wait_for_selector("#results .card")
    assert page.locator("#results .card").count() == reversed_count
    assert not console.errors and not console2.errors, console.errors + console2.errors
    page.close()


@pytest.mark.parametrize("width,height,tag", SIZES)
def test_a_picture_of_a_table_finds_tables(server, browser, tmp_path, width, height, tag):
    """A table's picture is searched among the tables: the table it copies first, tables after it
    under "Similar tables", and a button that searches the figures instead (and back)."""
    table = httpx.get(f"{server}/api/v1/figures", params={"kind": "table", "limit": 1}).json()["items"][0]
    picture = tmp_path / "table.png"
    picture.write_bytes(httpx.get(f"{server}/api/v1/figures/{table['figure_id']}/image").content)
    page, console = open_page(browser, server, "#/upload", width, height)
    page.set_input_files("#image-file", str(picture))
    page.wait_for_selector(".preview img")
    page.click("#find-similar")
    page.wait_for_selector("#image-results .card")
    assert page.inner_text("#image-results-title") == "Similar tables"
    cards = page.locator("#image-results .card")
    assert cards.first.get_attribute("data-figure-id") == str(table["figure_id"])
    assert all("table-card" in (cards.nth(i).get_attribute("class") or "") for i in range(cards.count()))
    assert page.inner_text("#held-copy").startswith(f"Your picture is {table['label']}")
    assert "tables like it" in page.inner_text("#held-copy")
    shot(page, f"{tag}-pages-table-picture")
    page.click("#switch-kind")
    wait_js(page, "document.getElementById('image-results-title').textContent === 'Similar figures'"
                  " && document.querySelectorAll('#image-results .card').length > 0")
    cards = page.locator("#image-results .card")
    assert not any("table-card" in (cards.nth(i).get_attribute("class") or "") for i in range(cards.count()))
    assert page.inner_text("#switch-kind") == "Search among tables instead"
    page.click("#switch-kind")
    wait_js(page, "document.getElementById('image-results-title').textContent === 'Similar tables'")
    assert not console.errors, console.errors
    page.close()


def test_a_page_that_cannot_be_shown_is_titled_for_itself(server, browser):
    """A missing figure or paper, or an address no page has, names itself in the tab's title (and
    so in the history and bookmarks); it kept the title of the page before ("“heatmap” · figsearch")."""
    page, console = open_page(browser, server, "#/?q=heatmap")
    assert page.title().startswith("“heatmap”")
    for address, title in (("#/figure/999999", "Figure not found"), ("#/nothing", "No such page"),
                           ("#/paper/999999", "Paper not found")):
        page.evaluate(f"location.hash = {address!r}")
        wait_page(page)
        assert page.title() == f"{title} · figsearch", (address, page.title())
        page.evaluate("location.hash = '#/?q=heatmap'")
        wait_page(page)
    assert [e for e in console.errors if "404" not in e] == []
    page.close()


def test_a_papers_central_figure_opens_from_the_list(server, browser):
    """The papers list names each paper's central figure as a link to that figure's page (it was
    plain text: the figure took two pages to reach)."""
    papers = httpx.get(f"{server}/api/v1/papers", params={"limit": 100}).json()["items"]
    first = next(p for p in papers if p.get("central_figure"))
    page, console = open_page(browser, server, "#/papers")
    link = page.locator(f"#paper-list li:has(a[href='#/paper/{first['paper_id']}']) .central-link")
    assert link.inner_text() == first["central_figure"]["label"]
    link.click()
    wait_js(page, f"location.hash === '#/figure/{first['central_figure']['figure_id']}'")
    wait_page(page)
    assert page.inner_text("#view h1").startswith(first["central_figure"]["label"])
    assert page.locator("#view h1 .badge.central").count() == 1
    assert not console.errors, console.errors
    page.close()


def test_tables_are_not_offered_a_figure_type(server, browser):
    """Among tables alone the type chips said only "table" with the count of every result (tables
    have no figure types): none is shown; figures, and figures with tables, keep theirs."""
    page, console = open_page(browser, server, "#/?kind=table")
    page.wait_for_selector("#filters")
    assert page.locator("#results .card").count() > 0 and page.locator("#type-facets").count() == 0
    page.evaluate("location.hash = '#/?kind=both'")
    wait_page(page)
    page.wait_for_selector("#type-facets .chip")
    assert page.locator("#type-facets .chip[data-type=table]").count() == 1
    page.evaluate("location.hash = '#/'")
    wait_page(page)
    page.wait_for_selector("#type-facets .chip")
    assert page.locator("#type-facets .chip[data-type=table]").count() == 0
    assert not console.errors, console.errors
    page.close()


def _served_per_paper(server, per_paper: int) -> int:
    """Publish the served index's ranking config with another per-paper limit (as `figsearch fit`
    publishes one) and wait for the server to search with it; returns the limit it had."""
    from dataclasses import replace

    from app.search.ranking import RankingConfig, publish_ranking
    from app.model_store.versions import current_version
    from tests.test_e2e_navigation import SERVER_DATA

    root = SERVER_DATA[0] / "index"
    before = RankingConfig.load(root / current_version(root))
    publish_ranking(root, replace(before, text_per_paper=per_paper))
    deadline = time.monotonic() + 30
    while httpx.get(f"{server}/api/v1/search", params={"q": "figure", "k": 1}).json()["per_paper"] != per_paper:
        assert time.monotonic() < deadline, "the server did not load the new ranking config"
        time.sleep(0.5)
    return before.text_per_paper


def test_a_card_whose_paper_has_more_matches_links_to_them(server, browser):
    """A search shows a few figures of each paper first; a card of a paper whose further matches
    were moved down links to the same search within that paper, which shows them all. (The
    sample's four papers rarely crowd a block of ten, so one figure of a paper is served here.)"""
    served = _served_per_paper(server, 1)
    try:
        figures = httpx.get(f"{server}/api/v1/figures", params={"limit": 100}).json()["items"]
        words = list(dict.fromkeys(w.lower() for f in figures
                                   for w in re.findall(r"[A-Za-z][A-Za-z-]{3,}", f["caption"] or "")))

        def crowded(q):
            items = httpx.get(f"{server}/api/v1/search", params={"q": q, "k": 24}).json()["items"]
            return [h for h in items if h["more_from_paper"]]

        query, more = next((w, m) for w in words[:60] if (m := crowded(w)))
        page, console = open_page(browser, server, f"#/?q={query}")
        page.wait_for_selector("#results .card")
        links = page.locator("#results .card .more-from-paper")
        assert links.count() == len(more)
        shot(page, "desktop-pages-search-more-from-paper")
        pid = more[0]["paper_id"]
        page.locator(f"#results .card[data-figure-id='{more[0]['figure_id']}'] .more-from-paper").click()
        wait_page(page)
        assert hash_query(page) == {"q": query, "paper_id": str(pid)}
        page.wait_for_selector("#results .card")
        within = httpx.get(f"{server}/api/v1/search", params={"q": query, "k": 24, "paper_id": pid}).json()["items"]
        assert page.locator("#results .card").count() == len(within) > 0
        assert page.locator("#results .card .more-from-paper").count() == 0
        assert not console.errors, console.errors
        page.close()
    finally:
        _served_per_paper(server, served)
