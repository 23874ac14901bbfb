"""Where a memory lives: a directory, or a schema of a PostgreSQL database."""

from __future__ import annotations

from pathlib import Path

import pytest

from apexmem.events.errors import ValidationError
from apexmem.location import DEFAULT_SCHEMA, locate
from apexmem.server.tenants import tenant_schema


def test_a_path_names_a_directory_with_home_expanded() -> None:
    location = locate("~/mem")
    assert location.url is None
    assert location.directory == Path.home() / "mem"
    assert not location.on_postgres


def test_a_url_names_a_schema_and_a_cache_directory_of_its_own(tmp_path: Path) -> None:
    location = locate("postgresql://app@db.internal:6543/memory?schema=team_a", cache=tmp_path)
    assert location.url == "postgresql://app@db.internal:6543/memory"
    assert location.schema == "team_a"
    assert location.directory == tmp_path / "db.internal-6543" / "memory" / "team_a"


def test_a_url_without_a_schema_uses_the_default_and_keeps_other_parameters() -> None:
    location = locate("postgresql+psycopg://app@db/memory?sslmode=require")
    assert location.schema == DEFAULT_SCHEMA
    assert location.url == "postgresql://app@db/memory?sslmode=require"


def test_a_password_is_never_shown() -> None:
    assert "s3cret" not in str(locate("postgresql://app:s3cret@db/memory"))


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("postgresql://app@db/memory?schema=Bad-Name", "schema"),
        ("postgresql://app@db/memory?schema=a&schema=b", "schema"),
        ("postgresql://app@db", "url"),
    ],
)
def test_a_bad_url_is_refused_by_field(url: str, field: str) -> None:
    with pytest.raises(ValidationError) as raised:
        locate(url)
    assert raised.value.field == field


def test_tenant_schemas_never_collide() -> None:
    names = ["a-b", "a_b", "a__b", "a_db", "a-", "a_d"]
    schemas = [tenant_schema(name) for name in names]
    assert len(set(schemas)) == len(names)
    assert tenant_schema("acme") == "t_acme"


def test_a_tenant_name_too_long_for_a_schema_is_refused() -> None:
    with pytest.raises(ValidationError, match="too long"):
        tenant_schema("a" + "_" * 40)
