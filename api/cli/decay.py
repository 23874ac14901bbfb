"""`apexmem decay`: one decay pass, the facts that crossed the recall threshold recorded as
one event."""

from __future__ import annotations

import click

from apexmem.cli.params import COUNT_OR_ZERO
from apexmem.cli.state import State, pass_state

__all__ = ["decay"]


@click.command()
@click.option(
    "--show",
    default=20,
    show_default=True,
    type=COUNT_OR_ZERO,
    help="Facts listed at most (each for faded and restored); the counts are always complete.",
)
@pass_state
def decay(state: State, *, show: int) -> None:
    """Record which facts faded from recall since the previous pass, and which came back.

    Recall leaves out facts whose decayed confidence (c * exp(-rate * days since last
    observed)) is under 0.1; this pass writes that down as one event (facts-faded.v1)
    naming the facts that went under it since the previous pass and those a
    reinforcement or a lower rate lifted back, with the rate that applied. Nothing is
    written when none crossed. Run it periodically (cron) like evict; `apexmem history`
    and `apexmem diff` then show the fades.

    Example: apexmem decay
    """
    from apexmem.cli.ids import short_fact
    from apexmem.cli.render import console, emit_json, moment

    with state.open() as memory:
        done = memory.record_fades()
    if state.as_json:
        emit_json(done)
        return
    if not done.position:
        console.print(
            f"nothing crossed the recall threshold ({done.threshold:g}) at {moment(done.at)}"
        )
        return
    console.print(
        f"at {moment(done.at)}: {len(done.faded)} faded, {len(done.restored)} restored "
        f"(threshold {done.threshold:g}; position {done.position})"
    )
    for word, facts in (("faded", done.faded), ("restored", done.restored)):
        for f in facts[:show]:
            console.print(
                f"  {word} {short_fact(f.fact_id)}  {f.fact}  ({f.reason}, {f.rate:g}/day, "
                f"confidence {f.confidence:.3g}, last observed {moment(f.observed_at)})"
            )
    hidden = max(len(done.faded) - show, 0) + max(len(done.restored) - show, 0)
    if hidden:
        console.print(f"  ... and {hidden} more (--show N, or --json for all)")
