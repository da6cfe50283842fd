"""scripts/paper_spread_dev.py: the crowding measures and the p@5 of a ranking once spread."""
from types import SimpleNamespace

from tests.script_modules import load_script


def test_crowding_share_and_distinct_papers():
    mod = load_script("paper_spread_dev")
    hits = [SimpleNamespace(paper_id=p) for p in [1, 1, 1, 2, 3, 1, 4, 5, 6, 7, 1, 1]]
    assert mod.crowding(hits) == (0.4, 7)  # only the first ten count
    assert mod.crowding([])[1] == 0


def test_precision_of_a_spread_ranking_and_its_paper_bootstrap():
    mod = load_script("paper_spread_dev")
    # one paper's three figures (not of the type) lead; other papers' figures show it
    shows, papers = [False, False, False, True, True, True], [1, 1, 1, 2, 3, 4]
    assert mod.precision_at_5(shows, papers, 0, 10) == 0.4
    assert mod.precision_at_5(shows, papers, 1, 10) == 0.6  # 1, 2, 3, 4, then paper 1 again
    low, high = mod.paper_bootstrap([(shows, papers)], 1, 10, n=200)
    assert 0 <= low <= high
