"""The RPE gate on the extraction path (`[memory.graph.rpe]`): which messages a backfill
skips as saying little new, judged turn by turn in each conversation (see `domain.rpe`).

The gate's state for a conversation is read from the read models at its first message in a
run (its recent turns and how many were skipped in a row) and then kept as the run goes.
A skip is recorded as the message's verdict (`message-extracted.v1` with its `surprise`),
so replay never judges again and the skips can be counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

from apexmem.domain.embedding import Embedder
from apexmem.domain.extraction import KnownName
from apexmem.domain.rpe import (
    RECENT_TURNS,
    Outcome,
    Surprise,
    Turn,
    TurnState,
    after,
    candidate_names,
    judge,
)
from apexmem.domain.settings import RpeSettings
from apexmem.readmodels import ReadModels
from apexmem.readmodels.extraction import PendingMessage
from apexmem.readmodels.turns import prior_outcomes, skipped_in_row
from apexmem.service.logs import get_logger

__all__ = ["OPEN", "Gate", "GateRun", "OpenRun"]

_logger = get_logger()
_EXTRACT = Surprise(extract=True, rpe=1.0, similarity=0.0, novelty=1.0)
"""The verdict when the gate cannot judge (the embedder failed): read the message."""


class Gate:
    """Judges messages by their surprise, with the memory's embedder and read models."""

    def __init__(self, settings: RpeSettings, embedder: Embedder, store: ReadModels) -> None:
        self.settings = settings
        self._embedder = embedder
        self._store = store

    def run(self) -> GateRun:
        """A fresh pass of the gate, for one backfill."""
        return GateRun(self.settings, self._embedder, self._store)


class GateRun:
    """One backfill's pass: each conversation's gate state, kept as its messages are judged."""

    def __init__(self, settings: RpeSettings, embedder: Embedder, store: ReadModels) -> None:
        self._settings = settings
        self._embedder = embedder
        self._store = store
        self._states: dict[UUID, TurnState] = {}
        self._turns: dict[UUID, Turn] = {}

    def admit(self, message: PendingMessage, known: Mapping[str, KnownName]) -> Surprise:
        """The gate's verdict on `message` (settle it with what became of it)."""
        try:
            turn = self._turn(message.text, known)
            state = self._state(message, known)
        except Exception as e:  # an embedder's failure: read the message rather than lose it
            _logger.warning("rpe.unjudged", message_id=str(message.message_id), error=repr(e))
            return _EXTRACT
        self._turns[message.message_id] = turn
        return judge(
            state,
            turn,
            known,
            threshold=self._settings.threshold,
            max_skip_turns=self._settings.max_skip_turns,
        )

    def settle(
        self, message: PendingMessage, outcome: Outcome, known: Mapping[str, KnownName]
    ) -> None:
        """Record what became of `message` in its conversation's state."""
        turn = self._turns.pop(message.message_id, None)
        try:
            turn = turn if turn is not None else self._turn(message.text, known)
            state = self._state(message, known)
        except Exception as e:  # as in admit: the turn is left out of the state
            _logger.warning("rpe.unjudged", message_id=str(message.message_id), error=repr(e))
            return
        self._states[message.episode_id] = after(state, turn, outcome)

    def _state(self, message: PendingMessage, known: Mapping[str, KnownName]) -> TurnState:
        """The conversation's state before `message`: kept, else read from the read models."""
        state = self._states.get(message.episode_id)
        if state is not None:
            return state
        with self._store.read() as connection:
            prior = prior_outcomes(
                connection, message.episode_id, before=message.position, limit=RECENT_TURNS
            )
            skipped = skipped_in_row(connection, message.episode_id, before=message.position)
        state = TurnState()
        if not prior:
            self._states[message.episode_id] = state
            return state
        vectors = self._embedder.embed([p.text for p in prior])
        for turn, vector in zip(prior, vectors, strict=True):
            state = after(state, Turn(vector, candidate_names(turn.text, known)), turn.outcome)
        state = TurnState(state.recent, skipped)
        self._states[message.episode_id] = state
        return state

    def _turn(self, text: str, known: Mapping[str, KnownName]) -> Turn:
        [vector] = self._embedder.embed([text])
        return Turn(vector, candidate_names(text, known))


class OpenRun:
    """No gate (`[memory.graph.rpe] enabled = false`): every message is read."""

    def admit(self, message: PendingMessage, known: Mapping[str, KnownName]) -> Surprise:
        """Always: read it."""
        return _EXTRACT

    def settle(
        self, message: PendingMessage, outcome: Outcome, known: Mapping[str, KnownName]
    ) -> None:
        """Nothing to keep."""


OPEN = OpenRun()
"""The pass of a backfill without a gate."""
