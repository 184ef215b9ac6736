"""Two checkouts' ``serve`` alternated on the same POSTs, beside the bare append: a hot
path's before and after on a machine that drifts (ADR-0183).

``make bench`` measures a before (``--ours-bin``) and an after in two runs minutes apart;
on a 2-core machine of this kind the same ``serve`` was seen to move by 1 ms of CPU per
POST within minutes, more than a change to the request path may save. This runs ``rounds``
rounds, each ingesting the same events into this checkout's server, the other one's and
the bare append (in turn first, second, third from one round to the next) and prints each
one's CPU per 500-event POST (its ``serve`` process) and its rate, then their means.

Run: ``python -m bench.alternate --ours-bin ../before/.venv/bin [--rounds 8] [--clients
1] [--events 100000]``. Never part of ``make test``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench import servers
from bench.ingest import _section
from bench.servers import bodies, corpus


def alternate(other: Path, rounds: int, clients: int, events: int
              ) -> dict[str, list[tuple[float, float]]]:
    """``{"this", "other", "bare"}``: each a list, per round, of ``(CPU ms per POST of the
    serve process, events/s)``; ``other`` is the ``bin`` directory of the other checkout's
    venv."""
    batches = bodies(corpus(events, seed=1))
    own = servers.OURS_BIN
    order = ["this", "other", "bare"]
    out: dict[str, list[tuple[float, float]]] = {name: [] for name in order}
    with tempfile.TemporaryDirectory() as work:
        try:
            for round_ in range(rounds):
                for name in order[round_ % 3:] + order[:round_ % 3]:
                    servers.OURS_BIN = other if name == "other" else own
                    kind = "bare" if name == "bare" else "ours"
                    figures = _section(kind, batches, clients,
                                       Path(work) / f"{name}-{round_}").figures()
                    out[name].append((figures["cpu_server_ms"], figures["rate"]))
                    print(f"round {round_}: {name:5s} {figures['cpu_server_ms']:.2f} ms CPU "
                          f"per POST, {figures['rate']:,.0f} ev/s", flush=True)
        finally:
            servers.OURS_BIN = own
    return out


def main() -> None:
    """The command line (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ours-bin", type=Path, required=True,
                        help="the other checkout's venv bin directory")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--events", type=int, default=100_000)
    args = parser.parse_args()
    measured = alternate(args.ours_bin, args.rounds, args.clients, args.events)
    bare = statistics.mean(cpu for cpu, _ in measured["bare"])
    for name, runs in measured.items():
        cpus = [cpu for cpu, _ in runs]
        print(f"{name:5s} CPU per POST: mean {statistics.mean(cpus):.2f} ms "
              f"(min {min(cpus):.2f}, max {max(cpus):.2f}), {statistics.mean(cpus) / bare:.2f}x "
              f"the bare append's mean; {statistics.mean(r for _, r in runs):,.0f} ev/s")


if __name__ == "__main__":
    main()
