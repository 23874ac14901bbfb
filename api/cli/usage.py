"""`apexmem decay-usage`: one A-MEM retrieval-count decay pass, recorded as an event."""

from __future__ import annotations

import click

from apexmem.cli.state import State, pass_state

__all__ = ["decay_usage"]


@click.command(name="decay-usage")
@click.option(
    "--force", is_flag=True, help="Run a pass even if the last one is less than an interval old."
)
@pass_state
def decay_usage(state: State, *, force: bool) -> None:
    """Decay the retrieval counts of facts no recall returned within the interval.

    Each such count is multiplied by `[memory.graph.note_linking] link_weight_decay_lambda`
    (0.95) and truncated; the interval is `link_weight_decay_interval_secs` (86400). A pass
    runs at most once per interval (unless --force) and is an event, so a rebuild gives the
    same counts. Exit status 0 either way; the output says whether a pass ran.

    Example: apexmem decay-usage
    """
    from apexmem.cli.render import moment

    with state.open() as memory:
        done = memory.decay_usage(force=force)
    if done.ran:
        text = (
            f"decayed {done.decayed} retrieval counts by {done.factor:g} (facts not retrieved "
            f"since {moment(done.cutoff)}); next pass due at {moment(done.next_due)}"
        )
    else:
        last = moment(done.previous) if done.previous is not None else "never"
        text = (
            f"not due: the last pass ran at {last}; the next is due at "
            f"{moment(done.next_due)} (--force runs one now)"
        )
    state.say(done, text)
