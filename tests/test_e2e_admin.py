"""The admin's first hour in a real headless Chromium, on a server whose admin token was generated
into its data dir (embedded mode without FIGSEARCH_ADMIN_TOKEN, as `make demo` runs): the sign-in
page says where the token comes from, jobs show when they ran, a skipped zip member is not styled
as an error, a duplicate links to the paper it repeats, the index line counts tables, and a paper is
removed from its own page after a confirmation. Screenshots (1366 x 768 and 390 px wide) go to
FIGSEARCH_SHOTS or artifacts/screenshots/."""
from __future__ import annotations

import shutil
import time
import zipfile
from functools import partial

import httpx
import pytest

from tests.browser import SHOTS, BROWSER_MARKS, Console, browser, sample_server, save_shot, wait_js, wait_page  # noqa: F401 (fixture)
from tests.test_api import extra_pdf, generated_pdf

WIDE = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}

pytestmark = BROWSER_MARKS
shot = partial(save_shot, SHOTS)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    env = {"FIGSEARCH_WARM_ENCODER": "false", "FIGSEARCH_ADMIN_TOKEN": None}
    with sample_server(tmp_path_factory, "e2e-admin", env) as (base, root, data):
        # the server generates its token into the data dir
        yield {"base": base, "root": root, "data": data, "token": (data / "admin-token").read_text().strip()}


def overflow(page) -> tuple[int, list[str]]:
    """Pixels the page is wider than the window, and the elements sticking out (for the message)."""
    wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    out = page.evaluate("() => [...document.querySelectorAll('#view *')].filter(e => e.getBoundingClientRect().right"
                        " > window.innerWidth + 1).slice(0, 8).map(e => `${e.tagName}.${e.className}: "
                        "${(e.textContent || '').slice(0, 50)}`)")
    return wide, out


def sign_in(page, base: str, token: str) -> None:
    page.goto(base + "/#/admin")
    page.wait_for_selector("#admin-token")
    page.fill("#admin-token", token)
    page.click("#login")
    page.wait_for_selector("#upload-pdfs")


def test_sign_in_page_says_where_the_token_comes_from(server, browser):
    for viewport, tag in ((WIDE, "wide"), (PHONE, "phone")):
        page = browser.new_page(viewport=viewport)
        console = Console(page)
        page.goto(server["base"] + "/#/admin")
        page.wait_for_selector("#token-help")
        help_text = page.inner_text("#token-help")
        assert "generated" in help_text and "figsearch admin-token --data-dir" in help_text, help_text
        assert "make demo" in help_text and "data/demo" in help_text
        wide, out = overflow(page)
        assert wide <= 0, out
        shot(page, f"admin-sign-in-{tag}")
        assert console.errors == [], console.errors
        page.close()


@pytest.fixture(scope="module")
def bundle_job(server, tmp_path_factory):
    """A zip uploaded through the API: a copy of paper 1 (a duplicate), a new paper, a text file
    (skipped) and a file named .pdf that no PDF reader opens (failed); returns the job id and the
    original paper once the job is done."""
    base, token = server["base"], server["token"]
    tmp = tmp_path_factory.mktemp("bundle")
    original = httpx.get(f"{base}/api/v1/papers/1").json()
    pdf = tmp / "copy-of-paper-1.pdf"
    pdf.write_bytes(httpx.get(f"{base}/api/v1/papers/1/pdf").content)
    bundle = tmp / "bundle.zip"
    with zipfile.ZipFile(bundle, "w") as z:
        z.write(pdf, "copy-of-paper-1.pdf")
        z.write(extra_pdf(tmp / "extra"), "new-paper.pdf")
        z.writestr("readme.txt", "not a paper")
        z.writestr("broken-upload.pdf", b"%PDF-1.4\n" + bytes(range(256)) * 12)
    return {"job_id": ingest_to_the_end(base, token, bundle), "original": original}


def ingest_to_the_end(base: str, token: str, bundle) -> str:
    """Upload a zip (or a PDF) as an admin and wait until its job has ended; its job id."""
    auth = {"Authorization": f"Bearer {token}"}
    kind = "application/pdf" if bundle.suffix == ".pdf" else "application/zip"
    with bundle.open("rb") as fh:
        r = httpx.post(f"{base}/api/v1/admin/collections", headers=auth, timeout=60,
                       files={"files": (bundle.name, fh, kind)})
    assert r.status_code == 202, r.text
    job_id = r.json()["job_id"]
    deadline = time.time() + 180
    while httpx.get(f"{base}/api/v1/admin/jobs/{job_id}", headers=auth).json()["status"] not in ("done", "failed"):
        assert time.time() < deadline
        time.sleep(0.5)
    return job_id


def job_page(server, browser, job_id, viewport=WIDE):
    """The admin page, signed in, with the job and its files shown."""
    page = browser.new_page(viewport=viewport)
    page.set_default_timeout(20_000)
    console = Console(page)
    sign_in(page, server["base"], server["token"])
    job = page.locator(f"#jobs .job[data-job-id='{job_id}']")
    job.locator(".files").first.wait_for()  # a long job has two tables
    return page, job, console


def paper_page(server, browser, paper_id, viewport):
    """A paper's page, signed in (the admin's controls shown)."""
    page = browser.new_page(viewport=viewport)
    page.set_default_timeout(20_000)
    console = Console(page)
    sign_in(page, server["base"], server["token"])
    page.goto(f"{server['base']}/#/paper/{paper_id}")
    wait_page(page)
    return page, console


def file_rows(job) -> dict:
    return {r.locator("td.name").inner_text(): r for r in job.locator(".files tbody tr").all()}


def test_jobs_show_when_they_ran(server, browser, bundle_job):
    page, job, console = job_page(server, browser, bundle_job["job_id"])
    times = job.locator(".job-times time")
    assert times.count() == 2  # started and finished, each with a machine-readable timestamp
    assert times.first.get_attribute("datetime")
    line = job.locator(".job-times").inner_text()
    assert line.startswith("started ") and "finished " in line and "took" in line, line
    assert "ago" in line or "just now" in line, line
    assert console.errors == [], console.errors
    page.close()


def test_skipped_file_is_neutral_not_red(server, browser, bundle_job):
    page, job, console = job_page(server, browser, bundle_job["job_id"])
    skipped = file_rows(job)["bundle.zip:readme.txt"]
    assert skipped.locator("td.err").count() == 0 and skipped.locator("td.note").count() == 1
    colour = skipped.locator("td.note").evaluate("el => getComputedStyle(el).color")
    bad = page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--bad')").strip()
    assert bad == "#cf222e" and colour != "rgb(207, 34, 46)", colour  # not the error red
    badge = skipped.locator(".badge").evaluate("el => getComputedStyle(el).backgroundColor")
    assert badge == "rgb(238, 242, 247)", badge  # the neutral grey of plain badges
    assert console.errors == [], console.errors
    page.close()


def test_duplicate_links_to_the_original_paper(server, browser, bundle_job):
    page, job, console = job_page(server, browser, bundle_job["job_id"])
    rows = file_rows(job)
    link = rows["bundle.zip:copy-of-paper-1.pdf"].locator("a.original-paper")
    assert link.get_attribute("href") == f"#/paper/{bundle_job['original']['paper_id']}"
    assert rows["bundle.zip:new-paper.pdf"].locator("a.paper-result").count() == 1
    shot(page, "admin-jobs-wide")
    page.set_viewport_size(PHONE)
    wide, out = overflow(page)
    assert wide <= 0, out
    shot(page, "admin-jobs-phone")
    page.set_viewport_size(WIDE)
    link.click()
    page.wait_for_selector("#paper-title")
    assert bundle_job["original"]["title"] in page.inner_text("#paper-title")
    assert console.errors == [], console.errors
    page.close()


def test_failed_upload_is_in_the_job_not_in_the_papers_list(server, browser, bundle_job):
    """A file that failed is red in the admin's job view; researchers do not meet it in the list
    of papers (at any width), nor as a paper to filter the figures by."""
    page, job, console = job_page(server, browser, bundle_job["job_id"])
    failed = file_rows(job)["bundle.zip:broken-upload.pdf"]
    assert failed.locator("td.err").count() == 1 and "failed" in failed.inner_text()
    page.close()
    for viewport, tag in ((WIDE, "wide"), (PHONE, "phone")):
        page = browser.new_page(viewport=viewport)
        page.set_default_timeout(20_000)
        console = Console(page)
        page.goto(server["base"] + "/#/papers")
        wait_page(page)
        page.wait_for_selector("#paper-list li")
        listed = page.inner_text("#paper-list")
        assert "broken-upload" not in listed and "failed" not in listed, listed
        assert page.locator("#paper-list .badge").count() == 0  # every listed paper was read
        count = int(page.inner_text("#paper-count").split()[0])
        assert count == page.locator("#paper-list li").count()
        shot(page, f"papers-after-failed-upload-{tag}")
        page.goto(server["base"] + "/#/")
        wait_page(page)
        page.wait_for_selector("#f-paper option:nth-child(2)", state="attached")
        assert "broken-upload" not in page.evaluate("document.getElementById('f-paper').textContent")
        assert console.errors == [], console.errors
        page.close()


def test_page_of_a_failed_file_says_what_happened_and_removes_only_its_record(server, browser, bundle_job):
    """A file that failed has a page (its id is in the job's API answer): it says why the file is not
    in the collection and how to retry, instead of an empty figure grid and citation lists; removing
    it names a record, not a paper with figures (the API test checks that no index refresh follows)."""
    base, token = server["base"], server["token"]
    auth = {"Authorization": f"Bearer {token}"}
    files = httpx.get(f"{base}/api/v1/admin/jobs/{bundle_job['job_id']}", headers=auth).json()["files"]
    failed = next(f for f in files if f["name"] == "bundle.zip:broken-upload.pdf")
    for viewport, tag in ((PHONE, "phone"), (WIDE, "wide")):
        page, console = paper_page(server, browser, failed["paper_id"], viewport)
        note = page.inner_text("#not-in-collection")
        assert "could not be read" in note and "not in the collection" in note and "upload it again" in note, note
        assert failed["error"][1:] in note, (failed["error"], note)
        assert "broken-upload.pdf'" in note and "z0" not in note and "code=" not in note, note  # the file as uploaded
        view = page.inner_text("#view")
        assert "No figures were found" not in view and page.locator("#cites, #cited-by").count() == 0, view
        page.click("#remove-paper-open")
        ask = page.inner_text("#remove-paper .confirm")
        assert "Remove the record of" in ask and "not in the collection" in ask and "figure" not in ask, ask
        wide, out = overflow(page)
        assert wide <= 0, out
        shot(page, f"paper-failed-file-{tag}")
        if tag == "wide":
            page.click("#remove-paper-confirm")
            page.wait_for_selector("#remove-paper .notice.ok")
            assert "search index is unchanged" in page.inner_text("#remove-paper")
            assert httpx.get(f"{base}/api/v1/papers/{failed['paper_id']}").status_code == 404
        assert console.errors == [], console.errors
        page.close()


def test_index_line_counts_figures_and_tables(server, browser, bundle_job):
    page, job, console = job_page(server, browser, bundle_job["job_id"])
    ready = httpx.get(f"{server['base']}/readyz").json()["index"]
    assert ready["n_tables"] > 0
    wait_js(page, "/\\d+ figures?, \\d+ tables?\\b/.test(document.getElementById('index-state').textContent)")
    assert console.errors == [], console.errors
    page.close()


def test_remove_a_paper_from_its_page_after_confirming(server, browser):
    base = server["base"]
    papers = httpx.get(f"{base}/api/v1/papers?limit=100").json()["items"]
    victim = papers[-1]

    # visitors do not see the control
    page = browser.new_page(viewport=WIDE)
    console = Console(page)
    page.goto(f"{base}/#/paper/{victim['paper_id']}")
    wait_page(page)
    page.wait_for_selector("#paper-title")
    assert page.locator("#remove-paper").count() == 0
    page.close()

    for viewport, tag in ((PHONE, "phone"), (WIDE, "wide")):
        page, console = paper_page(server, browser, victim["paper_id"], viewport)
        page.click("#remove-paper-open")
        ask = page.locator("#remove-paper .confirm")
        assert victim["title"] in ask.inner_text() and "cannot be undone" in ask.inner_text()
        wide, out = overflow(page)
        assert wide <= 0, out
        shot(page, f"paper-remove-confirm-{tag}")
        if tag == "phone":  # cancelling keeps the paper
            page.click("#remove-paper-cancel")
            assert ask.count() == 0
            assert httpx.get(f"{base}/api/v1/papers/{victim['paper_id']}").status_code == 200
            page.close()
            continue
        page.click("#remove-paper-confirm")
        page.wait_for_selector("#remove-paper .notice.ok")
        assert "Removed" in page.inner_text("#remove-paper")
        assert page.locator("#paper-figures .card").count() == 0  # no links left to the removed figures
        shot(page, f"paper-removed-{tag}")
        assert httpx.get(f"{base}/api/v1/papers/{victim['paper_id']}").status_code == 404
        assert console.errors == [], console.errors
        page.close()


def test_files_that_are_not_pdfs_are_left_out_of_an_upload(server, browser, tmp_path):
    """A stray non-PDF among the chosen files is named and left out before uploading (the server
    would refuse the whole upload for it); the PDFs stay chosen."""
    pdf, notes = tmp_path / "paper.pdf", tmp_path / "notes.txt"
    pdf.write_bytes(b"%PDF-1.4\n%%EOF\n")
    notes.write_text("reading list\n")
    page = browser.new_page(viewport=WIDE)
    page.set_default_timeout(20_000)
    sign_in(page, server["base"], server["token"])
    page.set_input_files("#pdf-files", [str(pdf), str(notes)])
    assert page.inner_text("#chosen-files").startswith("1 file (") and "paper.pdf" in page.inner_text("#chosen-files")
    assert "notes.txt" not in page.inner_text("#chosen-files")
    assert page.inner_text("#upload-pdfs .notice.warn") == "Left out, not a PDF or zip: notes.txt."
    assert page.is_enabled("#upload-submit")
    page.set_input_files("#pdf-files", [str(notes)])  # nothing left to upload
    assert page.is_disabled("#upload-submit") and page.inner_text("#chosen-files") == ""
    page.close()


def test_an_uploaded_paper_is_indexing_until_its_figures_are_searchable(server, browser, tmp_path):
    """A paper uploaded from the admin page: its job says "indexing" after its last file (not
    "done") and then "Searchable", when a search finds its figures."""
    pdf = generated_pdf(tmp_path, seed=13)
    page = browser.new_page(viewport=WIDE)
    page.set_default_timeout(20_000)
    console = Console(page)
    sign_in(page, server["base"], server["token"])
    page.set_input_files("#pdf-files", [str(pdf)])
    page.click("#upload-submit")
    page.wait_for_selector("#upload-pdfs .notice.ok")
    job = page.locator("#jobs .job").first
    job_id = job.get_attribute("data-job-id")
    seen, deadline = [], time.time() + 180
    while "Searchable" not in (seen or [""])[-1]:
        assert time.time() < deadline, seen
        status = job.get_attribute("data-status")
        line = job.locator(".job-index").all_inner_texts()
        seen.append(f"{status}: {line[0] if line else ''}")
        if status == "indexing" and not any(s.startswith("indexing") for s in seen[:-1]):
            shot(page, "admin-job-indexing")  # when the poll catches it (a fast build may pass unseen)
        time.sleep(0.1)
    assert all(not s.startswith("done") or "Searchable" in s or "loading" in s for s in seen), seen
    assert not any(s.startswith("indexing") and "Searchable" in s for s in seen), seen
    auth = {"Authorization": f"Bearer {server['token']}"}
    paper_id = httpx.get(f"{server['base']}/api/v1/admin/jobs/{job_id}", headers=auth).json()["files"][0]["paper_id"]
    fig = next(f for f in httpx.get(f"{server['base']}/api/v1/papers/{paper_id}").json()["figures"])
    hits = httpx.get(f"{server['base']}/api/v1/search", params={"q": fig["caption"], "paper_id": paper_id,
                                                                 "kind": "both"}).json()["items"]
    assert fig["figure_id"] in [h["figure_id"] for h in hits]
    shot(page, "admin-job-searchable")
    assert console.errors == [], console.errors
    page.close()


def test_a_broken_file_is_read_again_only_when_asked(server, browser, bundle_job):
    """A file that failed for its own bytes (a damaged PDF) says so in plain words and has no Retry
    button (it would fail the same way); the job offers to read it again anyway (after an upgrade),
    which runs the job again and ends with the file failed the same way and the others untouched."""
    page, job, console = job_page(server, browser, bundle_job["job_id"])
    failed = file_rows(job)["bundle.zip:broken-upload.pdf"]
    assert failed.locator(".file-retry").count() == 0 and job.locator(".job-retry").count() == 0
    assert "The file itself is at fault" in failed.locator(".file-verdict").inner_text()
    assert failed.locator("td.err").get_attribute("data-error-kind") == "damaged"
    anyway = job.locator(".job-retry-own")
    assert anyway.inner_text() == "Read the 1 broken file again anyway"
    shot(page, "admin-job-retry-wide")
    anyway.click()
    where = f"document.querySelector(\"#jobs .job[data-job-id='{bundle_job['job_id']}']\")"
    wait_js(page, f"{where}.dataset.status !== 'done'")  # shown as queued at once, then followed
    wait_js(page, f"{where}.dataset.status === 'done' && {where}.querySelector('.files') !== null", 120)
    job = page.locator(f"#jobs .job[data-job-id='{bundle_job['job_id']}']")
    again = file_rows(job)["bundle.zip:broken-upload.pdf"]
    assert "failed" in again.inner_text() and again.locator(".file-retry").count() == 0
    assert job.locator(".job-retry-own").count() == 1
    files = httpx.get(f"{server['base']}/api/v1/admin/jobs/{bundle_job['job_id']}",
                      headers={"Authorization": f"Bearer {server['token']}"}).json()["files"]
    statuses = {f["name"]: f["status"] for f in files}
    assert statuses["bundle.zip:new-paper.pdf"] == "ok" and statuses["bundle.zip:readme.txt"] == "skipped"
    page.set_viewport_size(PHONE)
    wide, out = overflow(page)
    assert wide <= 0, out
    shot(page, "admin-job-retry-phone")
    assert console.errors == [], console.errors
    page.close()


def test_a_file_whose_time_ran_out_is_offered_a_retry_and_a_broken_one_is_not(server, browser, tmp_path):
    """A job of three files, one read, one damaged, one whose time ran out (recorded as the
    extraction pool records it, the machine being busy): only the last has a Retry button, and
    the job's button retries only it."""
    from app.ingest import failures
    from app.pipeline import ingest_jobs
    from app.settings import Settings

    settings = Settings(data_dir=server["data"], database_url="", broker_url="", auto_index=False)
    damaged = tmp_path / "damaged.pdf"
    damaged.write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * 12)
    read, slow_pdf = tmp_path / "read.pdf", tmp_path / "slow.pdf"
    shutil.copyfile(generated_pdf(tmp_path, seed=23), read)
    shutil.copyfile(generated_pdf(tmp_path, seed=29), slow_pdf)
    job_id = ingest_jobs.prepare_job([read, damaged, slow_pdf], settings)
    (good, *_), (bad, *_), (slow, *_) = ingest_jobs.pending_files(settings, job_id)
    ingest_jobs.process_job_file(settings, good)
    ingest_jobs.process_job_file(settings, bad)
    ingest_jobs.record_outcome(settings, slow, None, "timed out after 120 s", failures.TIMEOUT)
    ingest_jobs.after_ingest(settings, ingest_jobs.finish_job(settings, job_id), job_id)

    page, job, console = job_page(server, browser, job_id)
    rows = file_rows(job)
    assert set(rows) == {"read.pdf", "damaged.pdf", "slow.pdf"}, list(rows)
    slow_row, bad_row = rows["slow.pdf"], rows["damaged.pdf"]
    assert "paper" in rows["read.pdf"].inner_text() and rows["read.pdf"].locator(".file-verdict").count() == 0
    assert slow_row.locator(".file-retry").count() == 1 and "a retry may work" in slow_row.inner_text()
    assert bad_row.locator(".file-retry").count() == 0 and "fails the same way" in bad_row.inner_text()
    assert job.locator(".job-retry").inner_text() == "Retry 1 failed file"
    assert job.locator(".job-retry-own").inner_text() == "Read the 1 broken file again anyway"
    shot(page, "admin-job-mixed-failures")
    assert console.errors == [], console.errors
    page.close()


def test_older_jobs_are_shown_on_demand(server, browser, tmp_path):
    """The admin page shows the last ten jobs and a "Show older jobs" button for the rest."""
    base, auth = server["base"], {"Authorization": f"Bearer {server['token']}"}
    pdf = httpx.get(f"{base}/api/v1/papers/{httpx.get(f'{base}/api/v1/papers').json()['items'][0]['paper_id']}/pdf").content
    for i in range(10):  # copies of a stored paper: each job is over at once
        r = httpx.post(f"{base}/api/v1/admin/collections", headers=auth, timeout=60,
                       files={"files": (f"copy-{i}.pdf", pdf, "application/pdf")})
        assert r.status_code == 202, r.text
    total = len(httpx.get(f"{base}/api/v1/admin/jobs?limit=100", headers=auth).json()["items"])
    assert total > 10
    page = browser.new_page(viewport=WIDE)
    page.set_default_timeout(20_000)
    console = Console(page)
    sign_in(page, base, server["token"])
    page.wait_for_selector("#more-jobs", state="visible")
    assert page.locator("#jobs .job").count() == 10
    page.click("#more-jobs")
    wait_js(page, f"document.querySelectorAll('#jobs .job').length === {total}")
    assert page.locator("#more-jobs").is_hidden()
    assert console.errors == [], console.errors
    page.close()


def test_a_long_job_lists_the_files_it_could_not_add_before_the_folded_rest(server, browser, tmp_path):
    """A job of more files than the page lists unfolded keeps them folded, but the files that
    failed are listed above the fold, with their reasons and retry buttons: among 168 files, 5
    failures were a scroll through all of them away."""
    base = server["base"]
    pdf = httpx.get(f"{base}/api/v1/papers/1/pdf").content
    bundle = tmp_path / "long.zip"
    with zipfile.ZipFile(bundle, "w") as z:
        for i in range(11):  # copies of a stored paper: each is over at once, as a duplicate
            z.writestr(f"copy-{i:02d}.pdf", pdf)
        z.writestr("broken-a.pdf", b"%PDF-1.4\n" + bytes(range(256)) * 12)
        z.writestr("broken-b.pdf", b"%PDF-1.4\n" + bytes(range(255, -1, -1)) * 12)
    job_id = ingest_to_the_end(base, server["token"], bundle)
    page, job, console = job_page(server, browser, job_id)
    assert job.locator(".job-look").inner_text() == "2 files were not added:"
    shown = [n for n, row in file_rows(job).items() if row.is_visible()]
    assert shown == ["long.zip:broken-a.pdf", "long.zip:broken-b.pdf"], shown
    assert job.locator("details.job-files > summary").inner_text() == "The 11 other files"
    job.locator("details.job-files > summary").click()
    assert len([row for row in file_rows(job).values() if row.is_visible()]) == 13
    shot(page, "admin-long-job")
    assert console.errors == [], console.errors
    page.close()


def text_only_pdf(folder: Path) -> Path:
    """A paper of prose alone: a title and paragraphs, no figure or table caption."""
    import pymupdf

    doc = pymupdf.open()
    for n in range(2):
        page = doc.new_page()
        if n == 0:
            page.insert_text((72, 80), "Notes on Estimating Dispersion Without Pictures", fontsize=16)
        body = ("We describe how the estimator behaves when samples are small and the variance grows "
                "with the mean. The method shrinks each estimate towards a fitted trend. ") * 3
        page.insert_textbox(pymupdf.Rect(72, 110, 540, 760), body * 4, fontsize=10)
    p = folder / "prose_only_report.pdf"
    doc.save(p)
    doc.close()
    return p


def test_a_paper_without_captioned_figures_says_why_it_has_none(server, browser, tmp_path):
    """A paper read without error that holds no captioned figure or table: its job's file row, the
    job's index line and the paper's page say that figures are found by their captions, instead of
    an "ok" with 0 figures that reads like a silent failure."""
    job_id = ingest_to_the_end(server["base"], server["token"], text_only_pdf(tmp_path))
    auth = {"Authorization": f"Bearer {server['token']}"}
    files = httpx.get(f"{server['base']}/api/v1/admin/jobs/{job_id}", headers=auth).json()["files"]
    assert [(f["status"], f["n_figures"], f["n_tables"]) for f in files] == [("ok", 0, 0)], files
    page, job, console = job_page(server, browser, job_id)
    row = file_rows(job)["prose_only_report.pdf"]
    note = row.locator("td.found-nothing")
    assert "No captioned figure or table found" in note.inner_text(), row.inner_text()
    assert "caption" in note.get_attribute("title")
    wait_js(page, f"document.querySelector(\".job[data-job-id='{job_id}'] .job-index\")?.textContent.includes('Nothing new to search')", 30)
    # a file name is broken only where it must be: this one fits its column on one line
    name = row.locator("td.name")
    lines = name.evaluate("el => { const r = document.createRange(); r.selectNodeContents(el); "
                          "return new Set([...r.getClientRects()].map((b) => Math.round(b.top))).size; }")
    assert lines == 1, name.inner_text()
    shot(page, "admin-job-no-captioned-figures")
    row.locator("a.paper-result").click()
    page.wait_for_selector("#no-figures-why")
    assert "caption" in page.inner_text("#no-figures-why")
    shot(page, "paper-without-captioned-figures")
    assert console.errors == [], console.errors
    page.close()
