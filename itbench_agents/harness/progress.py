"""A rich progress bar with live pass counts for batches."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from .batch import BatchSummary
from .records import EpisodeRecord


class BatchProgress:
    def __init__(self, console: Console, total: int, completed: int = 0) -> None:
        self.progress = Progress(
            TextColumn("episodes"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=not console.is_terminal,
        )
        self.task = self.progress.add_task("", total=total, completed=completed)
        self.console = console

    def __enter__(self) -> BatchProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def update(self, rec: EpisodeRecord, s: BatchSummary) -> None:
        agents = s.per_agent()
        if len(agents) > 1:  # each agent's own passes, never one agent's added to another's
            desc = " │ ".join(f"{name} {_describe(sub)}".strip() for name, sub in agents.items())
        else:
            desc = _describe(s)
        self.progress.update(self.task, advance=1, description=desc)
        on_cluster = bool(rec.mitigation and rec.mitigation.applicable)  # SRE, FinOps cost incidents
        if not self.console.is_terminal and rec.persona != "sre" and not on_cluster:
            marks = " ".join(  # the persona's common scores (a class's own names alias them)
                f"{k} {'✓' if v.passed else '✗'}" for k, v in list(rec.scores.items())[:5]
            )
            self.console.print(
                f"{rec.episode_id}: {rec.termination} {marks}".rstrip(), highlight=False, soft_wrap=True
            )
        elif not self.console.is_terminal:
            d = "✓" if rec.diagnosis and rec.diagnosis.correct else "✗"
            m = (
                "-"
                if not rec.mitigation or not rec.mitigation.applicable
                else ("✓" if rec.mitigation.passed else "✗")
            )
            near = " ".join(  # FinOps: the proximity metrics are values, not passes
                f"{k.removeprefix('proximity_')} {v.value:.2f}"
                for k, v in rec.scores.items()
                if k.startswith("proximity_")
            )
            self.console.print(
                f"{rec.episode_id}: {rec.termination} diag {d} mitig {m}"
                + (f" proximity {near}" if near else ""),
                highlight=False,
                soft_wrap=True,  # one line per episode in a log, whatever its width (rich folds at 80)
            )


def _describe(s: BatchSummary) -> str:
    """The progress bar's counts for one summary (rich markup)."""
    anomaly = [r for r in s.records if r.persona == "finops" and "pinpointed" in r.scores]
    return (
        (
            f"[green]diag {s.diagnosis_pass}/{s.sre_ran}[/] [cyan]mitig {s.mitigation_pass}/{s.mitigation_applicable}[/]"
            if s.sre_ran or not (s.compliance_scored or anomaly)
            else ""
        )
        + (
            f" [magenta]compliance {s.compliance_pass}/{s.compliance_scored}[/]"
            if s.compliance_scored
            else ""
        )
        + (
            f" [yellow]anomaly {sum(r.scores['pinpointed'].passed for r in anomaly)}/{len(anomaly)}[/]"
            if anomaly
            else ""
        )
        + (f" [red]err {s.errors}[/]" if s.errors else "")
    ).strip()
