"""The service layer: the composition root (``bootstrap``), the settings, and the use
cases every edge calls (read the bilan, replay, compare, migrate, import and export)."""
