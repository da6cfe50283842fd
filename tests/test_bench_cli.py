"""`figsearch bench --json` on a small synthetic collection: stdout is one JSON document (progress
goes to stderr) holding the budgets' measurements, including those of a fresh serving process."""
import json

from tests.conftest import cli_run


def test_bench_json_reports_build_latency_recall_and_the_served_process(tmp_path):
    r = cli_run(["bench", "--figures", "1000", "--queries", "20", "--add-figures", "100", "--json",
                 "--work-dir", str(tmp_path / "bench")])
    assert "[bench]" in r.stderr and "[bench]" not in r.stdout
    res = json.loads(r.stdout)
    for key in ("build_s", "peak_rss_mb", "similar_p50_ms", "similar_p99_ms", "search_p50_ms", "by_picture_p50_ms",
                "first_stage_recall_at_100_vs_exact", "add_figures_s", "served_rss_mb",
                "served_similar_p50_ms", "served_similar_p99_ms", "served_search_p50_ms", "served_by_picture_p50_ms",
                "rss_before_serving_mb"):
        assert isinstance(res[key], (int, float)) and res[key] >= 0, key
    assert res["served_similar_p50_ms"] <= res["served_similar_p99_ms"]
    assert res["served_queries"] == 10 + 10 + 2 * 20 + 10  # warm-up, then every target twice and half the texts
    assert res["added_figure_found_by_its_words"] is True
    assert (tmp_path / "bench" / "version").is_dir()
