"""`figsearch eval`: the recommendation protocols on a data dir, with the learned-model rows when
asked; the served rows rank with the index version's ranking config (`figsearch fit` writes it)."""
from __future__ import annotations

from pathlib import Path

from app.db.session import session_scope
from app.eval.learned import VARIANTS, evaluate_learned, learned_section, order_methods
from app.eval.recommendation import EvalData, keep_evaluable, run_evaluation, select_targets, write_report
from app.search.collection import load_collection
from app.search.embeddings import default_text_encoder, embed_docs
from app.search.engine import SearchEngine
from app.search.indexing import index_root, paper_index, visual_embeddings
from app.search.ranking import RankingConfig
from app.search.versions import current_version
from app.search.vectors import l2_normalize


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
    with session_scope(settings.db_url) as s:
        col = keep_evaluable(load_collection(s))
    if not col.docs:
        raise ValueError("the collection has no figures with enough text to evaluate")
    root = index_root(settings)
    encoder, name = default_text_encoder()
    emb, _ = embed_docs(col.docs, root, encoder, name, progress=progress)
    emb = l2_normalize(emb)
    version = current_version(root)
    engine = SearchEngine.build(col.docs, embeddings=emb, ranking=RankingConfig.load(root / version) if version else None,
                                visual_embeddings=visual_embeddings(settings, col, progress=progress),
                                figure_types=[col.figure_type.get(d.figure_id) for d in col.docs],
                                type_scores=[col.type_scores.get(d.figure_id) for d in col.docs])
    engine.papers = paper_index(col, root, engine.lexical(), engine.paper_ids, progress=progress)
    data = EvalData(col, engine, {"minilm": emb})
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
