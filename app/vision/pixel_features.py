"""Cheap pixel statistics of a figure crop at up to FEATURE_PX, for the figure-type classifier.

The CNN sees a 112 px thumbnail, where a block of typeset text, a table of numbers and a UI
screenshot all blur into grey stripes. These numbers are measured before that shrinking: how
much ink and colour there is, how many distinct colours and how much of the crop is flat colour
(photos vs heatmaps vs drawings), long horizontal/vertical rules (axes, table rules, frames),
connected ink blobs of glyph size and how regularly they form text lines, the orientation of
edges, and a colour-scale detector (neighbouring flat cells of many shades of one colour ramp,
as heatmaps have). Only pixels are used, so uploaded images get the same features as figures cut
from PDFs. A feature is scale-free where it can be (shares, counts per text line, sizes relative
to the crop), since crops come at any resolution.
"""
from __future__ import annotations

import numpy as np
from PIL import Image

FEATURE_PX = 384  # longest side the statistics are measured at
NAMES = (
    "ink_dark", "ink_mid", "ink_any", "saturated", "saturated_of_ink", "hue_bins", "hue_entropy",
    "colours_common", "colours_log", "grey_levels", "flat_blocks", "flat_colour_blocks", "flat_shades",
    "busy_blocks", "edge_share", "edge_h", "edge_v", "edge_diag", "edge_strength",
    "rule_rows", "rule_cols", "longest_row_run", "longest_col_run", "frame",
    "blobs_log", "glyph_share", "glyph_ink_share", "glyph_height", "big_blob_ink", "blob_fill",
    "text_lines", "line_regularity", "row_transitions", "col_transitions", "glyphs_per_line",
    "ink_centre", "ink_spread_x", "ink_spread_y", "ramp_cells", "ramp_steps", "log_aspect",
)
COUNT = len(NAMES)


def _runs_max(mask: np.ndarray) -> np.ndarray:
    """Longest run of True along axis 1, per row."""
    m = np.pad(mask.astype(np.int8), ((0, 0), (1, 1)))
    d = np.diff(m, axis=1)
    out = np.zeros(mask.shape[0])
    rows, starts = np.nonzero(d == 1)
    _, ends = np.nonzero(d == -1)
    if len(starts):
        np.maximum.at(out, rows, ends - starts)
    return out


def _transitions(profile: np.ndarray) -> int:
    on = profile > 0
    return int(np.count_nonzero(on[1:] != on[:-1]))


def pixel_features(img: Image.Image) -> np.ndarray:
    """(COUNT,) float32 statistics of one crop (see NAMES)."""
    from scipy import ndimage

    rgb = img.convert("RGB")  # a copy: thumbnail below does not touch the caller's image
    if max(rgb.size) > FEATURE_PX:
        rgb.thumbnail((FEATURE_PX, FEATURE_PX), Image.Resampling.BILINEAR)
    a = np.asarray(rgb, dtype=np.float32) / 255.0
    h, w = a.shape[:2]
    f = dict.fromkeys(NAMES, 0.0)
    f["log_aspect"] = float(np.log(max(w, 1) / max(h, 1)))
    if h < 8 or w < 8:
        return np.array([f[n] for n in NAMES], np.float32)
    r, gr, b = a[..., 0], a[..., 1], a[..., 2]  # per plane: reductions over a 3-wide last axis are slow
    g = (r + gr + b) / 3
    mx, mn = np.maximum(np.maximum(r, gr), b), np.minimum(np.minimum(r, gr), b)
    sat = mx - mn
    dark, mid, anyink = g < 0.5, g < 0.8, g < 0.95
    f["ink_dark"], f["ink_mid"], f["ink_any"] = dark.mean(), mid.mean(), anyink.mean()
    colourful = sat > 0.15
    f["saturated"] = colourful.mean()
    f["saturated_of_ink"] = colourful.sum() / max(1, (anyink | colourful).sum())
    if colourful.any():
        rc, gc, bc = r[colourful], gr[colourful], b[colourful]
        hue = (np.degrees(np.arctan2(np.sqrt(3) * (gc - bc), 2 * rc - gc - bc)) + 360) % 360
        hist = np.bincount((hue // 30).astype(int), minlength=12)[:12] / len(hue)
        f["hue_bins"] = float((hist > 0.02).sum())
        p = hist[hist > 0]
        f["hue_entropy"] = float(-(p * np.log(p)).sum())
    q = (a * 7.99).astype(np.int32)
    codes = q[..., 0] * 64 + q[..., 1] * 8 + q[..., 2]
    counts = np.bincount(codes.ravel(), minlength=512)
    f["colours_common"] = float((counts > 0.002 * h * w).sum())
    f["colours_log"] = float(np.log1p((counts > 0).sum()))
    f["grey_levels"] = float((np.bincount((g * 31.99).astype(int).ravel(), minlength=32) > 0.002 * h * w).sum())

    # 8 x 8 blocks: flat (one colour) vs busy (texture, photos)
    bh, bw = h // 8, w // 8
    if bh and bw:
        blocks = a[:bh * 8, :bw * 8].reshape(bh, 8, bw, 8, 3).transpose(0, 2, 4, 1, 3).reshape(bh, bw, 3, 64)
        spread = (blocks.max(axis=3) - blocks.min(axis=3)).max(axis=2)  # colour range within the block
        mean = blocks.mean(axis=3)
        flat = spread < 0.06
        nonwhite = mean.min(axis=2) < 0.9
        f["flat_blocks"] = float((flat & nonwhite).mean())
        flat_col = flat & ((mean.max(axis=2) - mean.min(axis=2)) > 0.1)
        f["flat_colour_blocks"] = float(flat_col.mean())
        if flat_col.any():
            shades = (mean[flat_col] * 15.99).astype(int)
            f["flat_shades"] = float(np.log1p(len({tuple(s) for s in shades})))
        f["busy_blocks"] = float(((spread > 0.2) & (spread < 0.8)).mean())
        # colour ramp: neighbouring flat colour cells that differ a little (a colour scale), not a lot (bars)
        if flat_col.sum() >= 4:
            right = flat_col[:, :-1] & flat_col[:, 1:]
            down = flat_col[:-1, :] & flat_col[1:, :]
            dr = np.abs(mean[:, :-1] - mean[:, 1:]).max(axis=2)[right]
            dd = np.abs(mean[:-1, :] - mean[1:, :]).max(axis=2)[down]
            diffs = np.concatenate([dr, dd])
            if len(diffs):
                steps = (diffs > 0.03) & (diffs < 0.35)
                f["ramp_cells"] = float(steps.sum() / max(1, flat_col.sum()))
                f["ramp_steps"] = float(np.log1p(steps.sum()))

    # edges and their orientation
    gy, gx = np.gradient(g)
    mag = np.hypot(gx, gy)
    strong = mag > 0.1
    f["edge_share"] = float(strong.mean())
    if strong.any():
        ang = np.abs(np.degrees(np.arctan2(gy[strong], gx[strong]))) % 180
        horiz_edge = (ang < 15) | (ang > 165)  # gradient along x: a vertical stroke
        vert_edge = (ang > 75) & (ang < 105)
        f["edge_v"] = float(horiz_edge.mean())
        f["edge_h"] = float(vert_edge.mean())
        f["edge_diag"] = float(1 - horiz_edge.mean() - vert_edge.mean())
        f["edge_strength"] = float(mag[strong].mean())

    # long rules: rows/columns with a dark run across most of the crop
    row_run = _runs_max(mid) / w
    col_run = _runs_max(mid.T) / h
    f["rule_rows"] = float((row_run > 0.5).sum() / h * 100)
    f["rule_cols"] = float((col_run > 0.5).sum() / w * 100)
    f["longest_row_run"], f["longest_col_run"] = float(row_run.max()), float(col_run.max())
    f["frame"] = float(max(row_run[:h // 10 + 1].max(), row_run[-(h // 10 + 1):].max()) > 0.8
                       and max(col_run[:w // 10 + 1].max(), col_run[-(w // 10 + 1):].max()) > 0.8)

    # ink blobs: glyph-sized ones and the text lines they form
    lab, n = ndimage.label(mid)
    f["blobs_log"] = float(np.log1p(n))
    if n:
        objs = ndimage.find_objects(lab)
        hs = np.array([s[0].stop - s[0].start for s in objs], np.float32)
        ws = np.array([s[1].stop - s[1].start for s in objs], np.float32)
        area = np.bincount(lab.ravel(), minlength=n + 1)[1:].astype(np.float32)
        glyph = (hs >= 3) & (hs <= max(4.0, 0.08 * h)) & (ws <= 3 * hs) & (ws >= 1) & (hs <= 40)
        f["glyph_share"] = float(glyph.mean())
        f["glyph_ink_share"] = float(area[glyph].sum() / max(1.0, area.sum()))
        if glyph.any():
            f["glyph_height"] = float(np.median(hs[glyph]) / h)
        big = hs * ws > 0.02 * h * w
        f["big_blob_ink"] = float(area[big].sum() / max(1.0, area.sum()))
        f["blob_fill"] = float(np.median(area / np.maximum(1, hs * ws)))
        if glyph.sum() >= 5:
            centres = np.array([(s[0].start + s[0].stop) / 2 for s, k in zip(objs, glyph) if k])
            prof = np.bincount(centres.astype(int), minlength=h)
            prof = np.convolve(prof, np.ones(3), "same")
            peaks = np.flatnonzero((prof[1:-1] >= 3) & (prof[1:-1] >= prof[:-2]) & (prof[1:-1] > prof[2:])) + 1
            f["text_lines"] = float(len(peaks))
            if len(peaks) >= 3:
                gaps = np.diff(peaks)
                f["line_regularity"] = float(1 - min(1.0, gaps.std() / max(1.0, gaps.mean())))
            f["glyphs_per_line"] = float(glyph.sum() / max(1, len(peaks)))
    f["row_transitions"] = float(_transitions(mid.sum(axis=1) > 0.01 * w) / h * 10)
    f["col_transitions"] = float(_transitions(mid.sum(axis=0) > 0.01 * h) / w * 10)
    ys, xs = np.nonzero(mid)
    if len(ys):
        f["ink_centre"] = float(np.hypot(ys.mean() / h - 0.5, xs.mean() / w - 0.5))
        f["ink_spread_x"], f["ink_spread_y"] = float(xs.std() / w), float(ys.std() / h)
    return np.array([f[n] for n in NAMES], np.float32)
