"""The `figsearch` CLI contract: exit codes, summary, JSON lines fields."""
from __future__ import annotations

import json

import pytest

from tests import badfiles
from tests.conftest import cli_run, copy_data_dir

run = cli_run  # ingestion contract only (no automatic index); the search test indexes itself


def test_ingest_papers_figures_contract(demo_pdfs, tmp_path):
    data = tmp_path / "data"
    bad = badfiles.random_bytes(tmp_path)
    r = run(["ingest", str(demo_pdfs[0]), str(demo_pdfs[1]), str(bad), "--data-dir", str(data)])
    assert "papers ok: 2" in r.stdout and "failed: 1" in r.stdout, r.stdout
    assert "random.pdf" in r.stdout and "not a PDF" in r.stdout
    papers = [json.loads(l) for l in run(["papers", "--data-dir", str(data), "--format", "jsonl"]).stdout.splitlines()]
    assert len(papers) == 3
    for p in papers:
        for key in ("paper_id", "sha256", "source", "title", "abstract", "status", "error", "n_figures", "cites", "cited_by"):
            assert key in p
    assert {p["status"] for p in papers} == {"ok", "failed"}
    figs = [json.loads(l) for l in run(["figures", "--data-dir", str(data), "--format", "jsonl"]).stdout.splitlines()]
    assert figs
    for f in figs:
        for key in ("figure_id", "paper_id", "kind", "label", "number", "caption", "page", "bbox", "image_path", "mentions"):
            assert key in f
        x0, y0, x1, y1 = f["bbox"]
        assert x1 > x0 and y1 > y0
        assert (data / f["image_path"]).exists()
    assert any(f["mentions"] for f in figs)


def test_json_summary_and_usage_errors(demo_pdfs, tmp_path):
    data = tmp_path / "data"
    r = run(["ingest", str(demo_pdfs[0]), "--data-dir", str(data), "--json"])
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["ok"] == 1 and summary["figures"] >= 1
    missing = run(["ingest", str(tmp_path / "missing.pdf"), "--data-dir", str(data)], check=False)
    assert missing.returncode != 0 and "no such file" in missing.stderr
    assert run(["ingest"], check=False).returncode != 0
    assert run(["papers", "--data-dir", str(data), "--format", "xml"], check=False).returncode != 0


def test_retry_reads_the_failed_files_of_a_job_again(demo_pdfs, tmp_path):
    """A file that timed out (a busy machine) is read again by `figsearch ingest --retry JOB`, in the
    same job; a job with nothing to retry is a usage error."""
    data = tmp_path / "data"
    r = run(["ingest", str(demo_pdfs[0]), "--data-dir", str(data), "--json"], {"FIGSEARCH_FILE_TIMEOUT_S": "0.001"})
    first = json.loads(r.stdout.strip().splitlines()[-1])
    assert first["failed"] == 1 and first["ok"] == 0, first
    r = run(["ingest", "--retry", first["job_id"], "--data-dir", str(data), "--json"])
    again = json.loads(r.stdout.strip().splitlines()[-1])
    assert again["job_id"] == first["job_id"] and again["ok"] == 1 and again["failed"] == 0, again
    nothing = run(["ingest", "--retry", first["job_id"], "--data-dir", str(data)], check=False)
    assert nothing.returncode == 2 and "nothing to retry" in nothing.stderr, nothing.stderr
    both = run(["ingest", str(demo_pdfs[0]), "--retry", first["job_id"], "--data-dir", str(data)], check=False)
    assert both.returncode == 2 and "--retry JOB" in both.stderr


def test_a_retry_leaves_files_broken_in_their_bytes_unless_asked(tmp_path):
    """A file that is not a PDF fails for its own bytes: the summary names its kind, `--retry JOB`
    leaves it (saying how to ask for it) and `--retry JOB --include-file-errors` reads it again."""
    data = tmp_path / "data"
    bad = badfiles.html_named_pdf(tmp_path)
    first = json.loads(run(["ingest", str(bad), "--data-dir", str(data), "--json"]).stdout.strip().splitlines()[-1])
    assert [f["error_kind"] for f in first["failures"]] == ["not_pdf"], first
    left = run(["ingest", "--retry", first["job_id"], "--data-dir", str(data)], check=False)
    assert left.returncode == 2 and "own bytes" in left.stderr and "--include-file-errors" in left.stderr, left.stderr
    r = run(["ingest", "--retry", first["job_id"], "--include-file-errors", "--data-dir", str(data), "--json"])
    again = json.loads(r.stdout.strip().splitlines()[-1])
    assert again["job_id"] == first["job_id"] and [f["error_kind"] for f in again["failures"]] == ["not_pdf"]
    table = run(["jobs", first["job_id"], "--data-dir", str(data)]).stdout
    assert "KIND" in table and "not_pdf" in table and "--include-file-errors" in table, table


def test_ingest_of_empty_files_alone_is_a_usage_error_and_among_others_they_fail(demo_pdfs, tmp_path):
    """Empty files alone are nothing to ingest (exit 2, no job); among others each fails for being
    empty, and the summary says so."""
    data = tmp_path / "data"
    empties = [badfiles.zero_byte(tmp_path), tmp_path / "blank.pdf"]
    empties[1].write_bytes(b"")
    alone = run(["ingest", *map(str, empties), "--data-dir", str(data)], check=False)
    assert alone.returncode == 2 and "no PDF found" in alone.stderr and "empty file (0 bytes)" in alone.stderr
    assert run(["jobs", "--data-dir", str(data), "--json"]).stdout.strip() == ""
    mixed = run(["ingest", str(demo_pdfs[0]), *map(str, empties), "--data-dir", str(data), "--json"])
    summary = json.loads(mixed.stdout.strip().splitlines()[-1])
    assert summary["ok"] == 1 and summary["duplicate"] == 0, summary
    assert [(f["file"].rsplit("/", 1)[-1], f["error"]) for f in summary["failures"]] == [
        ("empty.pdf", "empty file (0 bytes)"), ("blank.pdf", "empty file (0 bytes)")]


@pytest.mark.timeout(600)  # some twenty CLI processes, each loading its models: slow on a loaded machine
def test_index_search_similar_contract(demo_ingested, demo_ingested_one, demo_indexed, tmp_path):
    for i, ingested in enumerate((demo_ingested, demo_ingested_one)):  # with and without an index folder
        unindexed = copy_data_dir(ingested, tmp_path / f"unindexed-{i}")
        r = run(["search", "plot", "--data-dir", str(unindexed)], check=False)
        assert r.returncode == 2 and "no search index" in r.stderr, r.stderr[-500:]
    indexed, out = demo_indexed  # `figsearch index` on the same ingested collection
    assert "figures" in out and "newly embedded" in out
    data = copy_data_dir(indexed, tmp_path)
    every_item = run(["figures", "--data-dir", str(data)]).stdout.splitlines()
    retyped = run(["index", "--retype", "--data-dir", str(data)]).stdout
    assert f"figure types: {len(every_item)} figures classified" in retyped
    figs = [json.loads(l) for l in run(["figures", "--data-dir", str(data), "--kind", "figure"]).stdout.splitlines()]
    target = figs[0]
    word = max((w.strip(".,:;()") for w in target["caption"].split()), key=len)
    searched = run(["search", word, "--k", "5", "--data-dir", str(data), "--json"])
    assert "Loading weights" not in searched.stderr  # the text encoder loads without a progress bar
    hits = json.loads(searched.stdout)
    assert hits and len(hits) <= 5
    keys = {"figure_id", "paper_id", "score", "lexical_score", "embedding_score", "caption"}
    assert all(keys <= set(h) for h in hits)
    assert any(word.lower() in h["caption"].lower() for h in hits)
    # at most one figure of a paper before a second of any (--per-paper 1)
    spread = json.loads(run(["search", "accuracy", "--k", "12", "--per-paper", "1", "--data-dir", str(data),
                             "--json"]).stdout)
    papers = [h["paper_id"] for h in spread]
    assert len(set(papers)) >= 2 and len(set(papers[:len(set(papers))])) == len(set(papers))
    # a query naming a type: each result says what it shows of the type, as the API does
    typed = json.loads(run(["search", "line chart", "--k", "10", "--data-dir", str(data), "--json"]).stdout)
    assert any(h["signals"].get("type_shown") for h in typed)
    for h in typed:
        by_type = [r for r in h["reasons"] if r in ("looks like a line chart", "may show a line chart")]
        assert len(by_type) == (1 if h["signals"].get("type_shown") else 0), h
        assert not any(r.startswith("same kind of figure") for r in h["reasons"])
    sims = json.loads(run(["similar", str(target["figure_id"]), "--k", "7", "--data-dir", str(data), "--json"]).stdout)
    assert len(sims) == 7 and all(keys <= set(h) for h in sims)
    assert target["figure_id"] not in {h["figure_id"] for h in sims}
    assert all(h["embedding_score"] is not None for h in sims)  # dense re-ranking is on by default
    # ordered by score, except that a paper's figures past its first three follow every other paper's
    seen: dict[int, int] = {}
    first_three = []
    for h in sims:
        first_three.append(seen.get(h["paper_id"], 0) < 3)
        seen[h["paper_id"]] = seen.get(h["paper_id"], 0) + 1
    assert first_three == sorted(first_three, reverse=True)
    for keep in (True, False):
        block = [h["score"] for h, f in zip(sims, first_three) if f == keep]
        assert block == sorted(block, reverse=True)
    assert target["paper_id"] not in {h["paper_id"] for h in sims}  # default scope: other papers
    assert all("paper" in h["signals"] and isinstance(h["reasons"], list) for h in sims)
    same = json.loads(run(["similar", str(target["figure_id"]), "--scope", "same_paper", "--data-dir", str(data),
                           "--json"]).stdout)
    assert same and {h["paper_id"] for h in same} == {target["paper_id"]}
    assert run(["similar", str(target["figure_id"]), "--scope", "nope", "--data-dir", str(data)],
               check=False).returncode == 2
    assert run(["similar", "999999", "--data-dir", str(data), "--json"], check=False).returncode != 0
    # uploaded copies of figures (rescaled JPEG) find themselves; typing them is reported
    copies = json.loads(run(["eval-image-copies", "--data-dir", str(data), "--n", "6"]).stdout)
    assert copies["n_queries"] == min(6, len(figs)) and copies["hit_at_1"] >= 0.8
    assert 0.0 <= copies["copy_keeps_type"] <= 1.0
    panels = copies["panels"]  # uploads of one panel of the compound figures, if there are any
    assert panels["n_queries"] == min(6, panels["n_figures_with_panels"])
    assert all(0.0 <= v["hit_at_1"] <= v["hit_at_5"] <= 1.0 for k, v in panels.items() if k.startswith("panel "))


def test_refresh_metadata_reads_stored_papers_again(demo_ingested_one, tmp_path):
    import sqlite3

    data = copy_data_dir(demo_ingested_one, tmp_path)
    before = [json.loads(l) for l in run(["papers", "--data-dir", str(data)]).stdout.splitlines()][0]
    assert before["title"] and before["authors"] and before["year"]
    with sqlite3.connect(data / "figsearch.db") as db:  # as an older parser might have left them
        db.execute("update papers set title = upper(title), authors = 'Someone1,2 Else', year = 1901")
    r = run(["refresh-metadata", "--data-dir", str(data)])
    assert "papers: 1  titles changed: 1  authors changed: 1  years changed: 1" in r.stdout, r.stdout
    after = [json.loads(l) for l in run(["papers", "--data-dir", str(data)]).stdout.splitlines()][0]
    assert (after["title"], after["authors"], after["year"]) == (before["title"], before["authors"], before["year"])
    # nothing left to change the second time
    assert "titles changed: 0  authors changed: 0  years changed: 0" in run(
        ["refresh-metadata", "--data-dir", str(data)]).stdout


def test_refresh_region_words_reads_the_words_inside_stored_figures_again(demo_ingested_one, tmp_path):
    import sqlite3

    data = copy_data_dir(demo_ingested_one, tmp_path)
    with sqlite3.connect(data / "figsearch.db") as db:
        before = dict(db.execute("select id, region_text from figures where region_bbox is not null"))
        assert before and any(before.values())  # the demo's plots print their axis words
        # as a collection ingested before figures kept their words has them
        db.execute("update figures set region_text = '' where kind = 'figure'")
        blanked = sum(1 for fid, kind in db.execute("select id, kind from figures")
                      if kind == "figure" and before.get(fid))
    r = run(["refresh-region-words", "--data-dir", str(data)])
    assert f"papers: 1  regions: {len(before)}  with words: {sum(map(bool, before.values()))}  changed: {blanked}" \
        in r.stdout, r.stdout
    with sqlite3.connect(data / "figsearch.db") as db:
        assert dict(db.execute("select id, region_text from figures where region_bbox is not null")) == before
    assert "changed: 0" in run(["refresh-region-words", "--data-dir", str(data)]).stdout
