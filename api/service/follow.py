"""``miam-economies project``: the projection runner as a process of its own (ADR-0031).

On PostgreSQL the server's workers only append; this process follows the notification log
with the same pull runner as the SQLite server's thread (ADR-0004), folding pages with the
tracking compare-and-set (ADR-0007), so a second runner started by mistake folds nothing
twice. The store's recorder wakes it at each insert of another process where the backend
can tell (PostgreSQL's LISTEN/NOTIFY: ``EconomiesRecorder.listen``), and it looks at the
log every ``poll_interval`` seconds anyway, in case a notification was missed while the
listening connection was down.
"""

from __future__ import annotations

import threading

from miam_economies.api.service.pacing import SharedPacing
from miam_economies.api.service.services import Services

FOLLOW_PAGE = 5_000
"""Events folded per view transaction by a process of its own: it shares no interpreter
with the POSTs, so a page may be long, and ten times the server thread's 500 cut the
fold's CPU by 10-30 % and its time by 25-40 % on 50,000 events (ADR-0115)."""


def follow(services: Services, stop: threading.Event) -> None:
    """Run ``services.runner`` in its thread, and a thread that wakes it at each insert of
    another process, until ``stop`` is set; the caller's ``open_services`` stops the
    runner on exit. Errors of a page are the runner's: logged, shown, retried (ADR-0004).
    """
    services.runner.page_size = FOLLOW_PAGE  # still read 500 at a time (read_size)
    if isinstance(services.pacing.signal, SharedPacing):
        services.pacing.fold_for_other_processes()
    listener = threading.Thread(
        target=services.store.economies_recorder.listen, name="projection-listener",
        args=(services.runner.wake, stop), daemon=True)
    listener.start()
    services.runner.start()
    stop.wait()
    listener.join(5)
