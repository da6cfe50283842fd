"""The order of an uploaded picture's candidates: copies first, then figures of the upload's kind."""
import numpy as np

from app.search.picture_rank import PictureRanking, rank_by_picture, upload_types

# type columns: line chart, bar chart
LINE, BAR = np.array([1.0, 0.0]), np.array([0.0, 1.0])


def test_a_figure_of_the_uploads_kind_comes_before_a_look_alike_of_another_kind():
    cos = np.array([0.90, 0.80, 0.30])  # a line chart that looks like the upload, a bar chart, another bar chart
    stored = np.stack([LINE, BAR, BAR])
    upload = np.array([0.1, 0.9])  # the upload is a bar chart
    _, ranked = rank_by_picture(cos, stored, upload)
    assert ranked.tolist() == [1, 2, 0]  # the upload's kind first, then the look-alike of another kind
    assert rank_by_picture(cos, stored, upload, PictureRanking(type_weight=0.5))[1].tolist() == [1, 0, 2]  # lighter
    assert rank_by_picture(cos, stored, None)[1].tolist() == [0, 1, 2]  # picture alone: nearest first


def test_a_copy_stays_first_whatever_the_types_say():
    cos = np.array([0.97, 0.85])  # a rescaled copy (typed as a line chart) and a bar chart
    stored = np.stack([LINE, BAR])
    upload = np.array([0.0, 1.0])
    assert rank_by_picture(cos, stored, upload, PictureRanking(type_weight=4.0))[1].tolist() == [0, 1]
    assert rank_by_picture(cos, stored, upload, PictureRanking(type_weight=4.0, copies_first=False))[1].tolist() == [1, 0]


def test_the_nearest_figures_types_decide_where_the_uploads_pixels_hesitate():
    cos = np.array([0.7, 0.69, 0.68, 0.67, 0.66, 0.6, 0.59])
    stored = np.stack([BAR] * 5 + [LINE, BAR])
    upload = np.array([0.55, 0.45])  # pixels lean to line chart, its five nearest figures are bar charts
    assert upload_types(upload, cos, stored, PictureRanking(neighbours=5))[1] > 0.5
    def bar_before_line(ranking):
        ranked = rank_by_picture(cos, stored, upload, ranking)[1].tolist()
        return ranked.index(6) < ranked.index(5)

    assert bar_before_line(PictureRanking(type_weight=1.0, neighbours=5))
    assert not bar_before_line(PictureRanking(type_weight=1.0, neighbours=0))  # pixels alone: the line chart


def test_by_most_likely_type_the_uploads_kind_comes_first_then_the_nearest_picture():
    cos = np.array([0.90, 0.40, 0.80, 0.30])
    stored = np.stack([LINE, BAR, LINE, np.array([0.4, 0.6])])
    upload = np.array([0.3, 0.7])  # a bar chart
    ranking = PictureRanking(type_weight=4.0, agreement="dominant", neighbours=0)
    assert rank_by_picture(cos, stored, upload, ranking)[1].tolist() == [1, 3, 0, 2]


def test_copies_are_taken_from_the_given_cosine():
    cos = np.array([0.92, 0.85])  # a copy further from its figure than .95, and a bar chart
    stored = np.stack([LINE, BAR])
    upload = np.array([0.0, 1.0])
    ranking = PictureRanking(type_weight=4.0, neighbours=0)
    assert rank_by_picture(cos, stored, upload, ranking)[1].tolist() == [1, 0]
    assert rank_by_picture(cos, stored, upload, PictureRanking(type_weight=4.0, neighbours=0, copy_min=0.9))[1].tolist() == [0, 1]
