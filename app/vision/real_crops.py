"""Real figure crops labelled by hand, as training examples of the figure-type head.

Labels made by looking at crops (JSON lines: sha256, number, type, types; see
tests/data/figure_types_train_recsys.md) are matched to a collection's figures by paper sha256 and
figure number.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from PIL import Image
from sqlalchemy import select

from app.db.schema import Figure, Paper
from app.db.session import session_scope
from app.settings import Settings
KEEP_PX = 448  # crops are kept at most this large: the backbone sees 224 px


@dataclass
class RealCrop:
    image: Image.Image
    group: str  # the paper's sha256: cross-validation folds never split a paper
    dominant: str
    types: list[str]


def read_labels(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def labelled_crops(settings: Settings, labels: list[dict], exclude: set[str] = frozenset()) -> list[RealCrop]:
    """The collection's crops of the labelled figures (papers in `exclude` left out)."""
    with session_scope(settings.db_url) as s:
        rows = s.execute(select(Paper.sha256, Figure.number, Figure.image_path).join(Paper)
                         .where(Figure.kind == "figure")).all()
    paths = {(sha, num): rel for sha, num, rel in rows if rel}
    out = []
    for lab in labels:
        rel = paths.get((lab["sha256"], lab["number"]))
        if rel is None or lab["sha256"] in exclude:
            continue
        try:
            with Image.open(settings.data_dir / rel) as im:
                im.draft("RGB", (KEEP_PX * 2, KEEP_PX * 2))
                img = im.convert("RGB")
        except (OSError, ValueError):
            continue
        img.thumbnail((KEEP_PX, KEEP_PX), Image.Resampling.LANCZOS)
        types = lab.get("types") or [lab["type"]]
        out.append(RealCrop(img, lab["sha256"], lab["type"], types))
    return out
