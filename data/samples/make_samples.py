"""Build the bundled samples under data/samples/, deterministically.

Each runtime has a builder module beside this script (``build_<source>.py``) with a
``build(root: Path) -> None`` that writes ``root/<source>/`` from fixed seeds and fixed times,
so running this twice gives the same bytes (git repositories included: fixed author dates).

    python data/samples/make_samples.py            # rebuild every sample
    python data/samples/make_samples.py murmur     # rebuild one
"""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = ("murmur", "litany", "flexigpt", "dispatch", "claude_code", "codex")


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(HERE))
    wanted = argv or [s for s in SOURCES if (HERE / f"build_{s}.py").exists()]
    for name in wanted:
        module = importlib.import_module(f"build_{name}")
        target = HERE / name
        if target.exists():
            shutil.rmtree(target)
        module.build(HERE)
        print(f"built {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
