"""The serde_json oracle (``tests/serde_oracle``) and the toolkit's view of the same record.

The oracle is a small Rust program built against the real serde_json (Debian's
``librust-serde-json-dev``, offline, with the crate source the engine's build chooses:
``native/crates.py``). It applies
murmur's host rules to a record file and prints, per line, ``message`` (with the lowered content,
id, role and source id), ``header``, ``skipped`` or ``blank``. :func:`compare` puts the toolkit's
public API (``read_messages`` walked page by page, and ``load``) beside it and returns every
difference, so a test can name the line that disagrees.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

import murmur_analysis as ma

HERE = Path(__file__).resolve().parent
CRATE = HERE / "serde_oracle"
TARGET = HERE.parent / "build" / "serde-oracle"
SKIPPED_KINDS = {"not_a_message", "partial_line", "bad_utf8"}


def _crates() -> Any:
    """``native/crates.py``: where the engine's build takes its crates from (one home for the choice)."""
    spec = importlib.util.spec_from_file_location("murmur_analysis_crates", HERE.parent / "native" / "crates.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


crates = _crates()
ORACLE_CRATES = {"serde_json": "librust-serde-json-dev", "serde_derive": "librust-serde-derive-dev"}


def build() -> Path:
    """Build the oracle (release) and return its binary; raise ``RuntimeError`` saying what is missing."""
    cargo = crates.find_cargo()
    if cargo is None:
        raise RuntimeError(
            "cargo was not found (PATH or ~/.cargo/bin): the serde_json oracle cannot be built. "
            f"{crates.missing_cargo_message()}"
        )
    for crate, package in ORACLE_CRATES.items():
        if not crates.debian_has({crate: package}):
            raise RuntimeError(
                f"{crate} is not in {crates.DEBIAN_REGISTRY}: `apt-get install {package}` (see .ci/run); "
                "the oracle builds offline against Debian's packaged crates."
            )
    proc = subprocess.run(
        [cargo, "build", "--release", "--quiet", "--target-dir", str(TARGET), *crates.cargo_config(ORACLE_CRATES)],
        cwd=CRATE,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "MURMUR_ANALYSIS_CRATES": "debian"},  # serde_json as Debian packages it, offline
    )
    if proc.returncode != 0:
        raise RuntimeError(f"building the serde_json oracle failed:\n{proc.stderr}")
    binary = TARGET / "release" / "serde_oracle"
    if not binary.is_file():
        raise RuntimeError(f"cargo succeeded but {binary} is missing")
    return binary


class Oracle:
    """One long-lived oracle process answering record paths one at a time."""

    def __init__(self, binary: Path) -> None:
        self._proc = subprocess.Popen(
            [str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8"
        )
        self._lock = threading.Lock()

    def verdicts(self, path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """``(one verdict per line, the end record {total, error})`` for a record file."""
        assert "\n" not in str(path)
        with self._lock:
            assert self._proc.stdin is not None and self._proc.stdout is not None
            self._proc.stdin.write(f"{path}\n")
            self._proc.stdin.flush()
            lines: list[dict[str, Any]] = []
            while True:
                raw = self._proc.stdout.readline()
                if not raw:
                    raise RuntimeError("the serde_json oracle exited")
                row = json.loads(raw)
                if row.get("end"):
                    return lines, row
                lines.append(row)

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=10)
        if self._proc.stdout is not None:
            self._proc.stdout.close()


@dataclass
class View:
    """What one side makes of a record."""

    error: str | None = None
    messages: list[tuple[str, str, str | None, str | None]] = field(default_factory=list)  # oldest first
    total: int = 0
    skipped: list[int] = field(default_factory=list)  # 1-based lines reported as not messages
    header: dict[str, Any] | None = None


def oracle_view(oracle: Oracle, path: Path) -> View:
    lines, end = oracle.verdicts(path)
    view = View(error=end["error"], total=end["total"])
    for row in lines:
        if row["verdict"] == "message":
            view.messages.append((row["role"], row["content"], row["id"], row["source_id"]))
        elif row["verdict"] == "skipped":
            view.skipped.append(row["line"])
        elif row["verdict"] == "header":
            view.header = row["header"]
    return view


def paged_view(path: Path, limit: int = 100) -> View:
    """The toolkit's ``read_messages`` walked from the newest page to the oldest, with a fresh reader."""
    reader = ma.RecordReader()
    view = View()
    pages: list[tuple[ma.PageMessage, ...]] = []
    cursor: str | None = None
    try:
        while True:
            page = ma.read_messages(path, cursor, limit, reader=reader)
            if cursor is None:
                view.total = page.total
            pages.append(page.messages)
            view.skipped.extend(d.line for d in page.reports if d.kind in SKIPPED_KINDS and d.line is not None)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
    except ma.ReadMessagesError as err:
        view.error = str(err)
        return view
    except Exception as err:  # noqa: BLE001 - anything else a walk raises is itself the finding
        view.error = f"raised {type(err).__name__}: {err}"
        return view
    newest_first = [m for messages in pages for m in messages]
    view.messages = [(m.role, m.content, m.id, m.source_id) for m in reversed(newest_first)]
    view.skipped.sort()
    view.header = reader.header(path)
    return view


def loaded_view(path: Path) -> tuple[list[tuple[str, str | None]], list[int]]:
    """``ma.load`` of one record: its messages' ``(role, id)`` in order and the lines it reported skipped."""
    corpus = ma.load(path, source="murmur", options={"murmur": {"settle_seconds": 0, "discover_sessions": False}})
    frame = corpus.messages.sort_values("seq")
    pairs = zip(frame["role"], frame["message_id"], strict=True)
    messages = [(str(r), None if pd.isna(i) else str(i)) for r, i in pairs]
    diags = corpus.diagnostics
    skipped = sorted(int(x) for x, k in zip(diags["line"], diags["kind"], strict=True) if k in SKIPPED_KINDS)
    return messages, skipped


def compare(oracle: Oracle, path: Path, *, limit: int = 100, load: bool = True) -> list[str]:
    """Every way the toolkit's public API disagrees with serde_json on one record (empty when exact)."""
    want = oracle_view(oracle, path)
    got = paged_view(path, limit)
    out: list[str] = []
    if want.error is not None:
        expected = f"unavailable: {want.error}"
        if got.error != expected:
            out.append(f"read error: serde says {expected!r}, read_messages gave {got.error!r} "
                       f"({len(got.messages)} messages)")
    elif got.error is not None:
        out.append(f"read_messages raised {got.error!r}; serde reads {want.total} messages")
    else:
        if got.total != want.total:
            out.append(f"total: serde {want.total}, read_messages {got.total}")
        for n, (w, g) in enumerate(zip(want.messages, got.messages, strict=False)):
            if w != g:
                out.append(f"message {n}: serde {w!r}, read_messages {g!r}")
                break
        if len(want.messages) != len(got.messages):
            out.append(f"messages: serde {len(want.messages)}, read_messages {len(got.messages)}")
        if got.skipped != want.skipped:
            out.append(f"skipped lines: serde {want.skipped}, read_messages reported {got.skipped}")
        if (want.header is None) != (got.header is None):
            out.append(f"header: serde {want.header!r}, read_messages {got.header!r}")
    if load:
        try:
            loaded, skipped = loaded_view(path)
        except Exception as err:  # noqa: BLE001 - a load that raises is itself the finding
            out.append(f"load raised {type(err).__name__}: {err}")
        else:
            expected_ids = [(role, msg_id) for role, _, msg_id, _ in want.messages] if want.error is None else []
            if loaded != expected_ids:
                out.append(f"load messages: serde {expected_ids!r}, load {loaded!r}")
            if want.error is None and skipped != want.skipped:
                out.append(f"load skipped lines: serde {want.skipped}, load reported {skipped}")
    return out
