"""REST API tests (FastAPI TestClient) over a small generated collection: every endpoint, with
its error cases (problem details, 401/403, 404, 413, 415, 422, 501, pagination bounds)."""
from __future__ import annotations

import io
import re
import shutil
import time
import zipfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.api.main import create_app
from app.settings import AdminTokenError, Settings
from app.vision.vocabulary import TYPES

TOKEN = "test-admin-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PROBLEM = "application/problem+json"

_SAMPLE: dict[str, Path] = {}


def build_sample_data(root: Path) -> Path:
    """A data dir with 4 generated papers, ingested and indexed with MiniLM (built once per
    session; callers copy it before writing). Also used by the browser test."""
    if "data" in _SAMPLE and _SAMPLE["data"].exists():
        return _SAMPLE["data"]
    from app.demo.generate import generate_collection
    from app.pipeline.ingest_jobs import prepare_job, run_job_embedded, summarise

    pdfs = generate_collection(root / "pdfs", n_papers=4, seed=2)
    settings = Settings(data_dir=root / "data", database_url="", broker_url="", auto_index=True)
    job = prepare_job([root / "pdfs"], settings)
    run_job_embedded(settings, job, workers=2)
    assert summarise(settings, job).counts["ok"] == len(pdfs)
    _SAMPLE["data"] = settings.data_dir
    return settings.data_dir


def extra_pdf(root: Path) -> Path:
    """One more generated paper (not in the sample collection), for upload tests."""
    if "extra" not in _SAMPLE:
        from app.demo.generate import generate_collection

        _SAMPLE["extra"] = generate_collection(root / "extra", n_papers=1, seed=7)[0]
    return _SAMPLE["extra"]


def generated_pdf(root: Path, seed: int) -> Path:
    """One more generated paper of its own (`seed`), in `root`."""
    from app.demo.generate import generate_collection

    return generate_collection(root / f"generated-{seed}", n_papers=1, seed=seed)[0]


def copy_data(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def make_client(data_dir: Path, **overrides) -> TestClient:
    settings = Settings(data_dir=data_dir, database_url="", broker_url="", admin_token=TOKEN, **overrides)
    return TestClient(create_app(settings))


def wait_ready(client: TestClient, encoder: bool = True) -> None:
    holder = client.app.state.engine_holder
    holder.refresh(block=True)
    if encoder:
        assert holder.wait_encoder(120), holder.encoder_state


def assert_problem(r, status: int, *words: str) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith(PROBLEM)
    body = r.json()
    assert body["status"] == status and body["title"] and body["detail"]
    for w in words:
        assert w.lower() in body["detail"].lower(), body["detail"]
    return body


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    return build_sample_data(tmp_path_factory.mktemp("api-sample"))


def served_copy(sample, tmp_path_factory, name: str):
    """A client of a server over a fresh copy of the sample collection, once it is ready."""
    data = copy_data(sample, tmp_path_factory.mktemp(name) / "data")
    with make_client(data) as c:
        wait_ready(c)
        yield c


@pytest.fixture(scope="module")
def client(sample, tmp_path_factory):
    """Read-only client over a copy of the sample collection."""
    yield from served_copy(sample, tmp_path_factory, "api-ro")


@pytest.fixture(scope="module")
def ids(client) -> dict:
    papers = client.get("/api/v1/papers").json()["items"]
    figs = client.get("/api/v1/figures?limit=100").json()["items"]
    return {"papers": [p["paper_id"] for p in papers], "figures": [f["figure_id"] for f in figs]}


# ------------------------------------------------------------------ service endpoints
def test_healthz_readyz_info(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    r = client.get("/readyz").json()
    assert r["status"] == "ready" and r["database"] == "ok"
    assert r["index"]["loaded"] and r["index"]["n_figures"] == 18 and r["index"]["has_vectors"]
    assert r["encoder"] == "ready"
    info = client.get("/api/v1/info").json()
    assert info["image_queries"] is True  # every index holds visual fingerprints
    assert info["max_page_size"] == 100 and "application/pdf" in info["upload_types"]
    models = {m["name"]: m for m in info["models"]}
    assert models["figure-types"]["source"] == "shipped" and models["figure-types"]["version"]
    assert all("path" not in m and "command" not in m for m in info["models"])  # no server paths in the API


def test_metrics(client, ids):
    client.get("/api/v1/search?q=accuracy")
    client.get(f"/api/v1/figures/{ids['figures'][0]}/similar")
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    from prometheus_client.parser import text_string_to_metric_families

    text = r.text
    assert '# TYPE figsearch_http_request_duration_seconds histogram' in text
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(text) for s in f.samples}  # label order is free
    assert samples[("figsearch_http_request_duration_seconds_bucket",
                    (("le", "0.05"), ("method", "GET"), ("route", "/api/v1/search")))] >= 0
    assert 'route="/api/v1/figures/{figure_id}/similar"' in text
    assert samples[("figsearch_http_requests_total", (("method", "GET"), ("route", "/api/v1/search"), ("status", "2xx")))] >= 1
    assert samples[("figsearch_ingest_files", (("status", "ok"),))] == 4
    assert samples[("figsearch_index_figures", ())] == 18
    assert samples[("figsearch_papers", (("status", "ok"),))] == 4


def test_metrics_registry_is_prometheus_client():
    """/metrics comes from prometheus_client (its parser reads it back); a failing scrape-time
    gauge leaves only that gauge empty; each app has its own registry."""
    from prometheus_client.parser import text_string_to_metric_families

    from app.api.metrics import Registry

    def broken():
        raise RuntimeError("database down")

    reg, other = Registry(), Registry()
    reg.latency.observe(0.004, "GET", "/api/v1/search")
    reg.requests.inc("GET", "/api/v1/search", "200")
    reg.gauge("figsearch_papers", "Papers.", lambda: [({"status": "ok"}, 3)])
    reg.gauge("figsearch_broken", "Fails.", broken)
    fams = {f.name: f for f in text_string_to_metric_families(reg.render())}
    assert fams["figsearch_http_requests"].type == "counter"
    assert [(s.name, s.labels, s.value) for s in fams["figsearch_http_requests"].samples] == \
        [("figsearch_http_requests_total", {"method": "GET", "route": "/api/v1/search", "status": "200"}, 1.0)]
    buckets = {s.labels["le"]: s.value for s in fams["figsearch_http_request_duration_seconds"].samples
               if s.name.endswith("_bucket")}
    assert buckets["0.0025"] == 0 and buckets["0.005"] == 1 and buckets["+Inf"] == 1
    assert [(s.labels, s.value) for s in fams["figsearch_papers"].samples] == [({"status": "ok"}, 3.0)]
    assert fams["figsearch_broken"].samples == []
    assert not any(n.endswith("_created") for f in fams.values() for n in (s.name for s in f.samples))
    assert "figsearch_http_requests_total{" not in other.render()


def test_openapi_and_docs(client):
    spec = client.get("/api/v1/openapi.json").json()
    paths = set(spec["paths"])
    for p in ["/api/v1/search", "/api/v1/search/by-image", "/api/v1/figures/{figure_id}",
              "/api/v1/figures/{figure_id}/image", "/api/v1/figures/{figure_id}/thumbnail",
              "/api/v1/figures/{figure_id}/similar", "/api/v1/papers", "/api/v1/papers/{paper_id}",
              "/api/v1/admin/collections", "/api/v1/admin/jobs/{job_id}", "/api/v1/admin/papers/{paper_id}",
              "/api/v1/admin/reindex", "/healthz", "/readyz", "/metrics"]:
        assert p in paths, p
    assert "ScoredFigure" in spec["components"]["schemas"] and "Problem" in spec["components"]["schemas"]
    assert client.get("/docs").status_code == 200


def test_unknown_api_path_is_problem(client):
    assert_problem(client.get("/api/v1/nope"), 404, "no such endpoint")


def test_frontend_served(client):
    r = client.get("/")
    assert r.status_code == 200 and "figsearch" in r.text and "/js/app.js" in r.text
    assert client.get("/js/app.js").status_code == 200
    assert client.get("/css/style.css").status_code == 200


# ------------------------------------------------------------------ search
def test_search_results_and_breakdown(client):
    r = client.get("/api/v1/search", params={"q": "top-1 accuracy", "k": 5})
    assert r.status_code == 200
    body = r.json()
    assert body["reranked"] is True and body["index_version"] and len(body["items"]) == 5
    first = body["items"][0]
    for key in ("figure_id", "paper_id", "caption", "paper_title", "paper_year", "thumbnail_url", "image_url",
                "score", "lexical_score", "embedding_score", "matched_terms", "rank"):
        assert key in first
    assert first["rank"] == 1 and "accuracy" in first["matched_terms"]  # surface word, not the stem
    assert first["thumbnail_url"] == f"/api/v1/figures/{first['figure_id']}/thumbnail"
    assert [h["score"] for h in body["items"]] == sorted((h["score"] for h in body["items"]), reverse=True)


def test_caption_highlights_mark_every_word_sharing_a_stem_with_the_query(client):
    # "accuracies" marks "accuracy" in the captions, as the snippet's highlights are found
    items = client.get("/api/v1/search", params={"q": "accuracies", "k": 10, "rerank": "false"}).json()["items"]
    with_word = [h for h in items if "accuracy" in h["caption"].lower()]
    assert with_word
    for h in with_word:
        marked = [h["caption"][a:b].lower() for a, b in h["caption_highlights"]]
        assert marked and set(marked) == {"accuracy"}, (h["caption"], marked)
    fid = items[0]["figure_id"]  # related figures are not a text query: nothing is marked
    related = client.get(f"/api/v1/figures/{fid}/similar", params={"k": 3}).json()["items"]
    assert related and all(h["caption_highlights"] == [] for h in related)


def test_search_pagination(client):
    a = client.get("/api/v1/search", params={"q": "accuracy", "k": 3, "offset": 0}).json()
    b = client.get("/api/v1/search", params={"q": "accuracy", "k": 3, "offset": 3}).json()
    both = client.get("/api/v1/search", params={"q": "accuracy", "k": 6}).json()
    assert a["has_more"] is True
    assert [h["figure_id"] for h in a["items"] + b["items"]] == [h["figure_id"] for h in both["items"]]
    assert [h["rank"] for h in b["items"]] == [4, 5, 6]
    end = client.get("/api/v1/search", params={"q": "accuracy", "k": 100}).json()
    assert end["has_more"] is False


def test_search_shows_a_few_figures_of_each_paper_first_and_says_which_have_more(client):
    params = {"q": "model", "k": 12, "rerank": "false"}
    free = client.get("/api/v1/search", params={**params, "per_paper": 0}).json()
    assert free["per_paper"] == 0 and not any(h["more_from_paper"] for h in free["items"])
    one = client.get("/api/v1/search", params={**params, "per_paper": 1}).json()
    assert one["per_paper"] == 1 and one["per_paper_block"] == 10
    papers = [h["paper_id"] for h in one["items"]]
    n = len(set(papers))
    assert n >= 2 and len(set(papers[:n])) == n  # one figure of each paper before a second of any
    assert sorted(h["figure_id"] for h in one["items"]) == sorted(h["figure_id"] for h in free["items"])
    # the papers said to have more are those with a figure moved further down
    was = {h["figure_id"]: h["rank"] for h in free["items"]}
    moved = {h["paper_id"] for h in one["items"] if h["rank"] > was[h["figure_id"]]}
    assert moved and {h["paper_id"] for h in one["items"] if h["more_from_paper"]} == moved
    # the same search within one of those papers: every match of it, none said to have more
    pid = sorted(moved)[0]
    within = client.get("/api/v1/search", params={**params, "per_paper": 1, "paper_id": pid}).json()["items"]
    assert {h["paper_id"] for h in within} == {pid} and not any(h["more_from_paper"] for h in within)
    assert len(within) >= papers.count(pid)
    served = client.get("/api/v1/search", params=params).json()
    assert served["per_paper"] == client.app.state.engine_holder.engine.ranking.text_per_paper > 0
    assert client.get("/api/v1/search", params={**params, "per_paper": -1}).status_code == 422


def test_search_lexical_only_and_no_match(client):
    r = client.get("/api/v1/search", params={"q": "heatmap", "rerank": "false"}).json()
    assert r["reranked"] is False and r["items"] and all(h["embedding_score"] is None for h in r["items"])
    # nothing lexical: dense fallback still answers (nearest in meaning), never a 500
    r = client.get("/api/v1/search", params={"q": "zzqx"}).json()
    assert isinstance(r["items"], list)
    r = client.get("/api/v1/search", params={"q": "zzqx", "rerank": "false"}).json()
    assert r["items"] == [] and r["message"]


def test_no_match_while_the_meaning_search_loads_says_so(client):
    """A query that shares no word with any figure, sent while the query encoder is still loading
    (a server just started): only words were searched, so the answer does not claim that nothing
    is close in meaning, and says to try again."""
    holder = client.app.state.engine_holder
    encoder, holder._encoder = holder._encoder, None  # as before the background load ends
    try:
        r = client.get("/api/v1/search", params={"q": "zzqx"}).json()
    finally:
        holder._encoder = encoder
    assert r["items"] == [] and r["reranked"] is False
    assert "still loading" in r["message"] and "close in meaning" not in r["message"], r
    r = client.get("/api/v1/search", params={"q": "zzqx", "rerank": "false"}).json()
    assert "still loading" not in r["message"]  # words alone were asked for


def test_a_query_of_common_words_alone_says_nothing_was_searched(client):
    """"the of and" or "a": no word the search reads. The answer says so and what to search
    for, instead of "no figure shares these words", which other or fewer words would mend."""
    for q in ("the of and", "a", "what is this"):
        r = client.get("/api/v1/search", params={"q": q}).json()
        assert r["items"] == [] and r["message"].startswith(f"the search reads no word of “{q}”"), r
        assert "name what the figure shows" in r["message"]
        assert r["no_word_read"] is True  # what a client reads, rather than the message's wording
        # the same under filters: no filter would make such a query read a word
        r = client.get("/api/v1/search", params={"q": q, "kind": "table", "year_from": 3000}).json()
        assert r["items"] == [] and r["no_word_read"] is True, r
    r = client.get("/api/v1/search", params={"q": "the heatmap"}).json()
    assert r["items"] and not (r["message"] or "").startswith("the search reads no word")
    assert r["no_word_read"] is False
    # a figure type's name is searched by type, though the words' index leaves it out
    r = client.get("/api/v1/search", params={"q": "table"}).json()
    assert not (r["message"] or "").startswith("the search reads no word") and r["no_word_read"] is False
    # words read that match nothing are no match, not an unread query
    r = client.get("/api/v1/search", params={"q": "zzqx", "rerank": "false"}).json()
    assert r["items"] == [] and r["message"] and r["no_word_read"] is False


@pytest.mark.parametrize("params,word", [
    ({}, "q"), ({"q": ""}, "q"), ({"q": "   "}, "q"), ({"q": "x", "k": 0}, "k"),
    ({"q": "x", "k": 101}, "at most 100"), ({"q": "x", "k": "ten"}, "k"),
    ({"q": "x", "offset": -1}, "offset"), ({"q": "x", "offset": 5000}, "offset"), ({"q": "x" * 600}, "q"),
])
def test_search_bad_params(client, params, word):
    assert_problem(client.get("/api/v1/search", params=params), 422, word)


# ------------------------------------------------------------------ figures
def test_list_figures(client):
    r = client.get("/api/v1/figures", params={"limit": 5}).json()
    assert r["total"] == 18 and len(r["items"]) == 5
    r2 = client.get("/api/v1/figures", params={"limit": 5, "offset": 15}).json()
    assert len(r2["items"]) == 3
    tables = client.get("/api/v1/figures", params={"kind": "table"}).json()
    assert tables["total"] >= 1 and all(f["kind"] == "table" for f in tables["items"])
    assert_problem(client.get("/api/v1/figures", params={"limit": 0}), 422, "limit")
    assert_problem(client.get("/api/v1/figures", params={"limit": 500}), 422, "at most 100")
    assert_problem(client.get("/api/v1/figures", params={"kind": "video"}), 422, "kind")


def test_get_figure(client, ids):
    fid = ids["figures"][-1]
    f = client.get(f"/api/v1/figures/{fid}").json()
    assert f["figure_id"] == fid and f["caption"] and f["paper"]["title"] and f["in_index"] is True
    assert f["mentions"] and f["mentions"][0]["sentence"]
    assert len(f["bbox"]) == 4
    assert_problem(client.get("/api/v1/figures/999999"), 404, "not found")
    assert_problem(client.get("/api/v1/figures/abc"), 422, "figure_id")


def test_figure_image_and_thumbnail(client, ids):
    fid = ids["figures"][0]
    for kind in ("image", "thumbnail"):
        r = client.get(f"/api/v1/figures/{fid}/{kind}")
        assert r.status_code == 200 and r.headers["content-type"] == "image/png"
        assert r.content.startswith(b"\x89PNG") and "max-age" in r.headers["cache-control"]
        assert_problem(client.get(f"/api/v1/figures/999999/{kind}"), 404)
    big = client.get(f"/api/v1/figures/{fid}/image").content
    small = client.get(f"/api/v1/figures/{fid}/thumbnail").content
    assert len(small) < len(big)


def test_similar(client, ids):
    fid = ids["figures"][-1]
    r = client.get(f"/api/v1/figures/{fid}/similar", params={"k": 5}).json()
    assert r["mode"] == "figure" and r["figure_id"] == fid and len(r["items"]) == 5
    assert fid not in [h["figure_id"] for h in r["items"]]
    hit = r["items"][0]
    assert hit["lexical_score"] > 0 and hit["embedding_score"] is not None and hit["matched_terms"]
    # matched terms are shown as words of the figure texts (caption or mention sentences), not stems
    words = set()
    for f in (fid, *[h["figure_id"] for h in r["items"]]):
        d = client.get(f"/api/v1/figures/{f}").json()
        text = " ".join([d["caption"]] + [" ".join(str(v) for v in m.values()) for m in d.get("mentions", [])])
        words |= set(re.findall(r"[^\W_]+", text.lower()))
    shown = [t for h in r["items"] for t in h["matched_terms"]]
    assert shown and set(shown) <= words, set(shown) - words
    assert_problem(client.get("/api/v1/figures/999999/similar"), 404, "not found")
    assert_problem(client.get(f"/api/v1/figures/{fid}/similar", params={"k": 0}), 422)
    assert_problem(client.get(f"/api/v1/figures/{fid}/similar", params={"k": 1001}), 422)


def test_figures_of_linked_papers(client):
    """scope=linked_papers ranks the figures of the papers that cite or are cited by the figure's
    paper (and only those); a paper without links says so."""
    papers = client.get("/api/v1/papers").json()["items"]
    linked = {}
    for p in papers:
        d = client.get(f"/api/v1/papers/{p['paper_id']}").json()
        linked[p["paper_id"]] = {c["paper_id"] for c in d["cites"] + d["cited_by"]}
    pid = next(p for p, ids in linked.items() if ids)
    fid = next(f["figure_id"] for f in client.get(f"/api/v1/papers/{pid}").json()["figures"] if f["kind"] == "figure")
    r = client.get(f"/api/v1/figures/{fid}/similar", params={"scope": "linked_papers", "k": 50}).json()
    assert r["scope"] == "linked_papers" and r["items"]
    assert {i["paper_id"] for i in r["items"]} <= linked[pid] and all(i["kind"] == "figure" for i in r["items"])
    every = [f for q in linked[pid] for f in client.get(f"/api/v1/papers/{q}").json()["figures"] if f["kind"] == "figure"]
    assert len(r["items"]) == len(every)  # every figure of the linked papers, ranked
    lonely = [p for p, ids in linked.items() if not ids]
    if lonely:
        f = client.get(f"/api/v1/papers/{lonely[0]}").json()["figures"][0]["figure_id"]
        r = client.get(f"/api/v1/figures/{f}/similar", params={"scope": "linked_papers"}).json()
        assert r["items"] == [] and "cites" in r["message"]


def test_similar_of_table_gives_tables(client):
    """Tables are indexed: a table's related items are tables (the sample's only table has none)."""
    table = client.get("/api/v1/figures", params={"kind": "table"}).json()["items"][0]
    for scope in ("other_papers", "same_paper", "all"):
        r = client.get(f"/api/v1/figures/{table['figure_id']}/similar", params={"scope": scope}).json()
        assert all(i["kind"] == "table" for i in r["items"])
        if not r["items"]:
            assert "tables" in r["message"]


# ------------------------------------------------------------------ search by image
def _png(size=(8, 8)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, "white").save(buf, "PNG")
    return buf.getvalue()


def test_by_image_without_caption_finds_a_copy_of_a_figure(client):
    """No trained model: the index's visual fingerprints answer; a rescaled JPEG copy of a
    collection figure finds that figure first."""
    from PIL import Image

    fid = client.get("/api/v1/figures", params={"limit": 1}).json()["items"][0]["figure_id"]
    original = Image.open(io.BytesIO(client.get(f"/api/v1/figures/{fid}/image").content)).convert("RGB")
    buf = io.BytesIO()
    original.resize((original.width * 2 // 3, original.height * 2 // 3)).save(buf, "JPEG", quality=70)
    r = client.post("/api/v1/search/by-image", files={"image": ("f.jpg", buf.getvalue(), "image/jpeg")},
                    params={"k": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["mode"] == "image" and body["items"][0]["figure_id"] == fid
    assert "same picture" in body["items"][0]["reasons"]  # a rescaled JPEG copy of that figure
    # the types the upload looks like, dominant first; "same kind of figure" refers to the first
    looks = [t["type"] for t in body["query_types"]]
    assert looks and all(t in TYPES for t in looks)
    scores = [t["score"] for t in body["query_types"]]
    assert scores == sorted(scores, reverse=True)
    for item in body["items"]:
        if any(r.startswith("same kind of figure") for r in item["reasons"]):
            assert item["figure_type"] == looks[0]


def test_by_image_of_a_table_searches_the_tables(client):
    """A picture of a table is searched among the tables (the figure types call most tables
    "text" by their pixels; the tables nearest its picture tell it): a rescaled JPEG copy of a
    collection table finds that table first, with tables after it, and the answer says so
    (`kind`); `kind=figure` searches the figures instead, and a figure's picture stays among the
    figures."""
    from PIL import Image

    tables = client.get("/api/v1/figures", params={"kind": "table", "limit": 100}).json()["items"]
    assert tables
    for table in tables:
        original = Image.open(io.BytesIO(client.get(f"/api/v1/figures/{table['figure_id']}/image").content)).convert("RGB")
        buf = io.BytesIO()
        original.resize((original.width * 3 // 4, original.height * 3 // 4)).save(buf, "JPEG", quality=75)
        upload = {"image": ("table.jpg", buf.getvalue(), "image/jpeg")}
        body = client.post("/api/v1/search/by-image", files=upload, params={"k": 4}).json()
        assert body["kind"] == "table", (table["figure_id"], body)
        assert body["items"][0]["figure_id"] == table["figure_id"] and "same picture" in body["items"][0]["reasons"]
        assert {x["kind"] for x in body["items"]} == {"table"}
        among_figures = client.post("/api/v1/search/by-image", files=upload, params={"k": 4, "kind": "figure"}).json()
        assert among_figures["kind"] == "figure" and among_figures["items"]
        assert {x["kind"] for x in among_figures["items"]} == {"figure"}
    fid = client.get("/api/v1/figures", params={"limit": 1}).json()["items"][0]["figure_id"]
    picture = client.get(f"/api/v1/figures/{fid}/image").content
    body = client.post("/api/v1/search/by-image", files={"image": ("f.png", picture, "image/png")}).json()
    assert body["kind"] == "figure" and {x["kind"] for x in body["items"]} == {"figure"}
    r = client.post("/api/v1/search/by-image", files={"image": ("f.png", picture, "image/png")}, params={"kind": "both"})
    assert_problem(r, 422, "kind")


def test_by_image_with_a_tables_caption_searches_the_tables(client):
    """A picture sent with a caption labelled as a table's ("Table 1: ...") is searched by that
    text among the tables (`kind`), as a table's picture is; `kind=figure` searches the figures."""
    table = client.get("/api/v1/figures", params={"kind": "table", "limit": 1}).json()["items"][0]
    upload = {"image": ("t.png", _png(), "image/png")}
    body = client.post("/api/v1/search/by-image", files=upload, data={"caption": table["caption"]}, params={"k": 3}).json()
    assert body["mode"] == "caption" and body["kind"] == "table"
    assert body["items"] and {x["kind"] for x in body["items"]} == {"table"}
    assert body["items"][0]["figure_id"] == table["figure_id"]
    body = client.post("/api/v1/search/by-image", files=upload, data={"caption": table["caption"]},
                       params={"k": 3, "kind": "figure"}).json()
    assert body["kind"] == "figure" and {x["kind"] for x in body["items"]} <= {"figure"}
    body = client.post("/api/v1/search/by-image", files=upload, data={"caption": "Heatmap of attention maps"}).json()
    assert body["kind"] == "figure"


def test_by_image_with_caption_searches_text(client):
    r = client.post("/api/v1/search/by-image", files={"image": ("f.png", _png(), "image/png")},
                    data={"caption": "Heatmap of attention maps"}, params={"k": 4})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["mode"] == "caption" and body["query"] == "Heatmap of attention maps" and len(body["items"]) == 4
    same_shape = client.get("/api/v1/figures/1/similar").json()
    assert set(body) == set(same_shape)
    assert "heatmap" in body["items"][0]["caption"].lower()


def test_by_image_judges_an_untyped_file_by_its_bytes(client):
    """A PNG sent without a content type (Python requests given an open file) or as a generic one
    (curl for a file without an extension) is searched, not refused; other bytes so sent are not
    an image, and the answer says which types are accepted."""
    r = client.post("/api/v1/search/by-image", files={"image": ("figure", _png(), "application/octet-stream")},
                    data={"caption": "Heatmap of attention maps"}, params={"k": 2})
    assert r.status_code == 200, r.text
    boundary = "figsearch-test-boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"image\"; filename=\"figure.png\"\r\n\r\n"
            ).encode() + _png() + f"\r\n--{boundary}--\r\n".encode()
    r = client.post("/api/v1/search/by-image", content=body, params={"k": 2},
                    headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert r.status_code == 200, r.text
    assert r.json()["mode"] == "image"
    r = client.post("/api/v1/search/by-image", files={"image": ("notes", b"hello", "application/octet-stream")})
    assert_problem(r, 415, "not a png or jpeg")
    assert "image/png" in r.json()["detail"]


def test_by_image_errors(client):
    r = client.post("/api/v1/search/by-image", files={"image": ("f.txt", b"hello", "text/plain")})
    assert_problem(r, 415, "unsupported image type")
    r = client.post("/api/v1/search/by-image", files={"image": ("f.png", b"not really a png", "image/png")},
                    data={"caption": "x"})
    assert_problem(r, 415, "not a png or jpeg")
    assert_problem(client.post("/api/v1/search/by-image", data={"caption": "x"}), 422, "image")
    r = client.post("/api/v1/search/by-image", files={"image": ("f.png", _png(), "image/png")},
                    data={"caption": "x"}, params={"k": 500})
    assert_problem(r, 422, "at most")


def test_by_image_too_large(sample, tmp_path):
    data = copy_data(sample, tmp_path / "data")
    with make_client(data, max_image_mb=0.05, warm_encoder=False, search_rerank=False) as c:
        big = _png((1200, 1200)) + b"\0" * 200_000  # beyond the limit, under the framing margin
        r = c.post("/api/v1/search/by-image", files={"image": ("f.png", big, "image/png")}, data={"caption": "x"})
        assert_problem(r, 413, "too large")
        huge = b"\x89PNG\r\n\x1a\n" + b"\0" * (2 << 20)  # beyond limit + margin: refused by Content-Length
        r = c.post("/api/v1/search/by-image", files={"image": ("f.png", huge, "image/png")})
        assert_problem(r, 413, "too large")


# ------------------------------------------------------------------ papers
def test_list_papers(client):
    r = client.get("/api/v1/papers").json()
    assert r["total"] == 4 and len(r["items"]) == 4
    assert all(p["status"] == "ok" and p["title"] and p["n_figures"] > 0 for p in r["items"])
    for p in r["items"]:  # the list counts figures and tables as the paper's page does
        kinds = [f["kind"] for f in client.get(f"/api/v1/papers/{p['paper_id']}").json()["figures"]]
        assert (p["n_figures"], p["n_tables"]) == (kinds.count("figure"), kinds.count("table"))
    assert any(p["n_tables"] for p in r["items"])
    page = client.get("/api/v1/papers", params={"limit": 2, "offset": 2}).json()
    assert [p["paper_id"] for p in page["items"]] == [p["paper_id"] for p in r["items"][2:]]
    assert client.get("/api/v1/papers", params={"offset": 100}).json()["items"] == []
    assert client.get("/api/v1/papers", params={"status": "failed"}).json()["total"] == 0
    assert_problem(client.get("/api/v1/papers", params={"limit": 0}), 422, "limit")
    assert_problem(client.get("/api/v1/papers", params={"limit": 101}), 422, "at most 100")
    assert_problem(client.get("/api/v1/papers", params={"offset": -3}), 422, "offset")
    assert_problem(client.get("/api/v1/papers", params={"status": "weird"}), 422, "status")


def test_papers_list_leaves_out_files_that_are_not_papers(sample, tmp_path):
    """Files that failed (not a PDF, unreadable) are stored for the admin's job view but are not
    papers of the collection: the list and its total leave them out unless asked by status."""
    from app.pipeline.ingest_jobs import prepare_job, run_job_embedded
    from tests import badfiles

    data = copy_data(sample, tmp_path / "data")
    bad = tmp_path / "bad"
    bad.mkdir()
    files = [badfiles.random_bytes(bad), badfiles.html_named_pdf(bad)]
    settings = Settings(data_dir=data, database_url="", broker_url="")
    job = prepare_job([bad], settings)
    run_job_embedded(settings, job, workers=1)
    with make_client(data, warm_encoder=False) as c:
        failed = c.get("/api/v1/papers", params={"status": "failed"}).json()
        assert failed["total"] == len(files)  # stored, so the check below can fail
        for sort in ("id", "recent", "title", "figures"):
            listed = c.get("/api/v1/papers", params={"sort": sort, "limit": 100}).json()
            assert listed["total"] == 4 and all(p["status"] == "ok" for p in listed["items"]), listed
        assert c.get("/api/v1/papers", params={"q": "page"}).json()["total"] == 0
        names = {f["name"]: f["status"] for f in c.get(f"/api/v1/admin/jobs/{job}", headers=AUTH).json()["files"]}
        assert names == {p.name: "failed" for p in files}  # the admin still sees them


def test_get_paper_with_figures_and_citations(client, ids):
    details = [client.get(f"/api/v1/papers/{pid}").json() for pid in ids["papers"]]
    for d in details:
        kinds = [f["kind"] for f in d["figures"]]
        assert kinds == sorted(kinds, key=lambda k: k != "figure")  # figures before tables
        ranks = [f["central_rank"] for f in d["figures"] if f["kind"] == "figure"]
        assert ranks == sorted(ranks) and ranks[0] == 1  # scored after ingest: central figure first
        assert d["abstract"] and d["authors"]
    # citation links are symmetric across the two lists
    cites = {(d["paper_id"], c["paper_id"]) for d in details for c in d["cites"]}
    cited_by = {(c["paper_id"], d["paper_id"]) for d in details for c in d["cited_by"]}
    assert cites and cites == cited_by
    assert_problem(client.get("/api/v1/papers/424242"), 404, "not found")
    assert_problem(client.get("/api/v1/papers/x"), 422)


# ------------------------------------------------------------------ admin: auth and validation
@pytest.mark.parametrize("method,path", [
    ("post", "/api/v1/admin/collections"), ("get", "/api/v1/admin/jobs"), ("get", "/api/v1/admin/jobs/abc"),
    ("delete", "/api/v1/admin/papers/1"), ("post", "/api/v1/admin/reindex"),
])
def test_admin_auth(client, method, path):
    r = getattr(client, method)(path)
    assert_problem(r, 401, "bearer")
    assert r.headers["www-authenticate"] == "Bearer"
    r = getattr(client, method)(path, headers={"Authorization": "Bearer wrong"})
    assert_problem(r, 403, "wrong admin token")
    r = getattr(client, method)(path, headers={"Authorization": f"Basic {TOKEN}"})
    assert r.status_code == 401


def test_admin_upload_validation(client):
    url = "/api/v1/admin/collections"
    assert_problem(client.post(url, headers=AUTH), 422, "files")
    r = client.post(url, headers=AUTH, files={"files": ("notes.txt", b"hello", "text/plain")})
    assert_problem(r, 415, "notes.txt")
    r = client.post(url, headers=AUTH, files={"files": ("x.png", _png(), "image/png")})
    assert_problem(r, 415, "image/png")
    r = client.post(url, headers=AUTH, data={"path": "/etc"})
    assert_problem(r, 403, "server-side paths are disabled")
    jobs = client.get("/api/v1/admin/jobs", headers=AUTH).json()["items"]
    r = client.post(url, headers=AUTH, files=[("files", ("empty.pdf", b"", "application/pdf")),
                                              ("files", ("blank.pdf", b"", "application/pdf"))])
    assert_problem(r, 400, "no PDF found (empty.pdf: empty file (0 bytes); blank.pdf: empty file (0 bytes))")
    assert client.get("/api/v1/admin/jobs", headers=AUTH).json()["items"] == jobs  # no job for nothing to read
    assert_problem(client.get("/api/v1/admin/jobs/doesnotexist", headers=AUTH), 404, "not found")
    assert_problem(client.delete("/api/v1/admin/papers/424242", headers=AUTH), 404, "not found")
    assert client.get("/api/v1/admin/jobs", headers=AUTH).json()["items"][0]["status"] == "done"


def test_job_files_same_in_api_and_cli(client):
    """The API job view and `figsearch jobs JOB` (table and --json) show the same relative file
    names and the same figure/table counts, which are those of each file's paper."""
    import json
    import os
    import subprocess
    import sys

    job_id = client.get("/api/v1/admin/jobs", headers=AUTH).json()["items"][0]["job_id"]
    api_files = client.get(f"/api/v1/admin/jobs/{job_id}", headers=AUTH).json()["files"]
    assert len(api_files) == 4
    for f in api_files:
        assert not f["name"].startswith("/") and f["name"].endswith(".pdf"), f["name"]
        paper = client.get(f"/api/v1/papers/{f['paper_id']}").json()
        kinds = [x["kind"] for x in paper["figures"]]
        assert (f["n_figures"], f["n_tables"]) == (kinds.count("figure"), kinds.count("table"))
    assert sum(f["n_tables"] for f in api_files) > 0  # the sample papers have tables

    data = client.app.state.settings.data_dir
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIGSEARCH_")}

    def cli(*args):
        r = subprocess.run([sys.executable, "-m", "app.cli", "jobs", *args, "--data-dir", str(data)],
                           capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[1], timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout

    lines = cli(job_id, "--json").splitlines()
    assert len(lines) == 1
    row = json.loads(lines[0])
    assert row["job_id"] == job_id and row["status"] == "done"
    keys = ("name", "status", "paper_id", "n_figures", "n_tables", "error", "error_kind", "retry_may_help")
    assert [{k: f[k] for k in keys} for f in row["files"]] == [{k: f[k] for k in keys} for f in api_files]
    table = cli(job_id).splitlines()
    assert table[0].startswith(f"job {job_id}")
    assert table[1].split() == ["FILE", "STATUS", "FIGURES", "TABLES", "KIND", "ERROR"]
    body = [l.split() for l in table[2:2 + len(api_files)]]
    assert body == [[f["name"], f["status"], str(f["n_figures"]), str(f["n_tables"])] for f in api_files]
    assert str(data) not in "\n".join(table) and "/tmp" not in "\n".join(table)
    listing = cli()
    assert job_id in listing and "{" not in listing
    assert json.loads(cli("--json").splitlines()[0])["job_id"] == job_id


def test_admin_upload_too_large(sample, tmp_path):
    data = copy_data(sample, tmp_path / "data")
    with make_client(data, max_upload_mb=0.5, warm_encoder=False) as c:
        body = b"%PDF-1.4\n" + b"0" * (700 * 1024)  # over the limit, under limit + framing margin
        r = c.post("/api/v1/admin/collections", headers=AUTH, files={"files": ("big.pdf", body, "application/pdf")})
        assert_problem(r, 413, "too large")
        body = b"%PDF-1.4\n" + b"0" * (2 << 20)  # refused from the Content-Length header
        r = c.post("/api/v1/admin/collections", headers=AUTH, files={"files": ("big.pdf", body, "application/pdf")})
        assert_problem(r, 413, "too large")
        assert not any((data / "uploads").glob("*/*")) if (data / "uploads").exists() else True


def test_server_path_ingest_when_enabled(sample, tmp_path):
    data = copy_data(sample, tmp_path / "data")
    with make_client(data, allow_server_paths=True, warm_encoder=False, auto_index=False) as c:
        r = c.post("/api/v1/admin/collections", headers=AUTH, data={"path": str(tmp_path / "missing")})
        assert_problem(r, 422, "no such file")
        empty = tmp_path / "empty"
        empty.mkdir()
        r = c.post("/api/v1/admin/collections", headers=AUTH, data={"path": str(empty)})
        assert_problem(r, 400, "no PDF found")


def test_an_empty_file_fails_in_its_job_and_the_other_files_go_on(admin_client):
    """An upload holding an empty file among others is a job: the empty file fails at once, for
    being empty (never the duplicate of another empty file: all have the same hash), and the job
    ends with the others."""
    files = [("files", (name, body, "application/pdf")) for name, body in
             (("empty.pdf", b""), ("also-empty.pdf", b""), ("notes.pdf", b"Minutes of the meeting\n"))]
    r = admin_client.post("/api/v1/admin/collections", headers=AUTH, files=files)
    assert r.status_code == 202, r.text
    job = wait_job(admin_client, r.json()["job_id"])
    rows = {f["name"]: (f["status"], f["error"], f["error_kind"]) for f in job["files"]}
    assert rows == {"empty.pdf": ("failed", "empty file (0 bytes)", "not_pdf"),
                    "also-empty.pdf": ("failed", "empty file (0 bytes)", "not_pdf"),
                    "notes.pdf": ("failed", "not a PDF (non-PDF content; no %PDF- header)", "not_pdf")}, rows
    assert (job["status"], job["done"], job["total"]) == ("done", 3, 3)


def wait_job(c: TestClient, job_id: str, timeout: float = 120) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        j = c.get(f"/api/v1/admin/jobs/{job_id}", headers=AUTH).json()
        if j["status"] in ("done", "failed"):
            return j
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} did not finish: {j}")


def wait_index(c: TestClient, pred, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    holder = c.app.state.engine_holder
    while time.time() < deadline:
        holder.refresh(block=True)
        if holder.engine is not None and pred(holder.engine):
            return
        time.sleep(0.3)
    raise AssertionError("the index did not change")


# ------------------------------------------------------------------ admin: the write path
@pytest.fixture(scope="module")
def admin_client(sample, tmp_path_factory):
    """Client for the write path, over its own copy of the sample collection."""
    yield from served_copy(sample, tmp_path_factory, "api-rw")


def test_upload_pdf_job_and_search(admin_client, tmp_path_factory):
    c = admin_client
    pdf = extra_pdf(tmp_path_factory.mktemp("extra"))
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as z:
        z.writestr("bundle/broken.pdf", b"this is not a pdf")
        z.writestr("readme.txt", b"ignored")
    files = [("files", (pdf.name, pdf.read_bytes(), "application/pdf")),
             ("files", ("bundle.zip", zbuf.getvalue(), "application/x-zip-compressed"))]
    r = c.post("/api/v1/admin/collections", headers=AUTH, files=files)
    assert r.status_code == 202, r.text
    acc = r.json()
    assert acc["total"] == 3 and acc["status_url"] == f"/api/v1/admin/jobs/{acc['job_id']}"
    job = wait_job(c, acc["job_id"])
    assert job["status"] == "done" and job["done"] == job["total"] == 3
    by_name = {f["name"]: f for f in job["files"]}
    assert by_name[pdf.name]["status"] == "ok" and by_name[pdf.name]["n_figures"] > 0
    broken = by_name["bundle.zip:bundle/broken.pdf"]
    assert broken["status"] == "failed" and "not a PDF" in broken["error"]
    readme = by_name["bundle.zip:readme.txt"]  # listed with its reason, never read
    assert readme["status"] == "skipped" and "not a PDF" in readme["error"]
    assert job["counts"] == {"ok": 1, "failed": 1, "skipped": 1}
    assert "/" not in broken["error"].replace("bundle/broken.pdf", "")  # no server paths
    settings = c.app.state.settings
    # the job is "done" when its last file is stored; linking, index refresh and the clean-up of
    # the uploaded files follow in the background
    up = settings.data_dir / "uploads" / acc["job_id"]
    deadline = time.time() + 120
    while up.exists() and time.time() < deadline:
        time.sleep(0.2)
    assert not up.exists()
    pid = by_name[pdf.name]["paper_id"]
    paper = c.get(f"/api/v1/papers/{pid}").json()
    new_ids = {f["figure_id"] for f in paper["figures"] if f["kind"] == "figure"}
    wait_index(c, lambda e: all(fid in e for fid in new_ids))
    # the new figure is found by its caption (among the top 5: a caption that names a figure type
    # also brings figures classified as that type)
    fig = next(f for f in paper["figures"] if f["kind"] == "figure")
    hits = c.get("/api/v1/search", params={"q": fig["caption"], "k": 5}).json()["items"]
    assert fig["figure_id"] in [h["figure_id"] for h in hits], [(h["figure_id"], h["caption"][:50]) for h in hits]
    listed = c.get("/api/v1/admin/jobs", headers=AUTH).json()["items"]
    assert listed[0]["job_id"] == acc["job_id"] and listed[0]["files"] is None

    # the same file again: reported as a duplicate, not ingested twice
    r = c.post("/api/v1/admin/collections", headers=AUTH, files=[("files", (pdf.name, pdf.read_bytes(), "application/pdf"))])
    job2 = wait_job(c, r.json()["job_id"])
    assert job2["files"][0]["status"] == "duplicate"


def test_a_job_that_adds_no_paper_publishes_no_index_version(sample, tmp_path):
    """An upload whose files all failed or repeat stored papers changes nothing searchable: the job
    ends without typing, scoring or publishing a new index version; removing a failed file's record
    asks for no index refresh either. The copy of a stored paper is known by its bytes before any
    extraction, which would rewrite the stored paper's crops in place."""
    import hashlib

    from app.ingest.extract import figure_dir_for
    from app.pipeline.ingest_jobs import JobLock

    data = copy_data(sample, tmp_path / "data")
    with make_client(data) as c:
        wait_ready(c, encoder=False)
        index = data / "index"
        current, versions = (index / "CURRENT").read_text(), sorted(p.name for p in index.glob("v*"))
        stored = c.get("/api/v1/papers").json()["items"][0]["paper_id"]
        pdf = c.get(f"/api/v1/papers/{stored}/pdf").content
        crops = data / figure_dir_for(hashlib.sha256(pdf).hexdigest())
        written = {p.name: p.stat().st_mtime_ns for p in crops.iterdir()}
        assert written
        files = [("files", ("copy.pdf", pdf, "application/pdf")),
                 ("files", ("broken.pdf", b"%PDF-1.7\nnot really a PDF", "application/pdf")),
                 ("files", ("empty.pdf", b"", "application/pdf"))]
        r = c.post("/api/v1/admin/collections", headers=AUTH, files=files)
        assert r.status_code == 202, r.text
        job = wait_job(c, r.json()["job_id"])
        assert job["counts"] == {"duplicate": 1, "failed": 2}, job["files"]
        # the server holds the job's lock until the job's last step (the index refresh) is over
        lock, deadline = JobLock(c.app.state.settings, job["job_id"]), time.time() + 120
        while not lock.acquire():
            assert time.time() < deadline, "the job's steps after its files did not end"
            time.sleep(0.2)
        lock.release()
        assert (index / "CURRENT").read_text() == current
        assert sorted(p.name for p in index.glob("v*")) == versions
        assert {p.name: p.stat().st_mtime_ns for p in crops.iterdir()} == written  # untouched
        refreshes = []
        c.app.state.job_runner.submit_reindex = lambda: refreshes.append(1)
        failed = next(f["paper_id"] for f in job["files"] if f["name"] == "broken.pdf")
        r = c.delete(f"/api/v1/admin/papers/{failed}", headers=AUTH)
        assert r.status_code == 200 and r.json()["index_refresh"] is False, r.text
        assert "not in the collection" in r.json()["detail"] and refreshes == []
        assert_problem(c.get(f"/api/v1/papers/{failed}"), 404)


def test_delete_paper_and_reindex(admin_client):
    c = admin_client
    settings = c.app.state.settings
    paper = c.get("/api/v1/papers").json()["items"][0]
    detail = c.get(f"/api/v1/papers/{paper['paper_id']}").json()
    fids = [f["figure_id"] for f in detail["figures"]]
    image_files = [settings.data_dir / p for p in _image_paths(settings, fids)]
    assert image_files and all(p.exists() for p in image_files)
    r = c.delete(f"/api/v1/admin/papers/{paper['paper_id']}", headers=AUTH)
    assert r.status_code == 200 and r.json()["deleted_figures"] == paper["n_figures"] and r.json()["index_refresh"]
    assert_problem(c.get(f"/api/v1/papers/{paper['paper_id']}"), 404)
    assert_problem(c.get(f"/api/v1/figures/{fids[0]}"), 404)
    assert not any(p.exists() for p in image_files)
    # until the refresh lands, results leave the deleted figures out; afterwards the index has none
    hits = c.get("/api/v1/search", params={"q": "figure accuracy", "k": 50}).json()["items"]
    assert not set(fids) & {h["figure_id"] for h in hits}
    wait_index(c, lambda e: not any(fid in e for fid in fids))
    cited = [p for p in c.get("/api/v1/papers").json()["items"]]
    for p in cited:
        d = c.get(f"/api/v1/papers/{p['paper_id']}").json()
        assert paper["paper_id"] not in [x["paper_id"] for x in d["cites"] + d["cited_by"]]
    assert_problem(c.delete(f"/api/v1/admin/papers/{paper['paper_id']}", headers=AUTH), 404)
    r = c.post("/api/v1/admin/reindex", headers=AUTH)
    assert r.status_code == 202 and r.json()["status"] == "accepted"


# ------------------------------------------------------------------ admin: what a job says, retrying it, older jobs
@pytest.fixture(scope="module")
def flow_client(sample, tmp_path_factory):
    """Client for the admin flow (index state, retry, job pages), over its own copy of the sample."""
    yield from served_copy(sample, tmp_path_factory, "api-flow")


def observe_job(c: TestClient, job_id: str, timeout: float = 180) -> list[dict]:
    """Every answer of the job's endpoint, polled as fast as it answers, until its status is done or failed."""
    seen, deadline = [], time.time() + timeout
    while time.time() < deadline:
        seen.append(c.get(f"/api/v1/admin/jobs/{job_id}", headers=AUTH).json())
        if seen[-1]["status"] in ("done", "failed"):
            return seen
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish: {seen[-1]}")


def test_an_upload_keeps_its_pdfs_and_a_job_is_done_only_when_its_figures_are_searchable(flow_client, tmp_path):
    """A file of another type among PDFs is left out, named in the answer and listed in the job as
    skipped (the whole upload was refused for it). The job says "indexing" after its last file and
    "done" only once an index version holding its papers is published; `searchable` turns true when
    this server serves it (before, a job was "done" while its figures could not be found yet)."""
    c = flow_client
    pdf = extra_pdf(tmp_path)
    files = [("files", (pdf.name, pdf.read_bytes(), "application/pdf")),
             ("files", ("notes.txt", b"reading list", "text/plain"))]
    r = c.post("/api/v1/admin/collections", headers=AUTH, files=files)
    assert r.status_code == 202, r.text
    acc = r.json()
    assert acc["total"] == 2 and [f["name"] for f in acc["skipped"]] == ["notes.txt"]
    assert "unsupported type 'text/plain'" in acc["skipped"][0]["error"]
    seen = observe_job(c, acc["job_id"])
    order = ["queued", "running", "indexing", "done"]
    statuses = [j["status"] for j in seen]
    assert statuses == sorted(statuses, key=order.index), statuses
    index = c.app.state.settings.data_dir / "index"
    done = seen[-1]
    assert done["status"] == "done" and done["index_state"] == "published", done
    assert (index / done["index_version"]).is_dir()  # published when the job says done
    assert all(j["searchable"] is not True for j in seen if j["status"] != "done")
    assert all(j["index_state"] in (None, "building") for j in seen if j["status"] != "done")
    by_name = {f["name"]: f for f in done["files"]}
    assert by_name["notes.txt"]["status"] == "skipped" and "text/plain" in by_name["notes.txt"]["error"]
    assert by_name[pdf.name]["status"] == "ok" and done["counts"] == {"ok": 1, "skipped": 1}
    deadline = time.time() + 60
    while not c.get(f"/api/v1/admin/jobs/{acc['job_id']}", headers=AUTH).json()["searchable"]:
        assert time.time() < deadline, "the server did not load the published version"
        time.sleep(0.2)
    fig = next(f for f in c.get(f"/api/v1/papers/{by_name[pdf.name]['paper_id']}").json()["figures"]
               if f["kind"] == "figure")
    hits = c.get("/api/v1/search", params={"q": fig["caption"], "k": 5}).json()["items"]
    assert fig["figure_id"] in [h["figure_id"] for h in hits]


def test_a_failed_file_is_read_again_when_its_job_is_retried(flow_client, tmp_path):
    """A file whose time ran out (a busy machine) is kept; POST /admin/jobs/{id}/retry reads it again
    in the same job, which then adds its paper. Retrying asks for a job that has ended and has
    something to retry."""
    from sqlalchemy import update

    from app.db.schema import Job
    from app.db.session import session_scope

    c = flow_client
    settings = c.app.state.settings
    pdf = generated_pdf(tmp_path, seed=11)
    limit = settings.file_timeout_s
    settings.file_timeout_s = 0.001
    try:
        r = c.post("/api/v1/admin/collections", headers=AUTH,
                   files=[("files", ("slow.pdf", pdf.read_bytes(), "application/pdf"))])
        job = wait_job(c, r.json()["job_id"])
    finally:
        settings.file_timeout_s = limit
    (f,) = job["files"]
    assert f["status"] == "failed" and "timed out" in f["error"] and f["retryable"] and job["retryable"] == 1
    assert f["error_kind"] == "timeout" and f["retry_may_help"] and job["retryable_file_errors"] == 0
    assert job["index_state"] == "unchanged" and job["searchable"] is None
    url = f"/api/v1/admin/jobs/{job['job_id']}/retry"
    assert_problem(c.post(url + "?file_id=424242", headers=AUTH), 409, "only failed files")
    with session_scope(settings.db_url) as s:  # a job still at work is not retried under its feet
        s.execute(update(Job).where(Job.id == job["job_id"]).values(status="running"))
    assert_problem(c.post(url, headers=AUTH), 409, "wait for it to end")
    with session_scope(settings.db_url) as s:
        s.execute(update(Job).where(Job.id == job["job_id"]).values(status="done"))

    r = c.post(url + f"?file_id={f['file_id']}", headers=AUTH)
    assert r.status_code == 202 and r.json()["job_id"] == job["job_id"] and r.json()["status"] == "queued", r.text
    again = wait_job(c, job["job_id"])
    (f,) = again["files"]
    assert f["status"] == "ok" and f["paper_id"] and not f["retryable"] and again["retryable"] == 0, again
    assert (again["done"], again["total"], again["index_state"]) == (1, 1, "published")
    assert_problem(c.post(url, headers=AUTH), 409, "nothing to retry")
    assert_problem(c.post("/api/v1/admin/jobs/nosuchjob/retry", headers=AUTH), 404, "not found")


def test_a_file_broken_in_its_bytes_is_retried_only_when_asked(flow_client, tmp_path):
    """A damaged PDF and a text file named .pdf fail for their own bytes: each says why
    (`error_kind`) and that a retry fails the same way (`retry_may_help` false). The job's retry
    leaves them (409, saying why) unless asked with include_file_errors; the file read again fails
    the same way."""
    c = flow_client
    damaged = b"%PDF-1.4\n" + bytes(range(256)) * 12
    r = c.post("/api/v1/admin/collections", headers=AUTH,
               files=[("files", ("damaged.pdf", damaged, "application/pdf")),
                      ("files", ("notes.pdf", b"minutes of the meeting", "application/pdf"))])
    assert r.status_code == 202, r.text
    job = wait_job(c, r.json()["job_id"])
    kinds = {f["name"]: (f["status"], f["error_kind"], f["retry_may_help"], f["retryable"]) for f in job["files"]}
    assert kinds == {"damaged.pdf": ("failed", "damaged", False, True), "notes.pdf": ("failed", "not_pdf", False, True)}
    assert (job["retryable"], job["retryable_file_errors"]) == (0, 2)
    url = f"/api/v1/admin/jobs/{job['job_id']}/retry"
    assert_problem(c.post(url, headers=AUTH), 409, "own bytes", "include_file_errors=true")
    r = c.post(url + "?include_file_errors=true", headers=AUTH)
    assert r.status_code == 202, r.text
    again = wait_job(c, job["job_id"])
    assert {f["name"]: f["error_kind"] for f in again["files"]} == {"damaged.pdf": "damaged", "notes.pdf": "not_pdf"}
    assert (again["retryable"], again["retryable_file_errors"]) == (0, 2)


def test_a_job_does_not_name_a_removed_paper_nor_the_next_paper_given_its_id(flow_client, tmp_path):
    """A job file whose paper was removed names no paper (it kept the removed id, which SQLite gives
    to the next paper stored: the job then showed, counted and checked that other paper as its own)."""
    c = flow_client
    first = wait_job(c, c.post("/api/v1/admin/collections", headers=AUTH, files=[
        ("files", ("first.pdf", generated_pdf(tmp_path, seed=17).read_bytes(), "application/pdf"))]).json()["job_id"])
    removed = first["files"][0]["paper_id"]
    assert c.delete(f"/api/v1/admin/papers/{removed}", headers=AUTH).status_code == 200
    second = wait_job(c, c.post("/api/v1/admin/collections", headers=AUTH, files=[
        ("files", ("second.pdf", generated_pdf(tmp_path, seed=19).read_bytes(), "application/pdf"))]).json()["job_id"])
    (f,) = c.get(f"/api/v1/admin/jobs/{first['job_id']}", headers=AUTH).json()["files"]
    assert f["status"] == "ok" and f["paper_id"] is None and f["n_figures"] == first["files"][0]["n_figures"], f
    assert second["files"][0]["paper_id"] is not None
    assert c.get(f"/api/v1/admin/jobs/{first['job_id']}", headers=AUTH).json()["searchable"] is None


def test_jobs_are_listed_page_by_page(flow_client):
    c = flow_client
    everything = c.get("/api/v1/admin/jobs?limit=100", headers=AUTH).json()
    assert everything["next_before"] is None and len(everything["items"]) >= 3
    pages, before = [], None
    while True:
        page = c.get("/api/v1/admin/jobs", params={"limit": 2, **({"before": before} if before else {})},
                     headers=AUTH).json()
        pages.append([j["job_id"] for j in page["items"]])
        before = page["next_before"]
        if before is None:
            break
        assert before == pages[-1][-1]
    assert [j for p in pages for j in p] == [j["job_id"] for j in everything["items"]]
    assert all(len(p) == 2 for p in pages[:-1]) and 1 <= len(pages[-1]) <= 2
    assert_problem(c.get("/api/v1/admin/jobs?before=nosuchjob", headers=AUTH), 404, "not found")


def _image_paths(settings, fids):
    from sqlalchemy import select

    from app.db.schema import Figure
    from app.db.session import session_scope

    with session_scope(settings.db_url) as s:
        rows = s.execute(select(Figure.image_path, Figure.thumbnail_path).where(Figure.id.in_(fids))).all()
    return [p for r in rows for p in r if p]


# ------------------------------------------------------------------ configuration
def test_no_index_yet(tmp_path):
    with make_client(tmp_path / "empty", warm_encoder=False) as c:
        r = c.get("/api/v1/search", params={"q": "anything"})
        assert r.status_code == 200
        body = r.json()
        assert body["items"] == [] and "no search index yet" in body["message"]
        ready = c.get("/readyz")
        assert ready.status_code == 200 and ready.json()["index"]["loaded"] is False
        assert "no search index" in ready.json()["index"]["reason"]
        assert_problem(c.get("/api/v1/figures/1/similar"), 404)
        assert c.get("/api/v1/figures").json()["total"] == 0
        r = c.post("/api/v1/search/by-image", files={"image": ("f.png", _png(), "image/png")}, data={"caption": "x"})
        assert r.status_code == 200 and r.json()["items"] == []


@pytest.mark.parametrize("token,word", [("change-me", "placeholder"), ("CHANGE-ME", "placeholder"),
                                        ("x", "at least 24"), ("a-real-secret", "at least 24")])
@pytest.mark.parametrize("broker", ["", "redis://127.0.0.1:6379/0"])
def test_placeholder_and_short_tokens_are_refused_in_every_mode(tmp_path, token, word, broker):
    s = Settings(data_dir=tmp_path / "d", database_url="", broker_url=broker, admin_token=token)
    with pytest.raises(AdminTokenError, match=word) as err:
        create_app(s)
    assert "\n" not in str(err.value)


def test_distributed_mode_needs_a_token(tmp_path):
    s = Settings(data_dir=tmp_path / "d", database_url="", broker_url="redis://127.0.0.1:6379/0")
    assert s.admin_token == ""
    with pytest.raises(AdminTokenError, match="FIGSEARCH_ADMIN_TOKEN"):
        create_app(s)
    create_app(Settings(data_dir=tmp_path / "d", database_url="", broker_url="redis://127.0.0.1:6379/0",
                        admin_token="a-real-secret-of-enough-length-2901"))
    assert not (tmp_path / "d" / "admin-token").exists()


def test_embedded_mode_generates_a_token_once(tmp_path, capfd):
    data = tmp_path / "d"
    s = Settings(data_dir=data, database_url="", broker_url="", warm_encoder=False)
    app = create_app(s)
    token = (data / "admin-token").read_text().strip()
    assert len(token) >= 32 and (data / "admin-token").stat().st_mode & 0o077 == 0
    assert token in capfd.readouterr().err  # printed once, at generation
    create_app(s)
    assert token not in capfd.readouterr().err
    with TestClient(app) as c:
        assert c.get("/api/v1/admin/jobs", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        for wrong in ("change-me", token[:-1]):
            assert c.get("/api/v1/admin/jobs", headers={"Authorization": f"Bearer {wrong}"}).status_code == 403


def test_cors(tmp_path):
    with make_client(tmp_path / "cors", cors_origins=["https://example.org"], warm_encoder=False) as c:
        r = c.options("/api/v1/papers", headers={"Origin": "https://example.org",
                                                 "Access-Control-Request-Method": "GET"})
        assert r.headers.get("access-control-allow-origin") == "https://example.org"
        r = c.get("/api/v1/papers", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in r.headers
    with make_client(tmp_path / "nocors", warm_encoder=False) as c:
        r = c.get("/api/v1/papers", headers={"Origin": "https://example.org"})
        assert "access-control-allow-origin" not in r.headers
