"""Project tools run from the repository root (``python -m scripts.NAME``); not installed."""
