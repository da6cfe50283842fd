"""Why a file failed, in a small stable vocabulary, and whether reading it again may help.

A failure is named where it happens (`error_kind` next to the message) and stored with the job
file, so the admin can tell a file whose own bytes are at fault (a retry fails the same way) from
a failure of the run that read it (a time limit on a busy machine, a worker that died): only the
latter is retried by default. Messages stay free text; the kinds are what code and clients read.
"""
from __future__ import annotations

# the file itself: reading the same bytes again fails the same way (until a limit is raised or
# the PDF library is upgraded)
NOT_PDF = "not_pdf"  # empty, or not PDF content
ENCRYPTED = "encrypted"  # password required (an encrypted PDF or zip member)
DAMAGED = "damaged"  # the PDF library cannot open it, or it has no pages
TOO_LARGE = "too_large"  # over the size or page limit (or a zip bomb guard)
UNSAFE = "unsafe"  # refused by a safety rule (a zip member's path outside the archive)
CRASHES_WORKER = "crashes_worker"  # killed every worker that took it (FIGSEARCH_MAX_DELIVERIES)

# the run that read it: another run may succeed
TIMEOUT = "timeout"  # its time limit ran out (a busy machine reads slower)
WORKER_LOST = "worker_lost"  # the process reading it died (killed, restarted, crashed once)
OUT_OF_MEMORY = "out_of_memory"  # the memory limit of the process reading it
INTERNAL = "internal"  # an unexpected error of this program (or the database) while reading it

# neither: the bytes are gone, a retry has nothing to read (upload it again)
MISSING = "missing"

FILE_KINDS = frozenset({NOT_PDF, ENCRYPTED, DAMAGED, TOO_LARGE, UNSAFE, CRASHES_WORKER})
RUN_KINDS = frozenset({TIMEOUT, WORKER_LOST, OUT_OF_MEMORY, INTERNAL})
KINDS = FILE_KINDS | RUN_KINDS | {MISSING}

UNKNOWN = "unknown"  # a failure recorded before kinds were (its cause is not known)


def kind_shown(status: str, kind: str | None) -> str | None:
    """The kind a client sees: None unless the file failed; `unknown` for a failure recorded
    without one."""
    if status != "failed":
        return None
    return kind if kind in KINDS else UNKNOWN


def retry_may_help(kind: str | None) -> bool:
    """Whether reading the file again may succeed with nothing changed: not for a fault of its own
    bytes nor for bytes that are gone; yes for a failure of the run, and for an unknown cause
    (a retry is the way to find out)."""
    return kind not in FILE_KINDS and kind != MISSING
