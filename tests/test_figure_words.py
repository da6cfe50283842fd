"""The words printed inside figures as an index part and a related-figures signal."""
import numpy as np
import pytest

from app.search.doc_table import FigureDoc
from app.search.figure_words import FigureWords
from app.search.searcher import Searcher
from app.search.fusion import FIGURE_LEVEL, SIGNALS, fuse

WORDS = ["Recall@20 Embedding size 32 64 128 DeepFM xDeepFM",
         "",  # a raster figure: nothing printed
         "Recall@50 embedding size 16 32 64 LightGCN",
         "Latency (ms) Throughput QPS 1 2 4 8",
         "Recall@20 Recall@50 Recall@20 embedding dimension size"]


def test_cosine_of_the_words_inside_two_figures():
    fw = FigureWords.build(WORDS)
    sim = fw.similarity(0, np.arange(5))
    assert sim[0] == pytest.approx(1.0, abs=1e-6)
    assert sim[1] == 0 and sim[3] == 0  # no words, or none shared
    assert sim[2] > 0 and sim[4] > sim[2] > 0  # more shared words, closer
    assert not fw.similarity(1, np.arange(5)).any()  # a figure without words is close to nothing
    # tick values and one-letter tokens never make two figures alike
    assert FigureWords.build(["1 2 4 8 x", "1 2 4 8 x"]).similarity(0, np.array([1]))[0] == 0


def test_rows_keep_only_their_strongest_terms():
    fw = FigureWords.build([" ".join(f"word{chr(97 + i)}{chr(97 + j)}" for i in range(10) for j in range(10)), "",
                            "latency throughput"], max_terms=12)
    assert fw.view.row_ptr.tolist() == [0, 12, 14]  # the figure without words is no row of the view
    assert fw.view_row.tolist() == [0, -1, 1]
    assert fw.similarity(0, np.array([0]))[0] == pytest.approx(1.0, abs=1e-6)


def test_round_trip(tmp_path):
    fw = FigureWords.build(WORDS)
    fw.save(tmp_path)
    back = FigureWords.load(tmp_path, mmap=True)
    assert back.view.vocab == fw.view.vocab and back.view.n_docs == 4  # the idf counts figures with words
    for r in range(5):
        assert np.allclose(back.similarity(r, np.arange(5)), fw.similarity(r, np.arange(5)))


def test_a_part_of_the_earlier_layout_is_not_read(tmp_path):
    (tmp_path / "meta.json").write_text('{"n": 5, "n_docs": 4, "vocab": [], "format": 1}')
    assert FigureWords.load(tmp_path) is None


def _docs():
    return [FigureDoc(100 + i, 10 + i, f"Figure {i}: results", "results of the model on the dataset")
            for i in range(len(WORDS))]


def test_searcher_gives_the_signal_and_saves_it_as_a_part(tmp_path):
    s = Searcher.build(_docs(), region_words=WORDS)
    rows, lex, sig, final = s.rank_rows(0, "all", weights={"lexical": 1.0, "figure_words": 10.0}, candidates=10)
    assert "figure_words" in SIGNALS and "figure_words" in FIGURE_LEVEL
    assert s.figure_ids[rows[0]] == 104  # the figure printing the same words first
    assert sig["figure_words"][0] == pytest.approx(s.figure_words.similarity(0, np.array([4]))[0])
    back = Searcher.load(tmp_path / s.save(tmp_path))
    assert back.figure_words is not None
    assert np.allclose(back.signals(0, np.arange(1, 5), np.zeros(4))["figure_words"],
                       s.signals(0, np.arange(1, 5), np.zeros(4))["figure_words"])
    # an index without the part ranks as before: the signal is absent, not 0 for everyone
    plain = Searcher.build(_docs())
    assert plain.signals(0, np.arange(1, 5), np.zeros(4))["figure_words"] is None
    assert fuse({"lexical": np.ones(2), "figure_words": None}, {"lexical": 1.0, "figure_words": 1.0}).tolist() == [1, 1]


def test_length_must_match_the_doc_table():
    s = Searcher.build(_docs())
    with pytest.raises(ValueError, match="figure words"):
        Searcher(s.docs, s.lexical(), figure_words=FigureWords.build(WORDS[:2]))
