"""Codex rollouts written as Codex writes them, for tests of what the toolkit makes of them."""

from __future__ import annotations

import json
from pathlib import Path

#: The thread of :func:`shell_outcomes`.
THREAD = "11111111-1111-4111-8111-111111111111"


def shell_outcomes(folder: Path, outputs: list[str]) -> Path:
    """A rollout in ``folder`` (made) with one ``shell`` call per output, each answered by it."""
    folder.mkdir(parents=True, exist_ok=True)
    lines: list[dict[str, object]] = [{"timestamp": "2026-01-02T03:04:05.000Z", "type": "session_meta",
                                       "payload": {"id": THREAD, "timestamp": "2026-01-02T03:04:05.000Z"}}]
    for i, output in enumerate(outputs):
        lines.append({"timestamp": f"2026-01-02T03:04:0{6 + i}.000Z", "type": "response_item",
                      "payload": {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": f"c{i}"}})
        lines.append({"timestamp": f"2026-01-02T03:04:0{6 + i}.500Z", "type": "response_item",
                      "payload": {"type": "function_call_output", "call_id": f"c{i}", "output": output}})
    path = folder / f"rollout-2026-01-02T03-04-05-{THREAD}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path
