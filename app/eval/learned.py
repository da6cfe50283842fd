"""Honest evaluation of learned embeddings (same-paper and citing-paper relevance) by cross-fitting.

The papers that hold evaluation targets (test *and* validation) are split into K folds (seeded).
For fold k a model is trained with `exclude_papers` = the fold's papers, so none of their figures
takes part in any training pair; a target of fold k is then ranked with the embeddings of model k
(of all figures). Every target is thus scored by a model that never saw its paper, validation
targets included, so w (tuned on validation targets only) is not biased either. Non-target papers
train every model. The product model (`figsearch train`) is trained on everything; the cross-fitted
ones live in a cache (data_dir/models/.eval/<key>/) keyed by data hash + config + fold, so
re-running the evaluation does not retrain.

Rows: `embedding`/`rerank` = the default learned model; `embedding_<v>`/`rerank_<v>` = variants;
`image_only[_<v>]` = image-branch cosine only (an uploaded figure without text, the target figure's
pixels as the query) with `image_only_random` = the random-ranking baseline (expected precision).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.eval.recommendation import (TOP, W_GRID, evaluate_ranker, lexical_ranker, n_relevant, pair_accuracy,
                                     paired_p, rerank_ranker, sample_pairs, summarise)
from app.learn.data import LearnData
from app.learn.train import TrainConfig
from app.learn.variants import config_for
from app.stats import paper_folds

@dataclass
class FoldEmbeddings:
    """Per-fold embedding matrices aligned with the eval rows; fold_of_row = -1 for non-targets."""
    mats: list[np.ndarray]
    fold_of_row: np.ndarray

    def for_target(self, t: int) -> np.ndarray:
        f = int(self.fold_of_row[t])
        return self.mats[max(f, 0)]


def _key(data: LearnData, cfg: TrainConfig, excluded: set[int]) -> str:
    h = hashlib.sha256((data.data_hash(excluded) + json.dumps(cfg.to_dict(), sort_keys=True)).encode())
    return h.hexdigest()[:16]


def train_or_load(data: LearnData, cfg: TrainConfig, excluded: set[int], progress: bool):
    from app.learn.registry import load_dir, save_result
    from app.learn.train import train

    d = Path(data.data_dir) / "models" / ".eval" / _key(data, cfg, excluded)
    if (d / "train.json").exists():
        return load_dir(d, "eval", d.name)
    res = train(data, cfg, excluded, progress=progress)
    save_result(res, d, {"data_hash": data.data_hash(excluded), "excluded_paper_ids": sorted(excluded)})
    return load_dir(d, "eval", d.name)


def crossfit(data: LearnData, eval_fids: list[int], target_rows: list[int], eval_paper_of: np.ndarray,
             cfg: TrainConfig, k: int = 3, seed: int = 0, progress: bool = True) -> tuple[dict[str, FoldEmbeddings], dict]:
    """Train k models (each excluding one fold of target papers); return eval-aligned embeddings
    ({"fused": ..., "image": ...} as FoldEmbeddings) and training info."""
    from app.learn.embed import embed_rows

    fold_of_paper = paper_folds([int(eval_paper_of[t]) for t in target_rows], k, np.random.default_rng(seed + 1000).shuffle)
    row_of_fid = {d.figure_id: i for i, d in enumerate(data.docs)}
    rows = np.array([row_of_fid[f] for f in eval_fids], np.int64)
    fold_of_row = np.array([fold_of_paper.get(int(p), -1) for p in eval_paper_of.tolist()], np.int64)
    mats: dict[str, list[np.ndarray]] = {}
    info = {"folds": k, "train_seconds": [], "val_acc": []}
    for f in range(k):
        excluded = {p for p, ff in fold_of_paper.items() if ff == f}
        loaded = train_or_load(data, cfg, excluded, progress)
        info["train_seconds"].append(loaded.info.get("metrics", {}).get("train_seconds"))
        info["val_acc"].append(loaded.info.get("metrics", {}).get("val_acc"))
        if cfg.kind == "fcc":
            embs = fcc_embed(loaded, data, rows)
        else:
            embs = embed_rows(loaded, data, rows)
        for name, m in embs.items():
            mats.setdefault(name, []).append(m)
    return {n: FoldEmbeddings(m, fold_of_row) for n, m in mats.items()}, info


def fcc_embed(loaded, data: LearnData, rows: np.ndarray) -> dict[str, np.ndarray]:
    import torch

    model = loaded.model
    ims = data.images(loaded.config.image_size)
    ids = loaded.vocab.encode([data.captions[i] for i in rows.tolist()], 100)
    out_v, out_l = [], []
    with torch.inference_mode():
        for s in range(0, len(rows), 128):
            r = rows[s:s + 128]
            out_v.append(model.encode_image(torch.from_numpy(ims[r]).float() / 255).numpy())
            out_l.append(model.encode_text(torch.from_numpy(ids[s:s + 128])).numpy())
    return {"image": np.concatenate(out_v), "caption": np.concatenate(out_l)}


# --------------------------------------------------------------------------- rankers
def fold_dense_ranker(data, fe: FoldEmbeddings):
    def rank(t: int) -> np.ndarray:
        emb = fe.for_target(t)
        sims = emb @ emb[t]
        sims[t] = -np.inf
        top = np.argpartition(-sims, min(TOP, len(sims) - 1))[:TOP]
        return top[np.argsort(-sims[top], kind="stable")]
    return rank


def fold_rerank_ranker(data, method: str, fe: FoldEmbeddings, w: float):
    """The evaluation's re-ranker, each target embedded by its own fold's model."""
    return rerank_ranker(data, method, fe.for_target, w)


def random_ranker(data, seed: int = 0):
    rng = np.random.default_rng(seed)

    def rank(t: int) -> np.ndarray:
        rows = np.delete(np.arange(len(data.paper_of)), t)
        return rng.permutation(rows)[:100]
    return rank


def expected_random_precision(data, targets: list[int]) -> float:
    """Expected p@k of a uniformly random ranking = relevant / (n - 1), averaged over targets."""
    n = len(data.paper_of)
    return float(np.mean([n_relevant(data, t) / (n - 1) for t in targets])) if targets else 0.0


def learned_rows(data, split, name: str, embs: dict[str, FoldEmbeddings], first_stage: str,
                 report: dict, per_method: dict, suffix: str) -> None:
    """Add embedding<suffix>, rerank<suffix> (w tuned on validation) and image_only<suffix>."""
    fused = embs.get("fused")
    if fused is not None:
        per_method[f"embedding{suffix}"] = evaluate_ranker(data, fold_dense_ranker(data, fused), split.test)
        sweep = {w: summarise(evaluate_ranker(data, fold_rerank_ranker(data, first_stage, fused, w), split.val))["p@5"]
                 for w in W_GRID} if split.val else {0.5: 0.0}
        best = max(sweep, key=lambda w: (sweep[w], w))
        report["w"][f"rerank{suffix}"], report["w_sweep"][f"rerank{suffix}"] = best, sweep if split.val else {}
        per_method[f"rerank{suffix}"] = evaluate_ranker(data, fold_rerank_ranker(data, first_stage, fused, best),
                                                        split.test)
    if "image" in embs:
        per_method[f"image_only{suffix}"] = evaluate_ranker(data, fold_dense_ranker(data, embs["image"]), split.test)


def pair_rows(data, split, embs: dict[str, FoldEmbeddings], seed: int, n_pairs: int = 500) -> dict:
    """Pair accuracy (Kuzi & Zhai, Tables 1/3) with the cross-fitted embeddings (the first figure of each
    pair is from a target paper; its fold's model embeds both figures)."""
    rng = np.random.default_rng(seed + 1)
    val_pairs = sample_pairs(data, split.val, n_pairs // 5 or 1, rng) if split.val else None
    test_pairs = sample_pairs(data, split.test, n_pairs, rng)
    if not val_pairs:
        return {}
    out = {}
    for kind, fe in embs.items():
        out[kind] = pair_accuracy(lambda a, b, fe=fe: float(fe.for_target(a)[a] @ fe.for_target(a)[b]),
                                  val_pairs, test_pairs)
    return out


def evaluate_learned(settings, data, split, report: dict, seed: int = 0, first_stage: str = "tfidf",
                     variants: list[str] | None = None, folds: int = 3, default: str = "fused",
                     base: TrainConfig | None = None, progress: bool = True) -> dict:
    """Add the learned rows to a run_evaluation report (in place) and return it."""
    from app.learn.data import load_learn_data
    ldata = load_learn_data(settings)
    eval_fids = [d.figure_id for d in data.col.docs]
    targets = list(split.test) + list(split.val)
    per_method: dict[str, dict] = {}
    report.setdefault("learned", {})
    names = [default] + [v for v in (variants or []) if v != default]
    for name in names:
        cfg = config_for(name, base)
        try:
            embs, info = crossfit(ldata, eval_fids, targets, data.paper_of, cfg, k=folds, seed=seed,
                                  progress=progress)
        except ValueError as exc:  # e.g. a collection too small to train on without the target papers
            report["learned"][name] = {"skipped": str(exc)}
            continue
        suffix = "_learned" if name == default else f"_{name}"
        if cfg.kind == "fcc":
            per_method[f"image_only{suffix}"] = evaluate_ranker(data, fold_dense_ranker(data, embs["image"]),
                                                                split.test)
            info["caption_to_figure_r@10"] = caption_recall(embs, split.test, data)
        else:
            learned_rows(data, split, name, embs, first_stage, report, per_method, suffix)
        acc = pair_rows(data, split, {k: v for k, v in embs.items() if k in ("fused", "image", "text")}, seed)
        for kind, a in acc.items():
            report["pairs"][f"{name}_{kind}" if kind != "fused" else name] = a
        info["config"] = cfg.to_dict()
        report["learned"][name] = info
    rnd = expected_random_precision(data, split.test)
    per_method["image_only_random"] = evaluate_ranker(data, random_ranker(data, seed), split.test)
    base_p5 = evaluate_ranker(data, lexical_ranker(data, "tfidf"), split.test)
    for name, per in per_method.items():
        row = summarise(per)
        row["p_value_vs_tfidf"] = paired_p(per["p@5"], base_p5["p@5"])
        row["p_value_p@3_vs_tfidf"] = paired_p(per["p@3"], base_p5["p@3"])
        if name.startswith("image_only") and name != "image_only_random":
            row["p_value_vs_random"] = paired_p(per["p@5"], per_method["image_only_random"]["p@5"])
        report["methods"][name] = row
    report["image_only_random_expected_p@5"] = rnd
    report["default_model"] = default
    report["honesty"] = (f"learned rows are cross-fitted over {folds} folds of the target papers (test and "
                         "validation): each target is embedded by a model trained with its paper excluded")
    return report


def caption_recall(embs: dict[str, FoldEmbeddings], targets: list[int], data, k: int = 10) -> float:
    """FCC caption -> figure recall@k among all figures (cosine of the branch outputs)."""
    hits = []
    for t in targets:
        im, cap = embs["image"].for_target(t), embs["caption"].for_target(t)
        s = im @ cap[t]
        hits.append(float(t in np.argsort(-s)[:k]))
    return float(np.mean(hits)) if hits else float("nan")


def order_methods(report: dict) -> None:
    """Stable, readable order: lexical, default learned, MiniLM, variants, image-only."""
    m = report["methods"]
    head = [k for k in ("tfidf", "bm25", "rerank", "embedding_learned", "rerank_learned", "embedding_minilm",
                              "rerank_minilm") if k in m]
    rest = [k for k in m if k not in head and not k.startswith("image_only")]
    img = [k for k in m if k.startswith("image_only") and k != "image_only_random"] + (
        ["image_only_random"] if "image_only_random" in m else [])
    report["methods"] = {k: m[k] for k in head + rest + img}


def learned_section(report: dict) -> str:
    """Markdown appended to report.md: p@3 significance, image-only vs random, training info."""
    m = report["methods"]
    lines = ["", "## Learned embeddings", "",
             report.get("honesty", ""), "",
             "| method | p@3 | p-value p@3 vs tf.idf | p@5 | p-value p@5 vs tf.idf | Same p@3 | Citing p@3 |",
             "|---|---|---|---|---|---|---|"]
    for name, r in m.items():
        lines.append(f"| {name} | {r['p@3']:.3f} | {r.get('p_value_p@3_vs_tfidf', float('nan')):.3g} | {r['p@5']:.3f} | "
                     f"{r['p_value_vs_tfidf']:.3g} | {r.get('same_p@3', float('nan')):.3f} | "
                     f"{r.get('citing_p@3', float('nan')):.3f} |")
    if "tfidf" in m and "rerank_learned" in m:
        t, r = m["tfidf"], m["rerank_learned"]
        lines += ["", f"Default learned re-ranker vs tf.idf: p@5 {r['p@5']:.3f} vs {t['p@5']:.3f} "
                      f"({100 * (r['p@5'] / t['p@5'] - 1):+.1f}% relative, paired t-test p = {r['p_value_vs_tfidf']:.2g}); "
                      f"p@3 {r['p@3']:.3f} vs {t['p@3']:.3f} ({100 * (r['p@3'] / t['p@3'] - 1):+.1f}%, "
                      f"p = {r['p_value_p@3_vs_tfidf']:.2g})."]
    img = {k: v for k, v in m.items() if k.startswith("image_only") and k != "image_only_random"}
    if img:
        exp = report.get("image_only_random_expected_p@5", float("nan"))
        lines += ["", "Image-only queries (the target figure's pixels, no text) ranked against the whole collection:"]
        for k, v in img.items():
            lines.append(f"- {k}: p@5 {v['p@5']:.3f} (Same {v['same_p@5']:.3f}, Citing {v['citing_p@5']:.3f}) vs random "
                         f"{m.get('image_only_random', {}).get('p@5', float('nan')):.3f} (expected {exp:.3f}); "
                         f"paired t-test vs random p = {v.get('p_value_vs_random', float('nan')):.2g}")
    for name, info in report.get("learned", {}).items():
        lines.append(f"- model {name}: folds {info.get('folds')}, train seconds per fold {info.get('train_seconds')}, "
                     f"validation pair accuracy per fold {[round(x, 3) if x == x else x for x in info.get('val_acc', []) if x is not None]}"
                     + (f", caption->figure recall@10 {info['caption_to_figure_r@10']:.3f}"
                        if "caption_to_figure_r@10" in info else ""))
    return "\n".join(lines) + "\n"
