"""The bearer-token check in front of every HTTP request, before any routing.

Wraps an ASGI app (the Litestar API or the MCP streamable-HTTP app), so unknown paths,
the OpenAPI document and wrong methods need the token too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

import msgspec

from apexmem.events.errors import ValidationError
from apexmem.server.problem import MEDIA_TYPE, Problem, encode_problem, problem
from apexmem.server.tenants import Tenants

__all__ = ["TENANT_PREFIX", "BearerGuard", "bearer_token"]

TENANT_PREFIX: Final = "/v1/tenants/"
OPEN_PATHS: Final = frozenset({"/v1/health"})
"""Paths a GET may reach without a token (they hold no data)."""
_SLASHES: Final = re.compile("/+")

Scope = Mapping[str, Any]
Receive = Any
Send = Any


def bearer_token(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, if there is one."""
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


class BearerGuard:
    """Lets a request through only with the token of the memory (or tenant) it asks for."""

    def __init__(self, app: Any, tenants: Tenants) -> None:
        self.app = app
        self.tenants = tenants

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is None:
            await self.app(scope, receive, _problems_only(send, scope.get("path", "")))
            return
        await _send_problem(send, refusal, scope.get("path", ""))

    def _refusal(self, scope: Scope) -> Problem | None:
        token = bearer_token(scope.get("headers", []))
        path = _routed(scope.get("path", ""))
        if path in OPEN_PATHS and scope.get("method") in {"GET", "HEAD"}:
            return None
        if self.tenants.multi and path.startswith(TENANT_PREFIX):
            name = path[len(TENANT_PREFIX) :].split("/", 1)[0]
            try:
                tenant = self.tenants.get(name)
            except ValidationError as e:
                return problem(
                    422, "validation", "Invalid request", str(e), field=e.field, value=e.value,
                    rule=e.rule,
                )  # fmt: skip
            allowed = tenant is not None and tenant.accepts(token)
        else:
            allowed = self.tenants.any_accepts(token)
        if allowed:
            return None
        reason = "no bearer token" if token is None else "a wrong bearer token"
        return problem(
            401,
            "unauthorized",
            "Unauthorized",
            f"the request carries {reason}; send 'Authorization: Bearer <token>'",
        )


def _routed(path: str) -> str:
    """The path as the router reads it: one leading slash, no trailing one, no `//`.

    (Litestar's `normalize_path`; the ASGI server has already decoded `%2F` to `/`.)
    """
    return "/" + _SLASHES.sub("/", path.strip("/"))


def _problems_only(send: Send, path: str) -> Send:
    """`send`, with an HTML error page of the framework's (the OpenAPI router answers any
    unknown GET under /v1 with one) replaced by the problem document every error gets."""
    replaced = False

    async def sending(message: Mapping[str, Any]) -> None:
        nonlocal replaced
        if message["type"] == "http.response.start" and _html_error(message):
            replaced = True
            status = message["status"]
            kind, title = ("not-found", "Not found") if status == 404 else (str(status), "Error")
            await _send_problem(send, problem(status, kind, title, f"no route {path}"), path)
        elif not (replaced and message["type"] == "http.response.body"):
            await send(message)

    return sending


def _html_error(start: Mapping[str, Any]) -> bool:
    if start["status"] < 400:
        return False
    types = [v for k, v in start.get("headers", []) if k.lower() == b"content-type"]
    return any(t.startswith(b"text/html") for t in types)


async def _send_problem(send: Send, found: Problem, path: str) -> None:
    body = encode_problem(msgspec.structs.replace(found, instance=path))
    headers = [
        (b"content-type", MEDIA_TYPE.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    if found.status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="apexmem"'))
    await send({"type": "http.response.start", "status": found.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
