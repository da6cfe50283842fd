"""API documentation that works offline and under the app's Content-Security-Policy.

FastAPI's own /docs page loads Swagger UI from a CDN with an inline script, so it is blank
without network and needs a CSP exemption. Here the Swagger UI and ReDoc bundles come from the
`fastapi-offline` package (its static folder, found with importlib.resources), and the pages
start them with a same-origin script (docs_assets/*.js): no inline script, no third-party host.
"""
from __future__ import annotations

from functools import lru_cache
from html import escape
from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

ASSETS_URL = "/docs-assets"  # vendor bundles (fastapi-offline)
OWN_ASSETS_URL = "/docs-assets/own"  # our start-up scripts
OWN_ASSETS_DIR = Path(__file__).resolve().parent / "docs_assets"


def vendor_dir() -> Path:
    """The folder holding swagger-ui-bundle.js, swagger-ui.css and redoc.standalone.js."""
    return Path(str(files("fastapi_offline") / "static"))


REDOC_CDN_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"  # ReDoc's side-menu footer image


@lru_cache(maxsize=1)
def redoc_bundle() -> bytes:
    """ReDoc's bundle, its one third-party image (a footer logo it always loads, which the CSP
    blocks with a console error) pointed at a local one."""
    text = (vendor_dir() / "redoc.standalone.js").read_text(encoding="utf-8")
    return text.replace(REDOC_CDN_LOGO, f"{ASSETS_URL}/favicon.png").encode()


def _page(title: str, head: str, body: str, openapi_url: str) -> HTMLResponse:
    return HTMLResponse(f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
{head}
</head>
<body data-openapi-url="{escape(openapi_url)}">
{body}
</body>
</html>
""")


def install_docs(app: FastAPI, openapi_url: str, title: str) -> None:
    """GET /docs (Swagger UI) and /redoc (ReDoc), both from local assets."""

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return _page(f"{title} API · Swagger UI",
                     f'<link rel="stylesheet" href="{ASSETS_URL}/swagger-ui.css">',
                     f'<div id="swagger-ui"></div>\n<script src="{ASSETS_URL}/swagger-ui-bundle.js"></script>\n'
                     f'<script src="{OWN_ASSETS_URL}/swagger-init.js"></script>', openapi_url)

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return _page(f"{title} API · ReDoc", '<link rel="stylesheet" href="' + OWN_ASSETS_URL + '/redoc.css">',
                     f'<div id="redoc"></div>\n<script src="{ASSETS_URL}/redoc.standalone.js"></script>\n'
                     f'<script src="{OWN_ASSETS_URL}/redoc-init.js"></script>', openapi_url)

    @app.get(f"{ASSETS_URL}/redoc.standalone.js", include_in_schema=False)
    def redoc_js() -> Response:
        return Response(redoc_bundle(), media_type="text/javascript",
                        headers={"Cache-Control": "public, max-age=86400"})

    # the more specific mount first: /docs-assets/own/* are ours, the rest the vendor's
    app.mount(OWN_ASSETS_URL, StaticFiles(directory=OWN_ASSETS_DIR), name="docs-own-assets")
    app.mount(ASSETS_URL, StaticFiles(directory=vendor_dir()), name="docs-assets")
