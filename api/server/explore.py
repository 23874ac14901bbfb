"""The web explorer's files at `/explore`, served in front of the bearer guard.

The page and its scripts are public (they hold no data); the page asks for the token and
sends it with every API request in the Authorization header, never in a URL, so a token
cannot leak into a browser history, a proxy log or a Referer. Everything the page shows
comes from the token-guarded `/v1` endpoints. Nothing is fetched from another site: the
graph library (Cytoscape.js, MIT) is a file of this package.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from importlib.resources import files
from typing import Any, Final

__all__ = ["PREFIX", "ExplorerPages", "explorer_file"]

PREFIX: Final = "/explore"
_NAME: Final = re.compile(r"[a-z0-9][a-z0-9.-]{0,63}")
_TYPES: Final = {
    ".html": b"text/html; charset=utf-8",
    ".js": b"text/javascript; charset=utf-8",
    ".css": b"text/css; charset=utf-8",
    ".txt": b"text/plain; charset=utf-8",
}
_POLICY: Final = (
    b"default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    b"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    b"frame-ancestors 'none'"
)
"""Scripts only from this server; inline styles because the graph library sets them."""


@cache
def explorer_file(name: str) -> bytes | None:
    """A file of the explorer by name (`explore.html`, `cytoscape.min.js`, ...), or None."""
    if not _NAME.fullmatch(name) or ".." in name:
        return None
    found = files("apexmem.server").joinpath("static", name)
    return found.read_bytes() if found.is_file() else None


class ExplorerPages:
    """Answers GET under `/explore` with the explorer's files; passes anything else on."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Mapping[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path != PREFIX and not path.startswith(PREFIX + "/"):
            await self.app(scope, receive, send)
            return
        name = path[len(PREFIX) :].strip("/") or "explore.html"
        body = explorer_file(name)
        if scope["method"] not in {"GET", "HEAD"}:
            await _send(send, 405, b"the explorer only reads: use GET", b".txt", allow=True)
        elif body is None:
            await _send(send, 404, f"no explorer file {name}".encode(), b".txt")
        else:
            suffix = name[name.rfind(".") :].encode()
            await _send(send, 200, body, suffix, head=scope["method"] == "HEAD")


async def _send(
    send: Any, status: int, body: bytes, suffix: bytes, *, allow: bool = False, head: bool = False
) -> None:
    headers = [
        (b"content-type", _TYPES.get(suffix.decode(), b"application/octet-stream")),
        (b"content-length", str(len(body)).encode()),
        (b"content-security-policy", _POLICY),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
        (b"cache-control", b"no-cache"),
    ]
    if allow:
        headers.append((b"allow", b"GET, HEAD"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})
