"""Synthetic figures of every type in the figure-type vocabulary, drawn with matplotlib in varied
styles. They are the training data of the figure-type classifier: no pretrained vision weights
can be downloaded, so the project draws its own labelled examples (line charts, bars, heatmaps,
diagrams, tables, text boxes, maps, UI screenshots, photo-like textures ...). A drawing may hold
several panels; its labels are the types of its panels, the largest first."""
from __future__ import annotations

import io
import random
import string
import warnings

import numpy as np
from PIL import Image, ImageFilter

WORDS = ("model data loss train test accuracy error rate time user item query layer input output "
         "encoder decoder attention score feature embedding click rank sample batch epoch baseline "
         "ours method graph node edge token sequence weight value mean update gradient network "
         "recall precision table result dataset average label class prediction step size").split()

PALETTES = ("tab10", "Set1", "Set2", "Dark2", "Paired", "viridis", "plasma", "tab20", "Accent", "cividis")
CMAPS = ("viridis", "Blues", "Reds", "magma", "coolwarm", "YlGnBu", "Greens", "RdBu", "inferno", "Greys", "hot")

DRAWN = ("line_chart", "bar_chart", "scatter_plot", "heatmap", "box_plot", "pie_chart", "network_graph",
         "diagram", "table", "photo", "screenshot", "text", "map")


def _word(rng: random.Random) -> str:
    w = rng.choice(WORDS)
    return w.capitalize() if rng.random() < 0.4 else w


def _phrase(rng: random.Random, lo: int = 1, hi: int = 3) -> str:
    return " ".join(_word(rng) for _ in range(rng.randint(lo, hi)))


def _colors(rng: random.Random, n: int):
    import matplotlib

    cmap = matplotlib.colormaps[rng.choice(PALETTES)]
    if getattr(cmap, "N", 256) <= 20:
        return [cmap(i % cmap.N) for i in range(n)]
    return [cmap(x) for x in np.linspace(0.1, 0.9, max(n, 1))]


def _axes_style(ax, rng: random.Random) -> None:
    if rng.random() < 0.5:
        ax.set_xlabel(_phrase(rng, 1, 2))
    if rng.random() < 0.6:
        ax.set_ylabel(_phrase(rng, 1, 2))
    if rng.random() < 0.3:
        ax.set_title(_phrase(rng, 1, 3))
    if rng.random() < 0.35:
        ax.grid(True, alpha=rng.uniform(0.2, 0.6), linestyle=rng.choice(["-", "--", ":"]))
    if rng.random() < 0.3:
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)


def _line(ax, rng: random.Random, nprng: np.random.Generator) -> None:
    n = rng.randint(1, 6)
    x = np.arange(rng.randint(5, 60)) if rng.random() < 0.6 else np.linspace(0, rng.uniform(1, 100), 200)
    markers = [None, "o", "s", "^", "x", "D", "*", "v"]
    for i, c in enumerate(_colors(rng, n)):
        kind = rng.random()
        if kind < 0.4:
            y = np.cumsum(nprng.normal(0, 1, len(x))) + nprng.normal(0, 3)
        elif kind < 0.7:
            y = rng.uniform(0.2, 1) * (1 - np.exp(-x / max(x.max(), 1) * rng.uniform(2, 8))) + nprng.normal(0, .02, len(x))
        else:
            y = np.exp(-x / max(x.max(), 1) * rng.uniform(1, 6)) + nprng.normal(0, .03, len(x)) + i * 0.1
        ax.plot(x, y, color=c, marker=rng.choice(markers) if len(x) < 70 else None,
                linestyle=rng.choice(["-", "-", "--", ":", "-."]), linewidth=rng.uniform(0.8, 2.5),
                markersize=rng.uniform(3, 7), label=_phrase(rng, 1, 2))
        if rng.random() < 0.15:
            ax.fill_between(x, y - 0.1, y + 0.1, color=c, alpha=0.2)
    if rng.random() < 0.1:
        ax.set_yscale("symlog")
    if n > 1 and rng.random() < 0.7:
        ax.legend(fontsize=rng.uniform(5, 9), loc=rng.choice(["best", "upper left", "lower right"]))
    _axes_style(ax, rng)


def _bar(ax, rng: random.Random, nprng: np.random.Generator) -> None:
    if rng.random() < 0.25:  # histogram
        ax.hist([nprng.normal(rng.uniform(-2, 2), 1, 400) for _ in range(rng.randint(1, 3))],
                bins=rng.randint(8, 40), color=_colors(rng, 3)[: rng.randint(1, 3)][0] if rng.random() < .5 else None,
                alpha=rng.uniform(0.6, 1), histtype=rng.choice(["bar", "stepfilled", "barstacked"]))
        _axes_style(ax, rng)
        return
    groups, series = rng.randint(2, 10), rng.randint(1, 5)
    x = np.arange(groups)
    width = 0.8 / series
    horizontal = rng.random() < 0.3
    stacked = rng.random() < 0.2
    bottom = np.zeros(groups)
    hatches = [None, "//", "..", "xx", "\\\\", "--"]
    for i, c in enumerate(_colors(rng, series)):
        h = nprng.uniform(0.1, 1, groups) * rng.uniform(1, 100)
        pos = x if stacked else x - 0.4 + width * (i + 0.5)
        kw = dict(color=c, edgecolor="black" if rng.random() < 0.4 else None,
                  hatch=rng.choice(hatches) if rng.random() < 0.2 else None, label=_phrase(rng, 1, 2))
        if horizontal:
            ax.barh(pos, h, height=0.8 if stacked else width, left=bottom if stacked else None, **kw)
        else:
            ax.bar(pos, h, width=0.8 if stacked else width, bottom=bottom if stacked else None, **kw)
        if stacked:
            bottom = bottom + h
    labels = [_word(rng) for _ in x]
    (ax.set_yticks if horizontal else ax.set_xticks)(x)
    (ax.set_yticklabels if horizontal else ax.set_xticklabels)(labels, rotation=0 if horizontal else rng.choice([0, 30, 45, 90]))
    if series > 1 and rng.random() < 0.7:
        ax.legend(fontsize=rng.uniform(5, 9))
    _axes_style(ax, rng)


def _scatter(ax, rng: random.Random, nprng: np.random.Generator) -> None:
    embedding = rng.random() < 0.35  # t-SNE / UMAP clouds: many clusters of small points, no axes
    clusters = rng.randint(3, 20) if embedding else rng.randint(1, 10)
    for c in _colors(rng, clusters):
        n = rng.randint(10, 300)
        centre, spread = nprng.normal(0, 5, 2), rng.uniform(0.3, 2.5)
        pts = nprng.normal(centre, spread, (n, 2))
        if embedding and rng.random() < 0.5:  # elongated, curved clusters
            t = nprng.uniform(0, rng.uniform(1, 4), n)
            pts = centre + np.c_[t * rng.uniform(-2, 2), np.sin(t) * rng.uniform(-2, 2)] + nprng.normal(0, 0.3, (n, 2))
        elif rng.random() < 0.3:  # correlated cloud
            pts[:, 1] = pts[:, 0] * rng.uniform(-2, 2) + nprng.normal(0, spread, n)
        size = rng.uniform(0.5, 6) if embedding else (nprng.uniform(5, 200, n) if rng.random() < 0.15 else rng.uniform(2, 30))
        ax.scatter(pts[:, 0], pts[:, 1], s=size, color=c, alpha=rng.uniform(0.4, 1),
                   marker=rng.choice(["o", "o", ".", "x", "^", "s"]), label=_word(rng))
        if not embedding and rng.random() < 0.15:  # labelled points
            for k in range(min(n, 5)):
                ax.text(pts[k, 0], pts[k, 1], _word(rng), fontsize=5)
    if rng.random() < 0.2:
        lim = ax.get_xlim()
        ax.plot(lim, lim, "k--", linewidth=1)
    if embedding or rng.random() < 0.3:
        ax.set_xticks([])
        ax.set_yticks([])
        if rng.random() < 0.4:
            ax.axis("off")
    elif rng.random() < 0.5:
        _axes_style(ax, rng)
    if clusters > 1 and rng.random() < 0.4:
        ax.legend(fontsize=rng.uniform(5, 8), markerscale=1.5)


def _heatmap(ax, rng: random.Random, nprng: np.random.Generator) -> None:
    style = rng.random()
    if style < 0.3:
        _attention(ax, rng, nprng)
        return
    r, c = rng.randint(3, 30), rng.randint(3, 30)
    if rng.random() < 0.3:
        c = r
    m = nprng.random((r, c))
    if rng.random() < 0.4:  # confusion-matrix-like diagonal
        m = m * 0.3 + np.eye(r, c) * rng.uniform(0.5, 2)
    if rng.random() < 0.3:
        m = np.cumsum(m, axis=rng.randint(0, 1))
    if r == c and rng.random() < 0.2:  # a correlation triangle
        m = np.where(np.tril(np.ones((r, c))) > 0, m, np.nan)
    cmap = rng.choice(CMAPS)
    if rng.random() < 0.3:  # cells parted by white lines, as seaborn draws them
        im = ax.pcolormesh(m, cmap=cmap, edgecolors="white", linewidth=rng.uniform(0.5, 2))
        ax.invert_yaxis()
        offset = 0.5
    else:
        im = ax.imshow(m, cmap=cmap, aspect="auto" if rng.random() < .5 else "equal")
        offset = 0.0
    if r * c <= 150 and rng.random() < 0.5:
        fmt = rng.randint(0, 2)
        hi = np.nanmax(m)
        for i in range(r):
            for j in range(c):
                if not np.isnan(m[i, j]):
                    ax.text(j + offset, i + offset, f"{m[i, j]:.{fmt}f}", ha="center", va="center",
                            fontsize=rng.uniform(4, 8), color="white" if m[i, j] > 0.7 * hi and rng.random() < .7 else "black")
    if rng.random() < 0.6:
        ax.figure.colorbar(im, ax=ax, fraction=0.046)
    if rng.random() < 0.5:
        ax.set_xticks(np.arange(c) + offset)
        ax.set_xticklabels([_word(rng) for _ in range(c)], rotation=rng.choice([0, 45, 90]), fontsize=6)
        ax.set_yticks(np.arange(r) + offset)
        ax.set_yticklabels([_word(rng) for _ in range(r)], fontsize=6)
    elif rng.random() < 0.5:
        ax.set_xticks([])
        ax.set_yticks([])


def _attention(ax, rng: random.Random, nprng: np.random.Generator) -> None:
    """Attention weights between tokens: mostly one bright cell per row, tokens on both axes,
    often causal (upper triangle empty)."""
    n = rng.randint(5, 24)
    m = nprng.gamma(rng.uniform(0.2, 1.0), 1.0, (n, rng.choice([n, rng.randint(5, 24)])))
    m[np.arange(min(m.shape)), np.arange(min(m.shape))] += rng.uniform(0, 3)
    if m.shape[0] == m.shape[1] and rng.random() < 0.4:
        m = np.tril(m)
    m = m / m.sum(axis=1, keepdims=True)
    im = ax.imshow(m, cmap=rng.choice(["Blues", "viridis", "Reds", "Greys", "YlOrRd", "Purples", "magma"]),
                   aspect="equal" if rng.random() < 0.7 else "auto")
    if rng.random() < 0.7:
        ax.set_xticks(range(m.shape[1]))
        ax.set_xticklabels([_word(rng) for _ in range(m.shape[1])], rotation=90, fontsize=rng.uniform(4, 7))
        ax.set_yticks(range(m.shape[0]))
        ax.set_yticklabels([_word(rng) for _ in range(m.shape[0])], fontsize=rng.uniform(4, 7))
    else:
        ax.set_xticks([])
        ax.set_yticks([])
    if rng.random() < 0.35:
        ax.figure.colorbar(im, ax=ax, fraction=0.046)


def _box(ax, rng: random.Random, nprng: np.random.Generator) -> None:
    n = rng.randint(2, 10)
    data = [nprng.normal(rng.uniform(0, 5), rng.uniform(0.3, 2), rng.randint(20, 200)) for _ in range(n)]
    colours = _colors(rng, n)
    if rng.random() < 0.3:
        parts = ax.violinplot(data, showmedians=rng.random() < 0.7, showextrema=rng.random() < 0.6)
        for b, c in zip(parts["bodies"], colours):
            b.set_facecolor(c)
            b.set_alpha(rng.uniform(0.4, 0.9))
    else:
        patch = rng.random() < 0.6
        orientation = "vertical" if rng.random() < 0.8 else "horizontal"
        positions = np.arange(1, n + 1, dtype=float)
        if rng.random() < 0.25:  # grouped: pairs of boxes per position
            positions = positions + np.tile([-0.2, 0.2], n)[:n]
        bp = ax.boxplot(data, positions=positions, patch_artist=patch, orientation=orientation,
                        showfliers=rng.random() < 0.7, widths=rng.uniform(0.2, 0.7), notch=rng.random() < 0.1)
        for b, c in zip(bp["boxes"], colours):
            if hasattr(b, "set_facecolor"):
                b.set_facecolor(c)
    if rng.random() < 0.25:  # the points over the boxes (strip plot)
        for i, d in enumerate(data):
            ax.scatter(i + 1 + nprng.uniform(-0.12, 0.12, len(d)), d, s=rng.uniform(1, 5), color="black",
                       alpha=rng.uniform(0.2, 0.6), zorder=3)
    ax.set_xticks(range(1, n + 1))
    ax.set_xticklabels([_word(rng) for _ in range(n)], rotation=rng.choice([0, 45]))
    _axes_style(ax, rng)


def _pie(ax, rng: random.Random, nprng: np.random.Generator) -> None:
    n = rng.randint(2, 9)
    vals = nprng.uniform(0.5, 5, n)
    ax.pie(vals, labels=[_word(rng) for _ in range(n)] if rng.random() < 0.7 else None, colors=_colors(rng, n),
           autopct="%1.0f%%" if rng.random() < 0.5 else None, startangle=rng.uniform(0, 360),
           wedgeprops=dict(width=rng.uniform(0.3, 0.6)) if rng.random() < 0.3 else None,
           textprops=dict(fontsize=rng.uniform(5, 9)))
    ax.axis("equal")


def _tree(ax, rng: random.Random, nprng: np.random.Generator) -> None:
    """A parse tree (labelled nodes over the words of a sentence, joined by lines) or a dependency
    parse (arcs over the words), as linguistics papers draw them: words, not dots."""
    words = [_word(rng) for _ in range(rng.randint(3, 10))]
    fs = rng.uniform(5, 9)
    boxed = rng.random() < 0.3
    style = dict(boxstyle="round,pad=0.2", fc="white", ec="black") if boxed else None
    if rng.random() < 0.3:  # dependency arcs above the sentence
        for i, w in enumerate(words):
            ax.text(i, 0, w, ha="center", va="top", fontsize=fs)
        for _ in range(len(words) - 1):
            i, j = sorted(rng.sample(range(len(words)), 2))
            h = 0.25 + 0.25 * (j - i)
            t = np.linspace(0, np.pi, 30)
            ax.plot(i + (j - i) * (1 - np.cos(t)) / 2, 0.05 + h * np.sin(t), color="black", linewidth=0.8)
            ax.text((i + j) / 2, 0.08 + h, rng.choice(["nsubj", "obj", "det", "amod", "root", "prep"]),
                    ha="center", fontsize=fs * 0.7)
        ax.set_xlim(-1, len(words))
        ax.set_ylim(-0.5, 0.4 + 0.25 * len(words))
    else:  # constituency tree: merge neighbours bottom-up
        level = [(float(i), 0.0, w) for i, w in enumerate(words)]
        for x, y, w in level:
            ax.text(x, y, w, ha="center", va="top", fontsize=fs, bbox=style)
        depth = 0
        while len(level) > 1:
            depth += 1
            nxt, i = [], 0
            while i < len(level):
                k = min(len(level) - i, rng.choice([1, 2, 2, 3]))
                kids = level[i:i + k]
                x = float(np.mean([c[0] for c in kids]))
                for cx, cy, _ in kids:
                    ax.plot([x, cx], [depth - 0.15, cy + 0.05], color="black", linewidth=0.8)
                label = rng.choice(["NP", "VP", "S", "PP", "DT", "NN", "JJ", "VB"])
                ax.text(x, depth, label, ha="center", va="bottom", fontsize=fs, bbox=style)
                nxt.append((x, depth, label))
                i += k
            level = nxt
        ax.set_xlim(-1, len(words))
        ax.set_ylim(-0.8, depth + 0.6)
    ax.axis("off")


def _network(ax, rng: random.Random, nprng: np.random.Generator) -> None:
    if rng.random() < 0.35:
        _tree(ax, rng, nprng)
        return
    n = rng.randint(6, 60)
    layout = rng.random()
    if layout < 0.5:
        pos = nprng.normal(0, 1, (n, 2))
    elif layout < 0.75:
        t = np.linspace(0, 2 * np.pi, n, endpoint=False)
        pos = np.c_[np.cos(t), np.sin(t)]
    else:  # tree-ish layers
        pos = np.c_[nprng.uniform(0, 1, n), np.sort(nprng.integers(0, 4, n))]
    p_edge = rng.uniform(1.2, 3.5) / n
    col = _colors(rng, 3)
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < p_edge or (j == i + 1 and rng.random() < 0.3):
                ax.plot(pos[[i, j], 0], pos[[i, j], 1], color="grey", linewidth=rng.uniform(0.4, 1.5), zorder=1)
    sizes = nprng.uniform(20, 300, n) if rng.random() < 0.5 else rng.uniform(30, 250)
    ax.scatter(pos[:, 0], pos[:, 1], s=sizes, c=[col[rng.randrange(3)] for _ in range(n)], zorder=2,
               edgecolors="black" if rng.random() < 0.5 else None)
    if rng.random() < 0.4:
        for i in range(min(n, 20)):
            ax.text(pos[i, 0], pos[i, 1], _word(rng) if rng.random() < .5 else str(i), fontsize=6, ha="center")
    ax.axis("off")


def _diagram(ax, rng: random.Random, nprng: np.random.Generator) -> None:
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    ax.set_xlim(0, 10)
    ax.set_ylim(0, 6)
    ax.axis("off")
    n = rng.randint(3, 12)
    flow = rng.choice(["h", "v", "grid", "stack"])
    boxes = []
    for i in range(n):
        if flow == "h":
            x, y = 0.3 + i * 9.4 / n, 2.5 + rng.uniform(-1.5, 1.5) * (rng.random() < 0.3)
        elif flow == "v":
            x, y = 4 + rng.uniform(-3, 3) * (rng.random() < 0.3), 5.3 - i * 5.3 / n
        elif flow == "stack":
            x, y = 3 + rng.uniform(-0.3, 0.3), 0.3 + i * 5.5 / n
        else:
            x, y = 0.3 + (i % 4) * 2.4, 0.5 + (i // 4) * 1.9
        w, hgt = (rng.uniform(1.2, 2.2), rng.uniform(0.5, 1.2)) if flow != "stack" else (rng.uniform(3, 4), 5.5 / n * 0.7)
        fc = _colors(rng, n)[i] if rng.random() < 0.6 else "white"
        style = rng.choice(["round,pad=0.05", "square,pad=0.02", "round4,pad=0.1", "sawtooth,pad=0.05"] if rng.random() < .1
                           else ["round,pad=0.05", "square,pad=0.02"])
        ax.add_patch(FancyBboxPatch((x, y), w, hgt, boxstyle=style, fc=fc, ec="black",
                                    alpha=rng.uniform(0.5, 1), linewidth=rng.uniform(0.6, 1.5)))
        ax.text(x + w / 2, y + hgt / 2, _phrase(rng, 1, 2), ha="center", va="center", fontsize=rng.uniform(5, 9))
        boxes.append((x, y, w, hgt))
    for i in range(len(boxes) - 1):
        if rng.random() < 0.85:
            a, b = boxes[i], boxes[i + 1] if rng.random() < 0.8 else boxes[rng.randrange(len(boxes))]
            ax.add_patch(FancyArrowPatch((a[0] + a[2] / 2, a[1] + a[3] / 2), (b[0] + b[2] / 2, b[1] + b[3] / 2),
                                         arrowstyle="-|>", mutation_scale=rng.uniform(6, 14), color="black",
                                         shrinkA=12, shrinkB=12, linewidth=rng.uniform(0.6, 1.5)))
    if rng.random() < 0.3:  # an embedded symbol or mini plot in the diagram
        ax.plot(nprng.uniform(0, 10, 3), nprng.uniform(0, 6, 3), "o", color="grey")


def _table(ax, rng: random.Random, nprng: np.random.Generator) -> None:
    r, c = rng.randint(3, 16), rng.randint(2, 9)
    ax.axis("off")
    ax.set_xlim(0, c)
    ax.set_ylim(r + 1, -0.5)
    fs = rng.uniform(5, 9)
    for j in range(c):
        ax.text(j + 0.5, 0, _word(rng), ha="center", va="center", fontsize=fs, weight="bold")
    for i in range(1, r + 1):
        for j in range(c):
            txt = _word(rng) if j == 0 else f"{nprng.uniform(0, 100):.{rng.randint(1, 3)}f}"
            ax.text(j + 0.5, i, txt, ha="center", va="center", fontsize=fs,
                    weight="bold" if rng.random() < 0.05 else "normal")
    if rng.random() < 0.5:  # booktabs rules
        for y in (-0.5, 0.5, r + 0.5):
            ax.axhline(y, color="black", linewidth=1.2 if y != 0.5 else 0.6)
    else:  # full grid
        for y in np.arange(-0.5, r + 1, 1):
            ax.axhline(y, color="black", linewidth=0.5)
        for x in range(c + 1):
            ax.axvline(x, color="black", linewidth=0.5)


def _text(ax, rng: random.Random, nprng: np.random.Generator) -> None:
    """Text as figures show it: a plain or framed block, a prompt with a coloured header, a chat
    of alternating turns, or an algorithm (numbered lines between rules)."""
    from matplotlib.patches import FancyBboxPatch, Rectangle

    ax.axis("off")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    style = rng.choice(["block", "block", "prompt", "chat", "algorithm"])
    mono = rng.random() < (0.7 if style == "algorithm" else 0.3)
    n = rng.randint(4, 22)
    fs = rng.uniform(5, 9)
    family = "monospace" if mono else rng.choice(["sans-serif", "serif"])
    top = 0.95
    if style == "block" and rng.random() < 0.5:
        ax.add_patch(FancyBboxPatch((0.02, 0.02), 0.96, 0.96, boxstyle="round,pad=0.01",
                                    fc=rng.choice(["white", "#f2f2f2", "#eef5ff", "#fff8e6"]), ec="black"))
    elif style == "prompt":
        colour = _colors(rng, 1)[0]
        ax.add_patch(FancyBboxPatch((0.02, 0.02), 0.96, 0.96, boxstyle=rng.choice(["round,pad=0.01", "square,pad=0.0"]),
                                    fc=rng.choice(["white", "#f7f7f7", "#f0f6ff"]), ec=colour, linewidth=rng.uniform(0.8, 2)))
        ax.add_patch(Rectangle((0.02, 0.88), 0.96, 0.1, fc=colour, ec=colour))
        ax.text(0.05, 0.93, _phrase(rng, 1, 3), fontsize=fs * 1.1, weight="bold", va="center",
                color="white" if rng.random() < 0.7 else "black", family=family)
        top = 0.84
    elif style == "algorithm":
        for y in (0.98, 0.9, 0.02):
            ax.axhline(y, color="black", linewidth=0.8)
        ax.text(0.03, 0.94, f"Algorithm {rng.randint(1, 3)} {_phrase(rng, 2, 4)}", fontsize=fs, weight="bold", va="center")
        top = 0.87
    if style == "chat":
        y = top
        while y > 0.12:
            lines = rng.randint(1, 3)
            hgt = lines * 0.07 + 0.03
            left = rng.random() < 0.5
            x0 = 0.04 if left else rng.uniform(0.25, 0.4)
            ax.add_patch(FancyBboxPatch((x0, y - hgt), 0.6, hgt, boxstyle="round,pad=0.01",
                                        fc=rng.choice(["#e8f0fe", "#eeeeee", "#e6f4ea", "#fff4e5"]), ec="#999999", linewidth=0.5))
            for k in range(lines):
                ax.text(x0 + 0.02, y - 0.02 - k * 0.07, " ".join(_word(rng) for _ in range(rng.randint(3, 8))),
                        fontsize=fs, va="top", family=family)
            y -= hgt + 0.04
        return
    keywords = ("for", "if", "return", "while", "end", "Input:", "Output:")
    for i in range(n):
        indent = 0.05 + (0.04 * rng.randint(0, 3) if mono or style == "algorithm" else 0)
        words = " ".join(_word(rng) for _ in range(rng.randint(3, 14)))
        if style == "algorithm":
            words = f"{rng.choice(keywords)} {words[:60]}"
            ax.text(0.01, top - i * (top - 0.05) / n, f"{i + 1}:", fontsize=fs * 0.9, va="top", family=family)
        elif mono and rng.random() < 0.3:
            words = f"{i + 1}: " + words.replace(" ", " = ", 1)
        ax.text(indent, top - i * (top - 0.05) / n, words, fontsize=fs, family=family,
                weight="bold" if rng.random() < 0.08 else "normal", va="top",
                color="black" if rng.random() < 0.9 else _colors(rng, 1)[0])


def _map(ax, rng: random.Random, nprng: np.random.Generator) -> None:
    from scipy.spatial import Voronoi

    pts = nprng.uniform(0, 1, (rng.randint(15, 80), 2))
    vor = Voronoi(np.r_[pts, [[-5, -5], [-5, 5], [5, -5], [5, 5]]])
    cmap = __import__("matplotlib").colormaps[rng.choice(CMAPS)]
    cx, cy, rad = 0.5, 0.5, rng.uniform(0.35, 0.5)
    for i, reg_idx in enumerate(vor.point_region[: len(pts)]):
        reg = vor.regions[reg_idx]
        if -1 in reg or not reg:
            continue
        poly = vor.vertices[reg]
        # wobble the borders so they look like coastlines and regions
        poly = poly + nprng.normal(0, 0.005, poly.shape)
        if np.hypot(pts[i, 0] - cx, pts[i, 1] - cy) > rad:
            continue
        ax.fill(poly[:, 0], poly[:, 1], color=cmap(rng.random()), edgecolor="black", linewidth=0.4)
    if rng.random() < 0.5:
        ax.scatter(nprng.uniform(.2, .8, 10), nprng.uniform(.2, .8, 10), s=8, c="red")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.axis("off")


def _screenshot(ax, rng: random.Random, nprng: np.random.Generator) -> None:
    from matplotlib.patches import Rectangle

    ax.axis("off")
    ax.set_xlim(0, 1)
    ax.set_ylim(1, 0)
    bg = rng.choice(["white", "#f5f5f5", "#fafafa"])
    ax.add_patch(Rectangle((0, 0), 1, 1, fc=bg, ec="#999999"))
    accent = _colors(rng, 1)[0]
    ax.add_patch(Rectangle((0, 0), 1, 0.07, fc=rng.choice(["#333333", "#e8e8e8", accent])))
    for k in range(rng.randint(2, 6)):  # toolbar buttons
        ax.add_patch(Rectangle((0.02 + k * 0.1, 0.015), 0.08, 0.04, fc="#dddddd", ec="#888888", linewidth=0.5))
    side = rng.random() < 0.5
    if side:
        ax.add_patch(Rectangle((0, 0.07), 0.2, 0.93, fc="#eeeeee"))
        for k in range(rng.randint(4, 12)):
            ax.text(0.02, 0.12 + k * 0.06, _phrase(rng, 1, 2), fontsize=5)
    x0 = 0.23 if side else 0.03
    y = 0.12
    while y < 0.95:
        r = rng.random()
        if r < 0.5:
            ax.text(x0, y, " ".join(_word(rng) for _ in range(rng.randint(3, 10))), fontsize=rng.uniform(5, 8))
            y += 0.05
        elif r < 0.7:
            ax.add_patch(Rectangle((x0, y - 0.02), rng.uniform(0.2, 0.5), 0.05, fc="white", ec="#777777", linewidth=0.6))
            y += 0.08
        elif r < 0.85:
            ax.add_patch(Rectangle((x0, y - 0.02), 0.12, 0.05, fc=accent, ec=None))
            ax.text(x0 + 0.01, y + 0.01, _word(rng), fontsize=5, color="white")
            y += 0.08
        else:
            hgt = rng.uniform(0.1, 0.25)
            ax.add_patch(Rectangle((x0, y - 0.02), rng.uniform(0.3, 0.7), hgt, fc=rng.choice(["#cfe2ff", "#e2e3e5", "#d1e7dd"])))
            y += hgt + 0.04


_DRAW = {"line_chart": _line, "bar_chart": _bar, "scatter_plot": _scatter, "heatmap": _heatmap, "box_plot": _box,
         "pie_chart": _pie, "network_graph": _network, "diagram": _diagram, "table": _table, "text": _text,
         "map": _map, "screenshot": _screenshot}


def _photo(rng: random.Random, nprng: np.random.Generator, w: int, h: int) -> Image.Image:
    """Photo-like pixels: smooth multi-scale colour noise with soft blobs, shading and texture."""
    img = np.zeros((h, w, 3), np.float32)
    for scale in (4, 8, 16, 32, 64):
        small = nprng.random((max(2, h // scale), max(2, w // scale), 3)).astype(np.float32)
        layer = np.asarray(Image.fromarray((small * 255).astype(np.uint8)).resize((w, h), Image.Resampling.BICUBIC),
                           np.float32) / 255.0
        img += layer * (scale / 64.0)
    img = img / img.max()
    tint = nprng.uniform(0.3, 1.0, 3)
    if rng.random() < 0.3:  # micrograph-like: one channel, dark background
        img = np.repeat(img[:, :, :1] ** rng.uniform(1.5, 4), 3, axis=2) * tint
    else:
        img = img * tint + nprng.uniform(0, 0.3)
    img = np.clip(img + nprng.normal(0, rng.uniform(0.0, 0.06), img.shape), 0, 1)
    pic = Image.fromarray((img * 255).astype(np.uint8)).filter(ImageFilter.GaussianBlur(rng.uniform(0, 1.5)))
    if rng.random() < 0.4:  # a grid of photos, as figures of examples are
        tiles = rng.randint(2, 4)
        canvas = Image.new("RGB", (w, h), "white")
        tw = max(1, w // tiles)
        for k in range(tiles):
            canvas.paste(pic.resize((max(1, tw - 4), h)).rotate(rng.choice([0, 90, 180]), expand=False), (k * tw, 0))
        pic = canvas
    return pic


def render(types: list[str], rng: random.Random, size: int = 160) -> Image.Image:
    """One figure with one panel per entry of `types` (a photo panel is pixels, not matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nprng = np.random.default_rng(rng.randrange(2 ** 31))
    n = len(types)
    aspect = rng.uniform(0.6, 1.6) * (n if rng.random() < 0.7 else 1) ** 0.8
    w_in = rng.uniform(2.5, 5.5)
    h_in = max(1.2, w_in / aspect)
    rows = 1 if n < 3 or rng.random() < (0.5 if n < 5 else 0.2) else 2
    cols = int(np.ceil(n / rows))
    fig, axes = plt.subplots(rows, cols, figsize=(w_in * (cols if aspect < 1.6 else 1), h_in * rows / (1 if rows == 1 else 1.4)),
                             dpi=rng.choice([50, 60, 72]), squeeze=False)
    plt.rcParams["font.size"] = rng.uniform(6, 10)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.axis("off")
    photos = []
    for t, ax in zip(types, flat):
        if t == "photo":
            ax.axis("off")
            photos.append(ax)
        else:
            _DRAW[t](ax, rng, nprng)
        if n > 1 and rng.random() < 0.6:
            ax.set_title(f"({string.ascii_lowercase[flat.index(ax)]}) {_phrase(rng, 1, 2)}", fontsize=7)
    with warnings.catch_warnings():  # crowded panels cannot always be laid out: cosmetic
        warnings.simplefilter("ignore")
        try:
            fig.tight_layout()
        except Exception:  # noqa: BLE001
            pass
    fig.canvas.draw()
    for ax in photos:  # photos are pasted as pixels into their panel
        bb = ax.get_window_extent()
        ax.imshow(_photo(rng, nprng, max(8, int(bb.width)), max(8, int(bb.height))), aspect="auto")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", facecolor="white", bbox_inches="tight" if rng.random() < 0.7 else None)
    plt.close(fig)
    img = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
    if rng.random() < 0.3:  # the ways a crop from a PDF page differs: JPEG, blur, rescale
        out = io.BytesIO()
        img.save(out, "JPEG", quality=rng.randint(40, 90))
        img = Image.open(io.BytesIO(out.getvalue())).convert("RGB")
    return img


def sample_types(rng: random.Random) -> list[str]:
    """A drawing's panel types: one type, a grid of panels of one type (as results figures
    often are), or panels of mixed types."""
    main = rng.choice(DRAWN)
    r = rng.random()
    if r < 0.45 or main in ("table", "screenshot", "text", "map"):
        return [main]
    if r < 0.85:
        return [main] * rng.randint(2, 8)
    other = rng.choice([t for t in DRAWN if t not in ("table", "screenshot", "text", "map")])
    return [main, main, other] if rng.random() < 0.5 else [main, other]


def labels_of(types: list[str]) -> list[str]:
    """Dominant first (the most frequent panel type, the first on ties), then the others."""
    order: list[str] = []
    for t in sorted(types, key=lambda t: (-types.count(t), types.index(t))):
        if t not in order:
            order.append(t)
    return order
