"""Related-figure evaluation (Kuzi & Zhai's protocol): figure recommendation (Table 5) and semantic-similarity pairs (Tables 1, 3).

Relevance is weak and automatic: a retrieved figure is relevant to a target when it comes from the
same paper ("Same") or from a paper that cites or is cited by the target's paper ("Citing").
Targets need >= min_same other figures in their paper and >= min_citing figures in linked papers.
Everything fitted (the fusion weight w, similarity thresholds) is fitted on validation targets
(other papers than the test targets) and reported on test targets only.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from app.extras import require
from app.stats import cluster_ci
from app.search.collection import Collection
from app.search.searcher import Searcher
from app.search.papers import PAPER_SIGNALS
from app.search.fusion import DEFAULT_WEIGHTS, FIGURE_LEVEL, SAME_TYPE_BONUS, diversify, fuse, order, seed_weights
from app.search.text import analyze

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
    engine: Searcher
    embeddings: dict[str, np.ndarray]  # name -> (n_docs, dim) L2-normalised, aligned with col.docs
    paper_of: np.ndarray = field(init=False)

    def __post_init__(self):
        self.paper_of = np.array([d.paper_id for d in self.col.docs], dtype=np.int64)


def keep_evaluable(col: Collection, min_words: int = 5) -> Collection:
    """The protocol drops figures whose preprocessed text has fewer than 5 words."""
    docs = [d for d in col.docs if len(analyze(d.text)) >= min_words]
    return replace(col, docs=docs)


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
        final = fuse({"lexical": scores, "text": e[rows] @ e[t]}, seed_weights(w))
        return rows[order(final)]
    return rank


def evaluate_ranker(data: EvalData, rank: Ranker, targets: list[int], metrics=None) -> dict[str, list[float]]:
    """Per-target metrics (same-paper + citing relevance by default; `metrics=cross_paper_metrics` for the other)."""
    metrics = metrics or metrics_for
    per: dict[str, list[float]] = {}
    for t in targets:
        for k, v in metrics(data, t, rank(t)).items():
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
                    "w_sweep": {}, "pairs": {}, "fusion_weights": {},
                    "rerank": "served figure-level ranking: figure text, pixels and figure type, no "
                              "paper field; fusion weights fitted on validation targets"}
    per_method: dict[str, dict[str, list[float]]] = {}
    per_method["tfidf"] = evaluate_ranker(data, lexical_ranker(data, "tfidf"), split.test)
    per_method["bm25"] = evaluate_ranker(data, lexical_ranker(data, "bm25"), split.test)
    for name, emb in data.embeddings.items():
        suffix = f"_{name}"
        per_method[f"embedding{suffix}"] = evaluate_ranker(data, dense_ranker(data, emb), split.test)
        other = "bm25" if first_stage == "tfidf" else "tfidf"
        for stage in (first_stage, other):
            key = f"rerank{suffix}" if stage == first_stage else f"rerank{suffix}_{stage}"
            w, sweep = tune_w(data, stage, emb, split.val) if split.val else (0.5, {})
            report["w"][key], report["w_sweep"][key] = w, sweep
            per_method[key] = evaluate_ranker(data, rerank_ranker(data, stage, emb, w), split.test)
    # the headline: the served figure-level ranking (figure text, pixels, type; no paper field)
    per_method["rerank"], report["fusion_weights"]["all"] = run_figure_level(data, split)
    report["cross_paper"], report["fusion_weights"]["other_papers"] = run_cross_paper(data, split)
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
    lines = ["# figsearch evaluation (same-paper and citing-paper relevance)", "",
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
    cp = report.get("cross_paper")
    if cp:
        lines += ["", "## Related figures in other papers (cross-paper)", "",
                  f"Test targets: {cp['n_targets']} from {cp.get('n_papers', '?')} papers. Relevant: {cp['relevant']}. "
                  f"Significance: {cp['significance']}.", "",
                  "| method | p@5 | p@10 | MAP | same type in top 5 | uses paper fields | p-value p@5 vs tf.idf "
                  "| weights |",
                  "|---|---|---|---|---|---|---|---|"]
        for name, m in cp["methods"].items():
            same = f"{m['same_type@5']:.3f}" if "same_type@5" in m else "-"
            lines.append(f"| {name} | {m['p@5']:.3f} | {m['p@10']:.3f} | {m['map']:.3f} | {same} | "
                         f"{'yes' if m['uses_paper_fields'] else 'no'} | {m['p_value_vs_tfidf']:.3g} | "
                         f"{json.dumps(m['weights'])} |")
        pv = cp.get("paper_views")
        if pv and pv.get("views"):
            lines += ["", f"Paper views alone: ranking the citing/cited papers of the test targets' "
                          f"{pv['n_papers']} papers among all other papers (no figures; the served "
                          f"ranking's top five come from its best two or three papers).", "",
                      "| paper view | p@1 | p@3 | MAP |", "|---|---|---|---|"]
            lines += [f"| {k} | {v['p@1']:.3f} | {v['p@3']:.3f} | {v['map']:.3f} |" for k, v in pv["views"].items()]
        d = cp["methods"].get("default")
        if d and "p_value_vs_tfidf_abstract" in d:
            lo, hi = d["diff_vs_tfidf_abstract_ci95"]
            lines.append(f"\nServed ranking vs tfidf_abstract: p = {d['p_value_vs_tfidf_abstract']:.3g}, "
                         f"p@5 difference 95% CI [{lo:.3f}, {hi:.3f}].")
    lines += ["", "Relevant = same paper or citing/cited paper. Paired two-tailed t-test on per-target p@5.",
              "w tuned on validation targets (papers disjoint from test targets) over " + str(W_GRID) + "."]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    _plots(report, out)


def _plots(report: dict, out: Path) -> None:
    matplotlib = require("matplotlib", "eval", "the evaluation's plots")

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


# ----------------------------------------------------------------- the served ranking
@dataclass
class Candidates:
    """Per target: the engine's candidate rows and their signals (computed once, re-weighted
    cheaply while fitting and scoring)."""
    rows: dict[int, np.ndarray]
    signals: dict[int, dict[str, np.ndarray | None]]


def engine_candidates(data: EvalData, targets: list[int], scope: str, union_dense: int = 0,
                      union_papers: int = 0, method: str = "tfidf",
                      extra: Callable[[int, np.ndarray], dict[str, np.ndarray]] | None = None) -> Candidates:
    """The served first stage of `scope` for each target; `extra(t, rows)` may add signals (the
    protocol test plants a same-paper indicator this way)."""
    rows_of, sig_of = {}, {}
    for t in targets:
        rows, scores = data.engine.candidates(t, scope, method, TOP, union_dense, union_papers, exact=True)
        sig = data.engine.signals(t, rows, scores)
        if extra is not None:
            sig.update(extra(t, rows))
        rows_of[t], sig_of[t] = rows, sig
    return Candidates(rows_of, sig_of)


def fused_ranker(cands: Candidates, weights: dict[str, float], paper_of: np.ndarray | None = None,
                 max_per_paper: int = 0) -> Ranker:
    """Rank a target's candidates with the product's fusion rule (fusion.fuse), optionally with
    at most `max_per_paper` figures of a paper before every other paper's (fusion.diversify)."""
    def rank(t: int) -> np.ndarray:
        rows = cands.rows[t]
        if not len(rows):
            return rows
        ranked = order(fuse(cands.signals[t], weights))
        if max_per_paper and paper_of is not None:
            ranked = diversify(ranked, paper_of[rows], max_per_paper)
        return rows[ranked]
    return rank


def fit_fusion(cands: Candidates, val: list[int], metric: Callable[[Ranker, list[int]], float],
               signals: tuple[str, ...]) -> tuple[dict[str, float], float]:
    """Fusion weights with the best validation metric (fusion.fit_weights), lexical fixed at 1."""
    from app.search.fusion import fit_weights

    present = tuple(s for s in signals
                    if any(cands.signals[t].get(s) is not None for t in val))
    if "lexical" not in present:
        present = ("lexical",) + present
    return fit_weights(lambda w: metric(fused_ranker(cands, w), val), present, anchor="lexical")


# ----------------------------------------------------------------- cross-paper protocol
def cross_paper_metrics(data: EvalData, target: int, rows: np.ndarray) -> dict[str, float]:
    """Same-paper figures are not candidates; relevant = a figure of a citing or cited paper."""
    p = int(data.paper_of[target])
    rows = np.asarray(rows, dtype=np.int64)
    rows = rows[data.paper_of[rows] != p][:TOP]
    neigh = data.col.neighbours.get(p, set())
    rel = np.array([int(q) in neigh for q in data.paper_of[rows].tolist()], dtype=bool)
    out = {f"p@{k}": float(rel[:k].sum()) / k for k in (5, 10)}
    # not relevance: how many of the first five show the same kind of figure (dominant type)
    own_type = data.engine.types.type_of_row(target)
    if own_type is not None and len(rows):
        out["same_type@5"] = float(np.mean([data.engine.types.type_of_row(int(r)) == own_type for r in rows[:5]]))
    n_rel = int(sum(1 for q in data.paper_of.tolist() if q in neigh and q != p))
    hits = np.flatnonzero(rel)
    denom = min(n_rel, TOP)
    out["ap"] = float(sum((j + 1) / (h + 1) for j, h in enumerate(hits)) / denom) if denom else 0.0
    return out


def evaluate_cross(data: EvalData, rank: Ranker, targets: list[int]) -> dict[str, list[float]]:
    return evaluate_ranker(data, rank, targets, cross_paper_metrics)


def paper_grouped_test(data: EvalData, targets: list[int], a: list[float], b: list[float],
                       n_boot: int = 2000, seed: int = 0) -> dict[str, float]:
    """Targets of one paper are not independent: average per paper, then a paired t-test over
    papers and a paper-cluster bootstrap 95% interval of the mean difference (a - b, app.stats)."""
    from scipy.stats import ttest_rel

    papers: dict[int, list[int]] = {}
    for i, t in enumerate(targets):
        papers.setdefault(int(data.paper_of[t]), []).append(i)
    a, b = np.asarray(a, float), np.asarray(b, float)
    pa = np.array([a[ix].mean() for ix in papers.values()])
    pb = np.array([b[ix].mean() for ix in papers.values()])
    if len(pa) < 2 or np.allclose(pa, pb):
        p = 1.0
    else:
        p = float(ttest_rel(pa, pb).pvalue)
        p = 1.0 if math.isnan(p) else p
    ci = cluster_ci([int(data.paper_of[t]) for t in targets], a - b, n=n_boot, seed=seed, digits=None) if targets else [0.0, 0.0]
    return {"p_value": p, "diff": float(a.mean() - b.mean()), "ci95": ci, "n_papers": len(papers)}


PAPER_FIELD_SIGNALS = PAPER_SIGNALS


def run_cross_paper(data: EvalData, split: Split, union_dense: int | None = None, union_papers: int | None = None,
                    extra: Callable[[int, np.ndarray], dict[str, np.ndarray]] | None = None) -> tuple[dict, dict]:
    """The `cross_paper` section: for each test target, rank the figures of *other* papers;
    relevant = a figure of a citing or cited paper. Returns (section, fitted served weights)."""
    targets, val = split.test, split.val
    # the served candidates and weights (the engine's ranking config) unless told otherwise
    cfg = data.engine.ranking
    union_dense = cfg.union_dense if union_dense is None else union_dense
    union_papers = cfg.union_papers if union_papers is None else union_papers

    def val_p5(rank: Ranker, ts: list[int]) -> float:
        # MAP: smoother than p@5 on a hundred validation targets, so the fit overfits less
        return summarise(evaluate_cross(data, rank, ts))["map"]

    lexical_only = engine_candidates(data, targets + val, "other_papers", 0, 0, extra=extra)
    served = engine_candidates(data, targets + val, "other_papers", union_dense, union_papers, extra=extra,
                               method=cfg.first_stage)
    per: dict[str, dict[str, list[float]]] = {}
    uses_paper: dict[str, bool] = {}
    weights: dict[str, dict[str, float]] = {}
    per["tfidf"] = evaluate_cross(data, fused_ranker(lexical_only, {"lexical": 1.0}), targets)
    weights["tfidf"], uses_paper["tfidf"] = {"lexical": 1.0}, False
    # untrained: equal weights of tf.idf and the cosine of the two papers' abstracts
    w_ta = {"lexical": 0.5, "paper": 0.5}
    per["tfidf_abstract"] = evaluate_cross(data, fused_ranker(lexical_only, w_ta), targets)
    weights["tfidf_abstract"], uses_paper["tfidf_abstract"] = w_ta, True
    if data.engine.papers is not None and data.engine.papers.dense is not None:
        all_other = {t: np.flatnonzero(data.paper_of != data.paper_of[t]) for t in targets}
        papers = data.engine.papers

        def abstract_rank(t: int) -> np.ndarray:
            rows = all_other[t]
            cos = papers.similarity(int(data.paper_of[t]), data.paper_of[rows])["paper"]
            return rows[order(cos)]
        per["abstract"] = evaluate_cross(data, abstract_rank, targets)
        weights["abstract"], uses_paper["abstract"] = {"paper": 1.0}, True
    if data.engine.vectors is not None:
        w_text, _ = fit_fusion(lexical_only, val, val_p5, ("text",)) if val else ({"lexical": .5, "text": .5}, 0)
        per["tfidf_text"] = evaluate_cross(data, fused_ranker(lexical_only, w_text), targets)
        weights["tfidf_text"], uses_paper["tfidf_text"] = w_text, False
        w_fig, _ = fit_fusion(served, val, val_p5, FIGURE_LEVEL) if val else (DEFAULT_WEIGHTS["all"], 0)
        per["figure_level"] = evaluate_cross(data, fused_ranker(served, w_fig), targets)
        weights["figure_level"], uses_paper["figure_level"] = w_fig, False
    from app.search.fusion import SIGNALS

    signals = SIGNALS + tuple(k for k in (served.signals[targets[0]] if targets else {}) if k not in SIGNALS)
    if val:  # citation-fitted weights, for comparison (the same-type bonus is a product choice, not fitted)
        w_cit, _ = fit_fusion(served, val, val_p5, tuple(s for s in signals if s != "type"))
        w_cit["type"] = SAME_TYPE_BONUS
        per["citation_fitted"] = evaluate_cross(data, fused_ranker(served, w_cit, data.paper_of, cfg.max_per_paper),
                                                targets)
        weights["citation_fitted"] = w_cit
        uses_paper["citation_fitted"] = any(w_cit.get(s, 0) for s in PAPER_FIELD_SIGNALS)
    # the served ranking: the ranking config's weights, never fitted on these citation labels
    w_def = cfg.weights_of("other_papers")
    per["default"] = evaluate_cross(data, fused_ranker(served, w_def, data.paper_of, cfg.max_per_paper),
                                    targets)
    per["default_undiversified"] = evaluate_cross(data, fused_ranker(served, w_def), targets)
    weights["default"] = weights["default_undiversified"] = w_def
    uses_paper["default"] = uses_paper["default_undiversified"] = any(w_def.get(s, 0) for s in PAPER_FIELD_SIGNALS)
    section = {"n_targets": len(targets), "n_val_targets": len(val), "methods": {},
               "relevant": "figures of papers citing or cited by the target's paper; the target's "
                           "own paper is not a candidate",
               "significance": "paired t-test over per-paper means; 95% paper-cluster bootstrap "
                               "interval of the p@5 difference"}
    if data.engine.papers is not None:
        section["paper_views"] = paper_view_ranking(data, targets, w_def)
    for name, m in per.items():
        row = {"p@5": float(np.mean(m["p@5"])), "p@10": float(np.mean(m["p@10"])),
               "map": float(np.mean(m["ap"])), "uses_paper_fields": uses_paper[name],
               "weights": weights[name]}
        if m.get("same_type@5"):
            row["same_type@5"] = float(np.mean(m["same_type@5"]))
        test = paper_grouped_test(data, targets, m["p@5"], per["tfidf"]["p@5"])
        row["p_value_vs_tfidf"], row["diff_vs_tfidf_ci95"] = test["p_value"], test["ci95"]
        if name == "default":
            t2 = paper_grouped_test(data, targets, m["p@5"], per["tfidf_abstract"]["p@5"])
            row["p_value_vs_tfidf_abstract"], row["diff_vs_tfidf_abstract_ci95"] = t2["p_value"], t2["ci95"]
            section["n_papers"] = test["n_papers"]
        section["methods"][name] = row
    return section, w_def


def paper_view_ranking(data: EvalData, targets: list[int], weights: dict[str, float]) -> dict:
    """How well each paper-level view alone ranks the papers that cite or are cited by a target's
    paper among all other papers (p@1, p@3, MAP over the test targets' papers), and the views mixed
    with the served `weights`. Cross-paper p@5 of the served ranking (at most a few figures per
    paper) is bounded by this: its top five figures come from its two or three best papers."""
    papers = data.engine.papers
    pids = np.unique(data.paper_of)
    mine = sorted({int(data.paper_of[t]) for t in targets})
    per: dict[str, dict[str, list[float]]] = {}
    for p in mine:
        neigh = data.col.neighbours.get(p, set())
        others = pids[pids != p]
        if not neigh & set(others.tolist()):
            continue
        sims = papers.similarity(p, others)
        sims["served_mix"] = sum(float(weights.get(k, 0)) * v for k, v in sims.items() if k in PAPER_SIGNALS)
        for name, sc in sims.items():
            rel = np.array([int(q) in neigh for q in others[order(sc)].tolist()], dtype=bool)
            hits = np.flatnonzero(rel)
            m = per.setdefault(name, {"p@1": [], "p@3": [], "ap": []})
            m["p@1"].append(float(rel[:1].mean()))
            m["p@3"].append(float(rel[:3].mean()))
            m["ap"].append(float(np.mean((np.arange(len(hits)) + 1) / (hits + 1))))
    return {"n_papers": len(next(iter(per.values()))["ap"]) if per else 0,
            "views": {k: {"p@1": float(np.mean(m["p@1"])), "p@3": float(np.mean(m["p@3"])),
                          "map": float(np.mean(m["ap"]))} for k, m in per.items()}}


def run_figure_level(data: EvalData, split: Split, union_dense: int | None = None) -> tuple[dict[str, list[float]], dict[str, float]]:
    """The served `all` ranking restricted to figure-level signals (no paper field), weights
    fitted on validation targets; per-target metrics of the published protocol on the test targets."""
    cands = engine_candidates(data, split.test + split.val, "all", union_dense or 0, 0)

    def val_p5(rank: Ranker, ts: list[int]) -> float:
        return summarise(evaluate_ranker(data, rank, ts))["p@5"]
    w, _ = fit_fusion(cands, split.val, val_p5, FIGURE_LEVEL) if split.val else (DEFAULT_WEIGHTS["all"], 0)
    return evaluate_ranker(data, fused_ranker(cands, w), split.test), w
