"""`apexmem ingest`: JSON lines of commands, good lines kept, bad ones reported by line number."""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from typing import Final

import msgspec

from apexmem.domain.commands import Command, decode_command
from apexmem.events.errors import ApexmemError, DiskFullError, ValidationError
from apexmem.memory import Memory

__all__ = ["IngestReport", "LineError", "ingest"]

_CHUNK: Final = 500


class LineError(msgspec.Struct, frozen=True):
    """One line that was not applied, and why."""

    line: int
    error: str


class IngestReport(msgspec.Struct, kw_only=True):
    """What an ingest did: lines read, commands applied, lines that failed."""

    lines: int = 0
    applied: int = 0
    failed: list[LineError] = []


def ingest(memory: Memory, lines: Iterable[bytes], report: IngestReport) -> Iterator[int]:
    """Apply JSON-lines commands in atomic chunks; yields after each line for progress.

    Each line is decoded as UTF-8 on its own, so a line that is not costs only itself; a
    byte-order mark before the first line is ignored. A chunk that fails as a whole is
    retried one command at a time, so one bad command costs only its own line.
    """
    chunk: list[tuple[int, Command]] = []
    for number, raw in enumerate(lines, start=1):
        report.lines = number
        line = raw.removeprefix(codecs.BOM_UTF8) if number == 1 else raw
        if line.strip():
            try:
                chunk.append((number, decode_command(_text(line))))
            except ApexmemError as e:
                report.failed.append(LineError(number, str(e)))
        if len(chunk) >= _CHUNK:
            _apply(memory, chunk, report)
            chunk = []
        yield number
    _apply(memory, chunk, report)


def _text(line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as e:
        shown = line.rstrip(b"\r\n").decode("utf-8", errors="replace")
        rule = f"is not UTF-8 (byte {e.start + 1} is 0x{line[e.start]:02x}: {e.reason})"
        raise ValidationError("line", shown, rule) from e


def _apply(memory: Memory, chunk: list[tuple[int, Command]], report: IngestReport) -> None:
    if not chunk:
        return
    try:
        memory.execute([command for _, command in chunk])
        report.applied += len(chunk)
        return
    except ApexmemError:
        pass
    for number, command in chunk:
        try:
            memory.execute([command])
            report.applied += 1
        except DiskFullError as e:  # every line after it would fail alike
            raise DiskFullError(f"stopped at line {number}, not applied: {e}") from e
        except ApexmemError as e:
            report.failed.append(LineError(number, str(e)))
    report.failed.sort(key=lambda f: f.line)
