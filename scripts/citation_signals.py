"""Which signal of related figures lifts cross-paper precision on the citation protocol.

On the citation protocol's test targets (`figsearch eval`'s cross-paper section: the target's own
paper is not a candidate; relevant = a figure of a paper that cites or is cited by it), p@5 of
  tfidf             the figure text's tf.idf alone (the baseline the guard ratio divides by)
  served            the ranking config's other_papers weights (at most a few figures of a paper first)
  served - S        the same weights with signal S at 0 (what S adds to the served mix)
  lexical + S       the figure text's lexical score plus S alone, at the weight of the served mix
                    (or 1 when the served mix gives it none)
  each --weights    further weight sets (JSON objects), e.g. weights `figsearch fit` fitted
with the paired difference against `served` (per-paper means, paper-cluster bootstrap interval)
and the ratio to tf.idf. Nothing is fitted here; the targets are the protocol's test targets.
With `--judged`, the served ranking and each --weights set are also scored on the judged related
figures (tests/data/related_judgments*.jsonl, both judges: close / related fill, nDCG@5 over the
served candidates, as `figsearch fit` ranks them), so a mix that raises citation p@5 shows what
it costs in closely related figures.

  python scripts/citation_signals.py --data-dir DIR [--judged] [--weights '{"lexical": 1, "paper_body": 10}' ...]
"""
from __future__ import annotations

import argparse
import json

import numpy as np

from app.eval.recommendation import engine_candidates, evaluate_cross, fused_ranker, paper_grouped_test, select_targets
from app.eval.run import _served_judged, citation_data
from app.search.fusion import SIGNALS
from app.settings import settings_for


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--seed", type=int, default=0, help="the protocol's split of targets (as `figsearch eval`)")
    ap.add_argument("--weights", action="append", default=[], help="a weight set (JSON object) to score too")
    ap.add_argument("--judged", action="store_true", help="also score the weight sets on the judged related figures")
    args = ap.parse_args()

    settings = settings_for(args.data_dir)
    data = citation_data(settings)
    split = select_targets(data, 5, 5, None, args.seed)
    targets = split.test
    if not targets:
        raise SystemExit("no test targets: no figure has 5 others in its paper and 5 in citing or cited papers")
    cfg = data.engine.ranking
    served_w = cfg.weights_of("other_papers")
    lexical_only = engine_candidates(data, targets, "other_papers", 0, 0)
    served = engine_candidates(data, targets, "other_papers", cfg.union_dense, cfg.union_papers,
                               method=cfg.first_stage)

    def p5(cands, weights) -> list[float]:
        return evaluate_cross(data, fused_ranker(cands, weights, data.paper_of, cfg.max_per_paper), targets)["p@5"]

    base = evaluate_cross(data, fused_ranker(lexical_only, {"lexical": 1.0}), targets)["p@5"]
    ref = p5(served, served_w)
    rows = [("tfidf", base), ("served " + json.dumps(served_w), ref)]
    present = [s for s in SIGNALS if s != "lexical" and any(served.signals[t].get(s) is not None for t in targets)]
    rows += [(f"served - {s}", p5(served, {**served_w, s: 0.0})) for s in present if served_w.get(s)]
    rows += [(f"lexical + {s} ({served_w.get(s) or 1.0:g})", p5(served, {"lexical": 1.0, s: served_w.get(s) or 1.0}))
             for s in present]
    rows += [(w, p5(served, json.loads(w))) for w in args.weights]
    n_papers = len({int(data.paper_of[t]) for t in targets})
    print(f"{len(targets)} test targets of {n_papers} papers; p@5, ratio to tf.idf, difference to served "
          "[95% paper-cluster bootstrap]")
    for name, v in rows:
        d = paper_grouped_test(data, targets, v, ref)
        print(f"{np.mean(v):.3f}  {np.mean(v) / max(np.mean(base), 1e-9):.2f}x  {d['diff']:+.3f} "
              f"[{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}]  {name}")
    if args.judged:
        judged_scores(settings, [served_w] + [json.loads(w) for w in args.weights])


def judged_scores(settings, weight_sets: list[dict]) -> None:
    """Close / related fill and nDCG@5 of each weight set on the judged queries, by each judge."""
    from pathlib import Path

    from app.eval.fit import rank_candidates, served_candidates
    from app.eval.judged import evaluate_rankings

    files = [Path("tests/data/related_judgments.jsonl"), Path("tests/data/related_judgments_judge2.jsonl")]
    engine, judge1 = _served_judged(settings, files, "judge1")
    _, judge2 = _served_judged(settings, files, "judge2")
    cands = served_candidates(engine, judge1)
    print("judged related figures (50 queries), close / related fill / nDCG@5 [close fill 95% paper bootstrap]")
    for weights in weight_sets:
        top = {q: rank_candidates(c, weights, engine.ranking.max_per_paper)[:5] for q, c in cands.items()}
        cells = []
        for name, graded in (("judge1", judge1), ("judge2", judge2)):
            m = evaluate_rankings(graded, {"w": top.__getitem__}, sorted(q for q in top if q in graded.grades))["w"]
            ci = m["close_fill_ci95"]
            cells.append(f"{name} {m['close_fill']:.3f} [{ci[0]:.2f}, {ci[1]:.2f}] / {m['related_fill']:.3f} / "
                         f"{m['ndcg@5']:.3f}")
        print("  ".join(cells), " ", json.dumps(weights))


if __name__ == "__main__":
    main()
