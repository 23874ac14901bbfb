"""The HTTP and MCP reference pages, generated from the API's own OpenAPI document and from
the MCP server's tool list.

Run `python -m apexmem.server.reference` from the repository root to write
docs/reference/http.md and docs/reference/mcp.md; tests/docs/test_generated_references.py
fails when one is stale.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any, Final

__all__ = ["HTTP_PATH", "MCP_PATH", "main", "openapi_document", "render_http", "render_mcp"]

HTTP_PATH: Final = Path("docs/reference/http.md")
MCP_PATH: Final = Path("docs/reference/mcp.md")
REGENERATE: Final = "python -m apexmem.server.reference"
_METHODS: Final = ("get", "post", "put", "patch", "delete")


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document `apexmem serve` publishes at /v1/openapi.json (one memory)."""
    from apexmem.server.app import create_app
    from apexmem.server.tenants import Tenants

    with tempfile.TemporaryDirectory() as directory:
        tenants = Tenants(single=Path(directory), token="reference-token-0123456789")
        pages = create_app(tenants)
        document: dict[str, Any] = pages.app.app.api.openapi_schema.to_schema()
        tenants.close()
    return document


def render_http(document: dict[str, Any] | None = None) -> str:
    """Markdown for every operation: method and path, what it does, its parameters."""
    document = document or openapi_document()
    lines = [
        "# HTTP API reference",
        "",
        f"<!-- Generated from the OpenAPI document; do not edit. Run: {REGENERATE} -->",
        "",
        "`apexmem serve` publishes this API under `/v1` (under `/v1/tenants/<name>` with",
        "`--tenants`), and its OpenAPI 3.1 document at `GET /v1/openapi.json`. Every request",
        "but `GET /v1/health` needs `Authorization: Bearer <token>` (`GET /v1/status` a read",
        "token, as every read). Errors are `application/problem+json`; a",
        "validation problem (422) names `field`, `value` and `rule`. Writes take an",
        "`Idempotency-Key` header. The web explorer's page is at `/explore` (no token needed",
        "for the page; it asks for one and reads the operations below). The same operations",
        "on the other surfaces: [every operation on every surface](surfaces.md).",
        "",
        "| operation | what it does |",
        "|---|---|",
    ]
    operations = [
        (method.upper(), path, spec)
        for path, item in sorted(document["paths"].items())
        for method, spec in item.items()
        if method in _METHODS
    ]
    for method, path, spec in operations:
        lines.append(f"| `{method} {path}` | {_cell(_said(spec))} |")
    lines.append("")
    for method, path, spec in operations:
        lines += _operation(method, path, spec)
    return "\n".join(lines).rstrip() + "\n"


def _operation(method: str, path: str, spec: dict[str, Any]) -> list[str]:
    lines = [
        f"## `{method} {path}`",
        "",
        f"`{spec.get('operationId', '')}`: {_cell(_said(spec))}",
        "",
    ]
    parameters = spec.get("parameters", [])
    if parameters:
        lines += ["| parameter | in | required | type | meaning |", "|---|---|---|---|---|"]
        for p in parameters:
            lines += _parameter_rows(p)
        lines.append("")
    body = spec.get("requestBody", {}).get("content", {}).get("application/json", {})
    if body:
        lines += [f"Body: {_kind(body.get('schema', {}))} (JSON).", ""]
    answer = spec.get("responses", {}).get("200", {}).get("content", {})
    for media, content in answer.items():
        lines += [f"Answer: {_kind(content.get('schema', {}))} (`{media}`).", ""]
    return lines


def _parameter_rows(p: dict[str, Any]) -> list[str]:
    """A parameter's row; a form-exploded object's members each a row (each is sent as its
    own query parameter), after a line saying the rule across them."""
    schema = p.get("schema", {})
    if p.get("explode") and schema.get("type") == "object":
        rule = f"| | {p['in']} | | | {_cell(p.get('description', ''))} |"
        return [rule] + [
            f"| `{name}` | {p['in']} | no | {_kind(member)} "
            f"| {_cell(member.get('description', ''))} |"
            for name, member in schema.get("properties", {}).items()
        ]
    required = "yes" if p.get("required") else "no"
    return [
        f"| `{p['name']}` | {p['in']} | {required} | {_kind(schema)} "
        f"| {_cell(p.get('description', ''))} |"
    ]


def _said(spec: dict[str, Any]) -> str:
    """What the operation does: its handler's docstring."""
    return str(spec.get("description") or spec.get("summary", ""))


def _kind(schema: dict[str, Any]) -> str:
    """A schema in a few words: a named component, a type, or the alternatives."""
    if "$ref" in schema:
        return f"`{schema['$ref'].rsplit('/', 1)[-1]}`"
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return " or ".join(_kind(s) for s in schema[key])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_kind(schema.get('items', {}))}"
    shown = f"{kind} ({schema['format']})" if "format" in schema else str(kind)
    return shown.replace("null", "none")


def render_mcp() -> str:
    """Markdown for every MCP tool: what it does, whether it writes, its arguments."""
    import msgspec

    from apexmem.mcp_server import TOOLS

    lines = [
        "# MCP tools reference",
        "",
        f"<!-- Generated from apexmem.mcp_server.TOOLS; do not edit. Run: {REGENERATE} -->",
        "",
        "`apexmem mcp` serves these tools over stdio (default) or streamable HTTP at `/mcp`",
        "(`--transport http`, with the bearer token). Each result is text for the model plus",
        "structured content; the input schemas are the JSON schemas of the same wire types",
        "the HTTP API takes. Times are ISO 8601 with a zone. The same operations on the",
        "other surfaces: [every operation on every surface](surfaces.md).",
        "",
        "| tool | writes | what it does |",
        "|---|---|---|",
    ]
    for tool in TOOLS:
        writes = "no" if tool.read_only else "yes"
        lines.append(f"| `{tool.name}` | {writes} | {_cell(tool.description)} |")
    lines.append("")
    for tool in TOOLS:
        info = msgspec.inspect.type_info(tool.input)
        assert isinstance(info, msgspec.inspect.StructType)
        lines += [f"## `{tool.name}`", "", _cell(tool.description), ""]
        lines += ["| argument | required | default |", "|---|---|---|"]
        for field in info.fields:
            default = ""
            if field.default is not msgspec.NODEFAULT:
                default = f"`{msgspec.json.encode(field.default).decode()}`"
            elif field.default_factory is not msgspec.NODEFAULT:
                default = f"`{msgspec.json.encode(field.default_factory()).decode()}`"
            required = "yes" if field.required else "no"
            lines.append(f"| `{field.name}` | {required} | {default} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def main() -> None:
    """Write both pages under the current directory (the repository root)."""
    for path, text in ((HTTP_PATH, render_http()), (MCP_PATH, render_mcp())):
        path.write_text(text, encoding="utf-8")
        sys.stdout.write(f"wrote {path}\n")


if __name__ == "__main__":
    main()
