"""Opening a log on PostgreSQL: an unreachable server, an unknown login, another
application's schema or another layout version each give one clear error and write nothing."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import psycopg
import pytest
from storage_backends import POSTGRES_URL, drop_schema, fresh_schema, open_postgres_log

from apexmem.events import ApexmemError, FactsRetrieved, NewEvent, ValidationError
from apexmem.events.postgres_log import LockedPostgresLog, PostgresLog
from apexmem.replay.verify import verify

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]


@pytest.fixture
def schema() -> Iterator[str]:
    """A schema no other test uses, dropped after."""
    name = fresh_schema()
    yield name
    drop_schema(name)


@pytest.fixture
def server() -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
    """A connection of the test's own to the server, to look at what a log wrote."""
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        yield connection


def tables(connection: psycopg.Connection[tuple[Any, ...]], schema: str) -> list[str]:
    """The tables in `schema`, sorted."""
    rows = connection.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY tablename", (schema,)
    )
    return [row[0] for row in rows]


def test_a_server_that_does_not_answer_is_one_error_naming_its_host_and_port() -> None:
    with pytest.raises(ApexmemError, match=r"cannot connect to PostgreSQL at 127\.0\.0\.1:1 "):
        PostgresLog("postgresql://postgres@127.0.0.1:1/test")


def test_an_unknown_login_or_database_is_one_error_naming_the_server() -> None:
    with pytest.raises(ApexmemError, match=r"127\.0\.0\.1:5432 .*role \"no_such_role\""):
        PostgresLog("postgresql://no_such_role:secret@127.0.0.1:5432/test")
    with pytest.raises(ApexmemError, match=r"database 'no_such_database'") as raised:
        PostgresLog("postgresql://postgres:secret@127.0.0.1:5432/no_such_database")

    assert "secret" not in str(raised.value)


def test_a_url_that_is_not_one_or_a_schema_that_is_not_a_name_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"url: 'postgresql://app:\*\*\*@h/db\?bad=1'"):
        PostgresLog("postgresql://app:secret@h/db?bad=1")
    with pytest.raises(ValidationError, match="schema: 'Robert\"; DROP' is not a schema name"):
        PostgresLog(POSTGRES_URL, schema='Robert"; DROP')


def test_a_schema_of_another_application_is_refused_and_left_as_it_was(
    schema: str, server: psycopg.Connection[tuple[Any, ...]]
) -> None:
    server.execute(f"CREATE SCHEMA {schema}; CREATE TABLE {schema}.users (id int)")

    with pytest.raises(ApexmemError, match=f"schema '{schema}' .* another application .users"):
        PostgresLog(POSTGRES_URL, schema=schema)

    assert tables(server, schema) == ["users"]


def test_a_log_of_another_layout_version_is_refused_and_nothing_is_written(
    schema: str, server: psycopg.Connection[tuple[Any, ...]]
) -> None:
    open_postgres_log(schema).close()
    server.execute(f"UPDATE {schema}.apexmem_layout SET version = 2 WHERE part = 'log'")

    with pytest.raises(ApexmemError, match="layout version 2; this apexmem reads version 1"):
        PostgresLog(POSTGRES_URL, schema=schema)

    [(count,)] = server.execute(f"SELECT count(*) FROM {schema}.log_events")
    assert count == 0


def test_opening_without_create_refuses_an_empty_schema_and_creates_nothing(
    schema: str, server: psycopg.Connection[tuple[Any, ...]]
) -> None:
    with pytest.raises(ApexmemError, match="holds no apexmem memory"):
        PostgresLog(POSTGRES_URL, schema=schema, create=False)

    [(found,)] = server.execute("SELECT to_regnamespace(%s) IS NOT NULL", (schema,))
    assert not found


def test_opening_a_log_again_keeps_its_records_and_chain(schema: str) -> None:
    stream = uuid4()
    first = open_postgres_log(schema)
    first.append([NewEvent(stream_id=stream, version=1, data=FactsRetrieved(fact_ids=[stream]))])
    first.close()

    again = PostgresLog(POSTGRES_URL, schema=schema, create=False)
    try:
        events = again.read_stream(stream)
        report = verify(again)
    finally:
        again.close()

    assert [e.version for e in events] == [1]
    assert report.ok and report.events_checked == 1


def test_two_memories_in_two_schemas_of_one_database_keep_apart(schema: str) -> None:
    other = fresh_schema()
    one, two = open_postgres_log(schema), open_postgres_log(other)
    try:
        one.append([NewEvent(stream_id=uuid4(), version=1, data=FactsRetrieved(fact_ids=[]))])

        counts = (one.count(), two.count())
    finally:
        one.close()
        two.close()
        drop_schema(other)

    assert counts == (1, 0)


def test_the_cli_reports_an_unreachable_server_in_one_line_without_a_traceback() -> None:
    done = subprocess.run(
        [*APEXMEM, "--db", "postgresql://u@127.0.0.1:1/x", "verify"],
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )

    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert "127.0.0.1:1" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def _end_session(
    server: psycopg.Connection[tuple[Any, ...]], log: PostgresLog | LockedPostgresLog
) -> None:
    """End the server session of the log's (or locked section's) connection, as a server
    restart does."""
    [(pid,)] = log._query("SELECT pg_backend_pid()", ())
    server.execute("SELECT pg_terminate_backend(%s)", (pid,))
    gone = False
    while not gone:  # the session ends a moment after it is told to
        found = server.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,))
        gone = found.fetchone() is None


def retrieved() -> NewEvent:
    """An event of a new stream."""
    stream = uuid4()
    return NewEvent(stream_id=stream, version=1, data=FactsRetrieved(fact_ids=[stream]))


def test_a_log_reads_and_appends_on_after_the_server_ended_its_idle_session(
    schema: str, server: psycopg.Connection[tuple[Any, ...]]
) -> None:
    log = open_postgres_log(schema)
    try:
        log.append([retrieved()])
        _end_session(server, log)

        read = log.last_position()
        _end_session(server, log)
        appended = log.append([retrieved()])
    finally:
        log.close()

    assert (read, appended.positions) == (1, [2])


def test_an_append_whose_session_ended_before_its_commit_lands_once_when_retried_with_its_key(
    schema: str, server: psycopg.Connection[tuple[Any, ...]]
) -> None:
    log = open_postgres_log(schema)
    events = [retrieved(), retrieved()]

    def cut_off() -> None:
        with log.locked() as locked:
            locked.append(events, idempotency_key="k")
            _end_session(server, locked)

    try:
        with pytest.raises(ApexmemError, match="may or may not have landed"):
            cut_off()

        retried = log.append(events, idempotency_key="k")
        again = log.append(events, idempotency_key="k")
        report = verify(log)
    finally:
        log.close()

    assert retried.positions == again.positions == [1, 2] and again.repeated
    assert report.ok and report.events_checked == 2
