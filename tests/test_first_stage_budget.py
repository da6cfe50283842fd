"""The first stage of related figures keeps the same share of postings at any collection size."""
from app.search.searcher import Searcher


def test_first_stage_postings_budget_grows_with_the_collection():
    small, million, ten = (Searcher.first_stage_budget(n)["max_postings"] for n in (20_000, 1_000_000, 10_000_000))
    assert small == million == Searcher.similar_max_postings
    assert ten == 10 * million
    rescored = [Searcher.first_stage_budget(n)["rescore"] for n in (20_000, 1_000_000, 10_000_000, 100_000_000)]
    assert rescored == [Searcher.similar_rescore, Searcher.similar_rescore, 2 * Searcher.similar_rescore,
                        4 * Searcher.similar_rescore]
