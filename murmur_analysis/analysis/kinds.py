"""The names the command line offers before anything is loaded: report kinds and week starts.

Kept apart from :mod:`.reports` and :mod:`.metrics` (which need pandas) so that ``--help``
and argument checking stay light; those modules take them from here.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["BREAKDOWN_KINDS", "CCUSAGE_KINDS", "KINDS", "TEXTLESS_KINDS", "WEEKDAYS", "Weekday"]

#: Every report kind, in the order the command line lists them.
KINDS = ("daily", "weekly", "monthly", "session", "blocks", "models", "tools", "orphans", "growth")
#: The reports whose spend ``breakdown=True`` splits per model (the others refuse it).
BREAKDOWN_KINDS = ("daily", "weekly", "monthly", "session")
#: The reports of spend alone: they show no text, so the command line loads for them without it
#: (as ``--no-text``: the text columns are the most of a load's bytes and time).
TEXTLESS_KINDS = ("daily", "weekly", "monthly", "blocks", "models")
#: The reports ``--ccusage-json`` writes with ccusage's field names (ccusage has these reports).
CCUSAGE_KINDS = ("daily", "weekly", "monthly", "session", "blocks")

Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
#: The days a week may start on, Monday first (Python's ``date.weekday()`` numbers them so).
WEEKDAYS: tuple[Weekday, ...] = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
