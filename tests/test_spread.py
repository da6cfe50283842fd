"""Papers spread over a text search's results (app/search/spread.py): at most a few figures of a
paper in each block, the rest moved down and never removed; a query naming a paper's title."""
from collections import Counter

import numpy as np

from app.search.spread import names_paper, spread
from app.search.text import analyze


def test_a_block_holds_at_most_the_limit_of_a_paper_and_the_rest_moves_down():
    papers = [1, 1, 1, 1, 1, 2, 3, 1, 1, 4, 5, 6, 7, 8, 9, 1]
    pos, moved = spread(papers, 3, 10, len(papers))
    assert sorted(pos.tolist()) == list(range(len(papers)))  # nothing removed, nothing twice
    first = [papers[i] for i in pos[:10]]
    assert Counter(first)[1] == 3 and len(set(first)) == 8
    # the other papers keep their order, and paper 1's further figures keep theirs, after them
    assert [i for i in pos if papers[i] != 1] == [i for i in range(len(papers)) if papers[i] != 1]
    assert [i for i in pos if papers[i] == 1] == [i for i in range(len(papers)) if papers[i] == 1]
    assert moved == {1}


def test_moved_figures_come_back_in_the_next_block():
    papers = [1] * 6 + [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]
    pos, _ = spread(papers, 2, 5, len(papers))
    blocks = [[papers[i] for i in pos[s:s + 5]] for s in range(0, len(papers), 5)]
    assert all(Counter(b)[1] <= 2 for b in blocks)
    assert [b.count(1) for b in blocks] == [2, 2, 2, 0]


def test_one_paper_alone_keeps_its_order_and_no_limit_changes_nothing():
    pos, moved = spread([7] * 12, 3, 10, 12)
    assert pos.tolist() == list(range(12)) and moved == set()
    papers = [1, 1, 1, 1, 2]
    assert spread(papers, 0, 10, 5)[0].tolist() == [0, 1, 2, 3, 4]
    # when other papers run out, the limited paper's figures end the block, in their order
    assert spread(papers, 2, 10, 5)[0].tolist() == [0, 1, 4, 2, 3]
    assert spread(papers, 2, 3, 5)[0].tolist() == [0, 1, 4, 2, 3]


def test_papers_kept_are_not_limited():
    papers = [1, 1, 1, 1, 2, 1, 3]
    assert spread(papers, 2, 10, 7, keep={1})[0].tolist() == list(range(7))
    pos, moved = spread([1, 1, 1, 2, 2, 2, 3], 1, 3, 7, keep={2})
    assert [[1, 1, 1, 2, 2, 2, 3][i] for i in pos[:3]] == [1, 2, 2] and 2 not in moved


def test_only_the_results_asked_for_are_spread():
    papers = [1] * 5 + list(range(2, 40))
    pos, _ = spread(papers, 2, 4, 4)
    assert pos[:4].tolist() == [0, 1, 5, 6]
    assert pos[4:].tolist() == [2, 3, 4] + list(range(7, len(papers)))  # the rest in ranked order
    assert isinstance(pos, np.ndarray)


def test_a_query_names_a_paper_by_most_of_its_title():
    title = analyze("Deep Residual Learning for Image Recognition")
    assert names_paper(analyze("deep residual learning"), title)
    assert names_paper(analyze("Deep Residual Learning for Image Recognition"), title)
    assert not names_paper(analyze("image recognition"), title)  # a topic many titles share
    assert not names_paper(analyze("residual learning curves"), title)  # a word the title lacks
    assert not names_paper(analyze("t-SNE"), analyze("Visualizing Data using t-SNE"))  # one word
    assert names_paper(analyze("attention is all you need"), analyze("Attention Is All You Need"))


def reference_spread(papers, per_block, block, depth, keep=()):
    """The rule read plainly: each block takes the best results left, at most `per_block` of a
    paper unless nothing else is left (then the rest in order, at the block's end)."""
    left = list(range(len(papers)))
    out = []
    while left and len(out) < depth:
        counts, taken, over = Counter(), [], []
        for pos in left:
            if len(taken) == block:
                break
            p = papers[pos]
            if p in keep or counts[p] < per_block:
                counts[p] += 1
                taken.append(pos)
            else:
                over.append(pos)
        taken += over[:block - len(taken)]
        out += taken
        left = [pos for pos in left if pos not in set(taken)]
    return out + left


def test_the_spread_is_the_plain_rule_at_any_depth():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 60))
        papers = rng.integers(0, int(rng.integers(1, 8)), n).tolist()
        per_block, block, depth = int(rng.integers(1, 4)), int(rng.integers(1, 12)), int(rng.integers(1, n + 5))
        keep = {0} if rng.random() < 0.3 else set()
        assert spread(papers, per_block, block, depth, keep)[0].tolist() == \
            reference_spread(papers, per_block, block, depth, keep), (papers, per_block, block, depth, keep)


def test_few_papers_with_many_results_cost_little():
    import time

    papers = np.random.default_rng(1).integers(0, 3, 20_000)
    start = time.perf_counter()
    spread(papers, 2, 10, 2_001)
    assert time.perf_counter() - start < 0.5  # a scan of every waiting result per block took 1.5 s


def test_related_figures_diversify_is_the_one_block_spread():
    """Related figures: at most two figures of a paper before every other paper's, the overflow after
    them in its order (positions of `ranked` returned)."""
    from app.search.fusion import diversify

    ranked = np.array([5, 3, 9, 1, 7, 2])
    paper = np.zeros(10, dtype=int)
    paper[[5, 3, 9, 1]] = 1  # four of paper 1 first
    paper[[7, 2]] = 2
    assert diversify(ranked, paper, 2).tolist() == [5, 3, 7, 2, 9, 1]
    assert diversify(ranked, paper, 0).tolist() == ranked.tolist()
