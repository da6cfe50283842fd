"""Navigation features of the API: search/browse filters and their facets, the stored PDF of a
paper (opened at a figure's page), high-resolution crops rendered from it, and citations."""
from __future__ import annotations

import io
import time

import pytest
from PIL import Image

from sqlalchemy import select

from app.db.schema import Paper
from app.db.session import session_scope
from app.pdfs import attach_pdfs, remove_pdf, stored_pdf
from app.search.text import analyze
from app.settings import Settings
from tests.test_api import AUTH, assert_problem, build_sample_data, copy_data, make_client, wait_ready


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return build_sample_data(tmp_path_factory.mktemp("nav-sample"))


@pytest.fixture(scope="module")
def client(sample, tmp_path_factory):
    """A copy of the sample collection: ingest kept every paper's PDF; the last paper's copy is
    removed, as for a collection ingested before PDFs were kept."""
    data = copy_data(sample, tmp_path_factory.mktemp("nav") / "data")
    pdfs = sorted((sample.parent / "pdfs").glob("*.pdf"))
    settings = Settings(data_dir=data, database_url="", broker_url="")
    with make_client(data) as c:
        wait_ready(c, encoder=False)
        items = c.get("/api/v1/papers").json()["items"]
        with session_scope(settings.db_url) as s:
            sha = dict(s.execute(select(Paper.id, Paper.sha256)).all())
        assert len(items) == len(pdfs) and all(stored_pdf(data, sha[p["paper_id"]]) for p in items)
        remove_pdf(data, sha[items[-1]["paper_id"]])
        yield c


@pytest.fixture(scope="module")
def papers(client):
    return client.get("/api/v1/papers").json()["items"]


def search(client, **params):
    r = client.get("/api/v1/search", params={"rerank": False, **params})
    assert r.status_code == 200, r.text
    return r.json()


def test_filters_narrow_search_results(client, papers):
    everything = search(client, q="model", k=50)["items"]
    years = {p["paper_id"]: p["year"] for p in papers}
    assert len({years[i["paper_id"]] for i in everything}) > 2  # the query spans several years
    pid = everything[0]["paper_id"]
    one = search(client, q="model", k=50, paper_id=pid)["items"]
    assert one and {i["paper_id"] for i in one} == {pid}
    assert [i["figure_id"] for i in one] == [i["figure_id"] for i in everything if i["paper_id"] == pid]
    y = sorted(years.values())[1]
    recent = search(client, q="model", k=50, year_from=y)["items"]
    assert recent and all(i["paper_year"] >= y for i in recent)
    assert len(recent) < len(everything)
    old = search(client, q="model", k=50, year_to=y - 1)["items"]
    assert {i["figure_id"] for i in old} | {i["figure_id"] for i in recent} == {i["figure_id"] for i in everything}


def test_type_filter_uses_the_figure_type_column(client):
    from sqlalchemy import select, update

    from app.db.schema import Figure

    hits = search(client, q="model", k=50)["items"]
    target = hits[-1]["figure_id"]
    with client.app.state.session_factory() as s:
        saved = dict(s.execute(select(Figure.id, Figure.figure_type)).all())
        s.execute(update(Figure).values(figure_type=None))  # as before any classifier ran
        s.commit()
    try:
        assert search(client, q="model", type="heatmap")["items"] == []
        assert client.get("/api/v1/search/facets").json()["types"] == []
        with client.app.state.session_factory() as s:
            s.execute(update(Figure).where(Figure.id == target).values(figure_type="heatmap"))
            s.commit()
        got = search(client, q="model", type="heatmap")["items"]
        assert [i["figure_id"] for i in got] == [target]
        facets = client.get("/api/v1/search/facets").json()
        assert facets["types"] == [{"type": "heatmap", "count": 1}]
        browse = client.get("/api/v1/figures", params={"type": "heatmap"}).json()
        assert browse["total"] == 1 and browse["items"][0]["figure_id"] == target
    finally:
        with client.app.state.session_factory() as s:
            for fid, t in saved.items():
                s.execute(update(Figure).where(Figure.id == fid).values(figure_type=t))
            s.commit()


def all_matches(client, **params):
    out, offset = [], 0
    while True:
        page = search(client, k=100, offset=offset, **params)
        out += page["items"]
        if not page["has_more"]:
            return out
        offset += 100


def test_facets_of_a_query_count_its_matches(client):
    """With a query, each type chip counts the query's matches of that type (what choosing the
    chip returns), not the whole collection's figures."""
    everything = client.get("/api/v1/search/facets").json()
    hits = all_matches(client, q="model")
    facets = client.get("/api/v1/search/facets", params={"q": "model", "rerank": False}).json()
    assert facets["total"] == len(hits) < everything["total"]
    expected = {}
    for h in hits:
        if h["figure_type"]:
            expected[h["figure_type"]] = expected.get(h["figure_type"], 0) + 1
    assert {t["type"]: t["count"] for t in facets["types"]} == expected
    t = facets["types"][0]
    chosen = all_matches(client, q="model", type=t["type"])
    assert len(chosen) == t["count"] and all(h["figure_type"] == t["type"] for h in chosen)
    nothing = client.get("/api/v1/search/facets", params={"q": "zzqqxxunmatched", "rerank": False}).json()
    assert nothing["total"] == 0 and nothing["types"] == []


def test_query_naming_an_absent_type_says_so(client):
    """A query that names a figure type no figure shows still returns its word matches, and says
    that none of them can be of that type."""
    from app.vision.vocabulary import NAMES

    present = {t["type"] for t in client.get("/api/v1/search/facets").json()["types"]}
    absent = next(t for t in ("map", "pie_chart", "box_plot", "network_graph", "screenshot", "photo")
                  if t not in present)
    r = search(client, q=f"{NAMES[absent][0]} model")
    assert r["items"] and r["message"] and absent.replace("_", " ") in r["message"]
    assert search(client, q="model")["message"] is None


def test_misspelt_query_searches_the_closest_spelling_and_says_so(client):
    right = search(client, q="model")
    wrong = search(client, q="modle")
    assert [i["figure_id"] for i in wrong["items"]] == [i["figure_id"] for i in right["items"]]
    assert "“modle”" in wrong["message"] and "“model”" in wrong["message"]
    assert search(client, q="qwertyuiop")["items"] == []


def test_kind_filter_on_browse_and_search(client):
    figures = client.get("/api/v1/figures", params={"limit": 100}).json()
    tables = client.get("/api/v1/figures", params={"limit": 100, "kind": "table"}).json()
    both = client.get("/api/v1/figures", params={"limit": 100, "kind": "both"}).json()
    assert tables["total"] >= 1 and {i["kind"] for i in tables["items"]} == {"table"}
    assert both["total"] == figures["total"] + tables["total"]
    assert client.get("/api/v1/figures", params={"kind": "all"}).json()["total"] == both["total"]
    facets = client.get("/api/v1/search/facets", params={"kind": "table"}).json()
    assert facets["total"] == tables["total"] and facets["year_min"] <= facets["year_max"]
    table = tables["items"][0]
    r = search(client, q=table["caption"], kind="table")
    assert r["items"][0]["figure_id"] == table["figure_id"] and all(i["kind"] == "table" for i in r["items"])
    assert {i["kind"] for i in search(client, q=table["caption"], k=100, kind="both")["items"]} == {"figure", "table"}


def test_tables_are_found_by_their_cells(client, sample):
    """A word that a table holds only in its cells (not in its caption or the sentences that
    mention it) finds the table (kind=table or both), with the cells as the matching snippet;
    figure search (the default) returns no tables."""
    from app.db.schema import Figure, Mention

    with session_scope(Settings(data_dir=sample, database_url="", broker_url="").db_url) as s:
        rows = s.execute(select(Figure.id, Figure.caption, Figure.region_text).where(Figure.kind == "table")).all()
        said = {fid: " ".join(filter(None, (b, m, a))) for fid, b, m, a in
                s.execute(select(Mention.figure_id, Mention.before, Mention.sentence, Mention.after))}
    assert rows and all(cells for _, _, cells in rows), "every sample table keeps its cell text"
    word, table_id = next((w, fid) for fid, caption, cells in rows for w in cells.split()
                          if w.isalpha() and len(w) >= 4 and not set(analyze(w)) & set(analyze(f"{caption} {said.get(fid, '')}")))
    found = search(client, q=word, kind="table")["items"]
    assert found and found[0]["figure_id"] == table_id, word
    assert found[0]["snippet"]["source"] == "table" and word.lower() in found[0]["snippet"]["text"].lower()
    assert table_id in [i["figure_id"] for i in search(client, q=word, kind="both")["items"]]
    assert all(i["kind"] == "figure" for i in search(client, q=word)["items"])


@pytest.mark.parametrize("params,word", [({"type": "nonsense"}, ""), ({"kind": "poster"}, "")])
def test_bad_filters_are_422(client, params, word):
    assert_problem(client.get("/api/v1/search", params={"q": "x", **params}), 422, word)


def test_an_inverted_year_range_matches_nothing(client):
    """year_from after year_to is a valid request (the schema allows it): no figure is in it."""
    r = client.get("/api/v1/figures", params={"year_from": 2022, "year_to": 2020})
    assert r.status_code == 200 and r.json()["total"] == 0
    assert client.get("/api/v1/figures", params={"year_from": 1900, "year_to": 2100}).json()["total"] > 0


def test_figure_page_links_to_its_pdf_page_and_cites_it(client, papers):
    kept, missing = papers[0], papers[-1]
    paper = client.get(f"/api/v1/papers/{kept['paper_id']}").json()
    assert paper["pdf_url"] == f"/api/v1/papers/{kept['paper_id']}/pdf"
    pdf = client.get(paper["pdf_url"])
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")
    assert pdf.headers["content-type"] == "application/pdf" and pdf.headers["content-disposition"].startswith("inline")
    for f in paper["figures"]:  # figures and tables alike
        d = client.get(f"/api/v1/figures/{f['figure_id']}").json()
        assert d["pdf_url"] == f"{paper['pdf_url']}#page={f['page']}"
        assert d["label"] in d["citation"] and kept["title"] in d["citation"] and str(kept["year"]) in d["citation"]
        # the venue the first page prints ("Proceedings of ... (RecSys 2019)") makes it @inproceedings
        assert d["bibtex"].startswith("@inproceedings{") and f"year = {{{kept['year']}}}" in d["bibtex"]
        assert "booktitle = {Proceedings of the " in d["bibtex"]
        assert kept["authors"].split(",")[0] in d["citation"]
    gone = client.get(f"/api/v1/papers/{missing['paper_id']}").json()
    assert gone["pdf_url"] is None
    fid = gone["figures"][0]["figure_id"]
    d = client.get(f"/api/v1/figures/{fid}").json()
    assert d["pdf_url"] is None and d["hires_url"] is None and d["citation"]
    assert d["bibtex"].startswith("@misc{")  # no PDF kept: no page to read the venue from
    assert_problem(client.get(f"/api/v1/papers/{missing['paper_id']}/pdf"), 404, "not kept")
    assert_problem(client.get(f"/api/v1/figures/{fid}/hires"), 404, "not kept")
    assert_problem(client.get("/api/v1/papers/999999/pdf"), 404)


def test_hires_crop_is_sharper_than_the_stored_crop(client, papers):
    fid = client.get(f"/api/v1/papers/{papers[0]['paper_id']}").json()["figures"][0]["figure_id"]
    d = client.get(f"/api/v1/figures/{fid}").json()
    stored = Image.open(io.BytesIO(client.get(d["image_url"]).content))
    r = client.get(d["hires_url"], params={"scale": 4})
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    hires = Image.open(io.BytesIO(r.content))
    # the region is the graphic without its caption (`region_bbox`, PDF points, inside `bbox`)
    # at 4 x 72 = 288 dpi, where the stored crop is the same graphic at 150 dpi
    x0, y0, x1, y1 = d["region_bbox"]
    bx0, by0, bx1, by1 = d["bbox"]
    assert bx0 <= x0 and by0 <= y0 and x1 <= bx1 and y1 <= by1 and (y1 - y0) < (by1 - by0)
    assert abs(hires.width - 4 * (x1 - x0)) <= 2 and abs(hires.height - 4 * (y1 - y0)) <= 2
    assert hires.width > 1.7 * stored.width and hires.height > 1.7 * stored.height
    assert client.get(d["hires_url"], params={"scale": 9}).status_code == 422


def test_deleting_a_paper_removes_its_pdf(sample, tmp_path):
    data = copy_data(sample, tmp_path / "data")
    settings = Settings(data_dir=data, database_url="", broker_url="")
    attach_pdfs(settings, [sample.parent / "pdfs"])
    with make_client(data, auto_index=False) as c:
        p = c.get("/api/v1/papers").json()["items"][0]
        from app.db.session import session_scope
        from app.db.schema import Paper

        with session_scope(settings.db_url) as s:
            sha = s.get(Paper, p["paper_id"]).sha256
        assert stored_pdf(data, sha) is not None
        assert c.delete(f"/api/v1/admin/papers/{p['paper_id']}", headers=AUTH).status_code == 200
        assert stored_pdf(data, sha) is None


def test_a_figure_found_by_a_named_type_says_it_looks_like_that_type(client):
    """A query naming a figure type finds figures whose text does not say it; each such result says
    it looks like the named type, and that type is one the figure shows (not merely its dominant
    type, which may be another)."""
    items = search(client, q="line chart", k=20)["items"]
    found = [i for i in items if "looks like a line chart" in i["reasons"]]
    assert found
    assert all("line_chart" in [t["type"] for t in i["figure_types"]] for i in found)
    assert not any(r.startswith("same kind of figure") for i in items for r in i["reasons"])
    # every result showing the type says so, less surely ("may show") below even odds; the others claim nothing
    for i in items:
        score = {t["type"]: t["score"] for t in i["figure_types"]}.get("line_chart")
        by_type = [r for r in i["reasons"] if r.endswith("a line chart")]
        if score is None:
            assert not by_type, i
        else:
            assert by_type == ["looks like a line chart" if score >= 0.5 else "may show a line chart"], i


def test_hires_renders_are_cached_by_rounded_scale_and_refused_when_the_pool_is_full(client, papers):
    import threading

    fid = client.get(f"/api/v1/papers/{papers[0]['paper_id']}").json()["figures"][0]["figure_id"]
    heavy = client.app.state.heavy
    before = heavy.computed
    first = client.get(f"/api/v1/figures/{fid}/hires", params={"scale": 2.9})
    again = client.get(f"/api/v1/figures/{fid}/hires", params={"scale": 3.1})
    assert first.status_code == again.status_code == 200 and first.content == again.content
    assert heavy.computed == before + 1  # one render at the rounded scale, the second answer from the cache
    assert ("hires", fid, 3.0) in heavy._cache
    gate = threading.Event()
    held = [threading.Thread(target=heavy.run, args=(gate.wait, 10)) for _ in range(heavy.workers + heavy.queue)]
    for t in held:
        t.start()
    try:
        deadline = time.time() + 5
        busy = client.get(f"/api/v1/figures/{fid}/hires", params={"scale": 7})
        while busy.status_code != 429 and time.time() < deadline:
            busy = client.get(f"/api/v1/figures/{fid}/hires", params={"scale": 7})
        assert busy.status_code == 429 and busy.headers["Retry-After"].isdigit(), busy.text
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").status_code == 200  # never waits on the render pool
    finally:
        gate.set()
        for t in held:
            t.join(10)
    assert client.get(f"/api/v1/figures/{fid}/hires", params={"scale": 7}).status_code == 200


def test_papers_list_searches_sorts_and_shows_central_figures(client):
    """The paper list finds papers by a word of their title or an author's name, sorts by year,
    title, number of figures or the last ingested first, and names each paper's central figure with its thumbnail."""
    every = client.get("/api/v1/papers", params={"limit": 100}).json()["items"]
    assert every and all(p["central_figure"] for p in every if p["n_figures"])
    for p in every:
        if p["n_figures"]:
            detail = client.get(f"/api/v1/papers/{p['paper_id']}").json()
            first = next(f for f in detail["figures"] if f["kind"] == "figure")
            assert p["central_figure"]["figure_id"] == first["figure_id"]  # the paper page's first figure
            assert client.get(p["central_figure"]["thumbnail_url"]).status_code == 200
    by_year = client.get("/api/v1/papers", params={"sort": "year"}).json()["items"]
    years = [p["year"] for p in by_year if p["year"] is not None]
    assert years == sorted(years, reverse=True)
    by_title = [p["title"].lower() for p in client.get("/api/v1/papers", params={"sort": "title"}).json()["items"]]
    assert by_title == sorted(by_title)
    by_figures = [p["n_figures"] for p in client.get("/api/v1/papers", params={"sort": "figures"}).json()["items"]]
    assert by_figures == sorted(by_figures, reverse=True)
    recent = [p["paper_id"] for p in client.get("/api/v1/papers", params={"sort": "recent"}).json()["items"]]
    assert recent == sorted((p["paper_id"] for p in every), reverse=True)  # the last ingested first
    target = every[-1]
    word = max(target["title"].split(), key=len)
    found = client.get("/api/v1/papers", params={"q": word.upper()}).json()
    assert target["paper_id"] in [p["paper_id"] for p in found["items"]]
    assert all(word.lower() in (p["title"] + " " + p["authors"]).lower() for p in found["items"])
    surname = target["authors"].split(",")[0].split()[-1]
    assert target["paper_id"] in [p["paper_id"] for p in client.get("/api/v1/papers", params={"q": surname}).json()["items"]]
    none = client.get("/api/v1/papers", params={"q": "zzqx 100%_"}).json()
    assert none["total"] == 0 and none["items"] == []
    assert client.get("/api/v1/papers", params={"sort": "colour"}).status_code == 422
