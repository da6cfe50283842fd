"""Seed-000 evaluation: figure recommendation (Table 5) and semantic-similarity pairs (Tables 1, 3).

Relevance is weak and automatic: a retrieved figure is relevant to a target when it comes from the
same paper ("Same") or from a paper that cites or is cited by the target's paper ("Citing").
Targets need >= min_same other figures in their paper and >= min_citing figures in linked papers.
Everything fitted (the fusion weight w, similarity thresholds) is fitted on validation targets
(other papers than the test targets) and reported on test targets only.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from app.search.collection import Collection
from app.search.engine import SearchEngine
from app.search.text import analyze

FIRST_STAGE_FILE = "first_stage.json"


def store_first_stage(root: Path, method: str) -> None:
    """The first stage the stored w was tuned for; `similar` uses it by default."""
    root.mkdir(parents=True, exist_ok=True)
    (root / FIRST_STAGE_FILE).write_text(json.dumps({"method": method}))


def read_first_stage(root: Path, default: str = "tfidf") -> str:
    try:
        return json.loads((root / FIRST_STAGE_FILE).read_text())["method"]
    except (FileNotFoundError, KeyError, ValueError):
        return default


W_GRID = [round(x * 0.1, 1) for x in range(11)]
TOP = 100


@dataclass
class Split:
    test: list[int]  # row indices of the engine / collection docs
    val: list[int]
    n_qualifying: int


@dataclass
class EvalData:
    col: Collection
    engine: SearchEngine
    embeddings: dict[str, np.ndarray]  # name -> (n_docs, dim) L2-normalised, aligned with col.docs
    paper_of: np.ndarray = field(init=False)

    def __post_init__(self):
        self.paper_of = np.array([d.paper_id for d in self.col.docs], dtype=np.int64)


def keep_evaluable(col: Collection, min_words: int = 5) -> Collection:
    """The seed drops figures whose preprocessed text has fewer than 5 words."""
    docs = [d for d in col.docs if len(analyze(d.text)) >= min_words]
    return Collection(docs, col.sha_of_paper, col.neighbours)


def select_targets(data: EvalData, min_same: int, min_citing: int, target_shas: set[str] | None,
                   seed: int, val_frac: float = 0.25) -> Split:
    paper_of = data.paper_of
    counts: dict[int, int] = {}
    for p in paper_of.tolist():
        counts[p] = counts.get(p, 0) + 1
    qualifying = []
    for i, p in enumerate(paper_of.tolist()):
        same = counts[p] - 1
        citing = sum(counts.get(q, 0) for q in data.col.neighbours.get(p, ()) if q != p)
        if same >= min_same and citing >= min_citing:
            qualifying.append(i)
    rng = np.random.default_rng(seed)
    if target_shas:
        test = [i for i in qualifying if data.col.sha_of_paper.get(int(paper_of[i])) in target_shas]
        val = [i for i in qualifying if data.col.sha_of_paper.get(int(paper_of[i])) not in target_shas]
    else:  # split by paper so no paper has targets on both sides
        papers = sorted({int(paper_of[i]) for i in qualifying})
        rng.shuffle(papers)
        n_val = max(1, int(round(len(papers) * val_frac))) if len(papers) > 1 else 0
        val_papers = set(papers[:n_val])
        val = [i for i in qualifying if int(paper_of[i]) in val_papers]
        test = [i for i in qualifying if int(paper_of[i]) not in val_papers]
    return Split(test, val, len(qualifying))


def relevance(data: EvalData, target: int, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(same, citing) boolean arrays for retrieved rows."""
    p = int(data.paper_of[target])
    cand = data.paper_of[rows]
    same = cand == p
    neigh = data.col.neighbours.get(p, set())
    citing = np.array([int(c) in neigh for c in cand.tolist()], dtype=bool) & ~same
    return same, citing


def n_relevant(data: EvalData, target: int) -> int:
    p = int(data.paper_of[target])
    neigh = data.col.neighbours.get(p, set())
    return int(sum(1 for q in data.paper_of.tolist() if q == p or q in neigh)) - 1


def metrics_for(data: EvalData, target: int, rows: np.ndarray) -> dict[str, float]:
    rows = np.asarray(rows, dtype=np.int64)[:TOP]
    same, citing = relevance(data, target, rows)
    rel = same | citing
    out = {}
    for k in (1, 3, 5, 10):
        out[f"p@{k}"] = float(rel[:k].sum()) / k
    out["same_p@5"] = float(same[:5].sum()) / 5
    out["citing_p@5"] = float(citing[:5].sum()) / 5
    out["same_p@3"] = float(same[:3].sum()) / 3
    out["citing_p@3"] = float(citing[:3].sum()) / 3
    hits = np.flatnonzero(rel)
    denom = min(n_relevant(data, target), TOP)
    out["ap"] = float(sum((j + 1) / (h + 1) for j, h in enumerate(hits)) / denom) if denom else 0.0
    return out


Ranker = Callable[[int], np.ndarray]  # target row -> ranked candidate rows (target excluded)


def lexical_ranker(data: EvalData, method: str) -> Ranker:
    lex = data.engine.lexical(method)

    def rank(t: int) -> np.ndarray:
        q, qtf = lex.doc_terms(t)
        rows, _ = lex.search_terms(q, qtf, k=TOP, exclude=t)
        return rows
    return rank


def dense_ranker(data: EvalData, emb: np.ndarray) -> Ranker:
    def rank(t: int) -> np.ndarray:
        sims = emb @ emb[t]
        sims[t] = -np.inf
        top = np.argpartition(-sims, min(TOP, len(sims) - 1))[:TOP]
        return top[np.argsort(-sims[top], kind="stable")]
    return rank


def rerank_ranker(data: EvalData, method: str, emb: np.ndarray | Callable[[int], np.ndarray], w: float) -> Ranker:
    """First stage top-100 by `method`, re-ranked by w * minmax(lexical) + (1 - w) * cosine.

    `emb` is the (n_docs, dim) matrix, or a function giving the matrix to use for one target
    (cross-fitted models: each target is embedded by the model that never saw its paper)."""
    from app.search.engine import minmax

    emb_for = emb if callable(emb) else (lambda _t: emb)

    lex = data.engine.lexical(method)
    cache: dict[int, tuple[np.ndarray, np.ndarray]] = getattr(data, f"_cache_{method}", {})
    setattr(data, f"_cache_{method}", cache)

    def rank(t: int) -> np.ndarray:
        if t not in cache:
            q, qtf = lex.doc_terms(t)
            cache[t] = lex.search_terms(q, qtf, k=TOP, exclude=t)
        rows, scores = cache[t]
        if len(rows) == 0:
            return rows
        e = emb_for(t)
        final = w * minmax(scores) + (1 - w) * (e[rows] @ e[t])
        order = np.lexsort((np.arange(len(rows)), -final))
        return rows[order]
    return rank


def evaluate_ranker(data: EvalData, rank: Ranker, targets: list[int]) -> dict[str, list[float]]:
    per: dict[str, list[float]] = {}
    for t in targets:
        for k, v in metrics_for(data, t, rank(t)).items():
            per.setdefault(k, []).append(v)
    return per


def summarise(per: dict[str, list[float]]) -> dict[str, float]:
    out = {k: float(np.mean(v)) if v else 0.0 for k, v in per.items() if k != "ap"}
    out["map"] = float(np.mean(per.get("ap", [0.0]))) if per.get("ap") else 0.0
    return out


def paired_p(a: list[float], b: list[float]) -> float:
    """Two-tailed paired t-test p-value (1.0 when the two are identical)."""
    from scipy.stats import ttest_rel

    a, b = np.asarray(a), np.asarray(b)
    if len(a) < 2 or np.allclose(a, b):
        return 1.0
    p = float(ttest_rel(a, b).pvalue)
    return 1.0 if math.isnan(p) else p


def tune_w(data: EvalData, method: str, emb: np.ndarray, val: list[int]) -> tuple[float, dict[float, float]]:
    """w with the best validation p@5 (ties -> larger w, i.e. closer to the first stage)."""
    sweep = {}
    for w in W_GRID:
        sweep[w] = summarise(evaluate_ranker(data, rerank_ranker(data, method, emb, w), val))["p@5"]
    best = max(W_GRID, key=lambda w: (sweep[w], w))
    return best, sweep


# ----------------------------------------------------------------- pair accuracy (Tables 1, 3)
def sample_pairs(data: EvalData, rows: list[int], n: int, rng) -> dict[str, list[tuple[int, int]]]:
    """Same-paper, citing and random (unrelated) pairs whose first figure is in `rows`' papers."""
    papers = sorted({int(data.paper_of[r]) for r in rows})
    by_paper: dict[int, list[int]] = {}
    for i, p in enumerate(data.paper_of.tolist()):
        by_paper.setdefault(p, []).append(i)
    same, citing, rand = [], [], []
    all_rows = np.arange(len(data.paper_of))
    tries = 0
    while (len(same) < n or len(citing) < n or len(rand) < 2 * n) and tries < 200 * n and papers:
        tries += 1
        p = papers[rng.integers(len(papers))]
        figs = by_paper[p]
        a = figs[rng.integers(len(figs))]
        if len(same) < n and len(figs) > 1:
            b = figs[rng.integers(len(figs))]
            if b != a:
                same.append((a, b))
        neigh = [q for q in data.col.neighbours.get(p, ()) if q in by_paper and q != p]
        if len(citing) < n and neigh:
            q = neigh[rng.integers(len(neigh))]
            citing.append((a, by_paper[q][rng.integers(len(by_paper[q]))]))
        if len(rand) < 2 * n:
            b = int(all_rows[rng.integers(len(all_rows))])
            q = int(data.paper_of[b])
            if q != p and q not in data.col.neighbours.get(p, ()):
                rand.append((a, b))
    return {"same": same, "citing": citing, "random": rand}


def pair_accuracy(sim: Callable[[int, int], float], val_pairs, test_pairs) -> dict[str, float]:
    """Balanced accuracy of `sim > threshold`, threshold tuned on validation pairs."""
    out = {}
    for kind in ("same", "citing"):
        def scored(pairs):
            pos = [sim(a, b) for a, b in pairs[kind]]
            neg = [sim(a, b) for a, b in pairs["random"][: len(pos)]]
            return np.array(pos + neg), np.array([1] * len(pos) + [0] * len(neg))
        xs, ys = scored(val_pairs)
        xt, yt = scored(test_pairs)
        if len(xs) == 0 or len(xt) == 0:
            out[kind] = float("nan")
            continue
        cands = np.unique(xs)
        accs = [((xs > c) == ys).mean() for c in cands]
        th = float(cands[int(np.argmax(accs))])
        out[kind] = float(((xt > th) == yt).mean())
    return out


# ----------------------------------------------------------------- the whole report
def run_evaluation(data: EvalData, split: Split, seed: int = 0, first_stage: str = "tfidf",
                   n_pairs: int = 500) -> dict:
    """All methods on the test targets; w and thresholds from validation."""
    report: dict = {"n_figures": len(data.col.docs), "n_targets": len(split.test), "n_val_targets": len(split.val),
                    "n_qualifying": split.n_qualifying, "first_stage": first_stage, "methods": {}, "w": {},
                    "w_sweep": {}, "pairs": {}}
    per_method: dict[str, dict[str, list[float]]] = {}
    per_method["tfidf"] = evaluate_ranker(data, lexical_ranker(data, "tfidf"), split.test)
    per_method["bm25"] = evaluate_ranker(data, lexical_ranker(data, "bm25"), split.test)
    for name, emb in data.embeddings.items():
        suffix = "" if name == "minilm" else f"_{name}"
        per_method[f"embedding{suffix}"] = evaluate_ranker(data, dense_ranker(data, emb), split.test)
        other = "bm25" if first_stage == "tfidf" else "tfidf"
        for stage in (first_stage, other):
            key = f"rerank{suffix}" if stage == first_stage else f"rerank{suffix}_{stage}"
            w, sweep = tune_w(data, stage, emb, split.val) if split.val else (0.5, {})
            report["w"][key], report["w_sweep"][key] = w, sweep
            per_method[key] = evaluate_ranker(data, rerank_ranker(data, stage, emb, w), split.test)
    base = per_method["tfidf"]["p@5"]
    base3 = per_method["tfidf"]["p@3"]
    for name, per in per_method.items():
        row = summarise(per)
        row["p_value_vs_tfidf"] = paired_p(per["p@5"], base)
        row["p_value_p@3_vs_tfidf"] = paired_p(per["p@3"], base3)
        report["methods"][name] = row

    rng = np.random.default_rng(seed + 1)
    val_pairs = sample_pairs(data, split.val, n_pairs // 5 or 1, rng) if split.val else None
    test_pairs = sample_pairs(data, split.test, n_pairs, rng)
    if val_pairs:
        tf = data.engine.lexical("tfidf").matrix.tocsr()

        def tfidf_sim(a, b):
            return float(tf[a].multiply(tf[b]).sum())
        report["pairs"]["tfidf"] = pair_accuracy(tfidf_sim, val_pairs, test_pairs)
        for name, emb in data.embeddings.items():
            report["pairs"][name] = pair_accuracy(lambda a, b, e=emb: float(e[a] @ e[b]), val_pairs, test_pairs)
        report["pairs"]["n_test_pairs"] = {k: len(v) for k, v in test_pairs.items()}
    return report


def write_report(report: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=1))
    lines = [f"# figsearch evaluation (seed-000 protocol)", "",
             f"Figures: {report['n_figures']}; qualifying targets: {report['n_qualifying']}; "
             f"test targets: {report['n_targets']}; validation targets: {report['n_val_targets']}; "
             f"first stage: {report['first_stage']}.", "",
             "## Recommendation (Table 5)", "",
             "| method | p@3 | p@5 | Same p@5 | Citing p@5 | MAP | p-value p@5 vs tf.idf | w |",
             "|---|---|---|---|---|---|---|---|"]
    for name, m in report["methods"].items():
        w = report["w"].get(name, "")
        lines.append(f"| {name} | {m['p@3']:.3f} | {m['p@5']:.3f} | {m['same_p@5']:.3f} | {m['citing_p@5']:.3f} | "
                     f"{m['map']:.3f} | {m['p_value_vs_tfidf']:.3g} | {w} |")
    if report.get("pairs"):
        lines += ["", "## Semantic similarity pair accuracy (Tables 1, 3)", "",
                  "| representation | Same vs random | Citing vs random |", "|---|---|---|"]
        for name, acc in report["pairs"].items():
            if name == "n_test_pairs":
                continue
            lines.append(f"| {name} | {acc['same']:.3f} | {acc['citing']:.3f} |")
        lines.append(f"\nTest pairs: {report['pairs'].get('n_test_pairs')}; thresholds tuned on validation pairs.")
    lines += ["", "Relevant = same paper or citing/cited paper. Paired two-tailed t-test on per-target p@5.",
              "w tuned on validation targets (papers disjoint from test targets) over " + str(W_GRID) + "."]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    _plots(report, out)


def _plots(report: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ks = [1, 3, 5, 10]
    for name, m in report["methods"].items():
        ax.plot(ks, [m[f"p@{k}"] for k in ks], marker="o", label=name)
    ax.set_xlabel("k"), ax.set_ylabel("precision@k"), ax.set_title("Recommendation precision (test targets)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "precision_at_k.png", dpi=120)
    plt.close(fig)
    if report["w_sweep"]:
        fig, ax = plt.subplots(figsize=(6, 4))
        for name, sweep in report["w_sweep"].items():
            if sweep:
                ax.plot(list(map(float, sweep.keys())), list(sweep.values()), marker="o", label=name)
        ax.set_xlabel("w (weight of the lexical score)"), ax.set_ylabel("validation p@5")
        ax.set_title("Fusion weight sweep (validation targets)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "w_sweep.png", dpi=120)
        plt.close(fig)


def evaluate_data_dir(settings, out: Path, target_papers: Path | None = None, seed: int = 0,
                      min_same: int = 5, min_citing: int = 5, first_stage: str = "tfidf",
                      store_w: bool = True, progress: bool = True, learned: bool = False,
                      ablation: bool = False, variants: list[str] | None = None, folds: int = 3) -> dict:
    """`figsearch eval`: load the collection, embed (cached), evaluate, write the report and
    store the validation-tuned w for the product's re-ranker.

    Rows `embedding`/`rerank` are the default learned model (app.learn, issue 4), evaluated honestly
    by cross-fitting: the target papers (test + validation) are split into `folds` folds and each
    target is embedded by a model trained with its fold's papers excluded from every training pair
    (models cached under data_dir/models/.eval). MiniLM rows are `embedding_minilm`/`rerank_minilm`.
    `ablation=True` adds the variants of app.learn.ablation (or `variants`). `learned=False` (the
    default: cheap, figure text only, the seed's headline protocol) gives the MiniLM-only report."""
    from app.db.session import session_scope
    from app.search.collection import load_collection
    from app.search.indexing import default_text_encoder, embed_docs, index_root
    from app.search.vectors import l2_normalize

    with session_scope(settings.db_url) as s:
        col = keep_evaluable(load_collection(s))
    if not col.docs:
        raise ValueError("the collection has no figures with enough text to evaluate")
    encoder, name = default_text_encoder()
    emb, _ = embed_docs(col.docs, index_root(settings), encoder, name, progress=progress)
    emb = l2_normalize(emb)
    engine = SearchEngine.build(col.docs, embeddings=None)
    data = EvalData(col, engine, {"minilm": emb})  # the MiniLM embedding: unsuffixed rows
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
    w_key = "rerank"
    if learned:
        from app.learn.ablation import VARIANTS, evaluate_learned, order_methods
        from app.learn.registry import current_model_dir

        for d in (report["methods"], report["w"], report["w_sweep"]):
            for k in [k for k in d if k in ("embedding", "rerank") or k.startswith("rerank_")]:
                d[k.replace("embedding", "embedding_minilm").replace("rerank", "rerank_minilm", 1)] = d.pop(k)
        if ablation and variants is None:
            variants = list(VARIANTS) + ["fcc_ce", "fcc_pearson"]
        evaluate_learned(settings, data, split, report, seed=seed, first_stage=first_stage,
                         variants=variants if ablation or variants else [], folds=folds, progress=progress)
        order_methods(report)
        # the w stored for the product must match the vectors the index holds
        w_key = "rerank" if current_model_dir(settings.data_dir) is not None else "rerank_minilm"
    elif store_w:
        from app.learn.registry import current_model_dir

        if current_model_dir(settings.data_dir) is not None:
            store_w = False  # the index holds learned vectors: a MiniLM-tuned w would not fit them
    write_report(report, out)
    if learned:
        from app.learn.ablation import learned_section

        with open(out / "report.md", "a") as f:
            f.write(learned_section(report))
    if store_w and split.val and w_key in report["w"]:
        SearchEngine.store_w(index_root(settings), report["w"][w_key])
        store_first_stage(index_root(settings), first_stage)
    return report
