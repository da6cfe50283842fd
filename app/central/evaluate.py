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


def selfsup_pairs(queries, papers) -> tuple[list[str], list[str], list[tuple[int, int]]]:
    """Every (sentence, candidate caption) pair of the queries, flat, and each query's (start, count)."""
    caps = {p.sha256: {f.number: f.text for f in p.figures} for p in papers}
    sents, capts, spans = [], [], []
    for q in queries:
        spans.append((len(sents), len(q.candidates)))
        for k in q.candidates:
            sents.append(q.sentence)
            capts.append(caps[q.paper_sha][k])
    return sents, capts, spans


def selfsup_rank_metrics(queries, spans, scores: Sequence[float]) -> dict[str, float]:
    """acc@1 / mrr of flat pair `scores` (selfsup_pairs order) ranking each query's candidates."""
    rows = []
    for q, (s, n) in zip(queries, spans):
        r = rank_by(q.candidates, scores[s:s + n])
        rows.append({"acc@1": acc_at_k(r, [q.target], 1), "mrr": reciprocal_rank(r, [q.target])})
    return mean_metrics(rows)


def selfsup_model_metrics(model, queries, papers, batch_size: int = 128) -> dict[str, float]:
    """acc@1 / mrr of the bi-encoder's cosine alone on self-supervised queries (used in training)."""
    sents, capts, spans = selfsup_pairs(queries, papers)
    return selfsup_rank_metrics(queries, spans, model.score(sents, capts, batch_size=batch_size))


# ---------------------------------------------------------------------------------------------
# full evaluation (eval-central)


class GoldLeak(ValueError):
    """The model trained on a paper of the gold set: its gold numbers would not be held out."""


def read_gold(path: str | Path) -> dict[str, list[int]]:
    """{sha256: [figure numbers in preference order]} from JSON lines."""
    out: dict[str, list[int]] = {}
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            row = json.loads(line)
            out[row["sha256"]] = [int(x) for x in row["central"]]
    return out


def check_gold_disjoint(meta: dict | None, gold: set[str], gold_path: str | Path = "GOLD") -> None:
    """Raise GoldLeak when the model (meta.json) lists a gold paper among its training papers, or
    does not say which papers it trained on."""
    if meta is None:
        return
    trained = meta.get("train_papers")
    if trained is None:
        raise GoldLeak("the central-figure model does not list the papers it trained on, so its gold numbers "
                       f"cannot be shown to be held out; retrain it with `figsearch train-central --exclude-papers "
                       f"{gold_path}`, or evaluate without it (--no-model)")
    leak = sorted(set(trained) & set(gold))
    if leak:
        raise GoldLeak(f"{len(leak)} of the {len(gold)} gold papers were training papers of the central-figure "
                       f"model (first: {leak[0]}); its numbers on them would not be held out. Retrain with "
                       f"`figsearch train-central --exclude-papers {gold_path}`, or evaluate without the model "
                       "(--no-model)")


def _with_ci(rows: list[dict[str, float]], seed: int) -> dict:
    """Means over papers plus a paper-level bootstrap 95% interval per metric."""
    from app.stats import bootstrap_ci

    out: dict = mean_metrics(rows)
    out["ci95"] = {k: bootstrap_ci([r[k] for r in rows], seed=seed) for k in rows[0]}
    return out


def _selfsup(scorer, papers, queries, seed: int) -> tuple[dict, dict]:
    """Self-supervised task on held-out papers: (metrics per method, paper-grouped comparisons)."""
    from app.central.baselines import pick_first_scores
    from app.central.scoring import combine, feature_matrix
    from app.stats import cluster_ci, paired_by_paper

    by_sha = {p.sha256: p for p in papers}
    caps = {p.sha256: {f.number: f.text for f in p.figures} for p in papers}
    sents, capts, spans = selfsup_pairs(queries, papers)
    scored: dict[str, list[float]] = {}
    if scorer.model is not None and sents:
        scored["model"] = scorer.pair_scores(sents, capts)
        if scorer.lexical_weight:  # the hybrid's neural part alone
            scored["bi_encoder"] = scorer.model.score(sents, capts)
    if sents:  # the untrained sentence embedding the model starts from: what fine-tuning adds
        from app.search.encoder import default_encoder

        texts = sorted(set(sents) | set(capts))  # each text once: a query's sentence recurs per candidate
        vec = dict(zip(texts, default_encoder().encode(texts)))
        scored["pretrained_minilm"] = [float(vec[a] @ vec[b]) for a, b in zip(sents, capts)]
    rows: dict[str, list] = {m: [] for m in (*METHODS, *scored)}
    for q, (s, n) in zip(queries, spans):
        gold, cands = [q.target], q.candidates
        tf = scorer.tfidf.scores(q.sentence, [caps[q.paper_sha][k] for k in cands])
        rows["random"].append(random_expectation(len(cands)))
        rankings = {"pick_first": rank_by(cands, pick_first_scores(cands)), "tfidf": rank_by(cands, tf)}
        for name, sc in scored.items():
            rankings[name] = rank_by(cands, sc[s:s + n])
        ms = scored["model"][s:s + n] if "model" in scored else None
        X = feature_matrix(by_sha[q.paper_sha], ms, tf, numbers=cands)
        rankings["combined"] = rank_by(cands, combine(X, scorer.weights).tolist())
        for m, r in rankings.items():
            rows[m].append({"acc@1": acc_at_k(r, gold, 1), "mrr": reciprocal_rank(r, gold)})
    shas = [q.paper_sha for q in queries]
    out: dict = {}
    for m in METHODS + tuple(scored):
        if not rows.get(m):
            out[m] = None
            continue
        out[m] = mean_metrics(rows[m])
        out[m]["ci95"] = {k: cluster_ci(shas, [r[k] for r in rows[m]], seed=seed) for k in ("acc@1", "mrr")}
    tests: dict = {}
    for m in ("model", "bi_encoder", "pretrained_minilm", "combined"):
        if out.get(m) and rows["tfidf"]:
            tests[f"{m}_vs_tfidf"] = {k: paired_by_paper(shas, [r[k] for r in rows[m]],
                                                         [r[k] for r in rows["tfidf"]], seed) for k in ("acc@1", "mrr")}
            out[m]["p_value_acc@1_vs_tfidf"] = tests[f"{m}_vs_tfidf"]["acc@1"]["p_t"]
    for a, b in (("model", "pretrained_minilm"), ("model", "bi_encoder"), ("bi_encoder", "pretrained_minilm")):
        if out.get(a) and out.get(b):
            tests[f"{a}_vs_{b}"] = {k: paired_by_paper(shas, [r[k] for r in rows[a]], [r[k] for r in rows[b]], seed)
                                    for k in ("acc@1", "mrr")}
    return out, tests


def _gold_eval(scorer, papers, gold: dict[str, list[int]], seed: int, l2: float) -> dict:
    """Gold evaluation; `combined` uses weights fitted on the *other* gold papers (leave one paper
    out, pulled towards zero), `combined_default` the shipped defaults."""
    from app.central.baselines import pick_first_scores
    from app.central.scoring import FEATURES, combine, crop_ok, feature_matrix, fit_weights
    from app.stats import paired_by_paper

    items = []
    for p in papers:
        g = [k for k in gold.get(p.sha256, []) if k in p.numbers]
        if p.sha256 not in gold or not g or g[0] != gold[p.sha256][0]:
            continue
        content = scorer.content_scores(p)
        X = feature_matrix(p, content["model"], content["tfidf"])
        items.append({"paper": p, "gold": g, "content": content, "X": X, "ok": crop_ok(p)})
    if not items:
        return {"n_papers": 0}
    use = FEATURES if scorer.model is not None else tuple(f for f in FEATURES if f != "model")
    zero = {k: 0.0 for k in FEATURES}
    rng = random.Random(seed)
    methods = (*METHODS, "combined_default", "bi_encoder")
    rows: dict[str, list] = {m: [] for m in methods}
    details = []
    for i, it in enumerate(items):
        p, g, nums = it["paper"], it["gold"], it["paper"].numbers
        rand = [gold_metrics(rng.sample(nums, len(nums)), g) for _ in range(200)]
        rows["random"].append(mean_metrics(rand))
        train = [(o["X"], o["paper"].numbers, o["gold"]) for j, o in enumerate(items) if j != i]
        w_oof = fit_weights(train, zero, l2=l2, use=use)
        rankings = {"pick_first": rank_by(nums, pick_first_scores(nums)),
                    "tfidf": rank_by(nums, it["content"]["tfidf"]),
                    "combined": rank_by(nums, combine(it["X"], w_oof, it["ok"]).tolist()),
                    "combined_default": rank_by(nums, combine(it["X"], scorer.weights, it["ok"]).tolist())}
        if it["content"]["model"] is not None:
            rankings["model"] = rank_by(nums, it["content"]["model"])
            if scorer.lexical_weight:
                rankings["bi_encoder"] = rank_by(nums, it["content"]["bi_encoder"])
        per = {}
        for m, r in rankings.items():
            per[m] = gold_metrics(r, g)
            rows[m].append(per[m])
        per["random"] = rows["random"][-1]
        details.append({"sha256": p.sha256, "title": p.title[:100], "gold": g, "figures": nums,
                        "bad_crops": [n for n, ok in zip(nums, it["ok"]) if not ok],
                        "metrics": per, "rankings": rankings})
    out = {m: _with_ci(r, seed) if r else None for m, r in rows.items() if r or m != "bi_encoder"}
    shas = [it["paper"].sha256 for it in items]
    tests = {}
    for a, b in (("combined", "pick_first"), ("combined", "tfidf"), ("combined_default", "pick_first"),
                 ("combined_default", "tfidf"), ("model", "tfidf"), ("model", "pick_first"),
                 ("bi_encoder", "tfidf")):
        if rows[a] and rows[b]:
            tests[f"{a}_vs_{b}"] = {k: paired_by_paper(shas, [r[k] for r in rows[a]], [r[k] for r in rows[b]], seed)
                                    for k in ("acc@1", "map")}
    fitted = fit_weights([(o["X"], o["paper"].numbers, o["gold"]) for o in items], zero, l2=l2, use=use)
    return {"metrics": out, "tests": tests, "n_papers": len(items), "details": details, "weights_all": fitted,
            "n_gold_central_bad_crop": sum(1 for d in details if d["gold"][0] in d["bad_crops"])}


def evaluate_central(settings, out_dir: str | Path, gold_path: str | Path | None = None, seed: int = 0,
                     l2: float = 1.0, save_weights: bool = False, use_model: bool = True) -> dict:
    """Run both evaluations, write report.json and report.md into `out_dir`; returns the report.
    `save_weights`: publish the weights fitted on all gold papers as the store's `central-weights`.

    Raises GoldLeak (before computing anything) when the model trained on a gold paper."""
    import time

    from app.central.data import build_queries, load_papers, split_papers
    from app.central.defaults import FITTED_ON, WEIGHTS_ARTIFACT, WEIGHTS_FILE
    from app.central.scoring import CentralScorer, central_model
    from app.model_store import make_meta, publish

    t0 = time.perf_counter()
    gold = read_gold(gold_path) if gold_path else {}
    papers = load_papers(settings.db_url)
    scorer = CentralScorer.from_settings(settings, papers=papers)
    if not use_model:
        scorer = CentralScorer(scorer.tfidf, model=None, max_sentences=scorer.max_sentences)
    meta = getattr(scorer.model, "meta", None) if scorer.model is not None else None
    if gold:
        check_gold_disjoint(meta, set(gold) & {p.sha256 for p in papers}, gold_path)
    meta = meta or {}
    if meta.get("val_papers"):
        val = set(meta["val_papers"])
        split_note = "held-out papers of the trained model (meta.json val_papers)"
    else:
        _, v = split_papers([p.sha256 for p in papers if len(p.figures) >= 2], 0.2, seed)
        val = set(v)
        split_note = f"seeded 20% split (seed {seed}); no trained model"
    queries = build_queries(p for p in papers if p.sha256 in val)
    selfsup, selfsup_tests = _selfsup(scorer, papers, queries, seed)
    report: dict = {"selfsup": selfsup, "selfsup_tests": selfsup_tests,
                    "info": {"n_papers": len(papers), "n_selfsup_papers": len(val), "n_selfsup_queries": len(queries),
                             "split": split_note, "model": str(central_model(settings).path) if scorer.model is not None else None,
                             "model_meta": {k: meta.get(k) for k in ("kind", "data_hash", "steps", "train_seconds",
                                                                     "config", "kept_epoch", "dev_mrr_by_epoch",
                                                                     "stopped_early", "lexical_fit") if k in meta},
                             "combined_weights": scorer.weights, "lexical_weight": scorer.lexical_weight}}
    if gold:
        g = _gold_eval(scorer, papers, gold, seed, l2)
        report["gold"] = g.get("metrics", {})
        report["gold_tests"] = g.get("tests", {})
        report["info"].update({"n_gold_papers": g.get("n_papers", 0), "gold_file": str(gold_path),
                               "n_gold_central_bad_crop": g.get("n_gold_central_bad_crop"),
                               "weights_fitted_on_all_gold": g.get("weights_all"),
                               "default_weights_fitted_on": FITTED_ON,
                               "model_excluded_gold": bool(meta) and not (set(gold) & set(meta.get("train_papers", [])))})
        report["gold_details"] = g.get("details", [])
        if save_weights and g.get("weights_all"):
            fitted = {"weights": g["weights_all"], "gold_file": str(gold_path), "n_papers": g["n_papers"]}
            wmeta = make_meta("central-weights", "weights of the combined central-figure score",
                              papers=set(gold) & {p.sha256 for p in papers},
                              data={"description": f"hand-labelled central figures ({Path(gold_path).name})",
                                    "content_model": report["info"]["model"]},
                              metrics={"combined_leave_one_paper_out": {
                                  k: v for k, v in (g.get("metrics") or {}).get("combined", {}).items()
                                  if isinstance(v, (int, float))}})
            publish(WEIGHTS_ARTIFACT, lambda d: (d / WEIGHTS_FILE).write_text(json.dumps(fitted, indent=2)), wmeta,
                    data_dir=settings.data_dir)
    else:
        report["gold"] = {}
    report["info"]["seconds"] = round(time.perf_counter() - t0, 1)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2))
    (out / "report.md").write_text(render_markdown(report))
    return report


def _ci(v, k) -> str:
    ci = (v or {}).get("ci95", {}).get(k)
    return f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""


def _test_line(name: str, t: dict) -> str:
    parts = []
    for k, d in t.items():
        parts.append(f"{k} {d['mean_diff']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}], "
                     f"p = {d['p_t']:.3g} (t), {d['p_wilcoxon']:.3g} (Wilcoxon), "
                     f"papers better/worse {d['papers_better']}/{d['papers_worse']}")
    return f"- {name}: " + "; ".join(parts)


def render_markdown(report: dict) -> str:
    info = report.get("info", {})
    lines = ["# Central-figure evaluation", ""]
    lines += [f"- papers in the collection: {info.get('n_papers')}",
              f"- self-supervised task: {info.get('n_selfsup_queries')} mention queries from "
              f"{info.get('n_selfsup_papers')} held-out papers ({info.get('split')})",
              f"- model: {info.get('model') or 'none (fallback: tf.idf + position)'}",
              f"- combined weights in use: `{json.dumps(info.get('combined_weights'))}`", ""]
    lines += ["## Self-supervised (held-out papers): rank the paper's captions for a mention sentence", "",
              "`model`: the content model alone (the fine-tuned bi-encoder's cosine plus "
              f"{info.get('lexical_weight') or 0:g} x the tf.idf cosine, weight fitted on dev papers); "
              "`bi_encoder`: its cosine alone (shown when the weight is not 0); `pretrained_minilm`: the "
              "sentence embedding it starts from. [95% interval]: paper-level bootstrap. Tests pair "
              "methods per paper (mean over the paper's queries), then test over papers.", "",
              "| method | acc@1 | mrr |", "|---|---|---|"]
    for m, v in report.get("selfsup", {}).items():
        lines.append(f"| {m} | {_fmt(v, 'acc@1')}{_ci(v, 'acc@1')} | {_fmt(v, 'mrr')}{_ci(v, 'mrr')} |")
    if report.get("selfsup_tests"):
        lines += [""] + [_test_line(n, t) for n, t in report["selfsup_tests"].items()]
    gold = report.get("gold") or {}
    if gold:
        lines += ["", f"## Gold labels ({info.get('n_gold_papers')} papers, {info.get('gold_file')})", "",
                  "`combined` = weights fitted leave-one-paper-out on the other gold papers (held-out numbers); "
                  f"`combined_default` = the shipped default weights (fitted on {info.get('default_weights_fitted_on')}: "
                  "held out only on other gold sets). [95% interval]: paper-level bootstrap.", "",
                  "| method | acc@1 | acc@3 | map | mrr | ndcg |", "|---|---|---|---|---|---|"]
        for m, v in gold.items():
            lines.append(f"| {m} | {_fmt(v, 'acc@1')}{_ci(v, 'acc@1')} | {_fmt(v, 'acc@3')} | "
                         f"{_fmt(v, 'map')}{_ci(v, 'map')} | {_fmt(v, 'mrr')} | {_fmt(v, 'ndcg')} |")
        if report.get("gold_tests"):
            lines += ["", "Paired over papers (difference, 95% interval):", ""]
            lines += [_test_line(n, t) for n, t in report["gold_tests"].items()]
        lines += ["", f"Gold central figures with a bad crop: {info.get('n_gold_central_bad_crop')}",
                  f"Weights fitted on all gold papers: `{json.dumps(info.get('weights_fitted_on_all_gold'))}`"]
    lines.append("")
    return "\n".join(lines)


def _fmt(v, k) -> str:
    return "-" if not v or v.get(k) is None else f"{v[k]:.3f}"
