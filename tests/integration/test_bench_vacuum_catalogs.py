"""`places.vacuum_catalogs`: on a server with autovacuum off (this machine's and CI's), the
bench vacuums the system catalogs a dropped schema left dead rows in before it measures."""

import sys
from pathlib import Path

import psycopg
from storage_backends import POSTGRES_URL

# Appended, not first: the bench's module names (recall, search, load) shadow nothing.
sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))

from places import postgres_place, vacuum_catalogs


def _dead_attributes(connection: psycopg.Connection) -> int:
    row = connection.execute(
        "SELECT n_dead_tup FROM pg_stat_sys_tables WHERE relname = 'pg_attribute'"
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_dead_catalog_rows_of_a_dropped_schema_are_vacuumed_when_autovacuum_is_off() -> None:
    place = postgres_place(POSTGRES_URL, "vacuum")
    assert place.url is not None
    with psycopg.connect(place.url, autocommit=True) as connection:
        autovacuum = connection.execute("SHOW autovacuum").fetchone()
        connection.execute(f'CREATE SCHEMA "{place.schema}"')
        connection.execute(f'CREATE TABLE "{place.schema}".wide (a int, b text, c float)')
        connection.execute(f'DROP SCHEMA "{place.schema}" CASCADE')
        connection.execute("SELECT pg_stat_force_next_flush()")
    with psycopg.connect(place.url, autocommit=True) as connection:
        before = _dead_attributes(connection)

    vacuumed = vacuum_catalogs(place)

    with psycopg.connect(place.url, autocommit=True) as connection:
        connection.execute("SELECT pg_stat_clear_snapshot()")
        after = _dead_attributes(connection)
    if autovacuum == ("off",):
        assert before > 0
        assert "pg_attribute" in vacuumed
        assert after == 0
    else:  # autovacuum's own work: nothing done here
        assert vacuumed == []
