"""Response models of the REST API (one per shape, so the OpenAPI document at /docs is complete)."""
from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, Field


class Problem(BaseModel):
    """RFC 9457 problem details (served as application/problem+json)."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str = ""
    errors: list[dict] | None = Field(None, description="Validation errors (422 only).")


# ---------------------------------------------------------------- figures
class PaperRef(BaseModel):
    paper_id: int
    title: str
    year: int | None = None


class TypeScore(BaseModel):
    type: str
    score: float


class FigureSummary(BaseModel):
    figure_id: int
    paper_id: int
    kind: str = Field(description="figure or table")
    label: str = Field(description='As printed, e.g. "Figure 3".')
    number: int
    caption: str
    page: int
    width: int = 0
    height: int = 0
    image_url: str
    thumbnail_url: str
    central_score: float | None = None
    central_rank: int | None = Field(None, description="1 = the paper's central figure (when the model has run).")
    paper_title: str = ""
    paper_year: int | None = None
    text_source: str = Field("text_layer", description="Where the caption came from: text_layer, or ocr "
                                                       "(read from a scanned page).")
    figure_type: str | None = Field(None, description="Dominant figure type from the fixed vocabulary "
                                                      "(line_chart, bar_chart, heatmap, diagram, ...), "
                                                      "classified from the pixels.")
    figure_types: list[TypeScore] = Field(default_factory=list,
                                          description="Every type the figure shows, dominant first, with scores.")


class FigurePage(BaseModel):
    total: int
    offset: int
    limit: int
    items: list[FigureSummary]


class Mention(BaseModel):
    sentence: str
    before: str = ""
    after: str = ""


class Panel(BaseModel):
    label: str = Field(description='The panel\'s letter ("a", "b", ...).')
    bbox: list[float] = Field(description="The panel on the page, in PDF points.")
    caption_part: str = Field("", description="The part of the caption (or the sub-caption) about this panel.")
    image_url: str = Field(description="The panel cut from the figure's crop (PNG).")


class FigureDetail(FigureSummary):
    bbox: list[float] = Field(default_factory=list, description="Region on the page in PDF points.")
    region_bbox: list[float] | None = Field(None, description=(
        "The graphic (or table grid) alone, without its caption, in PDF points; None when only the "
        "caption was found or the paper was ingested before regions were recorded."))
    mentions: list[Mention] = Field(default_factory=list)
    paper: PaperRef
    in_index: bool = Field(description="Whether the figure is in the current search index.")
    paper_authors: str = ""
    pdf_url: str | None = Field(None, description="The paper's PDF opened at the figure's page (#page=N); "
                                                  "None when the PDF was not kept.")
    hires_url: str | None = Field(None, description="The crop rendered from the PDF at a higher resolution "
                                                    "(?scale=2..8); None when the PDF was not kept.")
    citation: str = Field("", description="Authors, title, year and the figure's label, one line.")
    bibtex: str = Field("", description="A BibTeX entry for the paper, the figure named in its note.")
    panels: list[Panel] = Field(default_factory=list, description=(
        "The labelled panels of a compound figure, in letter order; empty for a single-panel figure."))


# ---------------------------------------------------------------- search
class ScoredFigure(FigureSummary):
    rank: int = Field(description="1-based position in the full result list.")
    score: float = Field(description="Final score (lexical and embedding scores fused).")
    lexical_score: float = Field(description="BM25 score of the first stage.")
    embedding_score: float | None = Field(None, description="Cosine of the MiniLM embeddings (None = lexical only).")
    matched_terms: list[str] = Field(default_factory=list, description=(
        "Informative terms shared with the query (rarest first; filler words of scientific prose removed)."))
    reasons: list[str] = Field(default_factory=list, description=(
        "Why a related figure was ranked high, in words: same kind of figure, similar picture, related "
        "paper topic (figures of other papers: 'related paper: both on ...' and 'both captions mention ...'), "
        "similar description; for a search naming a figure type, that the result looks "
        "like the named type (e.g. 'looks like a heatmap')."))
    snippet: Snippet | None = Field(None, description="The sentence that matched a text query best.")
    caption_highlights: list[list[int]] = Field(default_factory=list, description=(
        "For a text query, the [start, end) character spans of the caption's words that share a stem "
        "with a query word ('curves' for 'curve'), as the snippet's highlights are found."))
    panel: Panel | None = Field(None, description=(
        "For a compound figure, the panel whose part of the caption matches a text query best; for a "
        "search by picture, the panel the uploaded picture is a copy of (its reason: 'same picture as "
        "panel (b) of this figure')."))
    more_from_paper: bool = Field(False, description=(
        "Text search: more figures of this paper match the query than the per-paper limit let into "
        "the results around this one; they were moved further down. The same search filtered to "
        "this paper (`paper_id`) shows them together."))


class Snippet(BaseModel):
    text: str
    source: Literal["caption", "body", "table"] = Field(description=(
        "caption, body text that mentions the figure, or table (the cells of a table)."))
    highlights: list[list[int]] = Field(default_factory=list, description="[start, end) character spans of matched words.")


class SearchResponse(BaseModel):
    query: str
    k: int
    offset: int
    items: list[ScoredFigure]
    has_more: bool = Field(description="More results exist after this page.")
    reranked: bool = Field(description="Whether dense re-ranking was applied.")
    index_version: str | None = None
    message: str | None = Field(None, description="Why the list is empty, when it is for a reason other than no match.")
    no_word_read: bool = Field(False, description="The query holds no word the search reads (words as common as "
                                                  "'the', single letters): nothing was searched, and no filter "
                                                  "would change that. `message` says what to search for.")
    per_paper: int = Field(0, description="At most this many figures of one paper came in each block of "
                                          "`per_paper_block` results (0: no limit); papers the query names by "
                                          "title are not limited.")
    per_paper_block: int = Field(10, description="The size of the blocks `per_paper` counts in.")


class TypeCount(BaseModel):
    type: str
    count: int


class Facets(BaseModel):
    """What the search filters can choose from, under the other filters given."""

    year_min: int | None = None
    year_max: int | None = None
    types: list[TypeCount] = Field(description="Figures per figure type (most first); empty until "
                                               "figures are classified.")
    total: int = Field(description="Figures and/or tables passing the filters (with a query: its matches, "
                                   "at most 1000).")


class SimilarResponse(BaseModel):
    mode: Literal["figure", "caption", "image"] = Field(
        description="figure: neighbours of a collection figure; caption: text search on the uploaded "
                    "figure's caption (image models are not available yet); image: by image content.")
    figure_id: int | None = None
    query: str | None = Field(None, description="The caption used as the query (mode caption).")
    k: int
    scope: Literal["other_papers", "same_paper", "all", "linked_papers"] | None = Field(
        None, description="Which figures were ranked (mode figure).")
    items: list[ScoredFigure]
    index_version: str | None = None
    message: str | None = None
    query_types: list[TypeScore] = Field(default_factory=list, description=(
        "mode image: the figure types the uploaded picture looks like, dominant first, with scores "
        "(what 'same kind of figure' in a result's reasons refers to)."))
    kind: Literal["figure", "table"] | None = Field(None, description=(
        "modes image and caption: whether figures or tables were searched (request parameter "
        "`kind`; auto: the kind of the item the picture copies, else tables only when nearly all "
        "its nearest pictures are tables; with a caption, tables when it is labelled as a table's)."))


# ---------------------------------------------------------------- papers
class FigureThumb(BaseModel):
    figure_id: int
    label: str = ""
    thumbnail_url: str


class PaperSummary(BaseModel):
    paper_id: int
    title: str
    authors: str = ""
    year: int | None = None
    status: str
    source: str = ""
    n_figures: int = 0
    n_tables: int = 0
    source_kind: str = Field("born_digital", description="born_digital, scanned (text read by OCR) or ocr_layer "
                                                         "(a scan with its scanner's own text layer).")
    central_figure: FigureThumb | None = Field(None, description="The paper's central figure (ranked first by "
                                                                 "the central-figure model; else its first figure).")


class PaperPage(BaseModel):
    total: int
    offset: int
    limit: int
    items: list[PaperSummary]


class PaperDetail(PaperSummary):
    abstract: str = ""
    n_pages: int = 0
    error: str = ""
    duplicate_of: int | None = None
    figures: list[FigureSummary] = Field(description="Ordered by central-figure rank, then number; tables last.")
    pdf_url: str | None = Field(None, description="The stored PDF; None when it was not kept.")
    cites: list[PaperRef] = Field(description="Papers of the collection this paper cites.")
    cited_by: list[PaperRef] = Field(description="Papers of the collection citing this paper.")


# ---------------------------------------------------------------- admin
class SkippedUpload(BaseModel):
    name: str
    error: str = Field(description="Why it was left out (its type is not accepted).")


class JobAccepted(BaseModel):
    job_id: str
    status: str
    total: int
    status_url: str
    skipped: list[SkippedUpload] = Field(default_factory=list, description=(
        "Uploaded files left out for their type (not a PDF or zip): the job lists them too, as skipped."))


class JobFileOut(BaseModel):
    file_id: int | None = Field(None, description="Names the file in POST /admin/jobs/{id}/retry.")
    name: str
    status: str = Field(description="pending (waiting), working (being read), ok, no_text, "
                                            "duplicate, failed or skipped (not a PDF)")
    paper_id: int | None = None
    n_figures: int = Field(0, description="Figures of the paper this file added (0 unless ok or no_text).")
    n_tables: int = Field(0, description="Tables of the paper this file added (0 unless ok or no_text).")
    error: str = ""
    duplicate_of: int | None = Field(None, description="A duplicate: the paper of the collection it duplicates.")
    retryable: bool = Field(False, description="A failed file whose bytes are still kept: POST /admin/jobs/{id}/retry "
                                               "reads it again.")
    error_kind: str | None = Field(None, description=(
        "Why a failed file failed (null unless failed). Its own bytes: not_pdf, encrypted, damaged, too_large, "
        "unsafe, crashes_worker (a retry fails the same way). The run that read it: timeout, worker_lost, "
        "out_of_memory, internal (a retry may succeed). missing: its bytes were gone. unknown: failed before "
        "kinds were recorded."))
    retry_may_help: bool | None = Field(None, description=(
        "A failed file: whether reading it again may succeed with nothing changed (false when its own bytes are "
        "at fault, or gone). The job's retry reads only these unless asked for `include_file_errors`."))


class JobOut(BaseModel):
    job_id: str
    kind: str
    status: str = Field(description="queued, running, indexing (every file read; its papers are being typed, "
                                    "scored and indexed), done (its papers are in a published index version, or "
                                    "it added none; `index_state` says which), failed or interrupted")
    done: int
    total: int
    error: str = ""
    counts: dict[str, int] = Field(default_factory=dict, description="Files per status.")
    created_at: dt.datetime | None = None
    started_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None
    files: list[JobFileOut] | None = None
    index_state: str | None = Field(None, description=(
        "The steps after the last file: building, published (a new index version holds the job's papers), "
        "failed (the previous version serves; `index_error` says why), unchanged (the job added no paper) or "
        "off (FIGSEARCH_AUTO_INDEX=false); null while files are read."))
    index_version: str | None = Field(None, description="The index version published for this job.")
    index_error: str = ""
    searchable: bool | None = Field(None, description=(
        "Whether every figure and table of the papers this job added is in the index this server serves now; "
        "null when it added none."))
    retryable: int = Field(0, description="Failed files POST /admin/jobs/{id}/retry reads again: kept, and failed "
                                          "for a cause a retry may fix.")
    retryable_file_errors: int = Field(0, description=(
        "Kept failed files whose own bytes are at fault: the job's retry reads them only with "
        "`include_file_errors=true` (after an upgrade or a raised limit), or named by `file_id`."))


class JobList(BaseModel):
    items: list[JobOut]
    next_before: str | None = Field(None, description=(
        "More, older jobs: ask again with before=this (null: none left)."))


class Accepted(BaseModel):
    status: str
    detail: str = ""


class Deleted(BaseModel):
    paper_id: int
    deleted_figures: int
    detail: str
    index_refresh: bool = Field(True, description="Whether a new index version is being built (not for a file "
                                                  "outside the collection: failed, no text layer, a duplicate).")


# ---------------------------------------------------------------- service
class Health(BaseModel):
    status: str


class IndexState(BaseModel):
    loaded: bool
    version: str | None = None
    n_figures: int = 0
    n_tables: int = Field(0, description="Tables in the index (searched by caption and cells).")
    has_vectors: bool = False
    reason: str | None = None


class Ready(BaseModel):
    status: Literal["ready", "degraded", "not ready"] = Field(description=(
        "degraded: an older intact index version serves because the newest failed its integrity check"))
    database: str
    index: IndexState
    encoder: str


class ModelInfo(BaseModel):
    """One trained artifact the server uses: which version, shipped or trained here, and how it scored."""

    name: str
    kind: str | None = None
    what: str = ""
    version: str | None = None
    source: str | None = Field(None, description="Where it was found: `shipped` (inside the package), `data dir` (trained here), `index` or `path`")
    created_at: str | None = None
    metrics: dict | None = Field(None, description="What its training command measured on held-out data")
    problem: str | None = Field(None, description="Why this artifact could not be used, when it could not")


class Info(BaseModel):
    """What this server can do (the frontend adapts to it)."""

    version: str
    image_queries: bool
    image_queries_message: str
    rerank: bool
    max_page_size: int
    max_upload_mb: float
    max_image_mb: float
    upload_types: list[str]
    image_types: list[str]
    allow_server_paths: bool
    distributed: bool
    admin_token_source: Literal["environment", "data_dir"] = Field("environment", description=(
        "Where the admin token comes from: the server's FIGSEARCH_ADMIN_TOKEN, or (embedded mode "
        "without it) the token generated into its data dir, which `figsearch admin-token --data-dir "
        "DIR` prints."))
    ranking: dict | None = Field(None, description=(
        "The ranking configuration of the loaded index version (first stage, candidate counts, fusion "
        "weights per scope, thresholds, the version it was fitted for and how); null without an index."))
    models: list[ModelInfo] = Field(default_factory=list, description=(
        "The trained models and their versions, as `figsearch models` lists them."))
