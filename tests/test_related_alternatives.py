"""The pair features of the boosted alternative in scripts/related_alternatives.py: what two
charts plot is compared only when both captions say it, and roles come from caption words."""

import numpy as np

from app.search.papers import PAPER_SIGNALS
from tests.script_modules import load_script


def load():
    return load_script("related_alternatives")


def test_roles_from_caption_words():
    mod = load()
    assert mod.ROLES[mod.role_of("Figure 2: Overall architecture of the proposed model.")].startswith(r"\b(architecture")
    assert mod.role_of("Figure 3: Recall@10 versus embedding size.") == 4
    assert mod.role_of("Figure 1: A cat.") == len(mod.ROLES)


def test_plot_cosine_missing_unless_both_captions_name_it():
    mod = load()
    names = mod.FIGURE_SIGNALS + PAPER_SIGNALS + ("caption",)
    c = {"fids": np.array([11, 12]), "sig": {n: np.array([0.2, 0.8]) for n in names}}
    ctx = {"measure": np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 0.0]], np.float32),
           "against": np.zeros((3, 2), np.float32), "role": np.array([4, 4, 0]), "row": {10: 0, 11: 1, 12: 2}}
    x = mod.pair_features(c, 10, ctx, {"text": 1.0}, True)
    measure, against, same_role = x[:, -5], x[:, -4], x[:, -1]
    assert measure[0] == 1.0 and np.isnan(measure[1])  # the second candidate's caption names no measure
    assert np.isnan(against).all()
    assert same_role.tolist() == [1.0, 0.0]
    assert x.shape[1] == mod.pair_features(c, 10, ctx, {"text": 1.0}, False).shape[1] + 5
