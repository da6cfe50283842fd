"""Central figure on a tiny in-memory-built SQLite collection: pairs, a tiny training run,
save/load, score_papers, eval-central report."""
from __future__ import annotations

import json

import pytest

from app.settings import Settings

TOPICS = [
    ("attention network", "The architecture of the attention network with gated experts.",
     "Training loss curves on the click dataset.", "AUC for different embedding sizes."),
    ("graph embedding", "Overview of the graph embedding framework and random walks.",
     "Runtime of the sampler on large graphs.", "t-SNE visualisation of node vectors."),
    ("bidding agent", "Illustration of the bidding agent and the auction pipeline.",
     "Revenue under different budget constraints.", "Win rate versus bid price."),
    ("multi-task tower", "The multi-task tower model with shared bottom layers.",
     "Gain of each task on synthetic data.", "Expert utilisation of the gates."),
    ("feature crossing", "The feature crossing search procedure of the system.",
     "Accuracy of crossing methods on tabular data.", "Time cost of the search versus features."),
]


def make_collection(settings: Settings) -> list[int]:
    from app.db.schema import Figure, Mention, Paper
    from app.db.session import session_scope

    settings.ensure_dirs()
    ids = []
    with session_scope(settings.db_url) as s:
        for i, (topic, c1, c2, c3) in enumerate(TOPICS):
            p = Paper(sha256=f"{i:064x}", title=f"A {topic} paper", status="ok", n_pages=8,
                      abstract=f"We propose a new {topic} for recommendation. The {topic} learns fast. "
                               f"Experiments on two datasets show large gains.")
            for n, cap, page in ((1, c1, 2), (2, c2, 5), (3, c3, 6)):
                f = Figure(kind="figure", number=n, label=f"Figure {n}", caption=f"Figure {n}: {cap}", page=page,
                           bbox=[50, 50, 300, 250 - 40 * n], width=400, height=300)
                words = cap.lower().rstrip(".")
                f.mentions = [Mention(sentence=f"Figure {n} shows {words}.", before="We now describe it.",
                                      after="This is important.", position=10 * n)]
                p.figures.append(f)
            p.figures.append(Figure(kind="table", number=1, label="Table 1", caption="Table 1: Results.", page=6))
            s.add(p)
            s.flush()
            ids.append(p.id)
    return ids


@pytest.fixture()
def tiny(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", broker_url="", database_url="")
    ids = make_collection(settings)
    return settings, ids


def test_queries_and_batches(tiny):
    import random

    from app.central.data import build_queries, load_papers
    from app.central.train import make_batch

    settings, _ = tiny
    papers = load_papers(settings.db_url)
    assert len(papers) == 5 and all(len(p.figures) == 3 for p in papers)  # tables excluded
    assert papers[0].figures[0].text.startswith("The architecture")  # label stripped
    qs = build_queries(papers)
    assert len(qs) == 15
    q = qs[0]
    assert q.target == 1 and q.candidates == [1, 2, 3]
    assert "1" not in q.sentence and "figure" in q.sentence  # reference masked
    assert len(q.context) == 3 and q.sentence in q.context
    caps = {p.sha256: {f.number: f.text for f in p.figures} for p in papers}
    sents, texts, targets, mask = make_batch([qs[0], qs[3]], caps, random.Random(0), negatives=3)
    assert sents[0] in qs[0].context and texts[targets[0]] == papers[0].figures[0].text
    # every caption of the first query's paper is in the batch (hard negatives), once each
    assert set(caps[papers[0].sha256].values()) <= set(texts) and len(set(texts)) == len(texts)
    assert all(all(row) for row in mask)  # no co-mentioned figures here: nothing masked


def test_batch_masks_co_mentioned_captions():
    import random

    from app.central.data import Query
    from app.central.train import make_batch

    caps = {"p": {1: "a", 2: "b", 3: "c"}}
    q = Query(paper_sha="p", sentence="s", context=[], target=1, candidates=[1, 3])  # 2 co-mentioned
    q2 = Query(paper_sha="p", sentence="t", context=[], target=2, candidates=[2, 3])
    sents, texts, targets, mask = make_batch([q, q2], caps, random.Random(0), negatives=3)
    assert mask[0][texts.index("b")] is False and mask[0][texts.index("c")] is True
    assert mask[1][texts.index("a")] is False and mask[1][targets[1]] is True


def test_co_mentioned_figures_are_not_negatives():
    from app.central.data import FigureInfo, MentionInfo, PaperInfo, build_queries

    p = PaperInfo(id=1, sha256="a" * 64, figures=[FigureInfo(id=i, number=i, caption=f"c{i}", text=f"c{i}")
                                                   for i in (1, 2, 3)],
                  mentions=[MentionInfo(number=1, sentence="Figures 1 and 2 show it.", position=3),
                            MentionInfo(number=2, sentence="Figures 1 and 2 show it.", position=3)])
    qs = build_queries([p])
    assert [(q.target, q.candidates) for q in qs] == [(1, [1, 3]), (2, [2, 3])]


def test_fallback_scoring_without_model(tiny):
    from app.central.scoring import score_papers
    from app.db.schema import Figure
    from app.db.session import session_scope

    settings, ids = tiny
    r = score_papers(settings)
    assert r == {"papers": 5, "figures": 15, "model": False}
    with session_scope(settings.db_url) as s:
        for pid in ids:
            figs = s.query(Figure).filter_by(paper_id=pid).all()
            ranks = sorted(f.central_rank for f in figs if f.kind == "figure")
            assert ranks == [1, 2, 3]
            assert all(f.central_rank is None for f in figs if f.kind == "table")
            best = [f for f in figs if f.central_rank == 1][0]
            assert best.number == 1  # the architecture figure, first, with the abstract's words


def test_tiny_training_save_load_score_and_eval(tiny, tmp_path):
    from typer.testing import CliRunner
    import typer

    from app.cli.central import register
    from app.central.scoring import CentralScorer, score_papers
    from app.central.scoring import central_model
    from app.central.train import TrainConfig, train_central
    from models.central import CentralBiEncoder, load_meta

    settings, ids = tiny
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps({"sha256": f"{i:064x}", "central": [1, 2]}) + "\n" for i in range(5)))
    app = typer.Typer()
    register(app)
    runner = CliRunner()

    # a model that trained on a gold paper: eval-central refuses to report the gold set
    cfg = TrainConfig(epochs=1, max_steps=2, batch_size=4, max_length=32, val_frac=0.2, seed=0)
    meta = train_central(settings, cfg, progress=False)
    assert meta["steps"] == 2 and len(meta["val_papers"]) == 1 and len(meta["train_papers"]) == 4
    res = runner.invoke(app, ["eval-central", "--data-dir", str(settings.data_dir), "--gold", str(gold),
                              "--out", str(tmp_path / "refused")])
    assert res.exit_code == 2 and "training papers" in res.output
    assert not (tmp_path / "refused" / "report.json").exists()

    # excluding three gold papers: the remaining one trains, the gold file lists the other four
    excl = tmp_path / "excl.txt"
    excl.write_text("".join(f"{i:064x}\n" for i in range(5) if f"{i:064x}" in meta["train_papers"][:3]))
    res = runner.invoke(app, ["train-central", "--data-dir", str(settings.data_dir), "--exclude-papers", str(excl),
                              "--epochs", "1", "--max-steps", "2", "--batch-size", "4", "--max-length", "32"])
    assert res.exit_code == 0, res.output
    found = central_model(settings)  # a new version in the data dir's model store
    assert found.source == "data dir" and found.version and found.path.parent == settings.data_dir / "models" / "central"
    saved = load_meta(found.path)
    assert saved["kind"] == "central-bi-encoder" and saved["config"]["max_length"] == 32
    assert saved["training_data"]["papers"] == saved["train_papers"] and saved["command"] and saved["code_version"]
    assert not set(saved["train_papers"]) & set(excl.read_text().split()) and len(saved["train_papers"]) == 1
    assert "val_selfsup" in saved["metrics"]

    scorer = CentralScorer.from_settings(settings)  # loads the saved model
    assert scorer.uses_model and isinstance(scorer.model, CentralBiEncoder)
    m = scorer.model
    s1 = m.score(["an attention network"], ["The architecture of the attention network."])
    s2 = m.score(["an attention network"], ["The architecture of the attention network."])
    assert len(s1) == 1 and s1 == s2 and -1.0 <= s1[0] <= 1.0  # eval mode: deterministic cosine
    mat = m.score_matrix(["an attention network", "loss curves"], ["The architecture.", "Loss curves.", "AUC."])
    assert mat.shape == (2, 3)
    r = score_papers(settings, paper_ids=ids[:2], scorer=scorer)
    assert r["figures"] == 6 and r["model"] is True

    # gold papers that were trained on are refused; without them (a gold file of held-out papers) it reports
    held = [s_ for s_ in (f"{i:064x}" for i in range(5)) if s_ not in saved["train_papers"]]
    gold2 = tmp_path / "gold2.jsonl"
    gold2.write_text("".join(json.dumps({"sha256": s_, "central": [1, 2]}) + "\n" for s_ in held))
    out = tmp_path / "report"
    res = runner.invoke(app, ["eval-central", "--data-dir", str(settings.data_dir), "--gold", str(gold2),
                              "--out", str(out)])
    assert res.exit_code == 0, res.output
    rep = json.loads((out / "report.json").read_text())
    methods = {"random", "pick_first", "tfidf", "model", "combined"}
    assert methods <= set(rep["selfsup"]) and methods <= set(rep["gold"])
    for m_ in methods:
        assert {"acc@1", "mrr"} <= set(rep["selfsup"][m_])
        assert {"acc@1", "acc@3", "map", "mrr", "ndcg"} <= set(rep["gold"][m_])
    assert rep["gold"]["pick_first"]["acc@1"] == 1.0 and rep["gold"]["pick_first"]["ci95"]["acc@1"] == [1.0, 1.0]
    assert len(rep["gold_details"]) == len(held) == rep["info"]["n_gold_papers"]
    assert set(rep["gold_details"][0]["metrics"]) >= methods
    assert rep["info"]["model_excluded_gold"] is True
    assert "model_vs_tfidf" in rep["selfsup_tests"]
    assert (out / "report.md").read_text().startswith("# Central-figure evaluation")

    # --save-weights publishes the weights fitted on all gold papers; the scorer then uses them
    from app.central.scoring import stored_weights
    from app.model_store import resolve

    assert stored_weights(settings) is None
    res = runner.invoke(app, ["eval-central", "--data-dir", str(settings.data_dir), "--gold", str(gold2),
                              "--out", str(tmp_path / "report2"), "--save-weights"])
    assert res.exit_code == 0, res.output
    fitted = json.loads((tmp_path / "report2" / "report.json").read_text())["info"]["weights_fitted_on_all_gold"]
    assert fitted and stored_weights(settings) == fitted == CentralScorer.from_settings(settings).weights
    meta = resolve("central-weights", settings.data_dir).meta
    assert sorted(meta["training_data"]["papers"]) == sorted(held) and meta["kind"] == "central-weights"


def test_celery_task_runs_eagerly(tiny):
    from workers.tasks import score_central, task_config

    settings, ids = tiny
    r = score_central.delay(ids[:1], task_config(settings)).get()
    assert r["figures"] == 3


def test_table_mentions_are_extra_training_queries(tiny):
    """kind="table" loads a paper's tables (captions + mentions) for the extra training queries."""
    from app.central.data import build_queries, load_papers
    from app.db.schema import Figure, Mention
    from app.db.session import session_scope

    settings, ids = tiny
    with session_scope(settings.db_url) as s:
        t = Figure(paper_id=ids[0], kind="table", number=2, label="Table 2", caption="Table 2: Ablation of the encoder.",
                   page=7)
        t.mentions = [Mention(sentence="Table 2 reports the ablation of the encoder.", position=99)]
        s.add(t)
    tables = {p.id: p for p in load_papers(settings.db_url, kind="table")}
    assert [f.number for f in tables[ids[0]].figures] == [1, 2]
    assert all(f.kind == "table" for p in tables.values() for f in p.figures)
    q = build_queries([tables[ids[0]]])
    assert [(x.target, x.candidates) for x in q] == [(2, [1, 2])]
    figures = {p.id: p for p in load_papers(settings.db_url)}
    assert [f.number for f in figures[ids[0]].figures] == [1, 2, 3]  # the default is still figures only
