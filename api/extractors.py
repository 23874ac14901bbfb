"""The model extractor: a chat model behind the OpenAI-compatible chat completions protocol
(OpenAI, Azure, Ollama, vLLM, llama.cpp's server, LM Studio), and the choice of extractor
a memory's settings make.

A model that cannot be reached (refused connection, timeout, an HTTP error) raises
`ExtractorUnavailable`: the backfill leaves the message to read again; after
`FAILURES_BEFORE_PAUSE` of those in a row the extractor fails at once for `PAUSE_SECS`, so a
down model does not cost each pending message a timeout. A model that answers
something other than the JSON asked for, or refuses, gives an empty extraction (logged): the
message is marked as read with nothing found, as the seeds degrade a parse failure.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any, Final

from apexmem.domain.chat_extraction import ChatLimits, Unreadable, read_answer, request_body
from apexmem.domain.extraction import Extraction, Extractor, KnownName, Utterance
from apexmem.domain.heuristic import HeuristicExtractor
from apexmem.domain.settings import GraphSettings
from apexmem.events.errors import ApexmemError
from apexmem.service.logs import get_logger

__all__ = [
    "FAILURES_BEFORE_PAUSE",
    "PAUSE_SECS",
    "ChatExtractor",
    "ExtractorUnavailable",
    "extractor_for",
]

_logger = get_logger()
FAILURES_BEFORE_PAUSE: Final = 3
"""Requests in a row the model does not answer before the extractor pauses."""
PAUSE_SECS: Final = 60.0
"""How long a paused extractor fails at once (the messages stay unread) before trying again."""
_DETAIL_BYTES: Final = 300
"""How much of an error response a failure quotes."""


class ExtractorUnavailable(ApexmemError):
    """The model did not answer (unreachable, too slow, or an HTTP error): try again later."""


class ChatExtractor:
    """Reads each message with a chat model, asking for JSON-schema structured output."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key_env: str = "",
        timeout_secs: float = 15.0,
        limits: ChatLimits | None = None,
        environ: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`api_key_env` names the environment variable holding the key (read at each
        request, so a memory opens without it); empty: no key is sent. `clock` (seconds)
        times the pause after failures in a row."""
        self.model = model
        self.url = f"{base_url.rstrip('/')}/chat/completions"
        self._api_key_env = api_key_env
        self._environ = os.environ if environ is None else environ
        self._timeout = timeout_secs
        self._limits = limits if limits is not None else ChatLimits()
        self._clock = clock
        self._failures = 0
        self._paused_until = 0.0

    @property
    def name(self) -> str:
        """`chat.v1:<model>`, recorded with every verdict."""
        return f"chat.v1:{self.model}"

    def extract(self, message: Utterance, known: Mapping[str, KnownName]) -> Extraction:
        """The entities and facts the model finds in `message`, shown its prior turns."""
        if not message.text.strip():
            return Extraction()
        body = request_body(self.model, message, self._limits)
        self._refuse_while_paused()
        try:
            answer = self._post(body)
        except ExtractorUnavailable:
            self._failures += 1
            if self._failures >= FAILURES_BEFORE_PAUSE:
                self._paused_until = self._clock() + PAUSE_SECS
            raise
        self._failures = 0
        content = _content(answer, message)
        if content is None:
            return Extraction()
        try:
            reading = read_answer(content, message, known, self._limits)
        except Unreadable as e:
            _logger.warning(
                "extractor.unreadable",
                model=self.model,
                message_id=str(message.message_id),
                error=str(e),
                answer=content[:_DETAIL_BYTES],
            )
            return Extraction()
        if reading.dropped:
            _logger.info(
                "extractor.dropped",
                model=self.model,
                message_id=str(message.message_id),
                dropped=list(reading.dropped),
            )
        return reading.extraction

    def _refuse_while_paused(self) -> None:
        """Fail at once while paused: a model down or hung would otherwise cost every
        pending message a timeout. After the pause one request is tried again."""
        if self._failures >= FAILURES_BEFORE_PAUSE and self._clock() < self._paused_until:
            raise ExtractorUnavailable(
                f"{self.url} failed {self._failures} times in a row; not asked again for "
                f"{PAUSE_SECS:.0f} s after the last failure"
            )

    def _post(self, body: dict[str, Any]) -> Any:
        """POST the request; the decoded JSON response, or ExtractorUnavailable."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key_env:
            key = self._environ.get(self._api_key_env)
            if not key:
                raise ExtractorUnavailable(
                    f"the environment variable {self._api_key_env} (memory.graph."
                    "extract_api_key_env) holding the API key is not set"
                )
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as e:
            detail = e.read()[:_DETAIL_BYTES].decode(errors="replace")
            raise ExtractorUnavailable(f"{self.url} answered HTTP {e.code}: {detail}") from e
        except (urllib.error.URLError, OSError) as e:  # refused, reset, timed out
            raise ExtractorUnavailable(f"{self.url} did not answer: {e}") from e
        try:
            return json.loads(raw)
        except ValueError as e:
            text = raw[:_DETAIL_BYTES].decode(errors="replace")
            raise ExtractorUnavailable(f"{self.url} answered something not JSON: {text}") from e


def _content(answer: Any, message: Utterance) -> str | None:
    """The text of the answer's first choice; None (logged) for a refusal or no text."""
    try:
        choice = answer["choices"][0]
        said = choice["message"]
    except (KeyError, IndexError, TypeError):
        _logger.warning(
            "extractor.unreadable",
            message_id=str(message.message_id),
            error="no choices[0].message in the response",
        )
        return None
    refusal = said.get("refusal") if isinstance(said, dict) else None
    if refusal:
        _logger.warning("extractor.refused", message_id=str(message.message_id), refusal=refusal)
        return None
    content = said.get("content") if isinstance(said, dict) else None
    if not isinstance(content, str):
        _logger.warning(
            "extractor.unreadable",
            message_id=str(message.message_id),
            error=f"choices[0].message.content is {type(content).__name__}, not text",
        )
        return None
    return content


def extractor_for(graph: GraphSettings) -> Extractor:
    """The extractor `[memory.graph]` names: a chat model when `extract_model` is set, else
    the built-in one."""
    if not graph.extract_model:
        return HeuristicExtractor()
    return ChatExtractor(
        model=graph.extract_model,
        base_url=graph.extract_base_url,
        api_key_env=graph.extract_api_key_env,
        timeout_secs=graph.extraction_timeout_secs,
        limits=ChatLimits(
            max_entities=graph.max_entities_per_message, max_facts=graph.max_edges_per_message
        ),
    )
