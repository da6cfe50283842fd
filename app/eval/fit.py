"""`figsearch fit`: the ranking config's weights for related figures in other papers, fitted on
graded judgments, and `figsearch eval --judgments`: the judged metrics of the served ranking and
of the comparison rankings.

The served first stage (the config's lexical method, lexical, nearest-embedding and related-paper
candidates) is computed once per query; weights are then searched on a small grid (fusion.
fit_weights) to maximise nDCG@5 + close_fill + related_fill on the queries of the training folds, an unjudged
candidate counting as grade 0 (a weight is never rewarded for surfacing figures nobody looked at;
the unjudged share of the held-out top fives is reported). Folds are grouped by the query's paper;
each query is scored once, by weights that never saw its paper. The shipped weights are then
fitted on every query, and the held-out numbers are stored with them in the config.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.eval.judged import Judged, baseline_rankers, evaluate_rankings, query_metrics
from app.search.fusion import GRID, diversify, fit_weights, fuse, order
from app.stats import paired_by_paper, paper_folds

# figure-level signals and paper-level ones: the weights searched (lexical is the anchor)
FIT_SIGNALS = ("text", "visual", "type", "type_scores", "figure_words", "paper", "paper_text", "paper_body",
               "paper_figures")


@dataclass
class QueryCandidates:
    figure_ids: np.ndarray
    paper_ids: np.ndarray
    signals: dict


def served_candidates(engine, judged: Judged) -> dict[int, QueryCandidates]:
    """The served first stage of scope other_papers, per judged query in the index."""
    cfg = engine.ranking
    out = {}
    for q in judged.queries:
        if q not in engine:
            continue
        row = engine.row_of(q)
        rows, scores = engine.candidates(row, "other_papers", cfg.first_stage, cfg.candidates, cfg.union_dense,
                                         cfg.union_papers)
        out[q] = QueryCandidates(engine.figure_ids[rows], engine.paper_ids[rows], engine.signals(row, rows, scores))
    return out


def rank_candidates(c: QueryCandidates, weights: dict, max_per_paper: int, judged_only: dict | None = None) -> list[int]:
    """The served rule (fuse + at most `max_per_paper` of a paper first) over a query's candidates,
    restricted to the judged ones when `judged_only` (their grades) is given."""
    fids, papers, sig = c.figure_ids, c.paper_ids, c.signals
    if judged_only is not None:
        keep = np.array([int(f) in judged_only for f in fids], dtype=bool)
        fids, papers = fids[keep], papers[keep]
        sig = {k: (None if v is None else np.asarray(v)[keep]) for k, v in sig.items()}
    if not len(fids):
        return []
    ranked = diversify(order(fuse(sig, weights)), papers, max_per_paper)
    return [int(f) for f in fids[ranked]]


def objective(cands: dict[int, QueryCandidates], judged: Judged, queries: list[int], weights: dict,
              max_per_paper: int, guard=None) -> float:
    """Mean nDCG@5 + close fill + related fill (0 to 3); weights short of the guard's floor score
    below every allowed set, less so the nearer they are, so the search walks towards the floor."""
    shortfall = guard[0](weights) if guard is not None else 0.0
    if shortfall > 0:
        return -1.0 - shortfall
    vals = []
    for q in queries:
        m = query_metrics(rank_candidates(cands[q], weights, max_per_paper), judged.grades[q])
        vals.append(m["ndcg@5"] + m["close_fill"] + m["related_fill"])
    return float(np.mean(vals)) if vals else 0.0


def fit_on(cands, judged: Judged, queries: list[int], max_per_paper: int, guard=None,
           without: tuple[str, ...] = ()) -> dict[str, float]:
    """Weights of the signals the candidates carry (those in `without` left at 0). The search starts
    from lexical alone, never from weights fitted on these grades (the held-out folds would leak);
    under a guard, the shortfall in `objective` leads it towards the floor."""
    present = tuple(s for s in FIT_SIGNALS
                    if s not in without and any(cands[q].signals.get(s) is not None for q in queries))
    weights, _ = fit_weights(lambda w: objective(cands, judged, queries, w, max_per_paper, guard),
                             ("lexical",) + present, anchor="lexical", grid=GRID, rounds=3)
    return {k: v for k, v in weights.items() if v}


def grouped_folds(judged: Judged, queries: list[int], n_folds: int, seed: int) -> list[list[int]]:
    fold_of = paper_folds((judged.paper_of_query[q] for q in queries), n_folds, np.random.default_rng(seed).shuffle)
    return [[q for q in queries if fold_of[judged.paper_of_query[q]] == f] for f in range(n_folds)]


def cross_validate(engine, judged: Judged, n_folds: int = 4, seed: int = 0, guard=None,
                   without: tuple[str, ...] = ()) -> dict:
    """Held-out judged metrics of weights fitted on the other folds, beside the comparison
    rankings (not fitted) on the same queries; plus the weights fitted on every query. `guard`
    ((shortfall, description)) rules out weights whose `shortfall` is above 0 (how far below the
    citation protocol's floor, as a share of the floor);
    the signals in `without` are not fitted (weight 0: the same folds without them)."""
    cands = served_candidates(engine, judged)
    queries = sorted(cands)
    mpp = engine.ranking.max_per_paper
    folds = grouped_folds(judged, queries, n_folds, seed)
    held: dict[int, list[int]] = {}
    fold_weights = []
    for f, test in enumerate(folds):
        train = [q for q in queries if q not in set(test)]
        w = fit_on(cands, judged, train, mpp, guard, without)
        fold_weights.append(w)
        for q in test:
            held[q] = rank_candidates(cands[q], w, mpp)
    rankers = {"fitted_held_out": lambda q: held[q][:5], **baseline_rankers(engine)}
    report = evaluate_rankings(judged, rankers, queries)
    papers = [judged.paper_of_query[q] for q in queries]
    versus = {m: paired_by_paper(papers, report["fitted_held_out"]["per_query"][m], report["served"]["per_query"][m])
              for m in ("close_fill", "related_fill", "ndcg@5")}
    final = fit_on(cands, judged, queries, mpp, guard, without)
    # the search keeps the weights nearest the floor when none on the grid reaches it: say so
    shortfall = {"folds": [guard[0](w) for w in fold_weights], "final": guard[0](final)} if guard else None
    return {"n_queries": len(queries), "guard": guard[1] if guard else None, "guard_shortfall": shortfall,
            "without": list(without),
            "n_papers": len({judged.paper_of_query[q] for q in queries}),
            "folds": n_folds, "seed": seed, "fold_weights": fold_weights, "fitted_minus_served": versus,
            "weights": final, "rankings": report,
            "held_out_top5": {str(q): held[q][:5] for q in queries}}


def other_judge(result: dict, judged: Judged, name: str) -> dict:
    """The held-out rankings of `result` (cross_validate) graded by another judge (`judged`: that
    judge's grades, never fitted on), on the queries that judge graded: {metric: mean}."""
    top5 = {int(q): r for q, r in result["held_out_top5"].items() if int(q) in judged.grades}
    rows = evaluate_rankings(judged, {"fitted_held_out": lambda q: top5[q]}, sorted(top5))["fitted_held_out"]
    return {"judge": name, "n_queries": len(top5), **{m: rows[m] for m in ("close_fill", "related_fill", "ndcg@5",
                                                                         "unjudged", "close_fill_ci95")}}


def judgments_digest(paths) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).read_bytes())
    return h.hexdigest()[:16]


def fitted_config(engine, result: dict, judgments: list, command: str):
    """The engine's config with the fitted other_papers weights and how they were fitted."""
    held = result["rankings"]["fitted_held_out"]
    info = {"scope": "other_papers", "on": f"{result['n_queries']} judged queries of {result['n_papers']} papers",
            "judgments": [Path(p).name for p in judgments], "judge": result.get("judge"),
            "judgments_sha256_16": judgments_digest(judgments),
            "objective": "nDCG@5 + closely related fill + related fill, unjudged candidates as grade 0",
            "held_out": {m: held[m] for m in ("close_fill", "related_fill", "ndcg@5", "unjudged")},
            "folds": f"{result['folds']} folds grouped by the query's paper (seed {result['seed']})",
            "guard": result.get("guard"),
            "command": command, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    return engine.ranking.with_weights("other_papers", result["weights"], fitted_for=engine.version, fitted=info)


def judged_report_md(result: dict, title: str = "Related figures in other papers, judged") -> str:
    lines = [f"# {title}", "",
             f"{result['n_queries']} query figures of {result['n_papers']} papers; top five figures of other papers. "
             "close = grade 2 fill, related = grade >= 1 fill, unjudged = slots nobody graded (counted as 0). "
             "95% intervals: paper-cluster bootstrap.", "",
             "| ranking | close fill | related fill | nDCG@5 | unjudged |", "|---|---|---|---|---|"]
    for name, m in result["rankings"].items():
        lines.append(f"| {name} | {m['close_fill']:.3f} [{m['close_fill_ci95'][0]:.2f}, {m['close_fill_ci95'][1]:.2f}] | "
                     f"{m['related_fill']:.3f} [{m['related_fill_ci95'][0]:.2f}, {m['related_fill_ci95'][1]:.2f}] | "
                     f"{m['ndcg@5']:.3f} | {m['unjudged']:.3f} |")
    for pair, a in (result.get("agreement") or {}).items():
        lines += ["", f"Agreement {pair}: {a['n_pairs']} pairs, Cohen's kappa {a['kappa']:.3f} (linear-weighted "
                      f"{a.get('kappa_linear', float('nan')):.3f}), raw {a['raw_agreement']:.3f}."]
    o = result.get("other_judge")
    if o:
        ci = o["close_fill_ci95"]
        lines += ["", f"fitted_held_out graded by {o['judge']} ({o['n_queries']} queries, never fitted on): close fill "
                      f"{o['close_fill']:.3f} [{ci[0]:.2f}, {ci[1]:.2f}], related fill "
                      f"{o['related_fill']:.3f}, nDCG@5 {o['ndcg@5']:.3f}, unjudged {o['unjudged']:.3f}."]
    versus = result.get("fitted_minus_served")
    if versus:
        lines += ["", "fitted_held_out - served, paired by paper [95% bootstrap]: " + "; ".join(
            f"{m} {d['mean_diff']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}]" for m, d in versus.items())
            + " (the served weights may have been fitted on these grades: in-sample for them)"]
    short = result.get("guard_shortfall")
    if short:
        missed = sum(v > 0 for v in short["folds"] + [short["final"]])
        lines += ["", f"Guard: {result['guard']}. " + (
            f"NOT met by {missed} of the {len(short['folds']) + 1} weight sets: no weights on the grid reach it, the "
            f"search kept the nearest (final weights {short['final']:.1%} below; folds "
            + ", ".join(f"{v:.1%}" for v in short["folds"]) + ")." if missed else "Met by every weight set.")]
    if "weights" in result:
        lines += ["", f"fitted_held_out: weights fitted on the other {result['folds'] - 1} folds (grouped by paper); "
                      f"per fold: {result['fold_weights']}", f"weights fitted on every query (shipped by `figsearch fit`): "
                      f"{result['weights']}"]
    return "\n".join(lines) + "\n"
