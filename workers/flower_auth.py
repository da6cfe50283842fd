"""Refuse to start Flower without real basic-auth credentials: FLOWER_BASIC_AUTH must be one or
more `user:password` pairs (comma-separated), each with a non-empty user and password. Flower
itself accepts `user:` (an empty password), which guards nothing. docker-compose runs
`python -m workers.flower_auth && exec celery -A workers flower`."""
from __future__ import annotations

import os
import sys


def credential_problem(value: str) -> str | None:
    """Why `value` is not usable as FLOWER_BASIC_AUTH, or None when it is."""
    if not value.strip():
        return "FLOWER_BASIC_AUTH is not set; set it to user:password"
    for pair in value.split(","):
        user, colon, password = pair.partition(":")
        if not colon or not user.strip():
            return "FLOWER_BASIC_AUTH must be user:password (comma-separated pairs)"
        if not password.strip():
            return f"FLOWER_BASIC_AUTH gives user {user.strip()!r} an empty password"
    return None


def main() -> int:
    problem = credential_problem(os.environ.get("FLOWER_BASIC_AUTH", ""))
    if problem:
        print(f"error: {problem}; Flower is not started", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
