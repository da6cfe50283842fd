"""Alternative rankings of related figures in other papers, measured on the judged pairs.

Each ranking is scored on the judged queries' top five figures of other papers (close fill,
related fill, nDCG@5, unjudged slots counted as grade 0, as `figsearch eval --judgments`), by
each judge's grades. Whatever is fitted or chosen on the grades (weights, model, gate size) is
fitted on 3 of 4 folds grouped by the query's paper and scored on the fourth (the folds of
`figsearch fit`, judge1's grades); `precision` is the close fill among judged slots only, which a
ranking that surfaces unjudged figures is not penalised for; and, over the judged candidates
alone, what the served weights and the best possible order reach. Rankings:
  served             the index version's ranking config (in-sample when it was fitted on these grades)
  refit              the served rule refitted by coordinate search (what `figsearch fit` does)
  refit+caption      ... with a MiniLM cosine of the two captions alone as a further signal
  refit+type*caption ... with that cosine counted only as far as the two figures' kinds agree
  logistic           two logistic regressions (grade >= 1, grade 2) over the signals and their
                     ranks within the query's candidates; score = P(>= 1) + a P(2), a chosen on
                     the training folds
  two_stage          the P papers nearest by the served paper-level mix first, their figures by
                     the figure-level signals + l x the paper mix; P, l and the per-paper cap
                     chosen on the training folds
  one_per_paper      the served weights, one figure of a paper before the other papers
It also prints how well each pair feature alone separates grade-2 candidates from the other
judged ones (ROC AUC).
  boosted            a gradient-boosted pair scorer (HistGradientBoosting) over the signals, their
                     ranks within the query's candidates, the served score, what the two charts plot
                     (MiniLM cosine of the measures and of the variables app/search/plots.py reads
                     from the captions) and the figures' roles (architecture, example, distribution,
                     visualisation, result, read from caption words); trained on every candidate of
                     the training folds' queries (unjudged as grade 0); regression on the grade or
                     P(>= 1) + 2 P(2), with or without the plot and role features, chosen by 3 inner
                     folds grouped by paper
Candidates: the served first stage united with every figure of the 30 papers nearest by topic.

  python scripts/related_alternatives.py --data-dir DIR [--pool OUT --exclude J1 --exclude J2]

`--pool OUT` writes the unjudged top-five figures of every ranking but `served` in the format of
scripts/related_pool.py (pairs.jsonl, sheets/, sheet_index.json; provenance.json beside OUT), for
judging blind before any of these rankings is compared again.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from threadpoolctl import threadpool_limits

from app.db.session import session_scope
from app.eval.fit import grouped_folds
from app.eval.judged import Judged, query_metrics, read_judgments, resolve
from app.pipeline.indexing import index_root
from app.pipeline.searching import open_searcher
from app.search.encoder import default_encoder
from app.search.fusion import GRID, diversify, fit_weights, fuse, minmax, order
from app.search.papers import PAPER_SIGNALS
from app.search.plots import plotted
from app.settings import settings_for
from app.stats import cluster_ci, paper_folds

sys.path.insert(0, str(Path(__file__).parent))
from related_pool import contact_sheet, fig_key  # noqa: E402

NEAR_PAPERS = 30
FIGURE_SIGNALS = ("lexical", "text", "visual", "type", "type_scores")
FIT = ("text", "visual", "type", "type_scores", "paper", "paper_text", "paper_body", "paper_figures")


def caption_vectors(engine) -> np.ndarray:
    text = [re.sub(r"^\s*(fig\.?|figure)\s*\d+[a-z]?\s*[:.|]?\s*", "", engine.captions[r], flags=re.I)
            for r in range(len(engine))]
    v = np.asarray(default_encoder().encode(text, max_length=128), dtype=np.float32)
    return v / (np.linalg.norm(v, axis=1, keepdims=True) + 1e-9)


def candidates(engine, queries, capv) -> dict:
    cfg = engine.ranking
    out = {}
    for q in queries:
        row = engine.row_of(q)
        rows, scores = engine.candidates(row, "other_papers", cfg.first_stage, cfg.candidates, cfg.union_dense,
                                         cfg.union_papers)
        near = engine.papers.related(int(engine.paper_ids[row]), NEAR_PAPERS)
        extra = engine.docs.rows_of_papers(list(near))
        extra = extra[engine.types.same_kind(row, extra) & ~np.isin(extra, rows)]
        lex = engine.lexical(cfg.first_stage)
        t, tf = lex.doc_terms(row)
        served = np.r_[np.ones(len(rows), bool), np.zeros(len(extra), bool)]
        rows = np.r_[rows, extra]
        sig = engine.signals(row, rows, np.r_[scores, lex.score_docs(t, lex.query_weights(t, tf), extra)])
        sig["caption"] = (capv[rows] @ capv[row]).astype(np.float64)
        sig["type_caption"] = np.asarray(sig["type_scores"]) * sig["caption"]
        out[q] = {"fids": engine.figure_ids[rows], "papers": engine.paper_ids[rows], "sig": sig, "served": served}
    return out


def ranked(c, score, mpp: int) -> list[int]:
    return [int(f) for f in c["fids"][diversify(order(score), c["papers"], mpp)]] if len(c["fids"]) else []


def mean_metrics(tops: dict, judged: Judged) -> dict:
    ms = [query_metrics(tops[q], judged.grades[q]) for q in tops if q in judged.grades]
    out = {k: float(np.mean([m[k] for m in ms])) for k in ("close_fill", "related_fill", "ndcg@5", "unjudged")}
    out["precision"] = out["close_fill"] / max(1e-9, 1 - out["unjudged"])
    return out


def objective(cands, judged, queries, score_of) -> float:
    vals = [query_metrics(score_of(q), judged.grades[q]) for q in queries]
    return float(np.mean([m["ndcg@5"] + m["close_fill"] + m["related_fill"] for m in vals]))


def features(c) -> np.ndarray:
    names = FIGURE_SIGNALS + PAPER_SIGNALS + ("caption",)
    x = np.stack([minmax(c["sig"][n]) if n == "lexical" else np.asarray(c["sig"][n], float) for n in names], 1)
    ranks = np.argsort(np.argsort(-x, 0), 0) / max(len(x), 1)
    return np.c_[x, ranks]


# a figure's role, from generic caption words (the first that matches)
ROLES = (r"\b(architecture|framework|overview|pipeline|workflow|structure of|schematic|illustration of (the|our)|"
         r"proposed (model|method|approach))\b",
         r"\b(example|examples|case study|instance|sample|samples|screenshot|interface)\b",
         r"\b(distribution|histogram|statistics|frequency|proportion|percentage)\b",
         r"\b(visuali[sz]ation|t-sne|tsne|embedding space|attention (weights|map|scores))\b",
         r"\b(performance|results?|accuracy|comparison|effect|impact|influence|ablation|sensitivity|vs\.?|versus|"
         r"varying|different)\b")


def role_of(caption: str) -> int:
    return next((i for i, rx in enumerate(ROLES) if re.search(rx, caption or "", re.I)), len(ROLES))


def pair_context(engine) -> dict:
    """Per index row: the unit vectors of what the chart plots (zero when the caption names
    nothing) and the figure's role."""
    plots = [plotted(c) for c in engine.captions]
    enc = default_encoder()

    def unit(texts):
        out = np.zeros((len(texts), 0 if not any(texts) else 1), np.float32)
        idx = [i for i, t in enumerate(texts) if t]
        if idx:
            v = np.asarray(enc.encode([texts[i] for i in idx], max_length=32), np.float32)
            out = np.zeros((len(texts), v.shape[1]), np.float32)
            out[idx] = v / (np.linalg.norm(v, axis=1, keepdims=True) + 1e-9)
        return out
    return {"measure": unit([p.measure for p in plots]), "against": unit([p.against for p in plots]),
            "role": np.array([role_of(c) for c in engine.captions]), "row": {int(f): i for i, f in enumerate(engine.figure_ids)}}


def pair_features(c, q: int, ctx: dict, served_w: dict, plots_roles: bool) -> np.ndarray:
    x = [features(c)]
    s = fuse(c["sig"], served_w)
    x.append(np.c_[s, np.argsort(np.argsort(-s)) / max(len(s), 1)])
    if plots_roles:
        qr, cr = ctx["row"][q], np.array([ctx["row"][int(f)] for f in c["fids"]], dtype=int)
        for name in ("measure", "against"):
            v = ctx[name]
            cos = (v[cr] @ v[qr]).astype(float)
            cos[(np.abs(v[cr]).sum(1) == 0) | (np.abs(v[qr]).sum() == 0)] = np.nan  # not said: missing
            x.append(cos[:, None])
        r = ctx["role"]
        x.append(np.c_[np.full(len(cr), r[qr]), r[cr], r[cr] == r[qr]].astype(float))
    return np.concatenate(x, 1)


BOOST = dict(max_iter=200, learning_rate=0.05, max_depth=3, min_samples_leaf=20, l2_regularization=1.0, random_state=0)


def boosted_scores(cands, judged, train, test, feats, kind: str) -> dict:
    x = np.concatenate([feats[q] for q in train])
    y = np.concatenate([[judged.grades[q].get(f, 0.0) for f in cands[q]["fids"].tolist()] for q in train])
    if kind == "grade":
        m = HistGradientBoostingRegressor(**BOOST).fit(x, y)
        return {q: m.predict(feats[q]) for q in test}
    related = HistGradientBoostingClassifier(**BOOST).fit(x, y >= 0.5)
    close = HistGradientBoostingClassifier(**BOOST).fit(x, y >= 1.5)
    return {q: related.predict_proba(feats[q])[:, 1] + 2 * close.predict_proba(feats[q])[:, 1] for q in test}


def boosted(cands, judged, queries, folds, ctx, served_w, mpp, inner: int = 3):
    """Held-out top lists of the boosted scorer and the configuration each fold chose."""
    feats = {pr: {q: pair_features(cands[q], q, ctx, served_w, pr) for q in queries} for pr in (False, True)}
    configs = [(pr, kind) for pr in (False, True) for kind in ("grade", "classes")]
    tops, chosen = {}, []
    for test in folds:
        train = [q for q in queries if q not in set(test)]
        fold_of = paper_folds((judged.paper_of_query[q] for q in train), inner, np.random.default_rng(1).shuffle)
        parts = [[q for q in train if fold_of[judged.paper_of_query[q]] == f] for f in range(inner)]

        def inner_score(cfg):
            vals = []
            for part in parts:
                sc = boosted_scores(cands, judged, [q for q in train if q not in set(part)], part, feats[cfg[0]], cfg[1])
                vals += [sum(query_metrics(ranked(cands[q], sc[q], mpp), judged.grades[q])[k]
                             for k in ("ndcg@5", "close_fill", "related_fill")) for q in part]
            return float(np.mean(vals))
        best = max(configs, key=inner_score)
        chosen.append({"plots_and_roles": best[0], "target": best[1]})
        sc = boosted_scores(cands, judged, train, test, feats[best[0]], best[1])
        tops.update({q: ranked(cands[q], sc[q], mpp) for q in test})
    return tops, chosen


def signal_aucs(cands, judged, queries, ctx, served_w) -> dict:
    """How well each pair feature alone tells judged grade-2 candidates from the other judged
    ones (ROC AUC over the pairs where the feature is known, and how many those are)."""
    names = FIGURE_SIGNALS + PAPER_SIGNALS + ("caption",)
    x, y = [], []
    for q in queries:
        f = pair_features(cands[q], q, ctx, served_w, True)
        keep = [i for i, fid in enumerate(cands[q]["fids"].tolist()) if fid in judged.grades[q]]
        x.append(np.c_[f[keep, :len(names)], f[keep, -5:-3], f[keep, -1:]])
        y += [judged.grades[q][int(cands[q]["fids"][i])] >= 1.5 for i in keep]
    x, y = np.concatenate(x), np.array(y)
    out = {}
    for k, name in enumerate(names + ("plotted_measure", "plotted_against", "same_role")):
        ok = ~np.isnan(x[:, k])
        if len(set(y[ok].tolist())) == 2:
            out[name] = {"auc": round(float(roc_auc_score(y[ok], x[ok, k])), 3), "pairs": int(ok.sum())}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--judgments", type=Path, action="append",
                    default=None, help="default: tests/data/related_judgments.jsonl and ..._judge2.jsonl")
    ap.add_argument("--pool", type=Path, help="Write the unjudged top-five figures of the alternatives here.")
    ap.add_argument("--exclude", type=Path, action="append", default=[], help="With --pool: pairs judged already.")
    ap.add_argument("--prefix", default="r4-")
    args = ap.parse_args()
    paths = args.judgments or [Path("tests/data/related_judgments.jsonl"), Path("tests/data/related_judgments_judge2.jsonl")]
    settings = settings_for(args.data_dir)
    engine = open_searcher(index_root(settings))
    rows = [r for p in paths for r in read_judgments(p)]
    with session_scope(settings.db_url) as s:
        j1, j2 = resolve(s, rows, judge="judge1"), resolve(s, rows, judge="judge2")
    queries = sorted(q for q in j1.queries if q in engine)
    cands = candidates(engine, queries, caption_vectors(engine))
    folds = grouped_folds(j1, queries, 4, 0)
    served_w = engine.ranking.weights_of("other_papers")
    mpp = engine.ranking.max_per_paper
    def served_first_stage(c):  # the served candidates only
        keep = c["served"]
        return {"fids": c["fids"][keep], "papers": c["papers"][keep], "sig": {k: None if v is None else np.asarray(v)[keep]
                                                                              for k, v in c["sig"].items()}}
    tops: dict[str, dict[int, list[int]]] = {
        "served": {q: ranked(served_first_stage(cands[q]), fuse(served_first_stage(cands[q])["sig"], served_w), mpp)
                   for q in queries},
        "one_per_paper": {q: ranked(cands[q], fuse(cands[q]["sig"], served_w), 1) for q in queries}}
    chosen: dict[str, list] = {}
    for test in folds:
        train = [q for q in queries if q not in set(test)]
        for name, extra in (("refit", ()), ("refit+caption", ("caption",)), ("refit+type*caption", ("type_caption",))):
            w, _ = fit_weights(lambda w: objective(cands, j1, train, lambda q: ranked(cands[q], fuse(cands[q]["sig"], w), mpp)),
                               ("lexical",) + FIT + extra, "lexical", GRID, 3)
            chosen.setdefault(name, []).append({k: v for k, v in w.items() if v})
            for q in test:
                tops.setdefault(name, {})[q] = ranked(cands[q], fuse(cands[q]["sig"], w), mpp)
        # logistic regressions on the training folds' judged pairs
        x, y = [], []
        for q in train:
            f = features(cands[q])
            for i, fid in enumerate(cands[q]["fids"].tolist()):
                if fid in j1.grades[q]:
                    x.append(f[i])
                    y.append(j1.grades[q][fid])
        x, y = np.array(x), np.array(y)
        related = LogisticRegression(max_iter=2000).fit(x, y >= 0.5)
        close = LogisticRegression(max_iter=2000).fit(x, y >= 1.5)
        probs = {q: (related.predict_proba(features(cands[q]))[:, 1], close.predict_proba(features(cands[q]))[:, 1])
                 for q in queries}
        a = max((0.5, 1.0, 2.0, 4.0), key=lambda a: objective(cands, j1, train, lambda q: ranked(
            cands[q], probs[q][0] + a * probs[q][1], mpp)))
        chosen.setdefault("logistic", []).append({"a": a})
        for q in test:
            tops.setdefault("logistic", {})[q] = ranked(cands[q], probs[q][0] + a * probs[q][1], mpp)
        # two stages: the nearest papers first
        paper_w = {k: v for k, v in served_w.items() if k in PAPER_SIGNALS}
        figure_w = {k: v for k, v in served_w.items() if k not in PAPER_SIGNALS}

        def two_stage(q, n_papers, lam, cap):
            c = cands[q]
            mix = fuse({k: c["sig"][k] for k in paper_w}, paper_w)
            best = {}
            for p, v in zip(c["papers"].tolist(), mix.tolist()):
                best[p] = v
            gate = set(sorted(best, key=lambda p: -best[p])[:n_papers])
            inside = np.array([p in gate for p in c["papers"].tolist()], float)
            return ranked(c, fuse(c["sig"], figure_w) + lam * mix + 100.0 * inside, cap)
        grid = [(n, lam, cap) for n in (3, 5, 10, 20) for lam in (0.0, 0.3, 1.0) for cap in (2, 3)]
        n, lam, cap = max(grid, key=lambda g: objective(cands, j1, train, lambda q: two_stage(q, *g)))
        chosen.setdefault("two_stage", []).append({"papers": n, "paper_weight": lam, "per_paper": cap})
        for q in test:
            tops.setdefault("two_stage", {})[q] = two_stage(q, n, lam, cap)
    ctx = pair_context(engine)
    with threadpool_limits(1):  # small fits: OpenMP threads only wait on a busy machine
        tops["boosted"], chosen["boosted"] = boosted(cands, j1, queries, folds, ctx, served_w, mpp)
    print(f"{len(queries)} judged queries, 4 folds grouped by paper (fitted on judge1); top five of other papers")
    print(f"{'ranking':22s} {'judge1 close':>12s} {'related':>8s} {'nDCG@5':>7s} {'unjudged':>9s} {'precision':>9s} "
          f"{'close - refit [95%]':>20s} | {'judge2 close':>12s} {'related':>8s} {'unjudged':>9s}")
    papers = [j1.paper_of_query[q] for q in queries]

    def close(t, q):
        return query_metrics(t[q], j1.grades[q])["close_fill"]
    for name, t in tops.items():
        a, b = mean_metrics(t, j1), mean_metrics(t, j2)
        ci = cluster_ci(papers, [close(t, q) - close(tops["refit"], q) for q in queries], digits=3)
        print(f"{name:22s} {a['close_fill']:12.3f} {a['related_fill']:8.3f} {a['ndcg@5']:7.3f} {a['unjudged']:9.3f} "
              f"{a['precision']:9.3f} {str(ci):>20s} | {b['close_fill']:12.3f} {b['related_fill']:8.3f} {b['unjudged']:9.3f}")
    print("chosen on the training folds:", json.dumps(chosen))
    n2 = sum(g >= 1.5 for q in queries for g in j1.grades[q].values())
    inside = sum(j1.grades[q].get(f, 0) >= 1.5 for q in queries for f in cands[q]["fids"].tolist())
    print(f"judge1's grade-2 pairs among the candidates: {inside} of {n2}; one feature alone, grade 2 vs the other "
          f"judged candidates (ROC AUC, pairs):", json.dumps(signal_aucs(cands, j1, queries, ctx, served_w)))
    # the judged candidates alone: how the served weights order them, and the best order (at most mpp a paper)
    only = {}
    for q in queries:
        c, keep = cands[q], np.array([f in j1.grades[q] for f in cands[q]["fids"].tolist()])
        only[q] = {"fids": c["fids"][keep], "papers": c["papers"][keep],
                   "sig": {k: None if v is None else np.asarray(v)[keep] for k, v in c["sig"].items()}}
    for name, score in (("served weights", lambda q: fuse(only[q]["sig"], served_w)),
                        ("best order", lambda q: np.array([j1.grades[q][f] for f in only[q]["fids"].tolist()]))):
        m = mean_metrics({q: ranked(only[q], score(q), mpp) for q in queries}, j1)
        print(f"judged candidates only, {name}: judge1 close {m['close_fill']:.3f} related {m['related_fill']:.3f}")
    if args.pool:
        write_pool(args, settings, engine, tops, j1)


def write_pool(args, settings, engine, tops: dict, judged: Judged) -> None:
    """The alternatives' unjudged top-five figures, shuffled, on sheets (related_pool.py's format)."""
    done = set()
    for path in args.exclude:
        for r in read_judgments(path):
            done.add((tuple(r["query"].values()), tuple(r["candidate"].values())))
    rng = np.random.default_rng(2026)
    (args.pool / "sheets").mkdir(parents=True, exist_ok=True)
    pairs, index, prov = [], [], {}
    with session_scope(settings.db_url) as s:
        for n, q in enumerate(sorted(judged.grades), 1):
            qkey = fig_key(s, q)
            pooled: dict[int, list[str]] = {}
            for name, t in tops.items():
                if name == "served":
                    continue
                for f in t.get(q, [])[:5]:
                    if (tuple(qkey.values()), tuple(fig_key(s, f).values())) not in done:
                        pooled.setdefault(f, []).append(name)
            cands = sorted(pooled)
            rng.shuffle(cands)
            if not cands:
                continue
            qid = f"{args.prefix}q{n:02d}"
            contact_sheet(s, settings.data_dir, qid, q, cands, args.pool / "sheets" / f"{qid}.png")
            for i, cf in enumerate(cands, 1):
                pairs.append({"query_id": qid, "candidate": i, "query": qkey, "candidate_figure": fig_key(s, cf),
                              "query_figure_id": q, "candidate_figure_id": cf})
                index.append({"sheet": f"sheets/{qid}.png", "query_id": qid, "candidate_no": i, "query": qkey,
                              "candidate": fig_key(s, cf)})
            prov[qid] = {"figure_id": q, "candidates": {str(cf): pooled[cf] for cf in cands}}
    with open(args.pool / f"{args.prefix}pairs.jsonl", "w") as fh:
        fh.writelines(json.dumps(p) + "\n" for p in pairs)
    (args.pool / f"{args.prefix}sheet_index.json").write_text(json.dumps(index, indent=1))
    (args.pool.parent / f"{args.pool.name}-provenance.json").write_text(json.dumps(prov, indent=1))
    print(f"pooled {len(pairs)} unjudged pairs of {len(prov)} queries into {args.pool}")


if __name__ == "__main__":
    main()
