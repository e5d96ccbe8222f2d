"""The real peer readers, run as whole processes: ccusage and @ccusage/codex, pinned in tests/peers/.

``make test`` installs them (``npm ci`` in ``tests/peers``, exact versions in its
``package-lock.json``). They run offline (``--offline``: their bundled prices) and cut days in
UTC (``--timezone UTC``), on a home named by ``CLAUDE_CONFIG_DIR`` or ``CODEX_HOME``, so they read
that home alone. A missing peer fails the test that needs it: it never skips.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Literal

import pytest

PEERS = Path(__file__).resolve().parent / "peers"
#: The version both peers are pinned to (tests/peers/package.json).
VERSION = "18.0.11"

ClaudeReport = Literal["daily", "weekly", "monthly", "session", "blocks"]
CodexReport = Literal["daily", "monthly", "session"]


def _binary(package: str, name: str) -> list[str]:
    """The command running ``package``'s ``name`` with Node; the test fails when it is not installed."""
    node = shutil.which("node")
    script = PEERS / "node_modules" / package / "dist" / "index.js"
    if node is None or not script.is_file():
        pytest.fail(f"the peer {name} ({package}@{VERSION}) is not installed: run `make peers` "
                    "(npm ci in tests/peers; Debian: apt-get install nodejs npm)", pytrace=False)
    installed = json.loads((PEERS / "node_modules" / package / "package.json").read_text())["version"]
    if installed != VERSION:
        pytest.fail(f"{package} {installed} is installed in tests/peers, not {VERSION}: run `make peers`",
                    pytrace=False)
    return [node, str(script)]


def _run(command: list[str], env: dict[str, str]) -> Any:
    environment = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")}
    environment.update(env, NO_COLOR="1", TZ="UTC")
    done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(command[1:])} exited {done.returncode}:\n{done.stderr}", pytrace=False)
    return json.loads(done.stdout)


def ccusage(report: ClaudeReport, home: Path, *args: str) -> Any:
    """``ccusage <report> --json --offline --timezone UTC`` on the Claude Code home ``home``.

    Args:
        report: ``daily``, ``weekly``, ``monthly``, ``session`` or ``blocks``.
        home: the config dir holding ``projects/`` (``CLAUDE_CONFIG_DIR``).
        args: more options (``--breakdown``, ``--mode calculate``, ...).

    Returns:
        The parsed JSON it printed.
    """
    command = [*_binary("ccusage", "ccusage"), report, "--json", "--offline", "--timezone", "UTC", *args]
    return _run(command, {"CLAUDE_CONFIG_DIR": str(home)})


def ccusage_codex(report: CodexReport, home: Path, *args: str) -> Any:
    """``ccusage-codex <report> --json --offline --timezone UTC`` on the Codex home ``home`` (``CODEX_HOME``).

    Returns:
        The parsed JSON it printed.
    """
    command = [*_binary("@ccusage/codex", "ccusage-codex"), report, "--json", "--offline", "--timezone", "UTC",
               *args]
    return _run(command, {"CODEX_HOME": str(home)})
