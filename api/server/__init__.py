"""The HTTP API (`apexmem serve`): Litestar over `Memory`, one directory or one per tenant.

The app itself is `apexmem.server.app.create_app` (it needs the `server` extra); the pieces
here (configuration, tenants, the bearer guard, problems) are shared with the MCP server.
"""

from apexmem.server.auth import BearerGuard, bearer_token
from apexmem.server.config import DEFAULT_MAX_BODY_BYTES, ServeConfig, is_loopback, resolve_token
from apexmem.server.problem import MEDIA_TYPE, Problem
from apexmem.server.tenants import Tenant, Tenants, check_tenant_name

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "MEDIA_TYPE",
    "BearerGuard",
    "Problem",
    "ServeConfig",
    "Tenant",
    "Tenants",
    "bearer_token",
    "check_tenant_name",
    "is_loopback",
    "resolve_token",
]
