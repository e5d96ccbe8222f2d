"""Metrics: tables in, tables out. Nothing here parses a file.

Each function takes frames of a :class:`~murmur_analysis.Corpus` (or the corpus itself) and
returns a pandas frame with Arrow-backed dtypes, ready to plot or to join.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

__all__ = ["growth_curves", "orphan_drops", "token_usage", "tool_error_rates"]

_COUNTERS = (
    "input_total_tokens",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
)


def token_usage(usage: pd.DataFrame, by: Sequence[str] = ("source", "model")) -> pd.DataFrame:
    """Sum the normalized token counters per group.

    Args:
        usage: the ``usage`` frame.
        by: grouping columns.

    Returns:
        One row per group: ``responses``, each counter's sum (null when no row reported it),
        ``cache_hit_ratio`` (cache reads over the whole prompt) and ``retried_responses``
        (attempts whose output was not kept).
    """
    keys = list(by)
    if usage.empty:
        return pd.DataFrame(columns=[*keys, "responses", *_COUNTERS, "cache_hit_ratio", "retried_responses"])
    grouped = usage.groupby(keys, dropna=False, observed=True)
    out = grouped.size().rename("responses").to_frame()
    for counter in _COUNTERS:
        out[counter] = grouped[counter].sum(min_count=1)
    out["cache_hit_ratio"] = out["cache_read_tokens"] / out["input_total_tokens"]
    out["retried_responses"] = grouped["sealed"].apply(lambda s: int((s == False).sum()))  # noqa: E712
    return out.reset_index()


def tool_error_rates(tool_calls: pd.DataFrame, by: Sequence[str] = ("source", "tool_name")) -> pd.DataFrame:
    """Tool outcomes per group: calls, errors, unanswered calls, error rate and latency.

    Results with no call (``orphan_result``) and repeated results are not calls and are left
    out; count them with :func:`orphan_drops`.

    Args:
        tool_calls: the ``tool_calls`` frame.
        by: grouping columns.

    Returns:
        One row per group: ``calls``, ``errors``, ``unanswered``, ``error_rate`` (errors over
        answered calls), ``p50_ms`` and ``p95_ms`` of ``duration_ms`` where timed.
    """
    keys = list(by)
    calls = tool_calls[tool_calls["called_seq"].notna()]
    if calls.empty:
        return pd.DataFrame(columns=[*keys, "calls", "errors", "unanswered", "error_rate", "p50_ms", "p95_ms"])
    grouped = calls.groupby(keys, dropna=False, observed=True)
    out = grouped.size().rename("calls").to_frame()
    out["errors"] = grouped["status"].apply(lambda s: int((s == "error").sum()))
    out["unanswered"] = grouped["status"].apply(lambda s: int((s == "unanswered").sum()))
    answered = out["calls"] - out["unanswered"]
    out["error_rate"] = (out["errors"] / answered.where(answered > 0)).astype("float64")
    out["p50_ms"] = grouped["duration_ms"].quantile(0.5)
    out["p95_ms"] = grouped["duration_ms"].quantile(0.95)
    return out.reset_index()


def orphan_drops(orphans: pd.DataFrame) -> pd.DataFrame:
    """Orphan results per conversation, as assembly finds them and as the runtime recorded them.

    Args:
        orphans: the ``orphans`` frame.

    Returns:
        One row per ``(source, conversation_id)``: ``assembly`` and ``record`` counts of
        distinct orphan ids, and ``disagree``: ids one side names and the other does not.
    """
    columns = ["source", "conversation_id", "assembly", "record", "disagree"]
    if orphans.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for (source, conv), group in orphans.groupby(["source", "conversation_id"], observed=True):
        found = {kind: set(g["tool_use_id"]) for kind, g in group.groupby("found_by", observed=True)}
        assembly, record = found.get("assembly", set()), found.get("record", set())
        disagree = len(assembly ^ record) if "record" in found else 0
        rows.append((source, conv, len(assembly), len(record), disagree))
    return pd.DataFrame(rows, columns=columns)


def growth_curves(growth: pd.DataFrame, event: str | None = None) -> pd.DataFrame:
    """Each conversation's size along its history, with a 0..1 progress axis for overlaying.

    Args:
        growth: the ``growth`` frame.
        event: keep only rows of this event (``commit``, ``message``, ``compaction``).

    Returns:
        The rows sorted by conversation and position, with ``step`` (0-based index within the
        conversation) and ``progress`` (``step`` over the conversation's last step).
    """
    frame = growth if event is None else growth[growth["event"] == event]
    frame = frame.sort_values(["source", "conversation_id", "position"]).copy()
    step = frame.groupby(["source", "conversation_id"], observed=True).cumcount()
    last = step.groupby([frame["source"], frame["conversation_id"]], observed=True).transform("max")
    frame["step"] = step.astype("int64")
    frame["progress"] = (step / last.where(last > 0, 1)).astype("float64")
    return frame.reset_index(drop=True)
