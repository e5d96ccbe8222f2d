"""Helpers that write murmur record lines the way murmur's runtime does (serde_json, sorted keys)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson


def line(value: Any) -> str:
    """One record line: compact JSON with sorted keys, as serde_json without preserve_order."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def id_at(n: int) -> str:
    """Murmur's test ids: ``msg_`` + n as 32 hex digits."""
    return f"msg_{n:032x}"


def message(n: int, role: str = "user", text: str = "m") -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}], "id": id_at(n)}


def write_record(path: Path, values: list[Any], tail: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line(v) + "\n" for v in values) + tail, encoding="utf-8")
    return path


def append(path: Path, values: list[Any]) -> None:
    with path.open("a", encoding="utf-8") as f:
        for v in values:
            f.write(line(v) + "\n")
