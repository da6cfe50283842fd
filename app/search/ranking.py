"""One ranking configuration for every caller of related figures and text search.

The API (`/figures/{id}/similar`, `/search`), the CLI (`figsearch similar`, `figsearch search`)
and the evaluation rank with the same `RankingConfig`: first stage, candidate counts, fusion
weights per scope, thresholds. It lives inside an index version (`ranking/ranking.json`, with the
model store's `meta.json`: app/model_store) so a config is always read with the index it was
fitted for; `figsearch fit` (and `figsearch eval`) publish a
new index version holding the fitted config (the old version's files, linked, plus the new
config), so running services swap it in like any other version. A rebuilt index carries the
config of the version before it forward (`fitted_for` still names the version it was fitted on).
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Mapping

from .fusion import DEFAULT_WEIGHTS, SCOPES, seed_weights
from app.model_store import make_meta, write_meta
from app.model_store.store import RANKING
from app.model_store.versions import current_version, publish

RANKING_FILE = "ranking.json"

# Text queries (see Searcher.rank_text): the embedding closeness a figure found only by meaning
# needs, the stricter one when no query word is known, and the classifier score at which a figure
# "is" a named type.
DEFAULT_THRESHOLDS = {"dense_match_min": 0.3, "dense_match_unknown_words_min": 0.45, "type_match_min": 0.2}


@dataclass(frozen=True)
class RankingConfig:
    """How related figures and text queries are ranked; every field has a served default."""

    first_stage: str = "bm25"       # lexical scoring of the candidate search: bm25 or tfidf
    candidates: int = 100           # lexical candidates of `similar`
    union_dense: int = 50           # other_papers: also the nearest figure-text embeddings
    union_papers: int = 10          # other_papers: also the figures of the nearest papers
    rows_per_related_paper: int = 10
    max_per_paper: int = 3          # other_papers: at most this many figures of a paper first
    w: float = 0.5                  # text search: w * minmax(lexical) + (1 - w) * cosine
    text_per_paper: int = 2         # text search: at most this many figures of a paper in each
    text_block: int = 10            # block of this many results (spread.py; 0: no limit)
    # per scope; a scope without weights ranks with the defaults (`all`: the text search mix `w`)
    weights: Mapping[str, Mapping[str, float]] = field(default_factory=lambda: {
        s: dict(DEFAULT_WEIGHTS[s]) for s in ("other_papers", "same_paper")})
    thresholds: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    fitted_for: str | None = None   # the index version the values were fitted on (None: defaults)
    fitted: Mapping = field(default_factory=dict)  # how: data, folds, metrics, command

    def weights_of(self, scope: str) -> dict[str, float]:
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {SCOPES}")
        if self.weights.get(scope):
            return dict(self.weights[scope])
        return seed_weights(self.w) if scope == "all" else dict(DEFAULT_WEIGHTS[scope])

    def with_weights(self, scope: str, weights: Mapping[str, float], **changes) -> "RankingConfig":
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {SCOPES}")
        merged = {s: dict(v) for s, v in self.weights.items()}
        merged[scope] = {k: float(v) for k, v in weights.items()}
        return replace(self, weights=merged, **changes)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping) -> "RankingConfig":
        known = {f for f in cls.__dataclass_fields__}
        data = {k: v for k, v in data.items() if k in known}
        base = cls()
        weights = {s: dict(v) for s, v in base.weights.items()}
        weights.update({s: {k: float(x) for k, x in v.items()} for s, v in (data.pop("weights", None) or {}).items()
                        if s in SCOPES})
        thresholds = {**base.thresholds, **{k: float(v) for k, v in (data.pop("thresholds", None) or {}).items()}}
        return cls(**data, weights=weights, thresholds=thresholds)

    def meta(self) -> dict:
        """The model store's meta.json of this config: how it was fitted, or that it is the defaults."""
        what = "ranking of related figures and text search"
        f = dict(self.fitted)
        if not f:
            return make_meta(RANKING, what + " (served defaults, not fitted)",
                             data={"description": "none: defaults"}, fitted_for=None)
        return make_meta(RANKING, what, command=f.get("command"), metrics=f.get("held_out") or {},
                         data={k: f[k] for k in ("on", "judgments", "judgments_sha256_16", "judge", "folds")
                               if k in f}, fitted_for=self.fitted_for) | (
            {"created_at": f["created"]} if f.get("created") else {})

    # ---------------------------------------------------------------- files
    def save(self, version_dir: str | Path) -> None:
        d = Path(version_dir) / RANKING
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".{RANKING_FILE}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(self.to_json(), indent=1))
        os.replace(tmp, d / RANKING_FILE)
        write_meta(d, self.meta())

    @classmethod
    def load(cls, version_dir: str | Path) -> "RankingConfig":
        """The config of an index version (the defaults for a version without one; versions
        written before the model store kept it as ranking.json beside the index files)."""
        for path in (Path(version_dir) / RANKING / RANKING_FILE, Path(version_dir) / RANKING_FILE):
            try:
                return cls.from_json(json.loads(path.read_text()))
            except FileNotFoundError:
                continue
        return cls()


def publish_ranking(index_root: str | Path, config: RankingConfig, keep: int | None = 3) -> str:
    """A new index version: the CURRENT version's files (hard links: versions are never written
    to) with `config`, published like any version. Returns the new version's name."""
    root = Path(index_root)
    current = current_version(root)
    if current is None:
        raise FileNotFoundError(f"no CURRENT index version under {root}")

    def link(src, dst):
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    def fill(tmp: Path) -> None:
        shutil.copytree(root / current, tmp, copy_function=link)
        # links to the old version's files: never write through them
        shutil.rmtree(tmp / RANKING, ignore_errors=True)
        (tmp / RANKING_FILE).unlink(missing_ok=True)
        config.save(tmp)
    return publish(root, fill, keep)
