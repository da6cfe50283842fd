"""Ranking metrics and the two central-figure evaluations.

Metric definitions (a ranking = figure numbers, best first; gold = figure numbers in order of
preference, gold[0] = the central figure; gold numbers that the paper does not have, e.g. a
figure the extractor missed, are dropped and a paper whose gold[0] is missing is skipped):
  acc@k  gold[0] is among the first k of the ranking
  mrr    1 / rank of the first *relevant* figure (any figure listed in gold)
  map    average precision with every listed figure relevant (binary)
  ndcg   graded gains len(gold) - i for gold[i] (3, 2, 1 for a top-3 list), log2 discount,
         over the full ranking, normalised by the ideal ranking
Self-supervised task: one query per (mention sentence, figure); the "gold" is the single
mentioned figure, so acc@1 and mrr are computed with gold = [target].

`random` is reported as its exact expectation over uniform permutations for the
self-supervised task (acc@1 = 1/n, mrr = H_n / n) and as the mean over 200 seeded permutations
for the gold task.
"""
from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Sequence

import numpy as np

METHODS = ("random", "pick_first", "tfidf", "model", "combined")


# ---------------------------------------------------------------------------------------------
# metrics


def rank_by(numbers: Sequence[int], scores: Sequence[float]) -> list[int]:
    """Figure numbers sorted by score (desc); ties keep figure order (lower number first)."""
    return [n for _, n in sorted(zip(scores, numbers), key=lambda t: (-t[0], t[1]))]


def acc_at_k(ranking: Sequence[int], gold: Sequence[int], k: int) -> float:
    return float(bool(gold) and gold[0] in list(ranking)[:k])


def reciprocal_rank(ranking: Sequence[int], gold: Sequence[int]) -> float:
    rel = set(gold)
    for i, n in enumerate(ranking, 1):
        if n in rel:
            return 1.0 / i
    return 0.0


def average_precision(ranking: Sequence[int], gold: Sequence[int]) -> float:
    rel = set(gold)
    if not rel:
        return 0.0
    hits, total = 0, 0.0
    for i, n in enumerate(ranking, 1):
        if n in rel:
            hits += 1
            total += hits / i
    return total / len(rel)


def ndcg(ranking: Sequence[int], gold: Sequence[int]) -> float:
    gains = {n: float(len(gold) - i) for i, n in enumerate(gold)}
    dcg = sum(gains.get(n, 0.0) / math.log2(i + 1) for i, n in enumerate(ranking, 1))
    ideal = sorted(gains.values(), reverse=True)
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, 1))
    return dcg / idcg if idcg > 0 else 0.0


def gold_metrics(ranking: Sequence[int], gold: Sequence[int]) -> dict[str, float]:
    return {"acc@1": acc_at_k(ranking, gold, 1), "acc@3": acc_at_k(ranking, gold, 3),
            "map": average_precision(ranking, gold), "mrr": reciprocal_rank(ranking, gold),
            "ndcg": ndcg(ranking, gold)}


def mean_metrics(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {k: round(float(np.mean([r[k] for r in rows])), 4) for k in rows[0]}


def random_expectation(n: int) -> dict[str, float]:
    """Expected acc@1 and mrr of a uniformly random ranking of n items with one relevant item."""
    return {"acc@1": 1.0 / n, "mrr": sum(1.0 / i for i in range(1, n + 1)) / n}


# ---------------------------------------------------------------------------------------------
# self-supervised evaluation


def selfsup_model_metrics(model, queries, papers, batch_size: int = 128) -> dict[str, float]:
    """acc@1 / mrr of the cross-encoder alone on self-supervised queries (used after training)."""
    caps = {p.sha256: {f.number: f.text for f in p.figures} for p in papers}
    sents, capts, spans = [], [], []
    for q in queries:
        spans.append((len(sents), len(q.candidates)))
        for k in q.candidates:
            sents.append(q.sentence)
            capts.append(caps[q.paper_sha][k])
    scores = model.score(sents, capts, batch_size=batch_size)
    rows = []
    for q, (s, n) in zip(queries, spans):
        r = rank_by(q.candidates, scores[s:s + n])
        rows.append({"acc@1": acc_at_k(r, [q.target], 1), "mrr": reciprocal_rank(r, [q.target])})
    return mean_metrics(rows)


# ---------------------------------------------------------------------------------------------
# full evaluation (eval-central)


def read_gold(path: str | Path) -> dict[str, list[int]]:
    """{sha256: [figure numbers in preference order]} from JSON lines."""
    out: dict[str, list[int]] = {}
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            row = json.loads(line)
            out[row["sha256"]] = [int(x) for x in row["central"]]
    return out


def _selfsup(scorer, papers, queries, seed: int) -> dict[str, dict[str, float]]:
    from app.central.baselines import pick_first_scores
    from app.central.scoring import feature_matrix, weight_vector

    by_sha = {p.sha256: p for p in papers}
    caps = {p.sha256: {f.number: f.text for f in p.figures} for p in papers}
    model_scores: list[float] | None = None
    spans = []
    sents, capts = [], []
    for q in queries:
        spans.append((len(sents), len(q.candidates)))
        for k in q.candidates:
            sents.append(q.sentence)
            capts.append(caps[q.paper_sha][k])
    ablations: dict[str, list[float]] = {}
    if scorer.model is not None and sents:
        model_scores = scorer.model.score(sents, capts, batch_size=128)
        if getattr(scorer.model, "use_prior", False):  # what each part of the model does alone
            ablations["model_cross_only"] = scorer.model.score(sents, capts, batch_size=128, cross_only=True)
            ablations["model_biencoder_only"] = scorer.model.biencoder_prior(sents, capts).cpu().tolist()
    w = weight_vector(scorer.weights)
    rows: dict[str, list] = {m: [] for m in (*METHODS, *ablations)}
    for q, (s, n) in zip(queries, spans):
        gold = [q.target]
        cands = q.candidates
        tf = scorer.tfidf.scores(q.sentence, [caps[q.paper_sha][k] for k in cands])
        rows["random"].append(random_expectation(len(cands)))
        rankings = {"pick_first": rank_by(cands, pick_first_scores(cands)), "tfidf": rank_by(cands, tf)}
        ms = model_scores[s:s + n] if model_scores is not None else None
        if ms is not None:
            rankings["model"] = rank_by(cands, ms)
        for name, sc in ablations.items():
            rankings[name] = rank_by(cands, sc[s:s + n])
        X = feature_matrix(by_sha[q.paper_sha], ms, tf, numbers=cands)
        rankings["combined"] = rank_by(cands, (X @ w).tolist())
        for m, r in rankings.items():
            rows[m].append({"acc@1": acc_at_k(r, gold, 1), "mrr": reciprocal_rank(r, gold)})
    out = {m: mean_metrics(r) for m, r in rows.items() if r}
    for m in METHODS:
        out.setdefault(m, None)
    for m in ("model", "combined", *ablations):  # paired two-tailed t-test on per-query acc@1
        if out.get(m) and rows["tfidf"]:
            out[m]["p_value_acc@1_vs_tfidf"] = _paired_p([r["acc@1"] for r in rows[m]],
                                                         [r["acc@1"] for r in rows["tfidf"]])
    return out


def _paired_p(a: list[float], b: list[float]) -> float:
    from app.eval.recommendation import paired_p

    return round(paired_p(a, b), 6)


def _gold_eval(scorer, papers, gold: dict[str, list[int]], seed: int, l2: float) -> dict:
    from app.central.baselines import pick_first_scores
    from app.central.scoring import (DEFAULT_WEIGHTS, DEFAULT_WEIGHTS_NO_MODEL, FEATURES, feature_matrix,
                                     fit_weights, weight_vector)

    items = []
    for p in papers:
        g = [k for k in gold.get(p.sha256, []) if k in p.numbers]
        if p.sha256 not in gold or not g or g[0] != gold[p.sha256][0]:
            continue
        content = scorer.content_scores(p)
        X = feature_matrix(p, content["model"], content["tfidf"])
        items.append({"paper": p, "gold": g, "content": content, "X": X})
    if not items:
        return {"n_papers": 0}
    prior = DEFAULT_WEIGHTS if scorer.model is not None else DEFAULT_WEIGHTS_NO_MODEL
    use = FEATURES if scorer.model is not None else tuple(f for f in FEATURES if f != "model")
    rng = random.Random(seed)
    rows: dict[str, list] = {m: [] for m in (*METHODS, "combined_default")}
    details = []
    for i, it in enumerate(items):
        p, g, nums = it["paper"], it["gold"], it["paper"].numbers
        rand = [gold_metrics(rng.sample(nums, len(nums)), g) for _ in range(200)]
        rows["random"].append(mean_metrics(rand))
        # leave-one-paper-out: weights fitted on the other gold papers only
        train = [(o["X"], o["paper"].numbers, o["gold"]) for j, o in enumerate(items) if j != i]
        w_oof = fit_weights(train, prior, l2=l2, use=use)
        rankings = {"pick_first": rank_by(nums, pick_first_scores(nums)),
                    "tfidf": rank_by(nums, it["content"]["tfidf"]),
                    "combined": rank_by(nums, (it["X"] @ weight_vector(w_oof)).tolist()),
                    "combined_default": rank_by(nums, (it["X"] @ weight_vector(prior)).tolist())}
        if it["content"]["model"] is not None:
            rankings["model"] = rank_by(nums, it["content"]["model"])
        for m, r in rankings.items():
            rows[m].append(gold_metrics(r, g))
        details.append({"sha256": p.sha256, "title": p.title[:100], "gold": g, "figures": nums,
                        "rankings": {m: r[:3] for m, r in rankings.items()}})
    out = {m: mean_metrics(r) if r else None for m, r in rows.items()}
    fitted = fit_weights([(o["X"], o["paper"].numbers, o["gold"]) for o in items], prior, l2=l2, use=use)
    return {"metrics": out, "n_papers": len(items), "details": details, "weights_all": fitted,
            "weights_prior": dict(prior)}


def evaluate_central(settings, out_dir: str | Path, gold_path: str | Path | None = None, seed: int = 0,
                     l2: float = 1.0, save_weights: bool = False, use_model: bool = True) -> dict:
    """Run both evaluations, write report.json and report.md into `out_dir`; returns the report."""
    import time

    from app.central.data import build_queries, load_papers, split_papers
    from app.central.scoring import WEIGHTS_FILE, CentralScorer, model_dir

    t0 = time.perf_counter()
    papers = load_papers(settings.db_url)
    scorer = CentralScorer.from_settings(settings, papers=papers)
    if not use_model:
        scorer = CentralScorer(scorer.tfidf, model=None, max_sentences=scorer.max_sentences)
    meta = getattr(scorer.model, "meta", None) or {}
    if meta.get("val_papers"):
        val = set(meta["val_papers"])
        split_note = "held-out papers of the trained model (meta.json val_papers)"
    else:
        _, v = split_papers([p.sha256 for p in papers if len(p.figures) >= 2], 0.2, seed)
        val = set(v)
        split_note = f"seeded 20% split (seed {seed}); no trained model"
    queries = build_queries(p for p in papers if p.sha256 in val)
    gold = read_gold(gold_path) if gold_path else {}
    report: dict = {"selfsup": _selfsup(scorer, papers, queries, seed),
                    "info": {"n_papers": len(papers), "n_selfsup_papers": len(val), "n_selfsup_queries": len(queries),
                             "split": split_note, "model": str(model_dir(settings)) if scorer.model is not None else None,
                             "model_meta": {k: meta.get(k) for k in ("data_hash", "steps", "train_seconds", "config",
                                                                     "stopped_early") if k in meta},
                             "combined_weights": scorer.weights}}
    if gold:
        g = _gold_eval(scorer, papers, gold, seed, l2)
        report["gold"] = g.get("metrics", {})
        report["info"].update({"n_gold_papers": g.get("n_papers", 0), "gold_file": str(gold_path),
                               "weights_fitted_on_all_gold": g.get("weights_all"),
                               "weights_prior": g.get("weights_prior")})
        report["gold_details"] = g.get("details", [])
        if save_weights and g.get("weights_all"):
            d = model_dir(settings)
            d.mkdir(parents=True, exist_ok=True)
            (d / WEIGHTS_FILE).write_text(json.dumps({"weights": g["weights_all"], "gold_file": str(gold_path),
                                                      "n_papers": g["n_papers"]}, indent=2))
    else:
        report["gold"] = {}
    report["info"]["seconds"] = round(time.perf_counter() - t0, 1)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2))
    (out / "report.md").write_text(render_markdown(report))
    return report


def render_markdown(report: dict) -> str:
    info = report.get("info", {})
    lines = ["# Central-figure evaluation", ""]
    lines += [f"- papers in the collection: {info.get('n_papers')}",
              f"- self-supervised task: {info.get('n_selfsup_queries')} mention queries from "
              f"{info.get('n_selfsup_papers')} held-out papers ({info.get('split')})",
              f"- model: {info.get('model') or 'none (fallback: tf.idf + position)'}",
              f"- combined weights used for the self-supervised task: `{json.dumps(info.get('combined_weights'))}`", ""]
    lines += ["## Self-supervised (held-out papers): rank the paper's captions for a mention sentence", "",
              "`model_cross_only` / `model_biencoder_only`: parts of the trained model alone (the seed's "
              "cross-encoder head without the priors; the frozen MiniLM bi-encoder cosine). p: paired "
              "two-tailed t-test of per-query acc@1 against tf.idf.", "",
              "| method | acc@1 | mrr | p vs tfidf |", "|---|---|---|---|"]
    for m, v in report.get("selfsup", {}).items():
        p = "-" if not v or v.get("p_value_acc@1_vs_tfidf") is None else f"{v['p_value_acc@1_vs_tfidf']:.3g}"
        lines.append(f"| {m} | {_fmt(v, 'acc@1')} | {_fmt(v, 'mrr')} | {p} |")
    gold = report.get("gold") or {}
    if gold:
        lines += ["", f"## Gold labels ({info.get('n_gold_papers')} papers, {info.get('gold_file')})", "",
                  "`combined` = weights fitted leave-one-paper-out (out-of-fold numbers); "
                  "`combined_default` = hand-set default weights, no fitting.", "",
                  "| method | acc@1 | acc@3 | map | mrr | ndcg |", "|---|---|---|---|---|---|"]
        for m, v in gold.items():
            lines.append(f"| {m} | " + " | ".join(_fmt(v, k) for k in ("acc@1", "acc@3", "map", "mrr", "ndcg")) + " |")
        lines += ["", f"Weights fitted on all gold papers: `{json.dumps(info.get('weights_fitted_on_all_gold'))}`"]
    lines.append("")
    return "\n".join(lines)


def _fmt(v, k) -> str:
    return "-" if not v or v.get(k) is None else f"{v[k]:.3f}"
