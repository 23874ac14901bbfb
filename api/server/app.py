"""The HTTP API as an ASGI app (Litestar behind the bearer guard), and `serve` to run it."""

from __future__ import annotations

import os
import re
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final

import msgspec
from litestar import Litestar, Router, get
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme
from litestar.routes import HTTPRoute

from apexmem.location import is_url, locate
from apexmem.server.auth import BearerGuard
from apexmem.server.config import DEFAULT_MAX_BODY_BYTES, ServeConfig, served
from apexmem.server.errors import exception_handlers
from apexmem.server.explore import ExplorerPages
from apexmem.server.lookups import LookupApi
from apexmem.server.openapi_fields import describe_fields
from apexmem.server.operations import OperationsApi
from apexmem.server.routes import MemoryApi
from apexmem.server.tenants import Tenants
from apexmem.service.logs import get_logger

__all__ = ["CONFIG_VARIABLE", "Health", "create_app", "from_environment", "tenants_for"]

CONFIG_VARIABLE: Final = "APEXMEM_SERVE_CONFIG"
"""The environment variable that hands a worker process its `ServeConfig` (JSON)."""

_logger = get_logger()
_PARAMETER: Final = re.compile(r"\{[^}]+\}")

_DESCRIPTION = """A temporal knowledge-graph memory for agents: append facts and messages,
recall, query on both time axes, audit. Every request but `GET /v1/health` needs
`Authorization: Bearer <token>`.
Errors are `application/problem+json` (RFC 9457); a validation problem names `field`,
`value` and `rule`. Writes take an `Idempotency-Key` header: a retry with the same key and
body returns the first result and writes nothing."""


def create_app(tenants: Tenants, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> ExplorerPages:
    """The API over `tenants`: under `/v1`, or `/v1/tenants/{tenant}` when there are tenants;
    the web explorer's page at `/explore`."""
    prefix = "/v1/tenants/{tenant:str}" if tenants.multi else "/v1"
    api = Litestar(
        route_handlers=[
            health,
            Router(path=prefix, route_handlers=[MemoryApi, LookupApi, OperationsApi]),
        ],
        openapi_config=OpenAPIConfig(
            title="apexmem",
            version=version("apexmem"),
            description=_DESCRIPTION,
            path="/v1",
            render_plugins=[JsonRenderPlugin()],
            components=Components(
                security_schemes={"bearer": SecurityScheme(type="http", scheme="bearer")}
            ),
            security=[{"bearer": []}],
            create_examples=False,
            use_handler_docstrings=True,
        ),
        exception_handlers=exception_handlers(),
        request_max_body_size=max_body_bytes,
        on_shutdown=[lambda: _close(tenants)],
        state=_state(tenants),
        debug=False,
    )
    describe_fields(api)
    return ExplorerPages(BearerGuard(AllowEveryMethod(api), tenants))


class Health(msgspec.Struct, frozen=True, kw_only=True):
    """The server answers (no token needed, no data)."""

    status: str
    version: str


@get("/v1/health", operation_id="health", tags=["read"], security=[], sync_to_thread=False)
def health() -> Health:
    """`ok` and the version while the server runs: for load balancers and probes, without a
    token."""
    return Health(status="ok", version=version("apexmem"))


class AllowEveryMethod:
    """`OPTIONS` answers with every method of its path in `Allow` (the framework's own
    answer lists only the methods of the handler it was made from)."""

    def __init__(self, api: Litestar) -> None:
        self.api: Any = api  # called with a plain ASGI send
        self.methods = [
            (re.compile("^" + _PARAMETER.sub("[^/]+", route.path) + "/?$"), route.methods)
            for route in api.routes
            if isinstance(route, HTTPRoute)
        ]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "OPTIONS":
            await self.api(scope, receive, send)
            return
        path = scope.get("path", "")
        found = [methods for pattern, methods in self.methods if pattern.match(path)]
        allowed = ", ".join(sorted(set().union(*found))).encode() if found else None

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and allowed is not None:
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"allow"]
                message = {**message, "headers": [*headers, (b"allow", allowed)]}
            await send(message)

        await self.api(scope, receive, sending)


def tenants_for(config: ServeConfig) -> Tenants:
    """The memories one `apexmem serve` reaches."""
    if config.tenants is not None:
        database = config.db if config.db is not None and is_url(config.db) else None
        return Tenants(root=Path(config.tenants), database=database, opener=served)
    assert config.db is not None
    return Tenants(single=locate(config.db), token=config.token, opener=served)


def from_environment() -> ExplorerPages:
    """The app of one worker of `apexmem serve --workers N`, from `APEXMEM_SERVE_CONFIG`."""
    config = msgspec.json.decode(os.environ[CONFIG_VARIABLE], type=ServeConfig)
    return create_app(tenants_for(config), max_body_bytes=config.max_body_bytes)


def _state(tenants: Tenants) -> Any:
    from litestar.datastructures import State

    return State({"tenants": tenants})


def _close(tenants: Tenants) -> None:
    tenants.close()
    _logger.info("server.stopped")
