"""`apexmem backfill`: extract entities and facts from the stored messages not read yet."""

from __future__ import annotations

import click

from apexmem.cli.params import COUNT_OR_ZERO
from apexmem.cli.progress import progress_bar
from apexmem.cli.state import State, pass_state

__all__ = ["backfill"]


@click.command()
@click.option(
    "--limit",
    type=COUNT_OR_ZERO,
    metavar="N",
    help="Read at most N messages, oldest first (default: every unread one).",
)
@pass_state
def backfill(state: State, *, limit: int | None) -> None:
    """Extract entities and facts from the stored messages no extractor has read yet.

    The built-in heuristic extractor makes each speaker a person, takes capitalized names
    and names the memory already knows as mentions, and asserts a low-confidence
    `mentioned_with` fact for every two entities of a message. Messages the
    prompt-injection check flags are skipped (stored, never extracted). With
    `[memory.graph] extract_model` set, a chat model reads them instead; with
    `[memory.graph.rpe] enabled`, turns that say little new are skipped. Every verdict is
    an event, so running it again reads nothing new.

    Example: apexmem backfill --limit 500
    """
    with state.open() as memory, progress_bar("extracting", as_json=state.as_json) as bar:
        report = memory.backfill(limit=limit, progress=bar)
    gated = f"{report.gated} skipped by the RPE gate, " if report.gated else ""
    state.say(
        report,
        f"read {report.messages} messages ({report.extractor}): "
        f"{report.skipped} skipped as prompt injection, {gated}{report.failed} failed, "
        f"{report.entities} entity mentions, {report.facts} facts asserted; "
        f"{report.pending} messages left to read",
    )
