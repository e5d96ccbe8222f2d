"""Execute every notebook on the samples (or other data) and write self-contained HTML reports.

    python notebooks/report.py [--data PATH ...] [--sessions DIR ...] [--prices CSV] [--out build/report]

Each notebook runs in a fresh kernel and becomes
``<out>/<notebook>.html``: its text, tables and figures (embedded), without the code; every figure is also written as
``<out>/figures/<notebook>-<n>.png``, and ``<out>/index.html`` links them all. The kernel's
environment carries the data (``MURMUR_ANALYSIS_DATA``), the murmur session work dirs whose traces
hold its token usage (``MURMUR_ANALYSIS_SESSIONS``) and a price file (``MURMUR_ANALYSIS_PRICES``),
which the notebooks' parameter cell reads (``murmur_analysis.loading.samples``). The notebooks on disk are
left without outputs.
"""

from __future__ import annotations

import argparse
import base64
import html
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbconvert import HTMLExporter
from tqdm import tqdm

from murmur_analysis.loading.samples import DATA_VARIABLE, PRICES_VARIABLE, SESSIONS_VARIABLE

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
STATIC_WIDGET_NOTE = (
    "<p><i>The interactive explorer runs in JupyterLab with a live kernel: "
    "open this notebook there to pick a conversation and page it.</i></p>"
)


def _title(nb: Any, fallback: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return fallback


def _static(nb: Any) -> None:
    """Replace live-widget outputs, which need a kernel, by a sentence saying where they live."""
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if WIDGET_VIEW in output.get("data", {}):
                output["data"] = {"text/html": STATIC_WIDGET_NOTE}


def _figures(nb: Any, stem: str, folder: Path) -> list[tuple[Path, str]]:
    written = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            png = output.get("data", {}).get("image/png")
            if png is None:
                continue
            path = folder / f"{stem}-{len(written) + 1}.png"
            path.write_bytes(base64.b64decode(png))
            alt = output.get("metadata", {}).get("image/png", {}).get("alt", "")
            written.append((path, alt))
    return written


def _index(out: Path, reports: list[tuple[str, str, list[tuple[Path, str]]]], inputs: str) -> Path:
    items = []
    for name, title, figures in reports:
        thumbs = "".join(
            f'<a href="figures/{p.name}"><img src="figures/{p.name}" alt="{html.escape(alt)}" '
            f'style="height:140px;margin:4px;border:1px solid #ddd"></a>'
            for p, alt in figures
        )
        items.append(f'<li><h2><a href="{name}.html">{html.escape(title)}</a></h2><div>{thumbs}</div></li>')
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>murmur-analysis reports</title>'
        "<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:70em}li{list-style:none}"
        "h2{font-size:1.2em;margin:1em 0 .2em}</style></head><body>"
        f"<h1>murmur-analysis reports</h1>{inputs}"
        f"<ul>{''.join(items)}</ul></body></html>"
    )
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    return index


def _kernel_env(data: list[str], sessions: list[str], prices: str | None) -> dict[str, str]:
    """This process's environment with the notebooks' parameters set (and an unset one removed)."""
    env = {**os.environ, "MPLBACKEND": os.environ.get("MPLBACKEND", "Agg")}
    for variable, value in ((DATA_VARIABLE, data), (SESSIONS_VARIABLE, sessions),
                            (PRICES_VARIABLE, [prices] if prices else [])):
        env.pop(variable, None)
        if value:
            env[variable] = os.pathsep.join(str(Path(p).expanduser().resolve()) for p in value)
    return env


def _inputs(data: list[str], sessions: list[str], prices: str | None) -> str:
    lines = [("Data", data), ("murmur sessions", sessions), ("Prices", [prices] if prices else [])]
    return "".join(f"<p>{label}: {html.escape(', '.join(paths))}</p>" for label, paths in lines if paths)


def build(data: list[str], out: Path, notebooks: list[Path], sessions: list[str] | None = None,
          prices: str | None = None) -> Path:
    """Run ``notebooks`` on ``data`` and write the reports under ``out``; return the index path.

    ``sessions`` are murmur session work dirs (or traces) to join, ``prices`` a CSV of the user's
    own prices; the notebooks receive them through their parameter cell.
    """
    figures_dir = out / "figures"
    figures_dir.mkdir(parents=True, exist_ok=True)
    for old in figures_dir.glob("*.png"):
        old.unlink()
    sessions = list(sessions or [])
    env = _kernel_env(data, sessions, prices)
    books = [(path, nbformat.read(path, as_version=4)) for path in notebooks]
    total = sum(1 for _, nb in books for cell in nb.cells if cell.cell_type == "code")
    exporter = HTMLExporter(template_name="report", extra_template_basedirs=[str(TEMPLATES)], exclude_input=True,
                            exclude_input_prompt=True, exclude_output_prompt=True)
    reports = []
    sockets = Path(tempfile.mkdtemp(prefix="murmur-report-"))
    with tqdm(total=total, unit="cell", desc="reports", file=sys.stderr, disable=None) as bar:
        for path, nb in books:
            bar.set_postfix_str(path.stem)
            # IPC, not TCP, between this process and the kernel: local only, and no warning about it
            kernel = KernelManager(kernel_name="python3", transport="ipc", ip=str(sockets / path.stem))
            client = NotebookClient(nb, km=kernel, timeout=600, store_widget_state=False,
                                    resources={"metadata": {"path": str(out)}})
            client.on_cell_executed = lambda **_: bar.update(1)
            try:
                client.execute(env=env)
            finally:
                if client.kc is not None:  # given our kernel manager, nbclient leaves its client's channels open
                    client.kc.stop_channels()
                if kernel.has_kernel:
                    kernel.shutdown_kernel(now=True)
            _static(nb)
            body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": _title(nb, path.stem)}})
            (out / f"{path.stem}.html").write_text(body, encoding="utf-8")
            reports.append((path.stem, _title(nb, path.stem), _figures(nb, path.stem, figures_dir)))
    shutil.rmtree(sockets, ignore_errors=True)
    return _index(out, reports, _inputs(data, sessions, prices))


def main() -> int:
    """Command line: ``--data`` paths (default: the bundled samples), ``--sessions``, ``--prices`` and ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="*", default=None,
                        help=f"paths to load (default: ${DATA_VARIABLE}, else the bundled samples)")
    parser.add_argument("--sessions", nargs="*", default=None, metavar="DIR",
                        help=f"murmur session work dirs or traces holding its token usage "
                             f"(default: ${SESSIONS_VARIABLE})")
    parser.add_argument("--prices", default=None, metavar="CSV",
                        help=f"your own prices, as for murmur-analysis --prices (default: ${PRICES_VARIABLE})")
    parser.add_argument("--out", type=Path, default=Path("build/report"))
    args = parser.parse_args()
    import murmur_analysis as ma

    data = args.data or ma.data_paths()
    sessions = args.sessions if args.sessions is not None else ma.session_paths()
    prices = args.prices if args.prices is not None else ma.prices_path()
    index = build(data, args.out.resolve(), sorted(HERE.glob("*.ipynb")), sessions=sessions, prices=prices)
    print(f"Reports: {index}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
