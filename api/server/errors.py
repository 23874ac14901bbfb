"""Every error the API can raise, as a problem response; the problems each operation documents."""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.types import ExceptionHandlersMap

from apexmem.events.errors import (
    ApexmemError,
    ConcurrencyError,
    DiskFullError,
    IntegrityViolation,
    NotFoundError,
    ValidationError,
)
from apexmem.server.problem import MEDIA_TYPE, Problem, encode_problem, problem
from apexmem.service.logs import get_logger

__all__ = ["PROBLEM_RESPONSES", "exception_handlers"]

_logger = get_logger()


def _respond(
    request: Request[Any, Any, Any], found: Problem, headers: dict[str, str] | None = None
) -> Response[bytes]:
    placed = msgspec.structs.replace(found, instance=request.url.path)
    if found.status == 401:
        headers = {**(headers or {}), "WWW-Authenticate": 'Bearer realm="apexmem"'}
    return Response(
        encode_problem(placed), status_code=found.status, media_type=MEDIA_TYPE, headers=headers
    )


def _validation(request: Request[Any, Any, Any], error: Exception) -> Response[bytes]:
    assert isinstance(error, ValidationError)
    return _respond(
        request,
        problem(
            422,
            "validation",
            "Invalid request",
            str(error),
            field=error.field,
            value=error.value,
            rule=error.rule,
        ),
    )


def _framework_validation(request: Request[Any, Any, Any], error: Exception) -> Response[bytes]:
    """Litestar's own checks of path, query and header parameters, in apexmem's words."""
    assert isinstance(error, ValidationException)
    extra = error.extra if isinstance(error.extra, list) else []
    first: dict[str, Any] = extra[0] if extra and isinstance(extra[0], dict) else {}
    field = str(first.get("key", "request"))
    rule = str(first.get("message", error.detail))
    value = request.query_params.get(field, request.headers.get(field))
    if missing := _MISSING.search(rule):
        field, rule = missing.group(1), "is required"
    elif field == "data":  # the body, absent or not an object
        field, rule = "body", "is required: a JSON object"
    else:
        rule = f"is invalid: {rule[0].lower()}{rule[1:]}" if rule else "is invalid"
    detail = f"{field}: {value!r} {rule}"
    return _respond(
        request,
        problem(422, "validation", "Invalid request", detail, field=field, value=value, rule=rule),
    )


_MISSING: Final = re.compile(r"[Mm]issing required \w+ parameter '([^']+)'")
_APEXMEM: Final = (
    (NotFoundError, 404, "not-found", "Not found"),
    (ConcurrencyError, 409, "conflict", "Conflicting write"),
    (IntegrityViolation, 500, "integrity", "The log failed verification"),
    (DiskFullError, 507, "disk-full", "Insufficient storage"),
    (ApexmemError, 409, "rejected", "Request refused"),
)


def _apexmem(request: Request[Any, Any, Any], error: Exception) -> Response[bytes]:
    for kind, status, name, title in _APEXMEM:
        if isinstance(error, kind):
            return _respond(request, problem(status, name, title, str(error)))
    raise AssertionError(f"unhandled {error!r}")


_HTTP_KINDS: Final = {
    400: ("malformed", "Malformed request"),
    401: ("unauthorized", "Unauthorized"),
    403: ("forbidden", "Forbidden"),
    404: ("not-found", "Not found"),
    405: ("method-not-allowed", "Method not allowed"),
    413: ("too-large", "Request body too large"),
}


def _http(request: Request[Any, Any, Any], error: Exception) -> Response[bytes]:
    assert isinstance(error, HTTPException)
    kind, title = _HTTP_KINDS.get(error.status_code, (str(error.status_code), "HTTP error"))
    # The framework's headers stay (a 405's `Allow`, say).
    headers = {str(k): str(v) for k, v in (error.headers or {}).items()}
    return _respond(request, problem(error.status_code, kind, title, str(error.detail)), headers)


def _internal(request: Request[Any, Any, Any], error: Exception) -> Response[bytes]:
    _logger.exception("request.failed", path=request.url.path, error=repr(error))
    return _respond(
        request, problem(500, "internal", "Internal error", "the server failed; see its log")
    )


def exception_handlers() -> ExceptionHandlersMap:
    """Every error the app can raise, mapped to a problem response."""
    return {
        ValidationError: _validation,
        ValidationException: _framework_validation,
        ApexmemError: _apexmem,
        HTTPException: _http,
        Exception: _internal,
    }


def _spec(description: str) -> ResponseSpec:
    return ResponseSpec(
        data_container=Problem,
        description=description,
        media_type=MEDIA_TYPE,
        generate_examples=False,
    )


PROBLEM_RESPONSES: Final[dict[int, ResponseSpec]] = {
    400: _spec("Malformed request, refused by the HTTP layer before it is read"),
    401: _spec("Missing or wrong bearer token (or an unknown tenant)"),
    404: _spec("No such fact, entity or route"),
    409: _spec("Refused: a write raced past every retry, or the memory is read-only"),
    413: _spec("Request body larger than the server's limit"),
    422: _spec("Invalid request: `field`, `value` and `rule` say what and why"),
    507: _spec("The disk holding the memory is full: nothing was written; retry once freed"),
}
"""Documented on every operation (OpenAPI)."""
