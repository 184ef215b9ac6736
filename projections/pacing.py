"""What the projection runner asks of the process it folds in, and tells it (ADR-0011,
ADR-0115, ADR-0120): whether it may start a page now, that it has caught up, that
events were appended, and whether its last page failed. The policy (ingestion first,
readers waiting) and where the signal lives (one process, or a file shared by the
processes of one SQLite data directory) are the service layer's
(``api.service.pacing``); ``Unpaced`` folds at once and shares nothing."""

from __future__ import annotations

from typing import Protocol


class Pacing(Protocol):
    """The runner's pacing: asked before each page, told after."""

    def may_fold(self) -> bool:
        """Whether the runner may start a page now (the runner's thread)."""
    def caught_up(self) -> None:
        """The runner found nothing to fold: a deferral may start again."""
    def appended(self) -> None:
        """An append stored events (any thread): wakes a runner of another process."""
    def appends_elsewhere(self) -> int | None:
        """A count other processes raise at each append, looked at while the runner is
        idle; None when no other process appends for this runner."""
    def report(self, failing: bool) -> None:
        """Whether the runner's last page failed (for other processes to see)."""


class Unpaced:
    """``Pacing`` that never defers and shares nothing: a runner folding inline (a
    command, a replay) or in a process alone."""

    def may_fold(self) -> bool:
        """Always: nothing is ingested here."""
        return True

    def caught_up(self) -> None:
        """Nothing to reset."""

    def appended(self) -> None:
        """Nobody else to wake."""

    def appends_elsewhere(self) -> int | None:
        """None: appends come from this process only."""
        return None

    def report(self, failing: bool) -> None:
        """Nobody to tell: ``CatchUpRunner.last_error`` says it."""
