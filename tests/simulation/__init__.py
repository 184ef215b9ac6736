"""Simulations of the classement on data shaped like the plugin's (ADR-0081): the data
model (``shapes``), the coverage of the intervals (``coverage``) and the error rate of the
verdicts (``verdicts``). ``python -m tests.simulation.coverage`` and ``python -m
tests.simulation.verdicts`` print the ADR's tables; the unit tests run them with fixed
seeds and fewer runs."""
