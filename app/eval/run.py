"""`figsearch eval`: the recommendation protocols on a data dir, with the learned-model rows when
asked; the served rows rank with the index version's ranking config (`figsearch fit` writes it)."""
from __future__ import annotations

from pathlib import Path

from app.db.session import session_scope
from app.eval.learned import evaluate_learned, learned_section, order_methods
from app.learn.variants import VARIANTS
from app.eval.recommendation import EvalData, keep_evaluable, run_evaluation, select_targets, write_report
from app.search.collection import load_collection
from app.search.embeddings import default_text_encoder, embed_docs
from app.pipeline.searching import open_searcher
from app.search.searcher import Searcher
from app.pipeline.indexing import index_root, paper_index, visual_embeddings
from app.search.ranking import RankingConfig
from app.model_store.versions import current_version
from app.search.vectors import l2_normalize


def citation_data(settings, progress: bool = False) -> EvalData:
    """The collection and an engine built like the served index (figure text, MiniLM figure text,
    the figures' visual vectors and types, the words inside them, the papers' views) over the figures with enough text,
    ranking with the served version's config: what the citation protocols evaluate."""
    with session_scope(settings.db_url) as s:
        col = keep_evaluable(load_collection(s))
    if not col.docs:
        raise ValueError("the collection has no figures with enough text to evaluate")
    root = index_root(settings)
    encoder, name = default_text_encoder()
    emb, _ = embed_docs(col.docs, root, encoder, name, progress=progress)
    emb = l2_normalize(emb)
    version = current_version(root)
    engine = Searcher.build(col.docs, embeddings=emb, ranking=RankingConfig.load(root / version) if version else None,
                            visual_embeddings=visual_embeddings(settings, col, progress=progress),
                            figure_types=[col.figure_type.get(d.figure_id) for d in col.docs],
                            type_scores=[col.type_scores.get(d.figure_id) for d in col.docs],
                            region_words=[col.region_words.get(d.figure_id, "") for d in col.docs])
    engine.papers = paper_index(col, root, engine.lexical(), engine.paper_ids, progress=progress)
    return EvalData(col, engine, {"minilm": emb})


def evaluate_data_dir(settings, out: Path, target_papers: Path | None = None, seed: int = 0,
                      min_same: int = 5, min_citing: int = 5, first_stage: str = "tfidf",
                      progress: bool = True, learned: bool = False,
                      ablation: bool = False, variants: list[str] | None = None, folds: int = 3) -> dict:
    """`figsearch eval`: load the collection, embed (cached), evaluate the served ranking config
    (and the comparison rankings) and write the report; `figsearch fit` writes the config.

    The engine evaluated is built like the served index (figure text, MiniLM figure text, the
    figures' visual vectors and types, the papers' title + abstract vectors). `learned=True` adds
    the trained fusion models (app.learn), cross-fitted so that each target is embedded by a model
    that never saw its paper; `ablation=True` adds their variants (or `variants`)."""
    data = citation_data(settings, progress)
    shas = None
    if target_papers is not None:
        shas = {l.strip().lower() for l in Path(target_papers).read_text().splitlines() if l.strip()}
    split = select_targets(data, min_same, min_citing, shas, seed)
    if not split.test:
        raise ValueError(f"no test targets qualify ({split.n_qualifying} figures qualify overall; "
                         f"min_same={min_same}, min_citing={min_citing})")
    report = run_evaluation(data, split, seed=seed, first_stage=first_stage)
    report.update(seed=seed, min_same=min_same, min_citing=min_citing,
                  target_papers=str(target_papers) if target_papers else None)
    if learned:
        if ablation and variants is None:
            variants = list(VARIANTS) + ["fcc_ce", "fcc_pearson"]
        evaluate_learned(settings, data, split, report, seed=seed, first_stage=first_stage,
                         variants=variants if ablation or variants else [], folds=folds, progress=progress)
        order_methods(report)
    write_report(report, out)
    if learned:
        with open(out / "report.md", "a") as f:
            f.write(learned_section(report))
    return report


def _served_judged(settings, judgments: list[Path], judge: str | None = None):
    from app.eval.judged import agreement, judges_of, read_judgments, resolve

    engine = open_searcher(index_root(settings), gpu=settings.faiss_gpu)
    rows = [r for path in judgments for r in read_judgments(path)]
    with session_scope(settings.db_url) as s:
        judged = resolve(s, rows, judge=judge)
    names = sorted(j for j in judges_of(rows) if j)
    judged.agreement = {f"{a} vs {b}": agreement(rows, a, b) for i, a in enumerate(names) for b in names[i + 1:]}
    return engine, judged


def evaluate_judged(settings, judgments: list[Path], out: Path, judge: str | None = None) -> str:
    """`figsearch eval --judgments`: the served index's ranking (and the comparison rankings) on
    graded pairs; writes judged.json and judged.md, returns the markdown."""
    import json

    from app.eval.fit import judged_report_md
    from app.eval.judged import TOP, baseline_rankers, evaluate_rankings

    engine, judged = _served_judged(settings, judgments, judge)
    queries = [q for q in judged.queries if q in engine]
    rankers = baseline_rankers(engine)
    result = {"n_queries": len(queries), "n_papers": len({judged.paper_of_query[q] for q in queries}),
              "index_version": engine.version, "ranking": engine.ranking.to_json(), "judge": judge or "mean of all",
              "judged_pairs_not_in_collection": judged.missing, "agreement": judged.agreement,
              "rankings": evaluate_rankings(judged, rankers, queries),
              # the served ranking's top five per query figure id: what /figures/{id}/similar shows
              "served_top5": {str(q): [h.figure_id for h in hits] for q, hits in
                              engine.batch_similar(queries, k=TOP, scope="other_papers").items()}}
    out.mkdir(parents=True, exist_ok=True)
    (out / "judged.json").write_text(json.dumps(result, indent=1))
    md = judged_report_md(result)
    (out / "judged.md").write_text(md)
    return md


def citation_guard(settings, ranking, floor: float, seed: int = 0):
    """A check of fusion weights against the citation protocol's validation targets (papers
    disjoint from its test targets): how far their cross-paper p@5 there falls short of `floor`
    times that of the default weights, as a share of that bar (0 when it reaches it). Returns
    (shortfall, description)."""
    from app.eval.recommendation import engine_candidates, evaluate_cross, fused_ranker, summarise
    from app.search.fusion import DEFAULT_WEIGHTS

    data = citation_data(settings)
    split = select_targets(data, 5, 5, None, seed)
    cands = engine_candidates(data, split.val, "other_papers", ranking.union_dense, ranking.union_papers,
                              method=ranking.first_stage)

    def p5(weights) -> float:
        return summarise(evaluate_cross(data, fused_ranker(cands, weights, data.paper_of, ranking.max_per_paper),
                                        split.val))["p@5"] if split.val else 0.0
    bar = floor * p5(DEFAULT_WEIGHTS["other_papers"])
    seen: dict[tuple, float] = {}

    def shortfall(weights) -> float:
        key = tuple(sorted((k, v) for k, v in weights.items() if v))
        if key not in seen:
            seen[key] = max(0.0, bar - p5(weights)) / bar if bar > 0 else 0.0
        return seen[key]
    return shortfall, (f"citation cross-paper p@5 on {len(split.val)} validation targets >= "
                                      f"{floor} x the default weights' ({bar:.3f})")


def fit_judged(settings, judgments: list[Path], out: Path, folds: int = 4, seed: int = 0,
               publish: bool = True, judge: str | None = None,
               citation_floor: float | None = None, without: tuple[str, ...] = (),
               report_judge: str | None = None) -> tuple[str, str | None]:
    """`figsearch fit`: cross-validated weights on the judged set, then the weights fitted on every
    query published with the index as a new version (unless `publish` is False)."""
    import json
    import sys

    from app.eval.fit import cross_validate, fitted_config, judged_report_md, other_judge
    from app.search.ranking import publish_ranking

    engine, judged = _served_judged(settings, judgments, judge)
    guard = citation_guard(settings, engine.ranking, floor=citation_floor) if citation_floor else None
    result = cross_validate(engine, judged, n_folds=folds, seed=seed, guard=guard, without=without)
    result.update(index_version=engine.version, judge=judge or "mean of all", agreement=judged.agreement)
    if report_judge:
        _, graded = _served_judged(settings, judgments, report_judge)
        result["other_judge"] = other_judge(result, graded, report_judge)
    out.mkdir(parents=True, exist_ok=True)
    (out / "fit.json").write_text(json.dumps(result, indent=1))
    md = judged_report_md(result, "Ranking weights fitted on judged related figures (held-out folds)")
    (out / "fit.md").write_text(md)
    version = None
    if publish and (result["guard_shortfall"] or {}).get("final", 0) > 0:
        md += "\nNot published: the weights fitted on every query miss the citation floor.\n"
    elif publish:
        cfg = fitted_config(engine, result, judgments, " ".join(["figsearch"] + sys.argv[1:]))
        version = publish_ranking(index_root(settings), cfg)
    return md, version
