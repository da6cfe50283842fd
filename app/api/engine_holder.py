"""The API's view of the search index: the current Searcher, swapped in when a new version
is published, and the query encoder (loaded once, off the request path).

- Versions are opened memory-mapped, as the benchmark's serving process does: the resident set
  is what queries touch, not the whole version (about 24 GB at ten million figures). After a
  load its files are read into the page cache in the background (`warm_index`).
- `get()` is cheap: at most every `poll_s` seconds it reads the CURRENT pointer
  (`current_version`, one small file); when it changed, the new version is loaded in a background
  thread while requests keep using the old engine. Only the very first load (no engine at all yet)
  happens on the request path, and normally the startup warm-up has done it already.
- No index yet: `get()` returns None and `reason` says why; the routes answer with empty results.
- A version whose files fail their manifest check is skipped for the newest intact one
  (`degraded` says why and which version serves); an empty or dangling CURRENT is repaired
  (app/model_store/versions.py). Published but nothing intact: `load_error` (readiness fails).
- The encoder is MiniLM (`default_encoder`), wrapped in an LRU cache of query embeddings; it is
  loaded in the background at startup (`warm_encoder`) and until it is ready, free-text search is
  lexical only (`encoder_ready`), so no request waits for the model.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Callable

import numpy as np

from app.model_store.versions import choose, current_version, remove_dead_builds
from app.pipeline.searching import open_searcher
from app.search.page_cache import warm_version
from app.search.searcher import Searcher

log = logging.getLogger(__name__)

Encoder = Callable[[list[str]], np.ndarray]


class CachedEncoder:
    """Encoder wrapper with an LRU cache for single-text calls (the query path)."""

    def __init__(self, encoder: Encoder, size: int = 2048):
        self.encoder, self.size = encoder, size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def clear(self) -> None:
        """A new index version may hold other vectors (e.g. a trained model): forget old queries."""
        with self._lock:
            self._cache.clear()

    def __call__(self, texts: list[str]) -> np.ndarray:
        if len(texts) != 1 or self.size <= 0:
            return self.encoder(texts)
        key = texts[0]
        with self._lock:
            vec = self._cache.get(key)
            if vec is not None:
                self._cache.move_to_end(key)
                self.hits += 1
                return vec[None, :]
        vec = np.asarray(self.encoder([key]), dtype=np.float32)[0]
        vec.setflags(write=False)
        with self._lock:
            self.misses += 1
            self._cache[key] = vec
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
        return vec[None, :]


class EngineHolder:
    def __init__(self, index_root: Path, *, poll_s: float = 2.0, gpu: str = "auto",
                 encoder_factory: Callable[[], Encoder] | None = None, cache_size: int = 2048,
                 warm_index: bool = False):
        self.root = Path(index_root)
        self.warm_index = warm_index
        self.poll_s = poll_s
        self.gpu = gpu
        self._encoder_factory = encoder_factory
        self._encoder: CachedEncoder | None = None
        self._encoder_ready = threading.Event()
        self._encoder_error: str | None = None
        self._encoder_started = False
        self.cache_size = cache_size
        self._engine: Searcher | None = None
        self._version: str | None = None
        self._checked = float("-inf")
        self._lock = threading.Lock()  # guards loading state
        self._loading: str | None = None  # version being loaded in the background
        self._sync_lock = threading.Lock()  # one synchronous (first) load at a time
        self.reason: str | None = "index not loaded yet"
        self.load_error: str | None = None
        self.degraded: str | None = None  # why the served version is not the one CURRENT names
        self._pointer: object = object()  # the CURRENT value last acted upon
        self._bad: set[str] = set()  # versions that failed to load

    # ------------------------------------------------------------ encoder
    @property
    def dense_enabled(self) -> bool:
        return self._encoder_factory is not None

    def start_encoder(self, background: bool = True) -> None:
        """Load the encoder once (in a thread by default)."""
        if self._encoder_factory is None or self._encoder_started:
            return
        self._encoder_started = True

        def load() -> None:
            try:
                enc = self._encoder_factory()
                enc(["warm up"])  # loads the weights and the tokenizer
                self._encoder = CachedEncoder(enc, self.cache_size)
                eng = self._engine
                if eng is not None:
                    eng.encoder = self._encoder
            except Exception as exc:  # model missing: stay lexical-only, say why in /readyz
                log.exception("query encoder failed to load; search stays lexical only")
                self._encoder_error = f"{type(exc).__name__}: {exc}"
            finally:
                self._encoder_ready.set()

        if background:
            threading.Thread(target=load, name="figsearch-encoder", daemon=True).start()
        else:
            load()

    @property
    def encoder_ready(self) -> bool:
        return self._encoder is not None

    def wait_encoder(self, timeout: float | None = None) -> bool:
        self.start_encoder()
        self._encoder_ready.wait(timeout)
        return self.encoder_ready

    @property
    def encoder_state(self) -> str:
        if self._encoder_factory is None:
            return "disabled"
        if self._encoder is not None:
            return "ready"
        if self._encoder_error:
            return f"failed: {self._encoder_error}"
        return "loading" if self._encoder_started else "not loaded"

    @property
    def encoder(self) -> CachedEncoder | None:
        return self._encoder

    # ------------------------------------------------------------- engine
    def _load(self) -> None:
        """Load the version to serve: CURRENT's if intact, else the newest intact one."""
        t0 = time.perf_counter()
        choice = choose(self.root, skip=self._bad)
        version = choice.version
        if version is None:
            with self._lock:
                self._loading = None
                if choice.published and self._engine is None:  # an index exists but nothing can be served
                    self.load_error = choice.problem or "no intact index version"
                    self.reason = "the search index cannot be loaded (see the server log)"
                    log.error("no index version can be served: %s", self.load_error)
                elif not choice.published:
                    self.reason = ("no search index yet: ingest papers (the admin page's upload or `figsearch ingest`) "
                                   "or build it with `figsearch index`")
            return
        if version == self._version:
            with self._lock:
                self.degraded, self._loading = choice.problem, None
            return
        try:
            eng = open_searcher(self.root / version, encoder=self._encoder, gpu=self.gpu, check=False, mmap=True)
        except Exception:
            log.exception("cannot load index version %s", version)
            with self._lock:
                self._bad.add(version)
                self._loading = None
            self._load()  # the next intact one, if any
            return
        with self._lock:
            self._engine, self._version = eng, version
            self.reason, self.load_error, self._loading = None, None, None
            self.degraded = choice.problem
        if choice.problem:
            log.error("%s; serving index version %s instead", choice.problem, version)
        if isinstance(self._encoder, CachedEncoder):
            self._encoder.clear()
        log.info("search index %s loaded (%d figures) in %.2f s", version, len(eng), time.perf_counter() - t0)
        threading.Thread(target=eng.prepare_spelling, name="figsearch-spelling", daemon=True).start()
        if self.warm_index:
            threading.Thread(target=self._warm, args=(version,), name="figsearch-warm-index", daemon=True).start()

    def _warm(self, version: str) -> None:
        """Read the served version's files into the page cache (page_cache.warm_version), so the
        first queries after a start or a swap do not wait on the disk."""
        try:
            done = warm_version(self.root / version)
        except OSError:
            log.exception("could not warm index version %s", version)
            return
        log.info("index version %s warmed: %.1f MB of %d files in %.1f s%s", version, done.bytes / 2**20, done.files,
                 done.seconds, f"; {len(done.skipped)} files left out for lack of memory" if done.skipped else "")

    def start(self) -> None:
        """At server start: remove temp folders of index builds that died, then load."""
        try:
            remove_dead_builds(self.root)
        except OSError:
            log.exception("could not clean the index folder")
        self.refresh(block=True)

    def refresh(self, block: bool = False) -> None:
        """Check the CURRENT pointer now; when it changed, choose and load the version to serve (in
        the background unless `block` or no engine is loaded yet, in which case concurrent callers
        wait for the one load)."""
        self._checked = time.monotonic()
        named = current_version(self.root)
        first_load_running = self._engine is None and self._sync_lock.locked()
        if named == self._pointer and not block and not first_load_running:
            return
        if named is not None and named == self._version and not self.degraded:
            self._pointer = named
            return
        if block or self._engine is None:
            with self._sync_lock:
                if not block and self._engine is not None and named == self._pointer:
                    return  # the load this call waited for has done it
                self._pointer = named
                self._load()
            return
        with self._lock:
            if self._loading:  # one background load at a time; the next poll looks again
                return
            self._loading = named or "repair"
            self._pointer = named
        threading.Thread(target=self._load_in_background, name="figsearch-index-load", daemon=True).start()

    def _load_in_background(self) -> None:
        """`_load` in its own thread: whatever goes wrong is logged and the next poll may load
        again (a load left marked as running would keep every later version from being served)."""
        try:
            self._load()
        except Exception:
            log.exception("loading the search index failed")
            with self._lock:
                self._loading = None

    def poll_nowait(self) -> None:
        """Look for a new index version without ever blocking the caller (health checks): a
        first load, when one is due, runs in a thread of its own."""
        if self._engine is not None:
            self.get()  # a small file read; a new version loads in the background
        elif not self._sync_lock.locked() and time.monotonic() - self._checked >= self.poll_s:
            self._checked = time.monotonic()
            threading.Thread(target=self.refresh, name="figsearch-index-poll", daemon=True).start()

    def get(self) -> Searcher | None:
        if time.monotonic() - self._checked >= self.poll_s:
            self.refresh()
        return self._engine

    @property
    def version(self) -> str | None:
        return self._version

    @property
    def engine(self) -> Searcher | None:
        """The loaded engine without polling."""
        return self._engine
