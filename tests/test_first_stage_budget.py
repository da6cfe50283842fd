"""The first stage of related figures reads more postings and re-scores more candidates as the
collection grows past a million documents, and nothing changes below."""
from app.search.searcher import Searcher


def test_first_stage_budget_grows_per_tenfold_past_a_million():
    small, million, ten, hundred = (Searcher.first_stage_budget(n) for n in (20_000, 1_000_000, 10_000_000,
                                                                             100_000_000))
    assert small == million
    assert million["max_postings"] == Searcher.similar_max_postings
    assert million["rescore"] == Searcher.similar_rescore
    assert ten["max_postings"] == round(Searcher.similar_postings_growth * million["max_postings"])
    assert hundred["max_postings"] == round(Searcher.similar_postings_growth ** 2 * million["max_postings"])
    assert ten["rescore"] == round(Searcher.similar_rescore_growth * million["rescore"])
    assert hundred["rescore"] == round(Searcher.similar_rescore_growth ** 2 * million["rescore"])
    assert million["max_postings"] < ten["max_postings"] < hundred["max_postings"]
    assert million["rescore"] < ten["rescore"] < hundred["rescore"]
    assert small["max_query_terms"] == hundred["max_query_terms"] == Searcher.similar_max_terms
