"""Copies of a picture told from look-alikes by perceptual hashes (app/search/looks.py,
app/vision/looks.py): a rescaled JPEG copy is the same picture, another chart of the same style is
not, whatever the picture vectors say; rows without a hash keep the cosine rule."""
import io
import json
from dataclasses import replace

import numpy as np
from PIL import Image, ImageChops, ImageDraw

from app.search.doc_table import FigureDoc
from app.search.fusion import SAME_PICTURE_MIN
from app.search.looks import COPY_MAX_BITS, HASH_BYTES, LookIndex, hash_distances, same_picture
from app.search.searcher import Searcher
from app.vision.looks import look_hash, sliver_trimmed


def bar_chart(heights, width=480, height=320) -> Image.Image:
    img = Image.new("RGB", (width, height), "white")
    d = ImageDraw.Draw(img)
    d.line([(40, 20), (40, height - 30), (width - 10, height - 30)], fill="black", width=2)
    step = (width - 60) // len(heights)
    for i, h in enumerate(heights):
        x = 50 + i * step
        d.rectangle([x, height - 30 - h, x + step - 12, height - 30], fill=(60, 90, 200), outline="black")
    return img


def jpeg(img: Image.Image, scale: float, quality: int) -> Image.Image:
    out = io.BytesIO()
    img.resize((int(img.width * scale), int(img.height * scale)), Image.Resampling.BICUBIC).save(
        out, "JPEG", quality=quality)
    return Image.open(io.BytesIO(out.getvalue())).convert("RGB")


def test_a_rescaled_jpeg_copy_is_within_the_copy_bits_and_another_chart_of_the_same_style_is_not():
    chart = bar_chart([200, 120, 80, 240, 160])
    other = bar_chart([90, 230, 150, 60, 210])  # same axes, colours and bar count, other values
    h = look_hash(chart)
    assert h.dtype == np.uint8 and h.shape == (HASH_BYTES,)
    for scale, quality in ((0.4, 50), (0.7, 70), (1.5, 90)):
        assert hash_distances(h, look_hash(jpeg(chart, scale, quality))[None])[0] <= COPY_MAX_BITS
    assert hash_distances(h, look_hash(other)[None])[0] > 2 * COPY_MAX_BITS


def test_a_screenshot_with_more_margin_is_the_same_picture_by_its_content_box():
    from app.eval.image_copies import with_margin

    chart = bar_chart([200, 120, 80, 240, 160])
    h = look_hash(chart)
    for fraction in (0.05, 0.15):
        shot = jpeg(with_margin(chart, fraction), 0.8, 70)
        assert hash_distances(h, look_hash(shot)[None])[0] <= COPY_MAX_BITS
        whole, third = look_hash(shot)[:HASH_BYTES // 3], h[:HASH_BYTES // 3]  # the picture as it is: the margin moves it
        assert hash_distances(np.r_[whole, whole, whole], np.r_[third, third, third][None])[0] > COPY_MAX_BITS


def test_where_hashes_are_known_they_decide_else_the_cosine_rule():
    a, b = np.zeros(HASH_BYTES, np.uint8), np.full(HASH_BYTES, 0xFF, np.uint8)
    looks = LookIndex.build(np.array([1, 2, 3]), {1: a, 2: b})  # figure 3 has no hash
    cos = np.array([0.80, 0.99, 0.99])  # a copy with a low cosine, a look-alike, an unhashed look-alike
    assert same_picture(looks, a, np.arange(3), cos).tolist() == [True, False, True]
    assert same_picture(None, a, np.arange(3), cos).tolist() == [False, True, True]  # no hashes: cosine
    assert same_picture(looks, None, np.arange(3), cos).tolist() == [False, True, True]  # query without one
    dead = LookIndex.build(np.array([1, 2]), {1: a, 2: b}, deleted=np.array([True, False]))
    assert dead.known.tolist() == [False, True]


def test_the_look_index_is_saved_with_the_version_and_read_back(tmp_path):
    rng = np.random.default_rng(0)
    docs = [FigureDoc(figure_id=10 + i, paper_id=1 + i, caption=f"figure {i} of recall curves",
                      text=f"figure {i} of recall curves") for i in range(4)]
    hashes = {10 + i: rng.integers(0, 256, HASH_BYTES, dtype=np.uint8) for i in range(3)}
    eng = Searcher.build(docs)
    eng.looks = LookIndex.build(eng.docs.figure_ids, hashes)
    eng.save(tmp_path)
    back = Searcher.load(tmp_path)
    assert back.looks is not None and back.looks.known.tolist() == [True, True, True, False]
    assert (back.looks.of_row(back.row_of(11)) == hashes[11]).all()


def _pictures(n: int, seed: int = 5) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, 16)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_search_by_picture_puts_a_copy_first_by_its_hash_and_calls_no_look_alike_the_same_picture():
    """The copy's picture vector is only .8 from the upload's (tuned vectors bring one kind close,
    copies are not always nearest); a look-alike of another paper is .99 but a different drawing."""
    docs = [FigureDoc(figure_id=100 + i, paper_id=1 + i, caption="chart", text="chart") for i in range(6)]
    vis = _pictures(6)
    q = vis[1].copy()
    vis[0] = 0.8 * q + 0.6 * _unit_orthogonal(q)      # the copy: cosine .8
    vis[2] = 0.99 * q + 0.141 * _unit_orthogonal(q, 1)  # the look-alike: cosine .99
    vis[1] = _unit_orthogonal(q, 2)                    # the rest far away
    rng = np.random.default_rng(1)
    hashes = {100 + i: rng.integers(0, 256, HASH_BYTES, dtype=np.uint8) for i in range(6)}
    upload_look = hashes[100].copy()
    upload_look[0] ^= 0b101  # two bits off: a rescaled copy
    eng = Searcher.build(docs, visual_embeddings=vis, vector_kind="flat", gpu="off")
    assert eng.by_picture(q, k=1)[0].figure_id == 102  # without hashes the look-alike wins
    eng.looks = LookIndex.build(eng.docs.figure_ids, hashes)
    hits = eng.by_picture(q, k=3, look=upload_look)
    assert hits[0].figure_id == 100 and hits[0].signals["same_picture"] == 1.0
    alike = next(h for h in hits if h.figure_id == 102)
    assert alike.signals["visual"] >= SAME_PICTURE_MIN and alike.signals["same_picture"] == 0.0


def _unit_orthogonal(q: np.ndarray, seed: int = 0) -> np.ndarray:
    r = np.random.default_rng(100 + seed).standard_normal(q.shape).astype(np.float32)
    r -= (r @ q) / (q @ q) * q
    return r / np.linalg.norm(r)


def test_related_figures_call_a_look_alike_the_same_picture_only_without_hashes():
    from app.search.explain import reasons

    texts = ["recall at k against embedding size for the two tower model",
             "recall at k against embedding size with negative sampling",
             "training loss over epochs for the ranking model",
             "attention weights over the items of a session"]
    docs = [FigureDoc(figure_id=200 + i, paper_id=1 + i, caption=t, text=t) for i, t in enumerate(texts)]
    vis = _pictures(4, seed=9)
    vis[2] = 0.98 * vis[0] + 0.199 * _unit_orthogonal(vis[0], 3)  # looks alike, text unrelated
    vis[2] /= np.linalg.norm(vis[2])
    rng = np.random.default_rng(2)
    hashes = {200 + i: rng.integers(0, 256, HASH_BYTES, dtype=np.uint8) for i in range(4)}
    eng = Searcher.build(docs, embeddings=_pictures(4, seed=4), visual_embeddings=vis, vector_kind="flat", gpu="off")
    first = eng.similar(200, k=3, scope="other_papers")[0]
    assert first.figure_id == 202 and "same picture" in reasons(first.signals)  # the cosine rule alone
    eng.looks = LookIndex.build(eng.docs.figure_ids, hashes)
    hits = eng.similar(200, k=3, scope="other_papers")
    alike = next(h for h in hits if h.figure_id == 202)
    assert alike.signals["same_picture"] == 0.0 and "same picture" not in reasons(alike.signals)
    hashes[202] = hashes[200]  # now it is a copy
    eng.looks = LookIndex.build(eng.docs.figure_ids, hashes)
    first = eng.similar(200, k=3, scope="other_papers", weights={"lexical": 1.0})[0]  # text alone would put it last
    assert first.figure_id == 202 and "same picture" in reasons(first.signals)


def three_panels() -> tuple[Image.Image, list[tuple[int, int, int, int]]]:
    """A figure of three different charts side by side, and the pixel boxes of its panels."""
    charts = [bar_chart([200, 120, 80, 240, 160], 300, 260), bar_chart([60, 230, 150, 90], 300, 260),
              bar_chart([30, 60, 120, 180, 240, 250], 300, 260)]
    fig = Image.new("RGB", (930, 280), "white")
    boxes = []
    for i, c in enumerate(charts):
        fig.paste(c, (10 + 305 * i, 10))
        boxes.append((5 + 305 * i, 5, 5 + 305 * (i + 1), 275))
    return fig, boxes


def test_search_by_picture_finds_the_figure_of_an_uploaded_panel_by_the_panel_hash():
    """A rescaled JPEG of panel (b) is far from its whole figure's hash and its picture vector is
    not near the figure's: the panel's own hash puts the figure first and names the panel."""
    from app.search.explain import reasons

    fig, boxes = three_panels()
    upload = look_hash(jpeg(fig.crop(boxes[1]), 0.7, 60))
    assert hash_distances(upload, look_hash(fig)[None])[0] > COPY_MAX_BITS  # not a copy of the whole
    docs = [FigureDoc(figure_id=300 + i, paper_id=1 + i, caption="chart", text="chart") for i in range(5)]
    vis = _pictures(5, seed=11)
    rng = np.random.default_rng(3)
    hashes = {300 + i: rng.integers(0, 256, HASH_BYTES, dtype=np.uint8) for i in range(5)}
    hashes[303] = look_hash(fig)
    panels = {303: {letter: look_hash(fig.crop(box)) for letter, box in zip("abc", boxes)}}
    q = _unit_orthogonal(vis[3], 4)  # the upload's picture vector: unrelated to the figure's
    eng = Searcher.build(docs, visual_embeddings=vis, vector_kind="flat", gpu="off")
    eng.picture_ranking = replace(eng.picture_ranking, pool=2)  # the figure is outside the nearest pictures
    eng.looks = LookIndex.build(eng.docs.figure_ids, hashes)
    assert 303 not in [h.figure_id for h in eng.by_picture(q, k=2, look=upload)]  # whole-figure hashes alone
    eng.looks = LookIndex.build(eng.docs.figure_ids, hashes, panels=panels)
    first = eng.by_picture(q, k=2, look=upload)[0]
    assert first.figure_id == 303 and first.signals["same_picture"] == 0.0
    assert reasons(first.signals) == ["same picture as panel (b) of this figure"]
    whole = eng.by_picture(vis[3], k=2, look=look_hash(jpeg(fig, 0.6, 70)))[0]  # the whole figure: a copy
    assert whole.figure_id == 303 and reasons(whole.signals) == ["same picture"]


def test_an_upload_of_one_panel_with_a_sliver_of_its_neighbour_is_found_as_that_panel():
    """A screenshot of panel (a) taken a little wide catches the axis of panel (b) at its right
    edge, beyond a white gutter: its hashes as it is and of its content box are far from panel
    (a)'s, that of its content without the sliver is a copy, so the figure comes first, named by
    panel (a)."""
    from app.search.explain import reasons

    fig, right = Image.new("RGB", (590, 280), "white"), Image.new("RGB", (590, 280), "white")
    fig.paste(bar_chart([200, 120, 80, 240, 160], 300, 260), (10, 10))
    right.paste(bar_chart([60, 230, 150, 90], 300, 260), (275, 10))
    fig = ImageChops.darker(fig, right)  # two charts whose drawings are 15 px apart
    boxes = [(5, 5, 308, 275), (308, 5, 585, 275)]
    a = fig.crop(boxes[0])
    upload = jpeg(fig.crop((5, 5, 330, 275)), 0.7, 60)  # the axes of (b) come in
    assert np.asarray(upload.convert("L"))[:, -8:].min() < 100  # (b)'s axis is in the upload
    assert sliver_trimmed(jpeg(a, 0.7, 60)) is None  # a picture without slivers: its content box
    up, pa, pb = look_hash(upload), look_hash(a), look_hash(fig.crop(boxes[1]))
    as_is, box, trimmed = (np.unpackbits(up ^ pa).reshape(3, -1).sum(axis=1)).tolist()  # bits of each pair
    assert as_is > COPY_MAX_BITS and box > COPY_MAX_BITS and trimmed <= COPY_MAX_BITS  # the sliver moves the first two
    assert hash_distances(up, pa[None])[0] == trimmed and hash_distances(up, pb[None])[0] > COPY_MAX_BITS
    docs = [FigureDoc(figure_id=500 + i, paper_id=1 + i, caption="chart", text="chart") for i in range(4)]
    vis = _pictures(4, seed=13)
    rng = np.random.default_rng(5)
    hashes = {500 + i: rng.integers(0, 256, HASH_BYTES, dtype=np.uint8) for i in range(4)}
    hashes[502] = look_hash(fig)
    panels = {502: {letter: look_hash(fig.crop(box)) for letter, box in zip("ab", boxes)}}
    eng = Searcher.build(docs, visual_embeddings=vis, vector_kind="flat", gpu="off")
    eng.looks = LookIndex.build(eng.docs.figure_ids, hashes, panels=panels)
    q = _unit_orthogonal(vis[2], 6)  # the upload's picture vector: unrelated to the figure's
    first = eng.by_picture(q, k=2, look=up)[0]
    assert first.figure_id == 502 and first.signals["same_panel"] == 1.0
    assert reasons(first.signals) == ["same picture as panel (a) of this figure"]


def test_a_copy_of_the_whole_picture_comes_before_a_figure_that_holds_it_as_a_panel():
    fig, boxes = three_panels()
    chart = fig.crop(boxes[0])
    docs = [FigureDoc(figure_id=400 + i, paper_id=1 + i, caption="chart", text="chart") for i in range(3)]
    vis = _pictures(3, seed=12)
    hashes = {400: look_hash(fig), 401: look_hash(chart)}  # 401 prints panel (a) of 400 on its own
    eng = Searcher.build(docs, visual_embeddings=vis, vector_kind="flat", gpu="off")
    eng.looks = LookIndex.build(eng.docs.figure_ids, hashes, panels={400: {"a": look_hash(chart)}})
    hits = eng.by_picture(vis[0], k=3, look=look_hash(jpeg(chart, 0.8, 70)))  # nearest picture: 400's
    assert [h.figure_id for h in hits[:2]] == [401, 400] and hits[1].signals["same_panel"] == 1.0


def test_panel_hashes_are_saved_with_the_version_and_a_look_index_without_them_still_loads(tmp_path):
    rng = np.random.default_rng(4)
    h = {i: rng.integers(0, 256, HASH_BYTES, dtype=np.uint8) for i in range(10, 14)}
    panels = {11: {"a": h[12], "b": h[13]}, 13: {"a": h[10]}}
    looks = LookIndex.build(np.array([10, 11, 12, 13]), h, deleted=np.array([False, False, False, True]),
                            panels=panels)
    assert looks.panel_rows.tolist() == [1, 1] and looks.panel_letters.tolist() == ["a", "b"]  # 13 is deleted
    looks.save(tmp_path / "looks")
    back = LookIndex.load(tmp_path / "looks", mmap=True)
    rows, letters = back.panel_copies(h[13])
    assert rows.tolist() == [1] and letters.tolist() == ["b"]
    for name in ("panel_hashes", "panel_rows", "panel_letters"):  # as written before panel hashes
        (tmp_path / "looks" / f"{name}.npy").unlink()
    old = LookIndex.load(tmp_path / "looks")
    assert len(old.panel_hashes) == 0 and old.panel_copies(h[13])[0].tolist() == []
    assert (old.hashes == looks.hashes).all()


def test_a_look_index_saved_with_hashes_of_another_layout_loads_without_hashes(tmp_path):
    """An index version written with fewer hashes a picture (two, before the sliver-trimmed one)
    loads with none: its copies are told by the cosine rule until the index is built again."""
    rng = np.random.default_rng(6)
    h = {i: rng.integers(0, 256, HASH_BYTES, dtype=np.uint8) for i in range(3)}
    LookIndex.build(np.arange(3), h, panels={1: {"a": h[2]}}).save(tmp_path / "looks")
    meta = json.loads((tmp_path / "looks" / "meta.json").read_text())
    (tmp_path / "looks" / "meta.json").write_text(json.dumps({**meta, "hash_bytes": 64}))
    back = LookIndex.load(tmp_path / "looks")
    assert len(back) == 3 and not back.known.any() and len(back.panel_hashes) == 0
    assert LookIndex.load(tmp_path / "looks").of_row(0) is None
