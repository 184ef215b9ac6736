"""``python -m bench.validation``: ``validate_batch`` of this tree against a git revision's,
and the compiled ``accept_batch`` (ADR-0061) beside them.

Validation is on the ingest hot path (SPEC, "Wire contract": the handler validates,
appends, acknowledges). This script times it in one process, both versions side by side:
the working tree's ``domain.validation`` and the ``domain/validation.py`` of ``--against``
(default ``HEAD``), loaded from git as a module of its own. Bodies are 500-event batches
of ``tests.corpus``, encoded as the plugin's ``JSON.stringify`` does and decoded by the
server's strict decoder (``bench.servers.bodies``, ``loads_strict``), so each call sees what a
POST hands to the validator. Runs alternate between the two versions, so a machine busy
with other work slows both alike; each figure is the median over ``--runs`` runs.

Not a test: it prints figures, it asserts nothing (Makefile: benchmarks are never timed
tests).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.servers import BATCH, bodies
from miam_economies.domain import acceptance, validation
from miam_economies.domain.strict_json import loads_strict
from tests.corpus import generate

ROOT = Path(__file__).resolve().parents[1]


def validator_at(revision: str) -> Callable[[Any], Any]:
    """``validate_batch`` of ``domain/validation.py`` as it is at git ``revision``."""
    source = subprocess.run(["git", "show", f"{revision}:domain/validation.py"], cwd=ROOT,
                            check=True, capture_output=True, text=True).stdout
    module = types.ModuleType(f"validation_at_{revision}")
    module.__file__ = f"{revision}:domain/validation.py"
    sys.modules[module.__name__] = module  # dataclasses look their module up there
    exec(compile(source, module.__file__, "exec"), module.__dict__)  # noqa: S102
    return module.validate_batch  # type: ignore[no-any-return]


def time_one(validate: Callable[[Any], Any], decoded: list[Any]) -> float:
    """Seconds to validate every body of ``decoded`` once."""
    started = time.perf_counter()
    for body in decoded:
        validate(body)
    return time.perf_counter() - started


def main() -> None:
    """Parse the arguments, time both versions, print one line each and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="HEAD", help="git revision (default HEAD)")
    parser.add_argument("--batches", type=int, default=20, help="500-event bodies per run")
    parser.add_argument("--runs", type=int, default=41, help="runs of each version")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    events = generate(args.batches * BATCH, seed=args.seed)[:args.batches * BATCH]
    decoded = [loads_strict(body) for body in bodies(events)]
    versions = {args.against: validator_at(args.against), "tree": validation.validate_batch,
                "accept": acceptance.accept_batch}
    for validate in versions.values():  # same answers, and warm caches before timing
        assert [len(validate(body)) for body in decoded] == [BATCH] * len(decoded)
    times: dict[str, list[float]] = {name: [] for name in versions}
    for _ in range(args.runs):
        for name, validate in versions.items():
            times[name].append(time_one(validate, decoded))
    per_batch = {name: statistics.median(t) / len(decoded) * 1e3 for name, t in times.items()}
    for name, ms in per_batch.items():
        print(f"{name:>12}: {ms:.3f} ms per {BATCH}-event batch "
              f"({ms * 1e3 / BATCH:.2f} µs per event), median of {args.runs} runs "
              f"of {len(decoded)} batches")
    print(f"{'tree / ' + args.against:>12}: {per_batch['tree'] / per_batch[args.against]:.3f}")
    print(f"{'accept / tree':>12}: {per_batch['accept'] / per_batch['tree']:.3f}")


if __name__ == "__main__":
    main()
