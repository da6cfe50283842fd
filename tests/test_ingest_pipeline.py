"""End-to-end ingestion in the embedded mode (SQLite, in-process pool)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.db.schema import Citation, Figure, Job, Mention, Paper
from app.db.session import session_scope
from app.pipeline import ingest_jobs
from tests import badfiles


def ingest(paths, settings) -> ingest_jobs.JobSummary:
    job_id = ingest_jobs.prepare_job(paths, settings)
    ingest_jobs.run_job_embedded(settings, job_id, workers=2)
    return ingest_jobs.summarise(settings, job_id)


def test_generated_collection_is_ingested_with_figures_mentions_and_citations(demo_pdfs, fast_settings):
    summary = ingest([demo_pdfs[0].parent], fast_settings)
    assert summary.counts["ok"] == len(demo_pdfs), summary.failures
    assert summary.n_figures >= 3 * len(demo_pdfs)
    with session_scope(fast_settings.db_url) as s:
        papers = s.scalars(select(Paper)).all()
        assert all(p.title and p.abstract for p in papers)
        figs = s.scalars(select(Figure).where(Figure.kind == "figure")).all()
        assert all(f.caption and f.image_path for f in figs)
        assert all((fast_settings.data_dir / f.image_path).stat().st_size > 500 for f in figs)
        assert all((fast_settings.data_dir / f.thumbnail_path).exists() for f in figs)
        n_mentions = s.scalar(select(func.count(Mention.id)))
        assert n_mentions >= len(figs)  # generated papers mention every figure
        assert s.scalar(select(func.count(Citation.id))) > 0  # they cite each other by title
        job = s.scalars(select(Job)).one()
        assert (job.status, job.done, job.total) == ("done", len(demo_pdfs), len(demo_pdfs))
    assert not (fast_settings.data_dir / "incoming" / job.id).exists()  # staging cleaned up


def test_same_file_twice_is_one_paper_and_same_title_is_flagged(demo_pdfs, fast_settings, tmp_path):
    import pymupdf

    ingest([demo_pdfs[0]], fast_settings)
    again = ingest([demo_pdfs[0]], fast_settings)
    assert again.counts["duplicate"] == 1
    # same paper, different bytes: re-saved with other metadata
    doc = pymupdf.open(demo_pdfs[0])
    doc.set_metadata({"producer": "another tool", "title": ""})
    other = tmp_path / "renamed copy.pdf"
    doc.save(other, garbage=3)
    third = ingest([other], fast_settings)
    assert third.counts["duplicate"] == 1
    with session_scope(fast_settings.db_url) as s:
        rows = s.scalars(select(Paper).order_by(Paper.id)).all()
        assert len(rows) == 2
        assert rows[1].status == "duplicate" and rows[1].duplicate_of_id == rows[0].id
        assert s.scalar(select(func.count(Figure.id)).where(Figure.paper_id == rows[1].id)) == 0


def test_citation_links_are_reevaluated_when_cited_paper_arrives_later(demo_pdfs, fast_settings):
    ingest(demo_pdfs[1:], fast_settings)  # papers citing others first...
    with session_scope(fast_settings.db_url) as s:
        before = s.scalar(select(func.count(Citation.id)))
    ingest([demo_pdfs[0]], fast_settings)  # ...then the rest arrive
    with session_scope(fast_settings.db_url) as s:
        first = s.scalar(select(Paper.id).where(Paper.source == demo_pdfs[0].name))
        incoming = s.scalar(select(func.count(Citation.id)).where(Citation.cited_paper_id == first))
        outgoing = s.scalar(select(func.count(Citation.id)).where(Citation.citing_paper_id == first))
        assert s.scalar(select(func.count(Citation.id))) > before
    assert incoming + outgoing > 0


def test_bad_inputs_get_clear_statuses_and_good_files_survive(demo_pdfs, fast_settings, tmp_path):
    folder = tmp_path / "batch"
    folder.mkdir()
    good = folder / "good.pdf"
    shutil.copyfile(demo_pdfs[2], good)
    bad = {
        "empty.pdf": badfiles.zero_byte(folder),
        "truncated.pdf": badfiles.truncated(folder, demo_pdfs[3]),
        "random.pdf": badfiles.random_bytes(folder),
        "page.pdf": badfiles.html_named_pdf(folder),
        "encrypted.pdf": badfiles.encrypted(folder),
        "two-thousand-pages.pdf": badfiles.many_pages(folder),
    }
    scanned = badfiles.scanned(folder)
    odd = badfiles.odd_name(folder, demo_pdfs[4])
    trav = badfiles.zip_with_traversal(tmp_path, demo_pdfs[5])
    bomb = badfiles.zip_bomb(tmp_path)
    summary = ingest([folder, trav, bomb], fast_settings)
    reasons = {Path(n.split(":")[-1]).name: e for n, e, _k in summary.failures}
    kinds = {Path(n.split(":")[-1]).name: k for n, _e, k in summary.failures}
    assert kinds == {"empty.pdf": "not_pdf", "random.pdf": "not_pdf", "page.pdf": "not_pdf",
                     "encrypted.pdf": "encrypted", "two-thousand-pages.pdf": "too_large", "escaped.pdf": "unsafe",
                     "escaped2.pdf": "unsafe", "bomb.pdf": "too_large", "truncated.pdf": "damaged"}
    assert "0 bytes" in reasons["empty.pdf"]
    assert "truncated PDF" in reasons["truncated.pdf"]  # never ok with what came after the cut missing
    assert "not a PDF" in reasons["random.pdf"]
    assert "HTML" in reasons["page.pdf"]
    assert "encrypted" in reasons["encrypted.pdf"]
    assert "too many pages" in reasons["two-thousand-pages.pdf"]
    assert "unsafe path" in reasons["escaped.pdf"] and "unsafe path" in reasons["escaped2.pdf"]
    assert "zip bomb" in reasons["bomb.pdf"]
    assert summary.counts["ok"] == 3  # good.pdf, the odd name, ok/inside.pdf from the zip
    assert summary.counts["no_text"] == 1
    with session_scope(fast_settings.db_url) as s:
        sources = {p.source: p for p in s.scalars(select(Paper))}
        assert odd.name in sources and sources[odd.name].status == "ok"
        assert sources[scanned.name].has_text_layer is False
    # nothing escaped the data dir
    assert not (tmp_path / "escaped.pdf").exists() and not Path("/abs/escaped2.pdf").exists()
    assert not list(tmp_path.parent.glob("escaped*.pdf"))


def test_file_timeout_is_reported_not_fatal(demo_pdfs, fast_settings, monkeypatch):
    fast_settings.file_timeout_s = 0.01
    summary = ingest([demo_pdfs[0]], fast_settings)
    assert summary.counts["failed"] == 1
    assert "timed out" in summary.failures[0][1] and summary.failures[0][2] == "timeout"


def test_missing_path_is_a_usage_error(fast_settings, tmp_path):
    from app.ingest.sources import SourceError

    with pytest.raises(SourceError):
        ingest_jobs.prepare_job([tmp_path / "nope.pdf"], fast_settings)


def test_real_papers(real_papers, fast_settings):
    summary = ingest(real_papers, fast_settings)
    assert summary.counts["ok"] == len(real_papers), summary.failures
    with session_scope(fast_settings.db_url) as s:
        for p in s.scalars(select(Paper)):
            assert len(p.title) > 10 and len(p.abstract) > 200
            assert len(p.references) >= 10
            nums = sorted(f.number for f in p.figures if f.kind == "figure")
            assert nums and nums[0] == 1
            assert all(f.label.startswith("Figure") for f in p.figures if f.kind == "figure")
            assert all(f.label.startswith("Table") for f in p.figures if f.kind == "table")


def test_an_unreadable_pdf_is_named_as_uploaded_without_the_library_code(tmp_path):
    """The PDF library's reason names the working copy it was given (a zip member's staging name)
    and starts with its error code; the admin reads the file's own name and the reason alone."""
    from app.ingest.extract import extract_pdf

    copy = tmp_path / "z00000" / "00003_broken.pdf"
    copy.parent.mkdir()
    copy.write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * 12)
    error = extract_pdf(copy, tmp_path / "data", source="bundle.zip:broken.pdf").error
    assert error.startswith("unreadable PDF (damaged or cut short): ") and "'bundle.zip:broken.pdf'" in error, error
    assert "z00000" not in error and "00003_" not in error and "code=" not in error, error


def _statuses(settings, job_id) -> dict[str, tuple[str, int | None, str]]:
    from app.db.schema import JobFile

    with session_scope(settings.db_url) as s:
        rows = s.execute(select(JobFile.name, JobFile.status, JobFile.paper_id, JobFile.error)
                         .where(JobFile.job_id == job_id))
        return {Path(n).name: (st, pid, err) for n, st, pid, err in rows}


def test_a_copy_of_a_new_file_in_the_same_job_is_its_duplicate_and_never_read(demo_pdfs, fast_settings, tmp_path):
    """Two copies of one new file in a job were both extracted, at once, into the one crop folder
    named by their hash (each extraction empties it first). The later copy is now the earlier one's
    duplicate as soon as the job is recorded, so only one of them is ever read."""
    folder = tmp_path / "upload"
    folder.mkdir()
    shutil.copyfile(demo_pdfs[0], folder / "a.pdf")
    shutil.copyfile(demo_pdfs[0], folder / "copy of a.pdf")
    shutil.copyfile(demo_pdfs[1], folder / "b.pdf")
    job_id = ingest_jobs.prepare_job([folder], fast_settings)
    assert [Path(name).name for _id, name, *_ in ingest_jobs.pending_files(fast_settings, job_id)] == ["a.pdf", "b.pdf"]
    status, error = _statuses(fast_settings, job_id)["copy of a.pdf"][::2]
    assert status == "duplicate" and error == "same file as a.pdf, earlier in this job", error
    ingest_jobs.run_job_embedded(fast_settings, job_id, workers=2)
    files = _statuses(fast_settings, job_id)
    assert files["a.pdf"][0] == files["b.pdf"][0] == "ok"
    assert files["copy of a.pdf"][:2] == ("duplicate", files["a.pdf"][1])  # points to the paper of the first copy
    assert ingest_jobs.job_progress(fast_settings, job_id) == ("done", 3, 3)
    from app.api.jobs import file_rows  # as the admin's job view shows it: the paper's counts on the first copy only

    with session_scope(fast_settings.db_url) as s:
        rows = {r["name"]: r for r in file_rows(fast_settings, s, s.get(Job, job_id))}
    assert rows["a.pdf"]["n_figures"] > 0 and rows["copy of a.pdf"]["duplicate_of"] == rows["a.pdf"]["paper_id"]
    assert (rows["copy of a.pdf"]["n_figures"], rows["copy of a.pdf"]["n_tables"]) == (0, 0), rows["copy of a.pdf"]


def extract_when_released(path, data_dir, limits, source="", sha256=None):
    """Extraction that first waits for a gate file beside the PDF (a file in work for as long as a
    test needs); run in the extraction processes in place of `extract_pdf`."""
    import time

    from app.ingest.extract import extract_pdf

    gate = Path(path).with_suffix(".go")
    for _ in range(1200):
        if gate.exists():
            break
        time.sleep(0.1)
    return extract_pdf(path, data_dir, limits, source=source, sha256=sha256)


def test_the_file_being_read_is_working_while_the_others_wait(demo_pdfs, fast_settings, tmp_path, monkeypatch):
    """A file in an extraction process shows as working, the files behind it as pending (a long OCR
    file used to leave the job at 6/7 with no sign of which file was in work)."""
    import threading
    import time

    folder = tmp_path / "upload"
    folder.mkdir()
    shutil.copyfile(demo_pdfs[0], folder / "a.pdf")
    shutil.copyfile(demo_pdfs[1], folder / "b.pdf")
    monkeypatch.setattr(ingest_jobs, "extract_pdf", extract_when_released)
    job_id = ingest_jobs.prepare_job([folder], fast_settings)
    runner = threading.Thread(target=ingest_jobs.run_job_embedded, args=(fast_settings, job_id), kwargs={"workers": 1})
    runner.start()
    try:
        seen = {}
        for _ in range(600):  # until the first file is in work (at most a minute)
            seen = {name: st for name, (st, _pid, _err) in _statuses(fast_settings, job_id).items()}
            if seen["a.pdf"] != "pending":
                break
            time.sleep(0.1)
        assert seen == {"a.pdf": "working", "b.pdf": "pending"}, seen
    finally:
        for name in ("a", "b"):
            (folder / f"{name}.go").touch()
        runner.join()
    assert {st for st, _pid, _err in _statuses(fast_settings, job_id).values()} == {"ok"}


def test_a_worker_marks_its_file_working_and_a_file_left_working_is_finished_later(demo_pdfs, fast_settings,
                                                                                   tmp_path, monkeypatch):
    """The workers' path: the file is working while it is extracted. A file left working by a process
    that stopped is still unfinished: a redelivered task takes it, a resumed job reads it again, and
    an interrupted job shows it as pending."""
    from app.ingest.extract import extract_pdf

    job_id = ingest_jobs.prepare_job([demo_pdfs[0], demo_pdfs[1]], fast_settings)
    (first, *_), (second, *_) = ingest_jobs.pending_files(fast_settings, job_id)
    during = []

    def extract_and_look(path, data_dir, limits, source="", sha256=None):
        during.append(_statuses(fast_settings, job_id)[demo_pdfs[0].name][0])
        return extract_pdf(path, data_dir, limits, source=source, sha256=sha256)

    monkeypatch.setattr(ingest_jobs, "extract_pdf", extract_and_look)
    assert ingest_jobs.process_job_file(fast_settings, first).status == "ok" and during == ["working"]

    ingest_jobs.mark_working(fast_settings, [second])  # its worker dies while reading it
    assert ingest_jobs.is_unfinished(fast_settings, second)
    assert ingest_jobs.claim_delivery(fast_settings, second) is None  # the redelivered task goes ahead
    assert [i for i, *_ in ingest_jobs.pending_files(fast_settings, job_id)] == [second]
    ingest_jobs.mark_interrupted(fast_settings, job_id, "stopped")
    assert _statuses(fast_settings, job_id)[demo_pdfs[1].name][0] == "pending"
    assert ingest_jobs.process_job_file(fast_settings, second).status == "ok"
    assert not ingest_jobs.is_unfinished(fast_settings, second)


def test_a_file_is_hashed_once_when_its_job_is_recorded(demo_pdfs, fast_settings, monkeypatch):
    """The sha256 taken when the job is recorded goes with the file to its extraction, which used to
    read the whole file again for it."""
    import hashlib

    from app.ingest import extract

    job_id = ingest_jobs.prepare_job([demo_pdfs[0]], fast_settings)
    hashed = []
    monkeypatch.setattr(extract, "file_sha256", lambda path: hashed.append(path) or "0" * 64)
    (jf_id, *_), = ingest_jobs.pending_files(fast_settings, job_id)
    assert ingest_jobs.process_job_file(fast_settings, jf_id).status == "ok"
    assert hashed == []
    with session_scope(fast_settings.db_url) as s:
        assert s.scalar(select(Paper.sha256)) == hashlib.sha256(demo_pdfs[0].read_bytes()).hexdigest()


def extract_unless_told_to_fail(path, data_dir, limits, source="", sha256=None):
    """`extract_pdf`, but a file named in a `fail-NAME` file beside the data dir fails (as a crash
    of the PDF library would)."""
    from app.ingest.extract import extract_pdf

    if (Path(data_dir).parent / f"fail-{source}").exists():
        raise RuntimeError("the PDF library crashed")
    return extract_pdf(path, data_dir, limits, source=source, sha256=sha256)


def test_a_failed_file_is_kept_and_read_again_when_its_job_is_retried(demo_pdfs, fast_settings, tmp_path,
                                                                       monkeypatch):
    """A file that failed keeps its bytes after the job, when the others' are removed; retrying the
    job reads it again, in the same job, which then adds its paper (and only that one is new). A
    job with nothing left to retry says so; after FIGSEARCH_KEEP_FAILED_HOURS the bytes go."""
    import zipfile

    bundle = tmp_path / "bundle.zip"
    with zipfile.ZipFile(bundle, "w") as z:
        z.write(demo_pdfs[0], "a.pdf")
        z.write(demo_pdfs[1], "b.pdf")
    monkeypatch.setattr(ingest_jobs, "extract_pdf", extract_unless_told_to_fail)
    told = fast_settings.data_dir.parent / "fail-bundle.zip:b.pdf"
    told.touch()
    job_id = ingest_jobs.prepare_job([bundle], fast_settings)
    (_, _, a_path, _), (_, _, b_path, _) = ingest_jobs.pending_files(fast_settings, job_id)
    ingest_jobs.run_job_embedded(fast_settings, job_id, workers=1)
    files = _statuses(fast_settings, job_id)
    assert files["bundle.zip:a.pdf"][0] == "ok" and files["bundle.zip:b.pdf"] == ("failed", None, "RuntimeError: the PDF library crashed")
    # an error of this program: retried by default
    assert [k for _n, _e, k in ingest_jobs.summarise(fast_settings, job_id).failures] == ["internal"]
    assert ingest_jobs.job_progress(fast_settings, job_id) == ("done", 2, 2)
    assert Path(b_path).is_file() and not Path(a_path).exists()  # only the failed file's bytes are kept
    assert ingest_jobs.clean_leftovers(fast_settings) == (0, 0) and Path(b_path).is_file()

    told.unlink()  # (the library was fixed)
    assert ingest_jobs.retry_job(fast_settings, job_id) == 1
    assert ingest_jobs.job_progress(fast_settings, job_id) == ("queued", 1, 2)
    new = []
    monkeypatch.setattr(ingest_jobs, "after_ingest", lambda settings, papers, job: new.extend(papers))
    ingest_jobs.run_job_embedded(fast_settings, job_id, workers=1)
    files = _statuses(fast_settings, job_id)
    assert files["bundle.zip:a.pdf"][0] == files["bundle.zip:b.pdf"][0] == "ok" and new == [files["bundle.zip:b.pdf"][1]]
    assert not Path(b_path).exists() and not ingest_jobs.staging_dir(fast_settings, job_id).exists()
    ingest_jobs.mark_done(fast_settings, job_id, "off")
    with pytest.raises(ingest_jobs.NothingToRetry, match="nothing to retry"):
        ingest_jobs.retry_job(fast_settings, job_id)
    with pytest.raises(LookupError):
        ingest_jobs.retry_job(fast_settings, "no-such-job")


def test_the_bytes_of_a_failed_file_go_after_the_time_they_are_kept(demo_pdfs, fast_settings, tmp_path,
                                                                    monkeypatch):
    import zipfile

    bundle = tmp_path / "bundle.zip"
    with zipfile.ZipFile(bundle, "w") as z:
        z.write(demo_pdfs[1], "b.pdf")
    monkeypatch.setattr(ingest_jobs, "extract_pdf", extract_unless_told_to_fail)
    (fast_settings.data_dir.parent / "fail-bundle.zip:b.pdf").touch()
    job_id = ingest_jobs.prepare_job([bundle], fast_settings)
    (_, _, b_path, _), = ingest_jobs.pending_files(fast_settings, job_id)
    ingest_jobs.run_job_embedded(fast_settings, job_id, workers=1)
    assert Path(b_path).is_file()
    fast_settings.keep_failed_hours = 0.0001  # its job finished longer ago than that
    import time

    time.sleep(0.5)
    removed, freed = ingest_jobs.clean_leftovers(fast_settings)
    assert removed == 1 and freed == demo_pdfs[1].stat().st_size and not Path(b_path).exists()
    with pytest.raises(ingest_jobs.NothingToRetry, match="no failed file of this job is kept"):
        ingest_jobs.retry_job(fast_settings, job_id)


def test_retrying_an_interrupted_job_finishes_it_and_indexes_all_its_papers(demo_pdfs, fast_settings, monkeypatch):
    """An interrupted job never ran the steps after its files: retried, it reads its unfinished files
    and then types, scores and indexes the papers of its earlier run too."""
    job_id = ingest_jobs.prepare_job([demo_pdfs[0], demo_pdfs[1]], fast_settings)
    (first, *_), _ = ingest_jobs.pending_files(fast_settings, job_id)
    assert ingest_jobs.process_job_file(fast_settings, first).status == "ok"
    ingest_jobs.mark_interrupted(fast_settings, job_id, "stopped")
    assert ingest_jobs.retry_job(fast_settings, job_id) == 0  # no failed file; its unfinished one runs
    new = []
    monkeypatch.setattr(ingest_jobs, "after_ingest", lambda settings, papers, job: new.extend(papers))
    ingest_jobs.run_job_embedded(fast_settings, job_id, workers=1)
    files = _statuses(fast_settings, job_id)
    assert sorted(new) == sorted(pid for _st, pid, _err in files.values()) and len(new) == 2, (new, files)
