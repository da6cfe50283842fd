"""OpenMP threads wait passively unless the environment says otherwise (see app/__init__.py)."""
from __future__ import annotations

import os
import subprocess
import sys


def _policy_seen(env_policy: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if env_policy is not None:
        env["OMP_WAIT_POLICY"] = env_policy
    code = "import app, os, torch; print(os.environ['OMP_WAIT_POLICY'])"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_passive_by_default_and_the_environment_wins():
    assert _policy_seen(None) == "PASSIVE"
    assert _policy_seen("ACTIVE") == "ACTIVE"
