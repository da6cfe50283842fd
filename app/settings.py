"""One place for configuration: environment variables with the FIGSEARCH_ prefix.

The defaults are the embedded mode (SQLite in the data dir, tasks run in-process);
a broker URL and a PostgreSQL URL switch to distributed mode without code changes.
"""
from __future__ import annotations

import os
import secrets
import shlex
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PLACEHOLDER_TOKEN = "change-me"
# Well-known example values that must never guard a server.
PLACEHOLDER_TOKENS = frozenset({PLACEHOLDER_TOKEN, "changeme", "change_me", "secret", "admin", "token",
                                "password", "your-token", "your-secret"})
MIN_TOKEN_LENGTH = 24
MIN_TOKEN_DISTINCT = 16  # 28 identical characters are 28 characters, but guessable
ADMIN_TOKEN_FILE = "admin-token"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="FIGSEARCH_", env_file=None, extra="ignore")

    data_dir: Path = Field(Path("./data"), description="Where the database (embedded mode), crops, stored PDFs, indexes and models live; the CLI's --data-dir overrides it.")
    database_url: str = Field("", description="SQLAlchemy URL, e.g. postgresql+psycopg://postgres@127.0.0.1:5432/figsearch; "
                                           "empty = SQLite file in the data dir.")
    broker_url: str = Field("", description="Celery broker URL, e.g. redis://127.0.0.1:6379/0 (distributed mode: "
                                         "Celery workers do the work); empty = run tasks in-process.")
    result_backend: str = Field("", description="Celery result backend; empty = same as the broker.")
    broker_visibility_timeout_s: int = Field(
        0, ge=0, description="Redis: a task not acknowledged within this time is delivered again. 0 = derived "
                             "from the task limits: the longest a task may take (a file: FILE_TIMEOUT_S + "
                             "OCR_SECONDS_PER_PAGE x MAX_PAGES; collection work: COLLECTION_TIMEOUT_S) + 90 s, "
                             "3,690 s by default, so a slow task is never handed out twice. Workers that die outright are noticed sooner: their "
                             "heartbeat stops and a live worker re-sends their files within about 35 s.")

    # ingestion limits: a bad file must never stall or sink a batch
    max_pages: int = Field(300, ge=1, description="PDFs with more pages are refused.")
    max_file_mb: float = Field(200.0, gt=0, description="Larger files are refused.")
    file_timeout_s: float = Field(120.0, gt=0, description="Per-file time limit.")
    collection_timeout_s: float = Field(
        3600.0, gt=0, description="Time limit of collection-wide work in workers: the steps after a job's last "
                                  "file (citation links, figure types, central scores, index build), index "
                                  "refreshes and re-embedding; they grow with the collection, not with one file.")
    ocr_seconds_per_page: float = Field(
        8.0, ge=0, description="Added to the per-file time limit for every scanned page that needs OCR.")
    ocr_threads: int = Field(2, ge=1, description="Tesseract processes per file for scanned pages.")
    worker_memory_mb: int = Field(4096, ge=0, description="Address-space cap per extraction process (0 = none).")
    ingest_workers: int = Field(2, ge=1, description="Extraction processes in embedded mode.")
    figure_dpi: int = Field(150, ge=50, le=400, description="Resolution of the figure and table crops.")
    thumbnail_px: int = Field(256, ge=32, le=1024, description="Longest side of the thumbnails.")
    # zip safety
    zip_max_members: int = Field(5000, ge=1, description="Zips with more members are refused.")
    zip_max_total_mb: float = Field(2000.0, gt=0, description="Most a zip may unpack to, all members together.")
    zip_max_ratio: float = Field(200.0, gt=1, description="Refuse members compressed more than this.")

    # search
    vector_index: str = Field("auto", pattern="^(auto|flat|hnsw|ivf)$", description="FAISS index type.")
    faiss_gpu: str = Field("auto", pattern="^(auto|on|off)$", description="Move the FAISS index to a GPU.")
    dense: bool = Field(True, description="Use MiniLM embeddings for re-ranking (off = lexical only).")
    auto_index: bool = Field(True, description="Refresh the search index after each ingest job.")
    query_threads: int = Field(2, ge=1, le=64, description="Threads one query may use for its independent parts "
                                                           "(index segments; the first stage of related figures "
                                                           "beside its nearest-vector lookups); 1 = one thread.")
    index_max_segments: int = Field(8, ge=1, description="A build that grows the index by a segment merges all "
                                                         "segments into one when there would be more than this many.")

    admin_token: str = Field("", description="Bearer token of the admin endpoints, at least 24 characters of "
                                             "which at least 16 different, no whitespace; placeholders (change-me, ...) and shorter tokens are refused in every "
                                             "mode. Empty: embedded mode generates a random token on first start, "
                                             "stores it in DATA_DIR/admin-token (owner-only) and prints it once "
                                             "(`figsearch admin-token` shows it); distributed mode refuses to start.")

    # web service (app/api)
    search_rerank: bool = Field(True, description="Dense (MiniLM) re-ranking of free-text /search results.")
    query_cache_size: int = Field(2048, ge=0, description="LRU size of cached query embeddings (0 = off).")
    warm_encoder: bool = Field(True, description="Load the query encoder in the background at startup.")
    warm_index: bool = Field(True, description="Read the served index version's files into the page cache in the "
                                               "background after loading it (as much as free memory allows), so "
                                               "the first queries do not wait on the disk.")
    index_poll_s: float = Field(2.0, ge=0, description="How often the API checks for a new index version.")
    max_page_size: int = Field(100, ge=1, le=1000, description="Largest k/limit a list or search request may ask "
                                                           "for (the API schema states the same bound).")
    max_upload_mb: float = Field(200.0, gt=0, description="Largest admin upload (PDFs/zip) per request, counted "
                                                           "while the body streams in (chunked or not).")
    upload_quota_mb: float = Field(4096.0, gt=0, description="Disk space all pending uploads and unpacked zips "
                                                             "together may use (data_dir/uploads + incoming); past "
                                                             "it uploads get 507.")
    max_image_mb: float = Field(10.0, gt=0, description="Largest image for POST /search/by-image.")
    max_image_megapixels: float = Field(
        25.0, gt=0, description="Largest query image (width x height, read from its header before decoding); "
                               "larger ones get 413.")
    upload_types: list[str] = Field(["application/pdf", "application/zip"],
                                    description="Accepted content types of admin uploads.")
    image_types: list[str] = Field(["image/png", "image/jpeg"], description="Accepted query image types.")
    cors_origins: list[str] = Field([], description='CORS allowed origins (JSON list, e.g. ["https://x.org"]).')
    allow_server_paths: bool = Field(False, description="Admins may ingest a path on the server's disk.")
    keep_uploads: bool = Field(False, description="Keep uploaded files under data_dir/uploads after ingestion.")
    keep_failed_hours: float = Field(168.0, ge=0, description="How long the bytes of a file that failed are kept "
                                                              "after its job, for a retry (they count in the upload "
                                                              "quota; 0 = not kept).")
    header_timeout_s: float = Field(10.0, gt=0, description="`figsearch serve`: a connection must send its request "
                                                            "headers within this time.")
    max_connections: int = Field(200, ge=1, description="`figsearch serve`: more concurrent connections get 503.")
    render_workers: int = Field(2, ge=1, description="Expensive public work (high-resolution renders, panel "
                                                     "cut-outs, query image decodes) running at once.")
    render_queue: int = Field(8, ge=0, description="Expensive requests that may wait for a render worker; more "
                                                   "get 429 with Retry-After.")
    render_cache_mb: float = Field(64.0, ge=0, description="Memory for rendered images (high-resolution crops "
                                                           "by figure and scale rounded to 0.5, panels).")
    max_deliveries: int = Field(3, ge=1, description="Distributed mode: a file whose worker died this many times is "
                                                     "marked failed ('worker crashed N times').")
    ingest_stall_s: float = Field(600.0, gt=0, description="`figsearch ingest` in distributed mode gives up waiting "
                                                           "(exit 1) when no file finishes for this long.")

    # central figure (app/central)
    central_model_dir: str = Field("", description="Folder of a trained central-figure model to use instead of the "
                                                    "data dir's model store (empty = the CURRENT version of "
                                                    "data_dir/models/central).")
    central_max_sentences: int = Field(16, ge=1, description="Abstract sentences scored per paper (central figure).")
    central_use_model: bool = Field(True, description="Use the trained central-figure content model (a tuned MiniLM bi-encoder) when present (off = tf.idf + position).")

    # learned figure embeddings (app/learn)
    learned_embeddings: bool = Field(True, description="Index with the trained figure-embedding model when one "
                                                       "exists (off = MiniLM text embeddings).")
    learned_model: str = Field("fused", description="Name of the model under data_dir/models used for the index "
                                                    "and image-only queries.")
    cache_dir: str = Field("", description="Where exported models are kept between processes (the visual backbone "
                                           "in ONNX form, in its subfolder onnx, keyed by the network's code and "
                                           "weights, so a process loads it instead of exporting it again); empty = "
                                           "$XDG_CACHE_HOME/figsearch, else ~/.cache/figsearch. Unreadable or "
                                           "unwritable: exported again.")

    @field_validator("data_dir")
    @classmethod
    def _absolute(cls, v: Path) -> Path:
        return v.expanduser().resolve()

    @property
    def db_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'figsearch.db'}"

    @property
    def visibility_timeout_s(self) -> int:
        """The broker's visibility timeout: the setting, or the longest a file may take (its time
        limit with every page OCRed, the 30 s hard-kill margin) plus a minute."""
        if self.broker_visibility_timeout_s:
            return self.broker_visibility_timeout_s
        longest_file = self.file_timeout_s + self.ocr_seconds_per_page * self.max_pages
        return int(max(longest_file, self.collection_timeout_s) + 30 + 60)

    @property
    def distributed(self) -> bool:
        return bool(self.broker_url)

    @property
    def figures_dir(self) -> Path:
        return self.data_dir / "figures"

    def ensure_dirs(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.figures_dir.mkdir(parents=True, exist_ok=True)


class AdminTokenError(ValueError):
    """The admin token is missing (distributed mode), a placeholder, or too short."""


def check_admin_token(token: str, origin: str = "FIGSEARCH_ADMIN_TOKEN") -> str:
    """The token if it is usable; otherwise AdminTokenError with a one-line reason."""
    hint = "generate one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
    if token.strip().lower() in PLACEHOLDER_TOKENS:
        raise AdminTokenError(f"{origin} is the placeholder {token!r}; {hint}")
    if any(c.isspace() for c in token):
        raise AdminTokenError(f"{origin} contains whitespace (a bearer header cannot carry it, so the admin "
                              f"would be locked out); {hint}")
    if len(token) < MIN_TOKEN_LENGTH:
        raise AdminTokenError(f"{origin} has {len(token)} characters, at least {MIN_TOKEN_LENGTH} are needed; {hint}")
    distinct = len(set(token))
    if distinct < MIN_TOKEN_DISTINCT:
        raise AdminTokenError(f"{origin} has only {distinct} different characters, at least {MIN_TOKEN_DISTINCT} "
                              f"are needed (a repetitive token is guessable); {hint}")
    return token


def admin_token_path(settings: Settings) -> Path:
    return settings.data_dir / ADMIN_TOKEN_FILE


def admin_token_source(settings: Settings) -> str:
    """Where the server's admin token comes from: 'environment' (FIGSEARCH_ADMIN_TOKEN, always in
    distributed mode) or 'data_dir' (generated by embedded mode into DATA_DIR/admin-token)."""
    return "environment" if settings.admin_token or settings.distributed else "data_dir"


def has_collection(settings: Settings) -> bool:
    """A collection lives in this data dir: its database (embedded mode) or an index exists."""
    d = settings.data_dir
    return (d / "figsearch.db").exists() or (d / "index").is_dir()


def resolve_admin_token(settings: Settings, create: bool = True) -> tuple[str, bool]:
    """(token, newly generated). A set FIGSEARCH_ADMIN_TOKEN wins; distributed mode requires one;
    embedded mode otherwise uses the token stored in the data dir, generating it on first start
    (readable by this user only) unless `create` is false. Raises AdminTokenError with a
    one-line message."""
    if settings.admin_token:
        return check_admin_token(settings.admin_token), False
    if settings.distributed:
        raise AdminTokenError("distributed mode needs FIGSEARCH_ADMIN_TOKEN (at least "
                              f"{MIN_TOKEN_LENGTH} characters, the same for every API process)")
    path = admin_token_path(settings)
    if not create:
        if not path.exists():
            raise AdminTokenError(f"no admin token in {settings.data_dir}")
        return check_admin_token(path.read_text().strip(), str(path)), False
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    token, created = secrets.token_urlsafe(32), False
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # generated before, or by a server starting at the same time
        token = path.read_text().strip()
    else:
        with os.fdopen(fd, "w") as fh:
            fh.write(token + "\n")
        created = True
    return check_admin_token(token, str(path)), created


def admin_token_command(settings: Settings, program: str = "figsearch") -> str:
    """The exact command that prints this data dir's admin token again."""
    return f"{program} admin-token --data-dir {shlex.quote(str(settings.data_dir))}"


def generated_token_notice(settings: Settings, token: str, program: str = "figsearch") -> str:
    return (f"figsearch: generated the admin token {token}\n  (stored in {admin_token_path(settings)}; "
            f"show it again with `{admin_token_command(settings, program)}`)")


def settings_for(data_dir: str | Path | None = None, **overrides) -> Settings:
    """Settings from the environment, with an explicit data dir (CLI --data-dir) on top."""
    if data_dir is not None:
        overrides["data_dir"] = Path(data_dir)
    return Settings(**overrides)
