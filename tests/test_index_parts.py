"""The searcher's parts: each saves and loads itself, modules.json describes them, index versions
written before parts load as they are and answer as the engine that wrote them did, and the
batch forms answer as the single ones."""
import json
import shutil
import zlib
from pathlib import Path

import numpy as np
import pytest

from app.search.doc_table import DocTable, FigureDoc
from app.search.index_parts import MODULES_FILE, read_parts
from app.search.picture_rank import PictureRanking
from app.search.searcher import QueryVocabulary, Searcher
from app.search.spelling import Spelling
from app.search.type_index import TypeIndex
from app.model_store.versions import check_version
from tests.test_searcher import TEXTS

DATA = Path(__file__).parent / "data"
TYPES = ["line_chart", "heatmap", "diagram", "heatmap", "table", "line_chart", "bar_chart", None]


def fixture_docs():
    """The figures of tests/data/index_format1 (figure 104 is a table)."""
    return [FigureDoc(100 + i, 10 + i // 3, f"Figure {i}: {t[:20]}", t, kind="table" if i == 4 else "figure")
            for i, t in enumerate(TEXTS)]


def pictures() -> np.ndarray:
    """The figures' picture vectors (also the picture queries of `answers`)."""
    return np.random.default_rng(1).standard_normal((len(TEXTS), 8)).astype(np.float32)


def fixture_searcher(**kw) -> Searcher:
    """Built now from what index_format1 was built from."""
    emb = np.random.default_rng(0).standard_normal((len(TEXTS), 16)).astype(np.float32)
    vis = pictures()
    scores = [{t: 0.8, "diagram": 0.1} if t and t != "diagram" else None for t in TYPES]
    return Searcher.build(fixture_docs(), embeddings=emb, visual_embeddings=vis, figure_types=TYPES,
                          type_scores=scores, vector_kind="flat", gpu="off", **kw)


def answers(s: Searcher) -> dict:
    """What tests/data/index_format1_expected.json records, asked of `s`."""
    hits = lambda hs: [[h.figure_id, round(h.score, 6)] for h in hs]  # noqa: E731
    vis = pictures()
    s.vocabulary = QueryVocabulary(lambda q: ["heatmap"] if "heatmap" in q else [])
    return {
        "similar": {f"{fid} {scope}": hits(s.similar(fid, k=5, scope=scope))
                    for fid in s.figure_ids.tolist() for scope in ("other_papers", "same_paper", "all")},
        "search": {q: hits(s.search(q, k=5, rerank=False, kind=kind))
                   for q, kind in (("criteo factorization", "figure"), ("mixture of experts", "both"),
                                   ("heatmap", "figure"), ("machine model", "figure"))},
        "spelling": {q: s.spelling_suggestion(q) for q in ("modl", "mixtrue experts", "criteo")},
        "by_picture": {str(r): hits(s.by_picture(vis[r], k=4, type_scores={"heatmap": 0.9}))
                       for r in range(len(TEXTS))},
    }


def test_doc_table_round_trip(tmp_path):
    t = DocTable.build(fixture_docs())
    t.save(tmp_path)
    for mmap in (False, True):
        back = DocTable.load(tmp_path, mmap=mmap)
        assert back.figure_ids.tolist() == t.figure_ids.tolist() and back.paper_ids.tolist() == t.paper_ids.tolist()
        assert [back.captions[i] for i in range(len(back))] == [d.caption for d in fixture_docs()]
        assert back.row_of(105) == 5 and back.rows_of_paper(11).tolist() == [3, 4, 5] and 999 not in back
    with pytest.raises(ValueError, match="duplicate"):
        DocTable([1, 1], [1, 1], ["a", "b"])


def test_type_index_round_trip(tmp_path):
    scores = [{t: 0.8} if t else None for t in TYPES]
    ti = TypeIndex.build([d.kind for d in fixture_docs()], TYPES, scores)
    ti.save(tmp_path)
    back = TypeIndex.load(tmp_path)
    assert back.names == ti.names and back.n == len(TEXTS)
    assert back.dominant.tolist() == ti.dominant.tolist() and back.kinds.tolist() == ti.kinds.tolist()
    assert np.array_equal(back.scores, ti.scores)
    assert back.type_of_row(1) == "heatmap" and back.type_of_row(7) is None and back.kind_of_row(4) == "table"
    assert back.count("table") == 1 and back.count("figure") == 7
    assert back.rows_showing_type(back.names.index("heatmap"), 0.2).tolist() == [1, 3]
    assert back.shows_type("heatmap", 0.2) and not back.shows_type("photo", 0.2)
    empty = TypeIndex.build(["figure"] * 3)  # no types, no tables: nothing stored but the count
    empty.save(tmp_path / "empty")
    assert sorted(p.name for p in (tmp_path / "empty").iterdir()) == ["meta.json"]
    assert TypeIndex.load(tmp_path / "empty").kind_mask(np.arange(3), "table").tolist() == [False] * 3


def test_spelling_round_trip_answers_as_the_vocabulary_built_from_the_captions(tmp_path):
    s = Searcher.build(fixture_docs())
    built = Spelling(captions=s.captions, lexical=s.lexical())
    built.save(tmp_path)
    back = Spelling.load(tmp_path)
    assert back.words() == built.words() and back.words()
    known = s.lexical().term_ids
    for q in ("factorizaton machines", "mixtre of experts", "qwertyuiop", "criteo"):
        assert back.suggestion(q, known) == built.suggestion(q, known)
    assert back.suggestion("factorizaton machines", known) == "factorization machines"


def test_a_version_lists_its_parts_in_modules_json(tmp_path):
    s = fixture_searcher()
    version = s.save(tmp_path)
    d = tmp_path / version
    listed = json.loads((d / MODULES_FILE).read_text())["parts"]
    assert [(p["name"], p["class"]) for p in listed] == [
        ("docs", "DocTable"), ("lexical", "LexicalIndex"), ("vectors", "VectorIndex"), ("visual", "VectorIndex"),
        ("types", "TypeIndex"), ("spelling", "Spelling")]
    assert all((d / p["path"]).is_dir() for p in listed)
    check_version(d)  # the manifest covers every part's files
    back = Searcher.load(tmp_path)
    assert answers(back) == answers(s)
    # a class the reader does not know is refused, never imported by its name
    listed[2]["class"] = "os.system"
    (d / MODULES_FILE).write_text(json.dumps({"format": 1, "parts": listed}))
    with pytest.raises(ValueError, match="unknown class"):
        Searcher.load(d, check=False)


def test_a_version_written_before_parts_loads_and_answers_as_its_engine_did(tmp_path):
    """tests/data/index_format1 was written by the engine before the split into parts (doc table
    and type arrays at the top level, no modules.json, no saved spelling vocabulary), and
    index_format1_expected.json holds that engine's answers on it."""
    old = tmp_path / "v1"
    shutil.copytree(DATA / "index_format1", old)
    assert set(read_parts(old)) == {"docs", "lexical", "types", "vectors", "visual"}
    loaded = Searcher.load(old)  # manifest checked
    # the picture ranking that engine used (a default of the code, not kept with a version)
    loaded.picture_ranking = PictureRanking(type_weight=0.5, agreement="cosine", neighbours=0, copies_first=False)
    loaded.query_type_weight = 1.0  # and the weight of a type a text query names
    expected = json.loads((DATA / "index_format1_expected.json").read_text())
    got = answers(loaded)
    assert got == expected
    today = fixture_searcher()
    today.ranking = loaded.ranking  # the version's own ranking config (the defaults may have moved since)
    today.picture_ranking = loaded.picture_ranking
    today.query_type_weight = loaded.query_type_weight
    assert answers(today) == expected  # and a build of the same figures today
    # saved again, it is a version of parts answering the same
    loaded.save(tmp_path / "index")
    again = Searcher.load(tmp_path / "index")
    again.picture_ranking = loaded.picture_ranking
    again.query_type_weight = loaded.query_type_weight
    assert answers(again) == expected


def test_batch_forms_answer_as_the_single_forms():
    calls = []

    def encoder(texts):
        calls.append(list(texts))
        rng = np.random.default_rng(zlib.crc32(texts[0].encode()))  # the same vector in every process
        return rng.standard_normal((len(texts), 16)).astype(np.float32)

    s = fixture_searcher(encoder=encoder, vocabulary=QueryVocabulary(lambda q: ["heatmap"] if "heatmap" in q else [],
                                                                     frozenset({"heatmap"})))
    queries = ["criteo factorization", "mixture of experts", "heatmap", "heatmpa", "qwertyuiop"]
    key = lambda hs: [tuple(h) for h in hs]  # noqa: E731
    for kw in ({}, {"rerank": False}, {"kind": "both", "offset": 1}):
        batch = s.batch_search(queries, k=4, **kw)
        single = [s.search(q, k=4, **kw) for q in queries]
        assert [key(b) for b in batch] == [key(x) for x in single]
        assert [b.query for b in batch] == [x.query for x in single]
    assert [b.query for b in s.batch_search(queries)][3] == "heatmap"  # the spelling fallback, in batches too
    fids = s.figure_ids.tolist()
    for scope in ("other_papers", "same_paper", "all"):
        batch = s.batch_similar(fids, k=5, scope=scope)
        assert list(batch) == fids
        assert all(key(batch[f]) == key(s.similar(f, k=5, scope=scope)) for f in fids)
