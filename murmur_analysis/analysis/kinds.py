"""The names the command line offers before anything is loaded: report kinds and week starts.

Kept apart from :mod:`.reports` and :mod:`.metrics` (which need pandas) so that ``--help``
and argument checking stay light; those modules take them from here.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["BREAKDOWN_KINDS", "KINDS", "WEEKDAYS", "Weekday"]

#: Every report kind, in the order the command line lists them.
KINDS = ("daily", "weekly", "monthly", "session", "models", "tools", "orphans", "growth")
#: The reports whose spend ``breakdown=True`` splits per model (the others refuse it).
BREAKDOWN_KINDS = ("daily", "weekly", "monthly", "session")

Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
#: The days a week may start on, Monday first (Python's ``date.weekday()`` numbers them so).
WEEKDAYS: tuple[Weekday, ...] = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
