"""README's curl block has an example for every public endpoint, with the right method, so a new
user never has to guess a path or a form field (search by picture: `-F image=@...`)."""
from __future__ import annotations

import re
from pathlib import Path

from app.api.main import create_app
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def _curl_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    start = text.index("### Every endpoint with curl")
    block = text[start:].split("```sh", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip().startswith("curl")]


def _method(line: str) -> str:
    m = re.search(r"-X (\w+)", line)
    if m:
        return m.group(1)
    return "POST" if re.search(r"\s-F\s", line) else "GET"


def test_every_endpoint_has_a_curl_example(tmp_path):
    app = create_app(Settings(data_dir=tmp_path / "d", database_url="", broker_url="",
                              admin_token="readme-admin-token-0123456789abcdef", warm_encoder=False))
    lines = _curl_block()
    paths = app.openapi()["paths"]
    assert len(paths) >= 20  # the schema lists the endpoints (a broken lookup must not pass)
    missing = []
    for path, ops in paths.items():
        pattern = re.compile(r"\$B" + re.sub(r"\\\{[^}]+\\\}", r"[^/?\" ]+", re.escape(path)) + r"(?:[?\" ]|$)")
        for method in ops:
            if not any(pattern.search(line) and _method(line) == method.upper() for line in lines):
                missing.append(f"{method.upper()} {path}")
    assert not missing, f"README has no curl example for: {missing}"
    by_image = [line for line in lines if "/search/by-image" in line]
    assert by_image and all("-F image=@" in line for line in by_image)
