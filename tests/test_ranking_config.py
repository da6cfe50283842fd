"""One ranking configuration: `figsearch fit` publishes it with the index, and the API, the CLI and
the judged evaluation rank related figures with it, returning the same list for the same figure."""
from __future__ import annotations

import json

from fastapi.testclient import TestClient

from app.api.main import create_app
from app.settings import Settings
from tests.conftest import cli_run, copy_data_dir


def run(args, check=True):
    return cli_run(args, check=check, timeout=600)


def test_fit_publishes_one_config_that_api_cli_and_eval_rank_with(demo_indexed, tmp_path):
    data = copy_data_dir(demo_indexed[0], tmp_path)  # the generated collection, ingested and indexed
    figs = [json.loads(l) for l in run(["figures", "--data-dir", str(data), "--kind", "figure"]).stdout.splitlines()]
    papers = {p["paper_id"]: p["sha256"] for p in
              (json.loads(l) for l in run(["papers", "--data-dir", str(data)]).stdout.splitlines())}
    key = {f["figure_id"]: {"sha256": papers[f["paper_id"]], "kind": "figure", "number": f["number"]} for f in figs}
    # graded pairs: for two query figures, every figure of the other papers, grade by figure number
    queries = [figs[0], next(f for f in figs if f["paper_id"] != figs[0]["paper_id"])]
    judgments = tmp_path / "judged.jsonl"
    judgments.write_text("".join(
        json.dumps({"query": key[q["figure_id"]], "candidate": key[f["figure_id"]], "grade": f["number"] % 3,
                    "judge": "t"}) + "\n"
        for q in queries for f in figs if f["paper_id"] != q["paper_id"]))
    out = run(["fit", "--judgments", str(judgments), "--data-dir", str(data), "--folds", "2",
               "--out", str(tmp_path / "fit")]).stdout
    assert "fitted_held_out" in out and "ranks with the fitted config" in out
    fit = json.loads((tmp_path / "fit" / "fit.json").read_text())
    # the same folds without a signal, graded by a judge too (a dry run publishes nothing)
    out = run(["fit", "--judgments", str(judgments), "--data-dir", str(data), "--folds", "2", "--dry-run",
               "--without", "figure_words", "--without", "visual", "--report-judge", "t",
               "--out", str(tmp_path / "fit-without")]).stdout
    without = json.loads((tmp_path / "fit-without" / "fit.json").read_text())
    assert without["without"] == ["figure_words", "visual"] and "graded by t" in out
    assert not {"figure_words", "visual"} & set(without["weights"]) and "index version" not in out
    assert without["other_judge"]["n_queries"] == 2
    # no side files: the config lives inside the published index version
    index = data / "index"
    assert not any((index / name).exists() for name in ("fusion.json", "w.json", "first_stage.json"))
    current = (index / "CURRENT").read_text().strip()
    config = json.loads((index / current / "ranking" / "ranking.json").read_text())
    meta = json.loads((index / current / "ranking" / "meta.json").read_text())
    assert meta["kind"] == "ranking" and meta["fitted_for"] == fit["index_version"] and meta["metrics"]
    assert config["weights"]["other_papers"] == fit["weights"] and config["fitted_for"] == fit["index_version"]

    ev = run(["eval", "--judgments", str(judgments), "--judged-only", "--data-dir", str(data),
              "--out", str(tmp_path / "ev")]).stdout
    assert "close fill" in ev
    served = json.loads((tmp_path / "ev" / "judged.json").read_text())["served_top5"]
    settings = Settings(data_dir=data, database_url="", broker_url="", admin_token="ranking-test-token-0123456789abcdef")
    with TestClient(create_app(settings)) as c:
        c.app.state.engine_holder.refresh(block=True)
        info = c.get("/api/v1/info").json()["ranking"]
        assert info["index_version"] == current and info["weights"]["other_papers"] == fit["weights"]
        for q in queries:
            fid = q["figure_id"]
            api = [i["figure_id"] for i in c.get(f"/api/v1/figures/{fid}/similar", params={"k": 5}).json()["items"]]
            cli = [h["figure_id"] for h in json.loads(run(["similar", str(fid), "--k", "5", "--data-dir", str(data),
                                                          "--json"]).stdout)]
            assert api == cli == served[str(fid)] and api
