"""SQLAlchemy 2.0 tables: papers, figures, mentions, citations, jobs.

Named `schema` (not `models`) so that `models/` means only the neural models.
"""
from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class UTCDateTime(TypeDecorator):
    """A timestamp that reads back timezone-aware (UTC) on every backend: SQLite stores no zone,
    so naive values read from it are UTC by construction (they are written as UTC)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is not None and value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc)
        return value

    def process_result_value(self, value, dialect):
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return value


class Base(DeclarativeBase):
    pass


class PaperStatus:
    OK = "ok"  # parsed, figures extracted
    NO_TEXT = "no_text"  # no text layer (scanned): kept, but nothing to extract
    FAILED = "failed"  # unreadable / refused; `error` says why
    DUPLICATE = "duplicate"  # same paper as `duplicate_of_id` under another file


class Paper(Base):
    __tablename__ = "papers"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    source: Mapped[str] = mapped_column(Text, default="")
    title: Mapped[str] = mapped_column(Text, default="")
    norm_title: Mapped[str] = mapped_column(Text, default="", index=True)
    authors: Mapped[str] = mapped_column(Text, default="")
    year: Mapped[int | None] = mapped_column(Integer, nullable=True)
    abstract: Mapped[str] = mapped_column(Text, default="")
    n_pages: Mapped[int] = mapped_column(Integer, default=0)
    has_text_layer: Mapped[bool] = mapped_column(Boolean, default=True)
    # born_digital | scanned (page images only) | ocr_layer (an invisible OCR text layer)
    source_kind: Mapped[str] = mapped_column(String(16), default="born_digital",
                                             server_default="born_digital")
    # figures found but not stored (render failed, over the pixel budget...): [{label, reason}]
    dropped_figures: Mapped[list | None] = mapped_column(JSON, nullable=True, default=list)
    status: Mapped[str] = mapped_column(String(16), default=PaperStatus.OK, index=True)
    error: Mapped[str] = mapped_column(Text, default="")
    references: Mapped[list] = mapped_column(JSON, default=list)
    # the body text's most frequent analysed terms {term: count} (references and in-text citation
    # markers left out): a compact view of what the paper is about, for related figures
    body_terms: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    duplicate_of_id: Mapped[int | None] = mapped_column(
        ForeignKey("papers.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)

    figures: Mapped[list["Figure"]] = relationship(
        back_populates="paper", cascade="all, delete-orphan", order_by="Figure.id"
    )


def in_collection():
    """The condition of the papers researchers see (the list of papers, search, related figures):
    the ones whose file was read. Failed files, files without a text layer and second copies of a
    paper stay in the database for the admin's job view and `figsearch papers`."""
    return Paper.status == PaperStatus.OK


class Figure(Base):
    __tablename__ = "figures"
    __table_args__ = (UniqueConstraint("paper_id", "kind", "number", name="uq_figure_number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16), default="figure")
    label: Mapped[str] = mapped_column(String(64), default="")
    number: Mapped[int] = mapped_column(Integer)
    caption: Mapped[str] = mapped_column(Text, default="")
    page: Mapped[int] = mapped_column(Integer, default=1)
    bbox: Mapped[list] = mapped_column(JSON, default=list)
    image_path: Mapped[str] = mapped_column(Text, default="")
    thumbnail_path: Mapped[str] = mapped_column(Text, default="")
    width: Mapped[int] = mapped_column(Integer, default=0)
    height: Mapped[int] = mapped_column(Integer, default=0)
    central_score: Mapped[float | None] = mapped_column(Float, nullable=True)
    central_rank: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # dominant type from a fixed vocabulary (see app/figtypes) and [{type, score}], dominant first
    figure_type: Mapped[str | None] = mapped_column(String(32), nullable=True, index=True)
    figure_types: Mapped[list | None] = mapped_column(JSON, nullable=True)
    # the classifier's score of every type ({type: score}): a query naming a type also finds the
    # figures where that type scores high without being dominant
    type_scores: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    # ok | text_only | tiny | page_number ...: a crop that is not a real graphic is never central
    crop_quality: Mapped[str] = mapped_column(String(16), default="ok", server_default="ok")
    # compound figures: [{label, bbox, caption_part}]
    panels: Mapped[list | None] = mapped_column(JSON, nullable=True)
    # the graphic (or table grid) alone, without its caption; None when only the caption was found
    region_bbox: Mapped[list | None] = mapped_column(JSON, nullable=True)
    # the words inside a table's grid, indexed with its caption so tables are found by their cells
    region_text: Mapped[str] = mapped_column(Text, default="", server_default="")
    # where the caption text came from: text_layer | ocr
    text_source: Mapped[str] = mapped_column(String(16), default="text_layer",
                                             server_default="text_layer")

    paper: Mapped[Paper] = relationship(back_populates="figures")
    mentions: Mapped[list["Mention"]] = relationship(
        back_populates="figure", cascade="all, delete-orphan", order_by="Mention.position"
    )


class Mention(Base):
    __tablename__ = "mentions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    figure_id: Mapped[int] = mapped_column(ForeignKey("figures.id", ondelete="CASCADE"), index=True)
    sentence: Mapped[str] = mapped_column(Text)
    before: Mapped[str] = mapped_column(Text, default="")
    after: Mapped[str] = mapped_column(Text, default="")
    position: Mapped[int] = mapped_column(Integer, default=0)

    figure: Mapped[Figure] = relationship(back_populates="mentions")


class Citation(Base):
    __tablename__ = "citations"
    __table_args__ = (UniqueConstraint("citing_paper_id", "cited_paper_id", name="uq_citation"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    citing_paper_id: Mapped[int] = mapped_column(
        ForeignKey("papers.id", ondelete="CASCADE"), index=True
    )
    cited_paper_id: Mapped[int] = mapped_column(
        ForeignKey("papers.id", ondelete="CASCADE"), index=True
    )
    reference: Mapped[str] = mapped_column(Text, default="")
    score: Mapped[float] = mapped_column(Float, default=0.0)


class JobStatus:
    QUEUED = "queued"
    RUNNING = "running"
    # every file is read; its papers are being typed, scored and indexed: not searchable yet
    INDEXING = "indexing"
    DONE = "done"
    FAILED = "failed"
    INTERRUPTED = "interrupted"  # its process stopped; `figsearch ingest --resume JOB` finishes it
    FINISHED = (DONE, FAILED)


class IndexState:
    """What a job's collection steps (figure types, central scores, a new index version) came to."""
    BUILDING = "building"  # running now
    PUBLISHED = "published"  # a new index version holds the job's papers
    FAILED = "failed"  # the build failed: the previous version serves (`index_error` says why)
    UNCHANGED = "unchanged"  # the job added no paper: nothing to index
    OFF = "off"  # FIGSEARCH_AUTO_INDEX=false: `figsearch index` (or POST /admin/reindex) indexes them


class JobFileStatus:
    """A job file's state before its outcome (ok, no_text, duplicate, failed, skipped)."""
    PENDING = "pending"  # waiting for an extraction process
    WORKING = "working"  # being read; back to pending when the job is interrupted
    UNFINISHED = (PENDING, WORKING)


def new_job_id() -> str:
    return uuid.uuid4().hex


class Job(Base):
    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_job_id)
    kind: Mapped[str] = mapped_column(String(32), default="ingest")
    status: Mapped[str] = mapped_column(String(16), default=JobStatus.QUEUED)
    total: Mapped[int] = mapped_column(Integer, default=0)
    done: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    started_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # the collection steps after its last file (IndexState); None while files are being read
    index_state: Mapped[str | None] = mapped_column(String(16), nullable=True)
    index_version: Mapped[str | None] = mapped_column(String(64), nullable=True)
    index_error: Mapped[str] = mapped_column(Text, default="", server_default="")
    # 1, and one more for each retry: the papers of the files of the current run are the new ones
    run: Mapped[int] = mapped_column(Integer, default=1, server_default="1")

    files: Mapped[list["JobFile"]] = relationship(
        back_populates="job", cascade="all, delete-orphan", order_by="JobFile.id"
    )


class JobFile(Base):
    """Per-file outcome of an ingest job, so nothing is lost silently."""

    __tablename__ = "job_files"
    __table_args__ = (Index("ix_job_files_job", "job_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(Text)  # as the user gave it (file or zip member)
    path: Mapped[str] = mapped_column(Text, default="")  # where the worker reads it
    sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)  # of its bytes, when recorded
    status: Mapped[str] = mapped_column(String(16), default="pending")
    paper_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    n_figures: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str] = mapped_column(Text, default="")
    # why it failed, in app/ingest/failures.py's vocabulary (None unless failed, or failed before kinds)
    error_kind: Mapped[str | None] = mapped_column(String(32), nullable=True)
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # how many times a worker took this file (a file that kills workers is failed after N)
    deliveries: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    run: Mapped[int] = mapped_column(Integer, default=1, server_default="1")  # the job's run that last read it

    job: Mapped[Job] = relationship(back_populates="files")
