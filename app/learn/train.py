"""Training loops.

Fusion models (Kuzi & Zhai) are trained on batches of *figures* rather than of pairs: a batch takes
~12 random training papers (half of them with a citing/cited paper) and up to 4 figures of each, and
every pair inside the batch is a weakly labelled pair (R from `PairBuilder.label_matrix`): one
forward pass gives ~1,500 pairs, which is what makes CPU training take minutes. Losses on the
cosine of the fused embeddings: "mse" (their best), "ce", "triplet"; plus the same loss on each
branch's own embedding (text vs R; image vs the SSIM-filtered binary labels), so the branches are
usable alone (text-only and image-only queries). Positive and negative pairs are weighted equally.

FCC models (figure-caption correspondence, Gomez-Perez & Ortega) train on (figure, caption) pairs with random captions as negatives (balanced),
objective "ce" or "pearson" (a correlation loss).

Validation accuracy (progress bar): balanced same-paper vs random pair accuracy of the fused cosine,
threshold at the median, on a held-out 10% of the *training* papers (never evaluation papers).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from app.learn.data import LearnData
from app.learn.pairs import PairBuilder, ssim_mask
from models.base import pick_device, seed_everything
from models.losses import pair_loss, pearson_loss, triplet_matrix_loss


@dataclass
class TrainConfig:
    kind: str = "fusion"             # fusion | fcc
    text: str | None = "minilm"      # minilm | lstm | bilstm | None (fusion only)
    image: bool = True
    image_kind: str = "style"        # style (default) | simple (the published fusion model's CNN)
    ssim_filter: bool = False        # Kuzi & Zhai's SSIM filter on the image-branch pairs
    paper: bool = True               # paper-context branch (MiniLM of the paper's title + abstract)
    loss: str = "mse"                # mse | ce | triplet (fusion); ce | pearson (fcc)
    dim: int = 64
    image_size: int = 128
    epochs: int = 4
    steps_per_epoch: int = 30
    batch_papers: int = 12
    per_paper: int = 4
    lr: float = 3e-3
    weight_decay: float = 1e-5
    aux_weight: float = 0.5
    vocab_size: int = 1000
    val_frac: float = 0.1
    seed: int = 0
    threads: int = 0                 # 0 = torch default
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrainResult:
    model: torch.nn.Module
    vocab: object | None
    metrics: dict
    config: TrainConfig


def _bar(total, desc, progress):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="step", disable=not progress, dynamic_ncols=True)


def _start(cfg: TrainConfig, device: str | None) -> torch.device:
    """Seed every generator and fix the thread count before anything random happens, so that a
    run repeats exactly; returns the device to train on."""
    seed_everything(cfg.seed)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    return pick_device(device)


def _record_epoch(history: list[dict], bar, epoch: int, losses: list[float], acc: float) -> None:
    """One row of the training history (metrics["history"]) and the progress bar's figures."""
    history.append({"epoch": epoch + 1, "loss": float(np.mean(losses)), "val_acc": acc})
    bar.set_postfix(epoch=epoch + 1, loss=f"{np.mean(losses):.4f}", val_acc=f"{acc:.3f}")


def _val_accuracy(sim_fn, builder: PairBuilder, papers: list[int], rng, n: int = 300) -> float:
    """Balanced accuracy (same vs random) with the threshold at the median similarity."""
    bp = {p: builder.by_paper[p] for p in papers if p in builder.by_paper}
    multi = [p for p, r in bp.items() if len(r) > 1]
    if not multi or len(bp) < 2:
        return float("nan")
    pos, neg = [], []
    allp = list(bp)
    for _ in range(n):
        p = multi[rng.integers(len(multi))]
        a, b = rng.choice(bp[p], 2, replace=False)
        pos.append((a, b))
        q = allp[rng.integers(len(allp))]
        if q != p and q not in builder.neighbours.get(p, ()):
            neg.append((a, bp[q][rng.integers(len(bp[q]))]))
    s = sim_fn(np.array(pos + neg))
    y = np.array([1] * len(pos) + [0] * len(neg))
    th = np.median(s)
    return float(((s > th) == y).mean())


def text_inputs(data: LearnData, cfg: TrainConfig, vocab=None, rows=None):
    if cfg.text == "minilm":
        x = data.minilm()
        return torch.from_numpy(x if rows is None else x[rows])
    if cfg.text in ("lstm", "bilstm"):
        texts = data.texts if rows is None else [data.texts[i] for i in rows]
        return torch.from_numpy(vocab.encode(texts, 100))
    return None


def train_fusion(data: LearnData, cfg: TrainConfig, exclude_papers: set[int] = frozenset(),
                 progress: bool = True, device: str | None = None) -> TrainResult:
    from app.learn.vocab import Vocab
    from models.fusion import FusionModel

    dev = _start(cfg, device)
    t0 = time.perf_counter()
    full = PairBuilder(data.paper_of, data.neighbours, exclude_papers, seed=cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    papers = full.papers.tolist()
    rng.shuffle(papers)
    n_val = max(1, int(round(len(papers) * cfg.val_frac))) if len(papers) >= 10 else 0
    val_papers = papers[:n_val]
    builder = PairBuilder(data.paper_of, data.neighbours, set(exclude_papers) | set(val_papers), seed=cfg.seed)
    if len(builder.papers) < 2:
        raise ValueError("too few training papers (need at least 2 outside the excluded ones)")
    vocab = None
    if cfg.text in ("lstm", "bilstm"):
        vocab = Vocab.build([data.texts[i] for i in builder.rows.tolist()], cfg.vocab_size)
    text_all = text_inputs(data, cfg, vocab)
    images = torch.from_numpy(data.images(cfg.image_size)) if cfg.image else None
    from app.learn.images import SSIMStats

    thumbs = SSIMStats(data.thumbs(cfg.image_size)) if cfg.image and cfg.ssim_filter else None
    stats = torch.from_numpy(data.stats()) if cfg.image and cfg.image_kind == "style" else None
    paper_all = torch.from_numpy(data.paper_minilm()) if cfg.paper else None
    model = FusionModel(text_kind=cfg.text, image=cfg.image, dim=cfg.dim,
                        vocab_size=len(vocab) if vocab else 1002, image_kind=cfg.image_kind,
                        paper=cfg.paper).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    total = cfg.epochs * cfg.steps_per_epoch
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=total, pct_start=0.15)
    history = []

    def inputs(rows):
        t = text_all[rows].to(dev) if text_all is not None else None
        im = images[rows].to(dev).float().div_(255.0) if images is not None else None
        st = stats[rows].to(dev) if stats is not None else None
        pp = paper_all[rows].to(dev) if paper_all is not None else None
        return t, im, st, pp

    def embed_rows(rows):
        model.eval()
        with torch.no_grad():
            outs = [model(*inputs(rows[s:s + 256]))["fused"] for s in range(0, len(rows), 256)]
        model.train()
        return torch.cat(outs).cpu().numpy()

    bar = _bar(total, "train", progress)
    iu = None
    for epoch in range(cfg.epochs):
        losses = []
        for _ in range(cfg.steps_per_epoch):
            rows = builder.batch_rows(cfg.batch_papers, cfg.per_paper)
            r = builder.label_matrix(rows)
            n = len(rows)
            iu = np.triu_indices(n, 1)
            R = torch.from_numpy(r).to(dev)
            pos = (R > 0).float()
            npos = pos[iu].sum().clamp(min=1)
            nneg = (1 - pos)[iu].sum().clamp(min=1)
            wmat = pos / npos + (1 - pos) / nneg
            out = model(*inputs(rows))
            tri = torch.triu(torch.ones(n, n, dtype=torch.bool, device=dev), 1)

            def loss_for(e, target, weight):
                sim = e @ e.T
                if cfg.loss == "triplet":
                    mask = ~torch.eye(n, dtype=torch.bool, device=dev) & (weight > 0)
                    return triplet_matrix_loss(sim, target, mask)
                return pair_loss(sim[tri], target[tri], cfg.loss, weight=weight[tri])

            loss = loss_for(out["fused"], R, wmat)
            if "text" in out:
                loss = loss + cfg.aux_weight * loss_for(out["text"], R, wmat)
            if "image" in out and thumbs is None:
                loss = loss + cfg.aux_weight * loss_for(out["image"], (R > 0).float(), wmat)
            elif "image" in out:
                keep, lab = ssim_mask(rows, r, thumbs)
                keep_t = torch.from_numpy(keep).to(dev)
                lab_t = torch.from_numpy(lab).to(dev)
                kp = (keep_t & (lab_t > 0)).float()
                kn = (keep_t & (lab_t == 0)).float()
                wim = kp / kp[tri].sum().clamp(min=1) + kn / kn[tri].sum().clamp(min=1)
                if kp[tri].sum() > 0:
                    loss = loss + cfg.aux_weight * loss_for(out["image"], lab_t, wim)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
            bar.update(1)
        acc = float("nan")
        if val_papers:
            vrows = np.concatenate([full.by_paper[p] for p in val_papers])
            e = embed_rows(vrows)
            pos_of = {int(r_): k for k, r_ in enumerate(vrows.tolist())}
            acc = _val_accuracy(lambda pr: np.array([e[pos_of[a]] @ e[pos_of[b]] for a, b in pr]),
                                full, val_papers, np.random.default_rng(cfg.seed + 7))
        _record_epoch(history, bar, epoch, losses, acc)
        bar.write(f"epoch {epoch + 1}/{cfg.epochs} loss {np.mean(losses):.4f} val_acc {acc:.3f}") if progress else None
    bar.close()
    model.eval()
    metrics = {"history": history, "val_acc": history[-1]["val_acc"] if history else None,
               "train_seconds": round(time.perf_counter() - t0, 1), "n_train_papers": int(len(builder.papers)),
               "n_train_figures": int(len(builder.rows)), "n_val_papers": len(val_papers),
               "n_excluded_papers": len(set(exclude_papers)), "device": str(dev)}
    return TrainResult(model.cpu(), vocab, metrics, cfg)


def train_fcc(data: LearnData, cfg: TrainConfig, exclude_papers: set[int] = frozenset(),
              progress: bool = True, device: str | None = None) -> TrainResult:
    from app.learn.vocab import Vocab
    from models.fcc import FCCModel

    dev = _start(cfg, device)
    t0 = time.perf_counter()
    rng = np.random.default_rng(cfg.seed)
    rows = np.array([i for i, p in enumerate(data.paper_of.tolist()) if p not in exclude_papers], np.int64)
    rng.shuffle(rows)
    n_val = max(2, int(len(rows) * cfg.val_frac))
    val, train = rows[:n_val], rows[n_val:]
    vocab = Vocab.build([data.captions[i] for i in train.tolist()], cfg.vocab_size)
    ids = torch.from_numpy(vocab.encode(data.captions, 100))
    images = torch.from_numpy(data.images(cfg.image_size))
    model = FCCModel(vocab_size=len(vocab), objective=cfg.loss if cfg.loss in ("ce", "pearson") else "ce").to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    total = cfg.epochs * cfg.steps_per_epoch
    bs = max(8, cfg.batch_papers * cfg.per_paper // 2)
    bar = _bar(total, "train fcc", progress)
    history = []
    for epoch in range(cfg.epochs):
        losses = []
        for _ in range(cfg.steps_per_epoch):
            b = rng.choice(train, size=min(bs, len(train)), replace=False)
            shuf = np.roll(b, 1)  # random captions of other figures of the batch as negatives
            v = model.encode_image(images[b].to(dev).float() / 255)
            l_pos = model.encode_text(ids[b].to(dev))
            l_neg = model.encode_text(ids[shuf].to(dev))
            if model.objective == "ce":
                logits = torch.cat([model.pair_logits(v, l_pos), model.pair_logits(v, l_neg)])
                y = torch.cat([torch.ones(len(b)), torch.zeros(len(b))]).long().to(dev)
                loss = torch.nn.functional.cross_entropy(logits, y)
            else:
                sims = torch.cat([(v * l_pos).sum(-1), (v * l_neg).sum(-1)])
                lab = torch.cat([torch.ones(len(b)), -torch.ones(len(b))]).to(dev)
                loss = pearson_loss(sims, lab)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            bar.update(1)
        model.eval()
        with torch.no_grad():
            v = model.encode_image(images[val].to(dev).float() / 255)
            lp = model.encode_text(ids[val].to(dev))
            ln = model.encode_text(ids[np.roll(val, 1)].to(dev))
            sp, sn = model.score(v, lp).cpu().numpy(), model.score(v, ln).cpu().numpy()
        model.train()
        s = np.r_[sp, sn]
        acc = float(((s > np.median(s)) == np.r_[np.ones(len(sp)), np.zeros(len(sn))]).mean())
        _record_epoch(history, bar, epoch, losses, acc)
    bar.close()
    model.eval()
    metrics = {"history": history, "val_acc": history[-1]["val_acc"], "train_seconds": round(time.perf_counter() - t0, 1),
               "n_train_figures": int(len(train)), "n_excluded_papers": len(set(exclude_papers)), "device": str(dev)}
    return TrainResult(model.cpu(), vocab, metrics, cfg)


def train(data: LearnData, cfg: TrainConfig, exclude_papers=frozenset(), progress=True, device=None) -> TrainResult:
    fn = train_fcc if cfg.kind == "fcc" else train_fusion
    return fn(data, cfg, set(exclude_papers), progress=progress, device=device)
