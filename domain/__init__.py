"""Pure domain of miam-economies: events, validation, formulas and figures (no I/O)."""
