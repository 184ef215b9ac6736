"""Two checkouts' ``serve`` alternated on the same POSTs, beside the bare append: a hot
path's before and after on a machine that drifts (ADR-0183).

``make bench`` measures a before (``--ours-bin``) and an after in two runs minutes apart;
on a 2-core machine of this kind the same ``serve`` was seen to move by 1 ms of CPU per
POST within minutes, more than a change to the request path may save. This runs ``rounds``
rounds, each ingesting the same events into this checkout's server, the other one's and
the bare append (in the six orders in turn: over a multiple of six rounds each runs first,
second and third as often, and each checkout before the other as often), and prints each
one's CPU per 500-event POST (its ``serve`` process) and its rate, then their means.

Run: ``.venv/bin/python -m bench.alternate --other-bin ../before/.venv/bin [--rounds 6]
[--clients 1] [--events 100000] [--json FILE]`` (``../before``: the other checkout, after
``make install``). Never part of ``make test``.
"""

from __future__ import annotations

import argparse
import itertools
import json
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
    orders = list(itertools.permutations(("this", "other", "bare")))
    out: dict[str, list[tuple[float, float]]] = {name: [] for name in orders[0]}
    with tempfile.TemporaryDirectory() as work:
        try:
            for round_ in range(rounds):
                for name in orders[round_ % len(orders)]:
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
    # Resolved here: the servers run from their data directories.
    parser.add_argument("--other-bin", type=lambda p: Path(p).resolve(), required=True,
                        help="the bin directory of the other checkout's venv (the before)")
    parser.add_argument("--rounds", type=int, default=6,
                        help="rounds, each running every server once (default 6)")
    parser.add_argument("--clients", type=int, default=1,
                        help="connections posting at once (default 1)")
    parser.add_argument("--events", type=int, default=100_000,
                        help="events posted to each server per round, 500 a POST "
                             "(default 100,000)")
    parser.add_argument("--json", type=Path,
                        help="also write the runs there: {name: [[cpu_ms, events_s], ...]}")
    args = parser.parse_args()
    measured = alternate(args.other_bin, args.rounds, args.clients, args.events)
    if args.json is not None:
        args.json.write_text(json.dumps(measured, indent=1) + "\n")
    bare = statistics.mean(cpu for cpu, _ in measured["bare"])
    for name, runs in measured.items():
        cpus = [cpu for cpu, _ in runs]
        print(f"{name:5s} CPU per POST: mean {statistics.mean(cpus):.2f} ms "
              f"(min {min(cpus):.2f}, max {max(cpus):.2f}), {statistics.mean(cpus) / bare:.2f}x "
              f"the bare append's mean; {statistics.mean(r for _, r in runs):,.0f} ev/s")


if __name__ == "__main__":
    main()
