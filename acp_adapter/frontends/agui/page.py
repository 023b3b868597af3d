"""The endpoint's web page: ``GET /`` serves one self-contained page that talks to ``POST /``.

The page is plain HTML, CSS and JavaScript shipped in the package (``web/``: no CDN, no build
step). Its three files are read once, when the app is built, and served with a strict
Content-Security-Policy: scripts and styles from this origin only (no inline script or style,
no ``eval``), connections to this origin only, no frames, no forms posted anywhere, no referrer.

The page files hold no secret, so they are the only routes besides ``/health`` a browser may
fetch without the bearer token (a navigation cannot send one): the page asks for the token
once, keeps it in ``sessionStorage`` (gone when the tab closes) and sends it with every call.
Host and Origin are checked for the page like for every other route (DNS rebinding).
"""

from __future__ import annotations

from importlib import resources
from typing import Final

from fastapi import FastAPI
from fastapi.responses import Response

from acp_adapter.frontends.agui.admission import PAGE_PATHS

#: path → (package file, media type): everything the page is made of.
PAGE_FILES: Final = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/page/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/page/app.css": ("app.css", "text/css; charset=utf-8"),
    "/page/icon.svg": ("icon.svg", "image/svg+xml"),
}
assert frozenset(PAGE_FILES) == PAGE_PATHS, "the token gate must exempt exactly the page's files"

CONTENT_SECURITY_POLICY: Final = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "img-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-cache",
}


def page_file(name: str) -> bytes:
    """One of the page's files, from the installed package."""
    return (resources.files("acp_adapter.frontends.agui") / "web" / name).read_bytes()


def install_page(app: FastAPI) -> None:
    """Serve the page's files (read now: a missing file fails the app at build time, not a user)."""
    for path, (name, media_type) in PAGE_FILES.items():
        body = page_file(name)

        def serve(body: bytes = body, media_type: str = media_type) -> Response:
            return Response(body, media_type=media_type, headers=SECURITY_HEADERS)

        app.add_api_route(path, serve, methods=["GET", "HEAD"], include_in_schema=False)
