"""How `apexmem recall --trace` prints a recall's trace: one table per stage."""

from __future__ import annotations

from rich.table import Table

from apexmem.service.trace import TraceStage

__all__ = ["trace_tables"]


def trace_tables(stages: list[TraceStage]) -> list[Table | str]:
    """A table per stage, in the order the recall ran them: its best candidates (rank,
    score, what, id), titled with its milliseconds and how many candidates it had; a
    stage without candidates is that title alone."""
    shown: list[Table | str] = []
    for stage in stages:
        title = f"{stage.stage}: {stage.ms:.1f} ms, {stage.total} candidates"
        if len(stage.candidates) < stage.total:
            title += f", best {len(stage.candidates)} shown"
        if not stage.candidates:
            shown.append(title)
            continue
        table = Table(title=title, title_justify="left")
        for column in ("#", "score", "what", "id"):
            table.add_column(column, overflow="fold")
        for rank, candidate in enumerate(stage.candidates, 1):
            table.add_row(str(rank), f"{candidate.score:.4g}", candidate.label, candidate.id)
        shown.append(table)
    return shown
