"""A server's CPU time from ``/proc``: its own, and its descendants' (issue 22, item 1).

``serve`` may fold the projection in a child process, and with ``--workers N`` uvicorn
serves from children: the CPU a POST costs is then spread over a process tree. A snapshot
reads, for the root process and every live descendant (``/proc/<pid>/task/*/children``,
recursively), ``utime + stime``, and ``cutime + cstime``: the CPU of children already
exited and waited for, which would otherwise be lost. And each process's peak RSS. Linux
only.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
"""Clock ticks per second: the unit of ``/proc/<pid>/stat``'s times."""


def times(pid: int) -> tuple[float, float] | None:
    """``(utime + stime, cutime + cstime)`` of ``pid`` in seconds; None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # Fields after the command name (which may hold spaces and parentheses): state is
    # field 3, so utime, stime, cutime, cstime (fields 14-17) are at 11-14 here.
    fields = text.rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return (utime + stime) / TICK, (cutime + cstime) / TICK


def children(pid: int) -> list[int]:
    """The live children of ``pid`` (of any of its threads)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread ended meanwhile
    return out


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid``, children first."""
    found: list[int] = []
    queue = children(pid)
    while queue:
        child = queue.pop(0)
        found.append(child)
        queue += children(child)
    return found


def wait_gone(pids: list[int], timeout: float) -> None:
    """Wait until none of ``pids`` is alive (``/proc/<pid>`` gone or a zombie), at most
    ``timeout`` seconds in all; raises ``TimeoutError`` naming those left."""
    deadline = time.monotonic() + timeout
    while left := [pid for pid in pids if alive(pid)]:
        if time.monotonic() > deadline:
            raise TimeoutError(f"processes still running after {timeout} s: {left}")
        time.sleep(0.05)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, which holds no file, does not)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return text.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie holds no file


def peak_rss_mb(pid: int) -> float:
    """The peak resident set size of ``pid`` so far (``VmHWM``), MB; 0 once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    line = next((x for x in status.splitlines() if x.startswith("VmHWM:")), "VmHWM: 0 kB")
    return int(line.split()[1]) / 1024


@dataclass(frozen=True)
class Snapshot:
    """The CPU seconds of a process tree at one instant: ``own`` (the root's utime +
    stime), ``reaped`` (the root's cutime + cstime), and ``each`` (every live descendant's
    four times summed, by pid)."""

    own: float
    reaped: float
    each: dict[int, float] = field(default_factory=dict)


def snapshot(pid: int) -> Snapshot:
    """The CPU of ``pid`` and its live descendants now. Raises ``ProcessLookupError``
    when ``pid`` is gone."""
    root = times(pid)
    if root is None:
        raise ProcessLookupError(pid)
    each = {}
    for child in descendants(pid):
        child_times = times(child)
        if child_times is not None:
            each[child] = sum(child_times)
    return Snapshot(root[0], root[1], each)


def between(before: Snapshot, after: Snapshot) -> tuple[float, float]:
    """CPU seconds spent from ``before`` to ``after``: ``(root, descendants)``. A
    descendant gone meanwhile counts through its parent's ``cutime`` (once waited for),
    less what it had already spent at ``before``."""
    spent = after.reaped - before.reaped
    spent += sum(cpu - before.each.get(pid, 0.0) for pid, cpu in after.each.items())
    spent -= sum(cpu for pid, cpu in before.each.items() if pid not in after.each)
    return after.own - before.own, spent
