"""scripts/type_query_dev.py: precision@5 of rankings rebuilt from a query's candidates, and a fitted
ranking scored on each set with the fit on the other sets only."""
import json

from tests.script_modules import load_script


def load():
    return load_script("type_query_dev")


def row(set_, fid, paper, shows, lex, cos, p, rank):
    return {"set": set_, "query": "heatmap", "family": "type", "type": "heatmap", "named": ["heatmap"],
            "figure_id": fid, "paper": paper, "shows": shows, "served_rank": rank, "lex": lex, "cos": cos,
            "p": p, "dom": p >= 0.5, "shown": p >= 0.2, "share": 1.0 if p >= 0.5 else p, "ptext": 0.0,
            "capname": False, "mentname": False}


def one_set(name):
    """Five figures whose text uses the word (BM25 10..14, cosine .6, heatmap score .3, none a
    heatmap) and five sure heatmaps without it (score .9): by weight 1 the texts win, by 2 the
    heatmaps."""
    rows = [row(name, i, f"{name}-p{i}", False, 14.0 - i, 0.6, 0.3, i) for i in range(5)]
    rows += [row(name, 10 + i, f"{name}-p{10 + i}", True, 0.0, 0.0, 0.9, 5 + i) for i in range(5)]
    return rows


def test_rankings_rebuilt_from_candidates_and_fitted_on_the_other_sets(tmp_path):
    mod = load()
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for s in ("a", "b") for r in one_set(s)))
    res = mod.score(path, None, ["C0", "C1", "C1w2"], seed=0, boot=0)
    assert res["C0"]["pooled_type_p5"] == 0.0  # .5 x (.71..1) + .5 x .6 + .3 > .9
    assert res["C1w2"]["pooled_type_p5"] == 1.0
    # each set scored with the weight fitted on the other: the smallest that puts the heatmaps first
    assert res["C1"]["fitted_without_set"] == {s: {"lexn": 0.5, "cos": 0.5, "p": 2.0} for s in ("a", "b")}
    assert res["C1"]["pooled_type_p5"] == 1.0
