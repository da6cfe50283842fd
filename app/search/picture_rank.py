"""How an uploaded picture's candidates are ordered: copies of the picture first, then figures of
the upload's kind, nearest picture first.

The candidates are the `pool` figures whose picture vectors are nearest the upload's. Each gets its
picture cosine plus `type_weight` times the agreement of its stored figure types with the
upload's. The upload is typed by pixels alone (no caption), so its type scores are first
averaged with those of its `neighbours` nearest candidates (weight `neighbour_weight`): stored
figures were typed with their captions' evidence as well, and a picture's nearest neighbours
mostly share its kind, so where the pixels hesitate the neighbourhood decides. Copies of the
upload come first whatever their types (someone who uploads a figure the collection holds wants
it found): the caller says which candidates are copies (app/search/looks.py), else those whose
picture cosine reaches `copy_min`; figures with a panel the upload copies follow them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.search.fusion import SAME_PICTURE_MIN, order, same_picture_first


@dataclass(frozen=True)
class PictureRanking:
    pool: int = 100
    # chosen by scripts/picture_kind_cv.py --sweep --own-first-min 0.99 (nested, folds grouped by
    # paper): 2 or 4 in every fold once copies are told by their hashes; .5 while the cosine told them
    type_weight: float = 2.0
    # probability that both are of one type | cosine of the type-score vectors | 1 when both have
    # the same most likely type (with a type weight above 2 that orders by type, then by picture)
    agreement: str = "probability"
    neighbours: int = 5
    neighbour_weight: float = 0.5
    copies_first: bool = True
    copy_min: float = SAME_PICTURE_MIN  # picture cosine from which a candidate counts as a copy (when not told)


def upload_types(query_scores: np.ndarray, cos: np.ndarray, cand_scores: np.ndarray, ranking: PictureRanking) -> np.ndarray:
    """The upload's type scores, averaged with its nearest candidates' stored ones."""
    q = np.asarray(query_scores, dtype=np.float64)
    m = min(ranking.neighbours, len(cos))
    if m <= 0 or ranking.neighbour_weight <= 0:
        return q
    near = np.argsort(-cos, kind="stable")[:m]
    w = ranking.neighbour_weight
    return (1.0 - w) * q + w * np.asarray(cand_scores[near], dtype=np.float64).mean(axis=0)


def type_agreement(query: np.ndarray, cand_scores: np.ndarray, how: str) -> np.ndarray:
    cand = np.asarray(cand_scores, dtype=np.float64)
    if how == "dominant":
        return (cand.argmax(axis=1) == int(np.argmax(query))).astype(np.float64)
    dot = cand @ query
    if how == "probability":
        return dot
    norms = np.linalg.norm(cand, axis=1) * max(float(np.linalg.norm(query)), 1e-9)
    return dot / np.where(norms > 0, norms, 1.0)


def rank_by_picture(cos: np.ndarray, cand_scores: np.ndarray | None, query_scores: np.ndarray | None,
                    ranking: PictureRanking = PictureRanking(),
                    copies: np.ndarray | None = None,
                    panel_copies: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(score per candidate, candidate positions best first). `cos`: picture cosines with the
    upload; `cand_scores`: (n, types) stored type scores; `query_scores`: the upload's (types,),
    or None (picture alone); `copies`: which candidates are copies of the upload (None: cosine
    `ranking.copy_min` or more); `panel_copies`: which have a panel the upload copies (they come
    after the copies, before the rest). Candidates beyond the pool keep their cosine as score."""
    cos = np.asarray(cos, dtype=np.float64)
    by_picture = order(cos)
    final = cos
    if query_scores is None or cand_scores is None or ranking.type_weight <= 0:
        ranked = by_picture
    else:
        pool = by_picture[:ranking.pool]
        q = upload_types(query_scores, cos[pool], cand_scores[pool], ranking)
        final = cos.copy()
        final[pool] += ranking.type_weight * type_agreement(q, cand_scores[pool], ranking.agreement)
        ranked = np.concatenate([pool[order(final[pool])], by_picture[ranking.pool:]])
    if not ranking.copies_first:
        return final, ranked
    if panel_copies is not None:
        ranked = same_picture_first(ranked, panel_copies)
    return final, same_picture_first(ranked, cos >= ranking.copy_min if copies is None else copies)
