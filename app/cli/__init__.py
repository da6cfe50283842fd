"""`figsearch` command line: ingest PDFs, list papers and figures, run the demo.

Output contract (relied upon by other tools): `papers`/`figures --format jsonl` print one JSON
object per line with the documented fields; `ingest` exits 0 when the run completed, even if
some files failed, and 2 on usage errors.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Optional

import typer
from sqlalchemy import select
from sqlalchemy.orm import selectinload

from app.cli.settings_option import DataDir, settings_or_exit
from app.settings import Settings

cli = typer.Typer(add_completion=False, no_args_is_help=True, help="figsearch: search the figures of research papers.")


def _progress(total: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="file", file=sys.stderr, dynamic_ncols=True,
                disable=None)  # disable=None: no bar when stderr is not a terminal... unless forced


def _note_orphaned_jobs(settings: Settings) -> None:
    """Jobs whose `figsearch ingest` (or server) died are marked interrupted, with how to finish them."""
    from app.pipeline import ingest_jobs

    for job_id in ingest_jobs.orphaned_jobs(settings):
        ingest_jobs.mark_interrupted(settings, job_id, "the process running this job stopped")
        _, done, total = ingest_jobs.job_progress(settings, job_id)
        typer.echo(f"note: job {job_id} was interrupted at {done}/{total} files; finish it with "
                   f"`figsearch ingest --resume {job_id}`", err=True)


def _exit_if_stuck(settings: Settings, job_id: str, grace_s: float = 30.0) -> None:
    """A stop must end the process even when cleanup blocks (a lock taken by the interrupted code,
    a pool that does not join): after `grace_s` seconds the job is marked interrupted and the
    process exits with the interrupt's code."""
    import os
    import threading

    from app.pipeline import ingest_jobs

    def last_resort():
        time.sleep(grace_s)
        try:
            ingest_jobs.mark_interrupted(settings, job_id, "interrupted (Ctrl-C or SIGTERM)")
        finally:
            sys.stderr.write(f"interrupted: finish with `figsearch ingest --resume {job_id}`\n")
            sys.stderr.flush()
            os._exit(130)

    threading.Thread(target=last_resort, name="exit-if-stuck", daemon=True).start()


def _wait_for_workers(settings: Settings, job_id: str, bar) -> None:
    """Distributed mode: follow the job's progress (a line every PROGRESS_EVERY_S when stderr is
    not a terminal, so logs show it too); name each file whose worker stopped answering (a live
    worker re-sends it within seconds); give up (exit 1) when no file finished for
    FIGSEARCH_INGEST_STALL_S (no worker running, or every worker stuck)."""
    from app.dispatch import lost_files
    from app.pipeline import ingest_jobs
    from app.public_text import public_names

    status, last_done, total = ingest_jobs.job_progress(settings, job_id)
    last_change = last_line = time.monotonic()
    reported: set[tuple[int, str]] = set()
    while status not in ("done", "failed"):
        time.sleep(0.5)
        status, done, total = ingest_jobs.job_progress(settings, job_id)
        bar.update(done - bar.n)
        now = time.monotonic()
        if done != last_done or status == "indexing":  # the steps after the last file have their own limit
            last_done, last_change = done, now
        elif now - last_change > settings.ingest_stall_s:
            bar.close()
            typer.echo(f"error: no file of job {job_id} finished in {settings.ingest_stall_s:g} s ({done}/{total} "
                       "done): are Celery workers running (`celery -A workers worker`) with the same "
                       f"broker and database? The job stays queued; follow it with `figsearch jobs {job_id}`",
                       err=True)
            raise typer.Exit(1)
        if bar.disable and now - last_line >= PROGRESS_EVERY_S:
            last_line = now
            typer.echo(f"ingest: {done}/{total} files done (job {job_id})"
                       + ("; indexing its papers" if status == "indexing" else ""), err=True)
        try:
            lost = [f for f in lost_files(settings, job_id) if (f["job_file_id"], f["holder"]) not in reported]
        except Exception:  # the broker is briefly away: the progress above still counts
            lost = []
        for f, name in zip(lost, public_names(settings, job_id, [f["name"] for f in lost])):
            reported.add((f["job_file_id"], f["holder"]))
            bar.write(f"note: worker {f['holder']} stopped answering while it held {name}; the file is sent "
                      "to another worker", file=sys.stderr)


PROGRESS_EVERY_S = 10.0


@cli.command()
def ingest(paths: Optional[list[Path]] = typer.Argument(None, help="PDF files, folders (recursive) or .zip files."),
           data_dir: Optional[Path] = DataDir,
           resume: Optional[str] = typer.Option(None, "--resume", metavar="JOB",
                                                help="Finish an interrupted job (its pending files)."),
           retry: Optional[str] = typer.Option(None, "--retry", metavar="JOB",
                                               help="Read the failed files of a finished job again (their bytes "
                                                    "are kept for FIGSEARCH_KEEP_FAILED_HOURS) whose failure a "
                                                    "retry may fix (a time limit, a lost worker, an error of "
                                                    "this program)."),
           include_file_errors: bool = typer.Option(False, "--include-file-errors",
                                                    help="With --retry: also the files that failed for their own "
                                                         "bytes (damaged, encrypted, not a PDF, over a limit), "
                                                         "e.g. after an upgrade or a raised limit."),
           json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON.")) -> None:
    """Ingest PDFs into the collection: papers, figures, captions, mentions, citation links."""
    import signal

    from app.dispatch import dispatcher_for
    from app.pipeline import ingest_jobs
    from app.ingest.sources import SourceError
    from app.public_text import public_names, public_text

    if bool(paths) + bool(resume) + bool(retry) != 1:
        typer.echo("error: give PDF files/folders/zips to ingest, or --resume JOB, or --retry JOB", err=True)
        raise typer.Exit(2)
    settings = settings_or_exit(data_dir)
    lock = None
    if not settings.distributed:
        removed, freed = ingest_jobs.clean_leftovers(settings)
        if removed:
            typer.echo(f"removed {removed} leftover upload/staging folders ({freed / 1e6:.1f} MB)", err=True)
        _note_orphaned_jobs(settings)
    if retry:
        try:
            ingest_jobs.retry_job(settings, retry, include_file_errors=include_file_errors)
        except LookupError:
            typer.echo(f"error: no job {retry}", err=True)
            raise typer.Exit(2)
        except ingest_jobs.NothingToRetry as exc:
            typer.echo(f"error: {exc}" + (" with --include-file-errors" if exc.held_back else ""), err=True)
            raise typer.Exit(2)
        resume = retry
    if resume:
        job_id = resume
        try:
            status, _, _ = ingest_jobs.job_progress(settings, job_id)
        except LookupError:
            typer.echo(f"error: no job {job_id}", err=True)
            raise typer.Exit(2)
        if status in ("done", "failed"):
            typer.echo(f"job {job_id} is already {status}", err=True)
    else:
        from app.db.schema import new_job_id

        job_id = new_job_id()
    if not settings.distributed:  # held while this process runs the job
        lock = ingest_jobs.JobLock(settings, job_id)
        if not lock.acquire():
            typer.echo(f"error: job {job_id} is being run by another process", err=True)
            raise typer.Exit(2)
    if not resume:
        try:
            ingest_jobs.prepare_job(list(paths), settings, job_id=job_id)
        except SourceError as exc:
            typer.echo(f"error: {public_text(settings, str(exc))}", err=True)
            raise typer.Exit(2)
    status, done, total = ingest_jobs.job_progress(settings, job_id)
    bar = _progress(total, "ingest")
    bar.update(done)
    t0 = time.perf_counter()

    def on_file(name: str, outcome) -> None:
        bar.update(1)
        if outcome.status == "failed":
            bar.write(f"failed: {public_names(settings, job_id, [name])[0]}: {public_text(settings, outcome.error)}",
                      file=sys.stderr)

    def on_term(_signum, _frame):
        if not settings.distributed:
            _exit_if_stuck(settings, job_id)
        raise KeyboardInterrupt

    import pymupdf  # noqa: F401 - imported before the handler: its slow import (PyMuPDF 2 loads a layout
    # model) swallows a KeyboardInterrupt raised inside it, and the job would run on after a SIGTERM

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        if status not in ("done", "failed"):
            dispatcher_for(settings, on_file=on_file)(job_id)  # returns at once with Celery workers
        if settings.distributed:
            _wait_for_workers(settings, job_id, bar)
    except KeyboardInterrupt:
        bar.close()
        if settings.distributed:
            typer.echo(f"stopped waiting; workers continue job {job_id} (`figsearch jobs {job_id}`)", err=True)
        else:
            ingest_jobs.mark_interrupted(settings, job_id, "interrupted (Ctrl-C or SIGTERM)")
            typer.echo(f"interrupted: finish with `figsearch ingest --resume {job_id}`", err=True)
        raise typer.Exit(130)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if lock is not None:
            lock.release()
    bar.close()
    status, done, total = ingest_jobs.job_progress(settings, job_id)
    elapsed = time.perf_counter() - t0
    s = ingest_jobs.summarise(settings, job_id)
    s.failures = list(zip(public_names(settings, job_id, [n for n, _e, _k in s.failures]),
                          [public_text(settings, e) for _n, e, _k in s.failures], [k for _n, _e, k in s.failures]))
    c = s.counts
    if json_out:
        typer.echo(json.dumps({"job_id": job_id, "ok": c["ok"], "no_text": c["no_text"], "failed": c["failed"],
                               "duplicate": c["duplicate"], "skipped": c["skipped"], "figures": s.n_figures,
                               "seconds": round(elapsed, 2),
                               "failures": [{"file": n, "error": e, "error_kind": k} for n, e, k in s.failures]}))
        return
    typer.echo(f"job {job_id}: {total} files in {elapsed:.1f} s")
    typer.echo(f"papers ok: {c['ok']}  no text layer: {c['no_text']}  failed: {c['failed']}  "
               f"duplicate: {c['duplicate']}  skipped (not PDF): {c['skipped']}  figures: {s.n_figures}")
    for name, err, kind in s.failures:
        typer.echo(f"  FAILED {name}: {err} [{kind}]")


def _program() -> str:
    """How to call this CLI again: `figsearch` when that is what the shell finds, else the path
    it was started by (`.venv/bin/figsearch` after `make`, the venv not activated)."""
    import os
    import shutil

    argv0 = Path(sys.argv[0])
    if argv0.name != "figsearch":
        return "figsearch"
    found = shutil.which("figsearch")
    if found and Path(found).resolve() == argv0.resolve():
        return "figsearch"
    rel = os.path.relpath(argv0.absolute())
    return str(argv0.absolute()) if rel.startswith("..") else rel


@cli.command("admin-token")
def admin_token(data_dir: Optional[Path] = DataDir) -> None:
    """Print the admin token of this data dir (FIGSEARCH_ADMIN_TOKEN when set; otherwise the one
    embedded mode generated). A data dir without a collection gets no token: the command says
    which data dir it read and how to name another."""
    from app.settings import AdminTokenError, admin_token_path, has_collection, resolve_admin_token

    settings = settings_or_exit(data_dir)
    create = has_collection(settings)  # a collection's server will read the token stored here
    if not create and not settings.admin_token and not settings.distributed and not admin_token_path(settings).exists():
        typer.echo(f"error: {settings.data_dir} holds no figsearch collection and no server has run there, "
                   "so it has no admin token. Name the server's data dir with --data-dir DIR or "
                   f"FIGSEARCH_DATA_DIR (`make demo` uses data/demo: `{_program()} admin-token --data-dir data/demo`).",
                   err=True)
        raise typer.Exit(1)
    try:
        token, generated = resolve_admin_token(settings, create=create)
    except AdminTokenError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    origin = "FIGSEARCH_ADMIN_TOKEN" if settings.admin_token else str(admin_token_path(settings))
    typer.echo(f"admin token of data dir {settings.data_dir} ({'generated now in ' if generated else 'from '}{origin})",
               err=True)
    typer.echo(token)


def _jsonl(rows) -> None:
    out = sys.stdout
    for r in rows:
        out.write(json.dumps(r, ensure_ascii=False) + "\n")


@cli.command()
def papers(data_dir: Optional[Path] = DataDir,
           format: str = typer.Option("jsonl", "--format", help="jsonl or table.")) -> None:
    """List the papers of the collection."""
    from app.db.schema import Citation, Paper
    from app.db.session import session_scope
    from app.public_text import public_text

    settings = settings_or_exit(data_dir)
    with session_scope(settings.db_url) as s:
        cites: dict[int, list[int]] = {}
        cited_by: dict[int, list[int]] = {}
        for a, b in s.execute(select(Citation.citing_paper_id, Citation.cited_paper_id).order_by(Citation.id)):
            cites.setdefault(a, []).append(b)
            cited_by.setdefault(b, []).append(a)
        rows = []
        for p in s.scalars(select(Paper).options(selectinload(Paper.figures)).order_by(Paper.id)):
            rows.append({"paper_id": p.id, "sha256": p.sha256, "source": p.source, "title": p.title,
                         "authors": p.authors, "year": p.year, "abstract": p.abstract, "n_pages": p.n_pages,
                         "has_text_layer": p.has_text_layer, "status": p.status,
                         "error": public_text(settings, p.error or ""),
                         "duplicate_of": p.duplicate_of_id,
                         "n_figures": sum(1 for f in p.figures if f.kind == "figure"),
                         "n_tables": sum(1 for f in p.figures if f.kind == "table"),
                         "n_references": len(p.references or []),
                         "cites": sorted(cites.get(p.id, [])), "cited_by": sorted(cited_by.get(p.id, []))})
    if format == "jsonl":
        _jsonl(rows)
    elif format == "table":
        for r in rows:
            typer.echo(f"{r['paper_id']:>5} {r['status']:<9} {r['n_figures']:>3} fig  {r['title'][:80]}")
    else:
        typer.echo("error: --format must be jsonl or table", err=True)
        raise typer.Exit(2)


@cli.command()
def figures(data_dir: Optional[Path] = DataDir,
            format: str = typer.Option("jsonl", "--format", help="jsonl only for now."),
            kind: Optional[str] = typer.Option(None, "--kind", help="figure or table (default both)."),
            absolute: bool = typer.Option(False, "--absolute-paths", help="Image paths absolute, not relative to the data dir.")) -> None:
    """List the figures (and tables) of the collection with captions and mention sentences."""
    from app.db.schema import Figure
    from app.db.session import session_scope

    if format != "jsonl":
        typer.echo("error: --format must be jsonl", err=True)
        raise typer.Exit(2)
    settings = settings_or_exit(data_dir)
    with session_scope(settings.db_url) as s:
        q = select(Figure).options(selectinload(Figure.mentions)).order_by(Figure.paper_id, Figure.kind, Figure.number)
        if kind:
            q = q.where(Figure.kind == kind)
        rows = []
        for f in s.scalars(q):
            img = str(settings.data_dir / f.image_path) if absolute and f.image_path else f.image_path
            thumb = str(settings.data_dir / f.thumbnail_path) if absolute and f.thumbnail_path else f.thumbnail_path
            rows.append({"figure_id": f.id, "paper_id": f.paper_id, "kind": f.kind, "label": f.label,
                         "number": f.number, "caption": f.caption, "page": f.page, "bbox": f.bbox,
                         "region_bbox": f.region_bbox, "cells": f.region_text if f.kind == "table" else "",
                         "image_path": img, "thumbnail_path": thumb, "width": f.width, "height": f.height,
                         "mentions": [m.sentence for m in f.mentions],
                         "mention_contexts": [" ".join(x for x in (m.before, m.sentence, m.after) if x) for m in f.mentions],
                         "central_score": f.central_score, "central_rank": f.central_rank,
                         "figure_type": f.figure_type, "figure_types": f.figure_types or [],
                         "crop_quality": f.crop_quality, "panels": f.panels or [], "text_source": f.text_source})
    _jsonl(rows)


def _table(header: list[str], rows: list[list[str]], right: set[int] = frozenset()) -> None:
    """Aligned text columns; the last column is left unpadded (free text such as errors)."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(r: list[str]) -> str:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r[:-1], widths))]
        return "  ".join(cells + [r[-1]]).rstrip()

    typer.echo(line(header))
    for r in rows:
        typer.echo(line(r))


def _flat_numbers(d, prefix: str = "") -> list[str]:
    """Numeric leaves of nested metrics as `path=value` (the text view of `figsearch models`)."""
    out = []
    for k, v in (d or {}).items():
        if isinstance(v, dict):
            out += _flat_numbers(v, f"{prefix}{k}.")
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(f"{prefix}{k}={v:g}")
    return out


def _training_summary(t: dict | None) -> str:
    if not t:
        return "-"
    parts = [f"{t['n_papers']} papers (SHA-256 in meta.json)"] if t.get("n_papers") is not None else []
    if t.get("description"):
        parts.append(str(t["description"]))
    return "; ".join(parts) or "-"


@cli.command()
def models(data_dir: Optional[Path] = DataDir,
           json_out: bool = typer.Option(False, "--json", help="JSON lines: one object per artifact with its "
                                                               "meta.json fields (training papers in full).")) -> None:
    """Trained artifacts in use: for each, the version and where it comes from (the data dir's
    model store, the defaults shipped with the package, or the index version for the ranking),
    when and by what it was made, its training data and metrics."""
    from app.model_store import list_artifacts

    settings = settings_or_exit(data_dir)
    rows = list_artifacts(settings.data_dir)
    if json_out:
        _jsonl(rows)
        return
    for r in rows:
        if r["path"] is None:
            typer.echo(f"{r['name']}: none in use{' (' + r['problem'] + ')' if r['problem'] else ''}")
            typer.echo(f"  {r['what']}")
            continue
        where = {"data dir": "the data dir", "shipped": "the package (shipped default)",
                 "index": "the index version", "path": "a given folder"}.get(r["source"], r["source"])
        typer.echo(f"{r['name']}: {r['version'] or '(unversioned)'} from {where}"
                   + (f", created {r['created_at']}" if r["created_at"] else "")
                   + (f" by {r['code_version']}" if r["code_version"] else ""))
        typer.echo(f"  {r['what']}")
        typer.echo(f"  trained on: {_training_summary(r['training_data'])}")
        metrics = _flat_numbers(r["metrics"])
        typer.echo(f"  metrics: {', '.join(metrics[:8]) + (' ...' if len(metrics) > 8 else '') if metrics else '-'}")
        if r["command"]:
            typer.echo(f"  command: {r['command']}")
        typer.echo(f"  path: {r['path']}")
        if r["problem"]:
            typer.echo(f"  warning: {r['problem']}")


@cli.command()
def jobs(job_id: Optional[str] = typer.Argument(None, help="One job: show its per-file results."),
         data_dir: Optional[Path] = DataDir,
         json_out: bool = typer.Option(False, "--json", help="JSON lines (one object per job, with `files` "
                                                              "when JOB_ID is given) instead of tables.")) -> None:
    """Show ingest jobs: all of them, or one with its per-file results (file, status, figures,
    tables, error). File names are relative (uploads by their uploaded name, the data dir, or
    the folder holding the job's files), as in the admin API."""
    from app.api.jobs import file_rows
    from app.public_text import public_text
    from app.db.schema import Job, JobFileStatus
    from app.db.session import session_scope

    settings = settings_or_exit(data_dir)
    with session_scope(settings.db_url) as s:
        q = select(Job).options(selectinload(Job.files)).order_by(Job.created_at)
        if job_id:
            q = q.where(Job.id == job_id)
        found = s.scalars(q).all()
        if job_id and not found:
            typer.echo(f"error: no job {job_id}", err=True)
            raise typer.Exit(1)
        rows = []
        for j in found:
            row = {"job_id": j.id, "kind": j.kind, "status": j.status, "done": j.done, "total": j.total,
                   "created_at": j.created_at.isoformat() if j.created_at else None,
                   "finished_at": j.finished_at.isoformat() if j.finished_at else None,
                   "index_state": j.index_state, "index_version": j.index_version,
                   "index_error": public_text(settings, j.index_error or "")}
            if job_id:
                row["error"] = public_text(settings, j.error or "")
                row["files"] = file_rows(settings, s, j)
            rows.append(row)
    if json_out:
        for row in rows:
            typer.echo(json.dumps(row, ensure_ascii=False))
        return
    if not job_id:
        if not rows:
            typer.echo("no jobs")
            return
        _table(["JOB", "KIND", "STATUS", "DONE", "CREATED", "FINISHED"],
               [[r["job_id"], r["kind"], r["status"], f"{r['done']}/{r['total']}",
                 (r["created_at"] or "-")[:19].replace("T", " "), (r["finished_at"] or "-")[:19].replace("T", " ")]
                for r in rows])
        return
    r = rows[0]
    typer.echo(f"job {r['job_id']} ({r['kind']}): {r['status']}, {r['done']}/{r['total']} files"
               + (f"; index {r['index_state']}" if r["index_state"] else "")
               + (f" ({r['index_version']})" if r["index_version"] else ""))
    if r["index_error"]:
        typer.echo(f"index error: {r['index_error']}")
    if r["error"]:
        typer.echo(f"error: {r['error']}")
    files = r["files"]
    if not files:
        return
    _table(["FILE", "STATUS", "FIGURES", "TABLES", "KIND", "ERROR"],
           [[f["name"], f["status"], "-" if f["status"] in JobFileStatus.UNFINISHED else str(f["n_figures"]),
             "-" if f["status"] in JobFileStatus.UNFINISHED else str(f["n_tables"]), f["error_kind"] or "",
             " ".join((f["error"] or "").split())]
            for f in files], right={2, 3})
    typer.echo(f"total: {sum(f['n_figures'] for f in files)} figures, {sum(f['n_tables'] for f in files)} tables")
    own = sum(f["retry_may_help"] is False for f in files)
    if own:
        typer.echo(f"{own} file(s) failed for their own bytes and would fail the same way again: "
                   f"`ingest --retry {r['job_id']}` reads them only with --include-file-errors")


def _with_paper_bar(refresh, settings):
    """Run a refresh over the stored papers (`refresh(settings, on_paper, total)`) with a progress bar."""
    bar = None

    def start(n: int) -> None:
        nonlocal bar
        bar = _progress(n, "papers")

    try:
        return refresh(settings, on_paper=lambda: bar.update(1), total=start)
    finally:
        if bar is not None:
            bar.close()


@cli.command("refresh-metadata")
def refresh_metadata_cmd(data_dir: Optional[Path] = DataDir) -> None:
    """Read the title, authors and year of every stored born-digital paper again with the current parser
    (ingesting a file again skips it as a duplicate); `figsearch relink` after titles changed."""
    from app.ingest.refresh import refresh_metadata

    c = _with_paper_bar(refresh_metadata, settings_or_exit(data_dir))
    typer.echo(f"papers: {c.papers}  titles changed: {c.titles_changed}  authors changed: {c.authors_changed}  years changed: {c.years_changed}  "
               f"without a stored PDF: {c.without_pdf}  unreadable: {c.unreadable}")


@cli.command("refresh-region-words")
def refresh_region_words_cmd(data_dir: Optional[Path] = DataDir) -> None:
    """Read the words inside every stored figure's region (axis titles, legends, node labels) again from
    the stored PDFs, for collections ingested before figures kept them; `figsearch index` then uses them."""
    from app.ingest.refresh import refresh_region_words

    c = _with_paper_bar(refresh_region_words, settings_or_exit(data_dir))
    typer.echo(f"papers: {c.papers}  regions: {c.regions}  with words: {c.with_words}  changed: {c.changed}  "
               f"without a stored PDF: {c.without_pdf}  unreadable: {c.unreadable}")


@cli.command()
def relink(data_dir: Optional[Path] = DataDir) -> None:
    """Recompute all citation links between papers of the collection."""
    from app.db.session import session_scope
    from app.ingest.store import relink_all

    settings = settings_or_exit(data_dir)
    with session_scope(settings.db_url) as s:
        n = relink_all(s)
    typer.echo(f"{n} citation links")


def _hits_json(hits, reasons_of=None) -> list[dict]:
    from app.search.explain import reasons

    reasons_of = reasons_of or (lambda h: reasons(h.signals))
    return [{"figure_id": h.figure_id, "paper_id": h.paper_id, "score": round(h.score, 6),
             "lexical_score": round(h.lexical_score, 6),
             "embedding_score": None if h.embedding_score is None else round(h.embedding_score, 6),
             "caption": h.caption, "matched_terms": list(h.matched_terms),
             "signals": {k: round(v, 6) for k, v in (h.signals or {}).items()},
             "reasons": reasons_of(h)} for h in hits]


def _search_reasons_of(settings: Settings, query: str, hits):
    """Reasons in words of text search results, as the API gives them: for a query naming figure
    types, what each result shows of the named type ("looks like a box plot", "may show a box plot")."""
    from app.db.schema import Figure
    from app.db.session import session_scope
    from app.search.explain import reasons, shown_named_type
    from app.vision.vocabulary import types_named_in

    named = types_named_in(query)
    if not named:
        return None
    with session_scope(settings.db_url) as s:
        shown = dict(s.execute(select(Figure.id, Figure.figure_types)
                               .where(Figure.id.in_([h.figure_id for h in hits]))).all())
    return lambda h: reasons(h.signals, shown_named_type(named, shown.get(h.figure_id)), named_type=True)


def _related_reasons_of(settings: Settings, engine, figure_id: int, hits):
    """Reasons in words of related figures of other papers, as the API gives them."""
    from sqlalchemy import select

    from app.db.schema import Figure, Paper
    from app.db.session import session_scope
    from app.search.explain import idf_of, related_reasons

    with session_scope(settings.db_url) as s:
        rows = {fid: (t, title or "", words if kind == "figure" else "") for fid, t, title, kind, words in s.execute(
            select(Figure.id, Figure.figure_type, Paper.title, Figure.kind, Figure.region_text)
            .join(Paper, Paper.id == Figure.paper_id)
            .where(Figure.id.in_([h.figure_id for h in hits] + [figure_id])))}
    caption, idf = engine.captions[engine.row_of(figure_id)], idf_of(engine.lexical(), engine.paper_ids)
    words_idf = idf_of(engine.figure_words.view) if engine.figure_words is not None else None
    _, title, words = rows.get(figure_id, (None, "", ""))
    return lambda h: related_reasons(h.signals, rows.get(h.figure_id, (None, ""))[0], caption, h.caption, title,
                                     rows.get(h.figure_id, (None, ""))[1], idf, words,
                                     rows.get(h.figure_id, (None, "", ""))[2], words_idf)


def _searcher(settings: Settings, with_encoder: bool):
    from app.pipeline.indexing import index_root
    from app.pipeline.searching import open_searcher

    root = index_root(settings)
    try:
        if not root.is_dir():  # papers ingested, nothing indexed yet
            raise FileNotFoundError(root)
        engine = open_searcher(root, gpu=settings.faiss_gpu)
    except FileNotFoundError:
        typer.echo(f"error: no search index in {root}; run `figsearch index --data-dir {settings.data_dir}`", err=True)
        raise typer.Exit(2)
    if with_encoder and settings.dense:  # imported once there is an index to search: loading PyTorch takes seconds
        from app.learn.embed import text_query_encoder  # MiniLM, or the trained model's text branch

        engine.encoder = text_query_encoder(settings.data_dir)
    return engine


def _print_hits(hits, json_out: bool, reasons_of=None) -> None:
    if json_out:
        typer.echo(json.dumps(_hits_json(hits, reasons_of), ensure_ascii=False))
        return
    for h in hits:
        emb = "-" if h.embedding_score is None else f"{h.embedding_score:.3f}"
        typer.echo(f"{h.figure_id:>7} paper {h.paper_id:>5}  score {h.score:.3f} (lex {h.lexical_score:.2f}, emb {emb})  "
                   f"{h.caption[:90]}")


@cli.command()
def index(data_dir: Optional[Path] = DataDir,
          lexical_only: bool = typer.Option(False, "--lexical-only", help="Skip the MiniLM embeddings."),
          retype: bool = typer.Option(False, "--retype", help="Classify every figure again (after new figure-type "
                                                              "weights), not only the untyped ones."),
          full: bool = typer.Option(False, "--full", help="Rebuild every part instead of adding a segment of the "
                                                          "new and changed figures to the current version."),
          merge: bool = typer.Option(False, "--merge", help="Merge the index's segments into one (deleted rows "
                                                            "dropped).")) -> None:
    """Build or refresh the lexical (BM25) and vector (FAISS) indexes; publishes a new version.
    New and changed figures are added to the current version as a segment (removed ones are
    deleted rows until a merge); --full rebuilds, --merge merges the segments. Figures without a
    figure type are classified first (all figures with --retype)."""
    from app.pipeline.classify import classify_figures
    from app.pipeline.indexing import build_index

    settings = settings_or_exit(data_dir)
    n_typed = classify_figures(settings, progress=True, redo=retype)
    if n_typed:
        typer.echo(f"figure types: {n_typed} figures classified")
    if full and merge:
        raise typer.BadParameter("--full and --merge exclude each other")
    mode = "full" if full else "merge" if merge else "auto"
    r = build_index(settings, dense=settings.dense and not lexical_only, progress=True, mode=mode)
    typer.echo(f"index {r.version}: {r.n_figures} figures, {r.n_encoded} newly embedded, {r.seconds:.1f} s "
               f"({r.how}, {r.n_segments} segment{'s' if r.n_segments != 1 else ''})")


@cli.command()
def similar(figure_id: int = typer.Argument(..., help="Query figure id."),
            k: int = typer.Option(10, "--k", min=1, max=1000), data_dir: Optional[Path] = DataDir,
            json_out: bool = typer.Option(False, "--json"),
            w: Optional[float] = typer.Option(None, "--w", min=0.0, max=1.0, help="Lexical weight (default: the ranking config's weights)."),
            method: Optional[str] = typer.Option(None, "--method", help="First stage: bm25 or tfidf (default: the ranking config's)."),
            union_dense: Optional[int] = typer.Option(None, "--union-dense", help="Also consider this many nearest figure-text embeddings (default: the ranking config's)."),
            scope: str = typer.Option("other_papers", "--scope",
                                      help="other_papers (related figures of other papers), same_paper, all, or "
                                           "linked_papers (figures of the papers citing or cited by its paper).")) -> None:
    """Figures most related to FIGURE_ID (itself excluded) within SCOPE, with the signals behind
    each score (figure text, picture, type, paper topic)."""
    if scope not in ("other_papers", "same_paper", "all", "linked_papers"):
        typer.echo("error: --scope must be other_papers, same_paper, all or linked_papers", err=True)
        raise typer.Exit(2)
    settings = settings_or_exit(data_dir)
    engine = _searcher(settings, with_encoder=False)
    try:
        within = None
        if scope == "linked_papers":
            from app.db.session import session_scope
            from app.search.collection import linked_papers

            with session_scope(settings.db_url) as s:
                within = linked_papers(s, int(engine.paper_ids[engine.row_of(figure_id)]))
        hits = engine.similar(figure_id, k=k, w=w, method=method, union_dense=union_dense,
                              scope="other_papers" if within is not None else scope, within_papers=within)
    except KeyError:
        typer.echo(f"error: figure {figure_id} is not in the index", err=True)
        raise typer.Exit(1)
    reasons_of = _related_reasons_of(settings, engine, figure_id, hits) if json_out and scope != "same_paper" \
        and scope != "all" else None
    _print_hits(hits, json_out, reasons_of)


@cli.command()
def search(query: str = typer.Argument(..., help="Keywords."), k: int = typer.Option(10, "--k", min=1, max=1000),
           data_dir: Optional[Path] = DataDir, json_out: bool = typer.Option(False, "--json"),
           rerank: bool = typer.Option(True, "--rerank/--no-rerank", help="Dense re-ranking of the top 100."),
           method: str = typer.Option("bm25", "--method"),
           kind: str = typer.Option("figure", "--kind", help="figure, table or both."),
           per_paper: Optional[int] = typer.Option(None, "--per-paper", min=0, help=(
               "At most this many figures of a paper in each block of results (0: no limit; "
               "default: the index's ranking config)."))) -> None:
    """Keyword search over figure texts (caption + mention sentences + the words printed inside the figure) or tables (+ their cells)."""
    if kind not in ("figure", "table", "both"):
        typer.echo("error: --kind must be figure, table or both", err=True)
        raise typer.Exit(2)
    from app.db.session import session_scope
    from app.search.collection import paper_titles

    settings = settings_or_exit(data_dir)
    engine = _searcher(settings, with_encoder=rerank)
    with session_scope(settings.db_url) as s:
        hits = engine.search(query, k, rerank=rerank, kind=kind, method=method, per_paper=per_paper,
                             titles=paper_titles(s))
    if hits.query != query:
        typer.echo(f"nothing matches \u201c{query}\u201d; showing results for \u201c{hits.query}\u201d", err=True)
    _print_hits(hits, json_out, _search_reasons_of(settings, hits.query, hits) if json_out else None)


@cli.command("eval")
def eval_cmd(data_dir: Optional[Path] = DataDir,
             out: Path = typer.Option(Path("artifacts/eval"), "--out"),
             target_papers: Optional[Path] = typer.Option(None, "--target-papers", exists=True, dir_okay=False,
                                                           help="sha256 per line: test targets only from these papers."),
             seed: int = typer.Option(0, "--seed"), min_same: int = typer.Option(5, "--min-same"),
             min_citing: int = typer.Option(5, "--min-citing"),
             first_stage: str = typer.Option("tfidf", "--first-stage", help="tfidf (the published protocol's) or bm25."),
             learned: bool = typer.Option(False, "--learned/--no-learned",
                                          help="Add the learned default model's rows (cross-fitted training, minutes)."),
             ablation: bool = typer.Option(False, "--ablation", help="Add a row per learned-model variant (implies --learned)."),
             variants: Optional[str] = typer.Option(None, "--variants", help="Comma-separated variants for --ablation."),
             folds: int = typer.Option(3, "--folds", min=2, help="Cross-fitting folds of the target papers."),
             judgments: Optional[list[Path]] = typer.Option(None, "--judgments", exists=True, dir_okay=False,
                                                            help="Graded pairs (JSON lines; repeat for several files): also report "
                                                                 "the judged metrics of the served ranking and the comparison rankings."),
             judge: Optional[str] = typer.Option(None, "--judge", help="With --judgments: one judge's grades only (default: "
                                                                      "the mean grade of every judge of a pair)."),
             judged_only: bool = typer.Option(False, "--judged-only", help="With --judgments: skip the citation protocols.")) -> None:
    """Related-figure evaluation (same-paper and citing-paper figures are relevant, plus a cross-paper section): p@3/p@5 (Same, Citing), MAP, t-tests, pair accuracy; report + plots. With --judgments: closely related / related fill of the top five and nDCG@5 on graded pairs."""
    from app.eval.run import evaluate_data_dir

    settings = settings_or_exit(data_dir)
    if judgments:
        from app.eval.run import evaluate_judged

        try:
            md = evaluate_judged(settings, judgments, out, judge=judge)
        except FileNotFoundError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        typer.echo(md)
        typer.echo(f"wrote {out}/judged.json, judged.md")
        if judged_only:
            return
    try:
        evaluate_data_dir(settings, out, target_papers, seed=seed, min_same=min_same,
                                   min_citing=min_citing, first_stage=first_stage,
                                   learned=learned or ablation or bool(variants), ablation=ablation,
                                   variants=variants.split(",") if variants else None, folds=folds)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1)
    typer.echo((out / "report.md").read_text())
    typer.echo(f"wrote {out}/report.json, report.md, precision_at_k.png, w_sweep.png")


@cli.command("fit")
def fit_cmd(judgments: list[Path] = typer.Option(..., "--judgments", exists=True, dir_okay=False,
                                                 help="Graded pairs (JSON lines; repeat for several files) of related "
                                                      "figures in other papers."),
            judge: Optional[str] = typer.Option(None, "--judge", help="One judge's grades only (default: the mean grade "
                                                                     "of every judge of a pair)."),
            data_dir: Optional[Path] = DataDir, out: Path = typer.Option(Path("artifacts/fit"), "--out"),
            folds: int = typer.Option(4, "--folds", min=2, help="Cross-validation folds, grouped by the query's paper."),
            seed: int = typer.Option(0, "--seed"),
            citation_floor: float = typer.Option(0.0, "--citation-floor", min=0.0, help=(
                "Only weights whose citation cross-paper p@5 on the citation protocol's validation targets is at least "
                "this times the default weights' (0: no floor).")),
            report_judge: Optional[str] = typer.Option(None, "--report-judge", help=(
                "Also grade the held-out rankings by this judge's lines of the same files (never fitted on).")),
            without: Optional[list[str]] = typer.Option(None, "--without", help=(
                "A signal not to fit (weight 0; repeat for several): the same folds without it.")),
            dry_run: bool = typer.Option(False, "--dry-run", help="Report only; publish no new ranking config.")) -> None:
    """Fit the ranking config's weights for related figures in other papers on graded pairs (folds grouped by paper, held-out numbers reported) and publish it with the index as a new version."""
    from app.eval.run import fit_judged

    settings = settings_or_exit(data_dir)
    try:
        md, version = fit_judged(settings, judgments, out, folds=folds, seed=seed, publish=not dry_run, judge=judge,
                                 citation_floor=citation_floor or None, without=tuple(without or ()),
                                 report_judge=report_judge)
    except FileNotFoundError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    typer.echo(md)
    typer.echo(f"wrote {out}/fit.json, fit.md" + (f"; index version {version} ranks with the fitted config" if version else ""))


@cli.command("eval-crops")
def eval_crops_cmd(gold: Path = typer.Option(Path("tests/data/crop_gold.jsonl"), "--gold", exists=True, dir_okay=False,
                                             help="JSON lines of hand-labelled boxes (see tests/data/crop_gold.md)."),
                   data_dir: Optional[Path] = DataDir,
                   out: Path = typer.Option(Path("artifacts/crops"), "--out"),
                   sheet: int = typer.Option(16, "--sheet", min=0, help="Worst items drawn on the contact sheet.")) -> None:
    """Extracted crops against hand-labelled boxes: recall, caption match, box IoU, spurious items
    (paper-resampled 95% intervals); report.json and a contact sheet of the worst crops."""
    from app.eval.crops import evaluate_crops, summary_text

    report = evaluate_crops(settings_or_exit(data_dir), gold, out, n_sheet=sheet)
    typer.echo(summary_text(report))
    typer.echo(f"wrote {out}/report.json" + (f" and {report['contact_sheet']}" if report["contact_sheet"] else ""))


@cli.command("eval-paper-fields")
def eval_paper_fields_cmd(pdf_roots: list[Path] = typer.Argument(..., exists=True, help="Folders (or PDFs) holding the gold papers."),
                          gold: Path = typer.Option(Path("tests/data/paper_fields_gold.jsonl"), "--gold", exists=True,
                                                    dir_okay=False, help="JSON lines of titles and author lists read off "
                                                    "the first pages (see tests/data/paper_fields_gold.md)."),
                          out: Optional[Path] = typer.Option(None, "--out", help="Write report.json (per-paper values) here."),
                          split: Optional[str] = typer.Option(None, "--split", help="Only the gold rows of this split "
                                                              "(e.g. dev or check)."),
                          counts: bool = typer.Option(False, "--counts", help="Also count, over every PDF under the "
                                                      "folders, author strings with a backslash, digit, footnote symbol "
                                                      "or e-mail and titles in capitals only.")) -> None:
    """Parsed paper titles and author lists against ones read off the first pages: title exact match and
    token F1, author name precision/recall/F1, share of papers whose author list is exactly right; and,
    for golds that hold years, the share of papers whose year is right."""
    from collections import Counter

    from app.eval.paper_fields import evaluate_paper_fields, field_counts, summary_text

    report = evaluate_paper_fields(gold, pdf_roots, split)
    typer.echo(summary_text(report))
    if counts:
        c: Counter[str] = Counter()
        examples: dict[str, list[str]] = {}
        n = 0
        for pdf, title, authors, defects in field_counts(pdf_roots):
            n += 1
            c.update(defects)
            for d in defects:
                examples.setdefault(d, []).append(title if d.startswith("title") else authors)
        report["counts"] = {"pdfs": n, **dict(sorted(c.items()))}
        report["count_examples"] = examples
        typer.echo(f"over {n} PDFs: " + ", ".join(f"{k}: {c[k]}" for k in
                   ("authors_backslash", "authors_digit", "authors_symbol", "authors_email", "title_all_caps")))
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))
        typer.echo(f"wrote {out}/report.json")


@cli.command()
def bench(figures: int = typer.Option(100_000, "--figures", min=100), queries: int = typer.Option(200, "--queries"),
          seed: int = typer.Option(0, "--seed"), json_out: bool = typer.Option(False, "--json"),
          work_dir: Path | None = typer.Option(None, "--work-dir", help="Where the on-disk indexes go (kept); "
                                               "default: a temporary directory, removed at the end."),
          segment_docs: int = typer.Option(1_000_000, "--segment-docs", min=1000,
                                           help="Figures per lexical segment."),
          add_figures: int = typer.Option(10_000, "--add-figures", min=0,
                                          help="Figures added at the end to time an add without a rebuild."),
          only: str | None = typer.Option(None, "--only", help="'lexical': build only WORK_DIR/lexical (the same "
                                          "segments as the whole benchmark), no queries.")) -> None:
    """Synthetic-collection benchmark: build time, peak RSS, latency of related figures / text
    search / search by picture, first-stage recall against exact search, cost of adding figures."""
    from app.eval.bench import build_lexical_only, run_bench

    if only not in (None, "lexical"):
        raise typer.BadParameter("--only takes 'lexical'")
    if only and work_dir is None:
        raise typer.BadParameter("--only lexical needs --work-dir")
    if only:
        result = build_lexical_only(figures, work_dir, seed=seed, segment_docs=segment_docs, add_figures=add_figures)
    else:
        result = run_bench(figures, queries=queries, seed=seed, work_dir=work_dir, segment_docs=segment_docs,
                           add_figures=add_figures)
    if json_out:
        typer.echo(json.dumps(result))
    else:
        for key, val in result.items():
            typer.echo(f"{key}: {val}")


@cli.command("make-demo-collection")
def make_demo_collection(out: Path = typer.Argument(..., help="Folder for the generated PDFs."),
                         n: int = typer.Option(12, "--n", help="Number of papers."),
                         seed: int = typer.Option(0, "--seed")) -> None:
    """Generate realistic sample papers (plots, captions, citations) for the demo and tests."""
    from app.demo.generate import generate_collection

    paths = generate_collection(out, n_papers=n, seed=seed)
    typer.echo(f"{len(paths)} papers written to {out}")


@cli.command()
def demo(data_dir: Optional[Path] = DataDir,
         host: str = typer.Option("127.0.0.1", "--host"), port: int = typer.Option(8000, "--port"),
         generated: int = typer.Option(0, "--generated", min=0,
                                       help="Also generate and ingest this many synthetic papers."),
         no_serve: bool = typer.Option(False, "--no-serve", help="Prepare the collection, do not serve.")) -> None:
    """Ingest the sample collection (first run only: real NAACL 2024 papers shipped with figsearch,
    one of them as a scan-like copy), then serve the UI."""
    import shutil

    from app.demo.sample import prepare_sample
    from app.pipeline import ingest_jobs

    settings = settings_or_exit(data_dir or Path("./data/demo"))
    settings.ensure_dirs()
    marker = settings.data_dir / ".demo-ready"
    if not marker.exists():
        t0 = time.monotonic()
        src = settings.data_dir / "demo-pdfs"
        files = prepare_sample(src)
        if generated:
            from app.demo.generate import generate_collection

            files += generate_collection(src / "generated", n_papers=generated, seed=0)
        if shutil.which("tesseract") is None:
            typer.echo("warning: tesseract is not installed (`make ocr`), so the scanned sample paper "
                       "will not be read", err=True)
        typer.echo(f"ingesting {len(files)} sample papers from {src} (the first start only) ...")
        job_id = ingest_jobs.prepare_job(files, settings)
        ingest_jobs.run_job_embedded(settings, job_id, workers=settings.ingest_workers)
        c = ingest_jobs.summarise(settings, job_id)
        typer.echo(f"sample collection: {c.counts['ok']} papers, {c.n_figures} figures "
                   f"in {time.monotonic() - t0:.0f} s")
        marker.write_text(job_id)
    if no_serve:
        return
    from app.settings import admin_token_command

    typer.echo(f"admin page: http://{host}:{port}/#/admin; its token: `{admin_token_command(settings, _program())}`")
    serve(data_dir=settings.data_dir, host=host, port=port)


@cli.command()
def serve(data_dir: Optional[Path] = DataDir,
          host: str = typer.Option("127.0.0.1", "--host"), port: int = typer.Option(8000, "--port")) -> None:
    """Serve the web UI and REST API."""
    import os

    import uvicorn

    settings = settings_or_exit(data_dir)
    from app.api.serving import uvicorn_options
    from app.settings import AdminTokenError, generated_token_notice, resolve_admin_token

    try:
        token, generated = resolve_admin_token(settings)  # refuse a placeholder/short/missing token in one line
    except AdminTokenError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    if generated:
        typer.echo(generated_token_notice(settings, token, _program()), err=True)
    os.environ["FIGSEARCH_DATA_DIR"] = str(settings.data_dir)
    typer.echo(f"serving http://{host}:{port}/ (data dir {settings.data_dir})")
    uvicorn.run("app.api.main:create_app", factory=True, host=host, port=port, log_level="info",
                **uvicorn_options(settings))


def _register_subcommands() -> None:
    """Commands that live with their subsystems (central figures, learned models)."""
    from app.cli.central import register as register_central

    register_central(cli)
    from app.cli.scanned import register as register_scanned

    register_scanned(cli)
    from app.cli.vision import register as register_vision

    register_vision(cli)
    try:
        from app.cli.learn import register as register_learn
    except ImportError:  # the learned-model package is optional at import time
        return
    register_learn(cli)


_register_subcommands()


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
