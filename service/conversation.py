"""Conversation in, memory out: append a conversation's messages at once, extract them after.

`add_messages` appends every message of one call as one atomic write and returns; a
background thread then reads the messages no extractor has read (`Backfill`), so the
caller never waits for an extractor. Each message is read once (its verdict is in the
log), the count still waiting is in `stats`, and `extract_pending` waits for it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from apexmem.domain.commands import RecordMessage, build
from apexmem.events.errors import ValidationError
from apexmem.readmodels import ReadModels
from apexmem.readmodels.extraction import pending_count
from apexmem.service.backfill import Backfill, BackfillReport
from apexmem.service.logs import get_logger
from apexmem.service.results import MessageRef
from apexmem.service.writer import Writer

__all__ = ["AddedMessages", "Conversations", "message_fields"]

_logger = get_logger()
_BATCH: Final = 100
"""Messages extracted per background step (the worker checks for close between steps)."""
_ALIASES: Final = {"role": "speaker", "content": "text", "timestamp": "at"}
"""Chat-API spellings of a message's fields (`{"role": "user", "content": "..."}`)."""
_FIELDS: Final = frozenset({"speaker", "text", "at", "ref"})
MAX_MESSAGES_PER_CALL: Final = 10_000


class AddedMessages(msgspec.Struct, frozen=True, kw_only=True):
    """What `add_messages` appended, and how many messages wait for extraction now."""

    episode: str
    messages: list[MessageRef]
    pending: int
    """Messages of the memory no extractor has read yet (these included, unless read)."""


def message_fields(index: int, message: object) -> dict[str, Any]:
    """One message of `add_messages` as RecordMessage fields: `speaker` (or `role`, default
    `user`), `text` (or `content`), optional `at` (or `timestamp`) and `ref`."""
    if not isinstance(message, Mapping):
        raise ValidationError(f"messages[{index}]", message, "is not an object")
    fields: dict[str, Any] = {}
    for key, value in message.items():
        name = _ALIASES.get(key, key)
        if name not in _FIELDS:
            raise ValidationError(
                f"messages[{index}].{key}", value, "is not one of speaker, text, at, ref"
            )
        if name in fields:
            raise ValidationError(f"messages[{index}].{key}", value, f"repeats {name}")
        fields[name] = value
    fields.setdefault("speaker", "user")
    if "text" not in fields:
        raise ValidationError(f"messages[{index}].text", None, "is required")
    return fields


class Conversations:
    """Appends conversations and keeps one background extraction going after each."""

    def __init__(self, writer: Writer, backfill: Backfill, *, store: ReadModels) -> None:
        self._writer = writer
        self._backfill = backfill
        self._store = store
        self._reading = threading.Lock()
        """Held while messages are extracted: the worker and `extract_pending` take turns."""
        self._state = threading.Lock()
        self._worker: threading.Thread | None = None
        self._wanted = False
        self._closed = False

    def add_messages(
        self,
        episode: str,
        messages: Sequence[object],
        *,
        extract: bool = True,
        idempotency_key: str | None = None,
    ) -> AddedMessages:
        """Append `messages` to conversation `episode` in one atomic write; with `extract`,
        start reading them in the background (the call does not wait for it). A retry with
        the same `idempotency_key` writes nothing and answers as the first call did."""
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
            raise ValidationError("messages", messages, "is not a list of messages")
        if not messages:
            raise ValidationError("messages", messages, "is empty")
        if len(messages) > MAX_MESSAGES_PER_CALL:
            raise ValidationError(
                "messages", len(messages), f"holds more than {MAX_MESSAGES_PER_CALL} messages"
            )
        commands = [
            build(RecordMessage, {**message_fields(i, m), "episode": episode})
            for i, m in enumerate(messages)
        ]
        results = self._writer.execute(commands, idempotency_key=idempotency_key)
        refs = [r for r in results if isinstance(r, MessageRef)]
        if extract:
            self._start()
        return AddedMessages(
            episode=commands[0].episode or episode, messages=refs, pending=self.pending()
        )

    def pending(self) -> int:
        """How many messages no extractor has read yet."""
        with self._store.read() as connection:
            return pending_count(connection)

    def extract_pending(self) -> BackfillReport:
        """Read every message still waiting, in this thread (after the worker's current step)."""
        with self._reading:
            return self._backfill.backfill()

    def close(self) -> None:
        """Stop the background extraction after its current step, and wait for it."""
        with self._state:
            self._closed = True
            worker = self._worker
        if worker is not None:
            worker.join()

    def _start(self) -> None:
        with self._state:
            if self._closed:
                return
            self._wanted = True
            if self._worker is not None and self._worker.is_alive():
                return
            self._worker = threading.Thread(
                target=self._run, name="apexmem-extraction", daemon=True
            )
            self._worker.start()

    def _run(self) -> None:
        while True:
            with self._state:
                if self._closed or not self._wanted:
                    self._worker = None
                    return
                self._wanted = False
            try:
                self._drain()
            except Exception as e:  # the messages stay pending: extract_pending or backfill
                _logger.warning("extraction.background_failed", error=repr(e))

    def _drain(self) -> None:
        while True:
            with self._state:
                if self._closed:
                    return
            with self._reading:
                report = self._backfill.backfill(limit=_BATCH)
            if report.messages == 0 or report.pending == 0 or report.failed == report.messages:
                return
