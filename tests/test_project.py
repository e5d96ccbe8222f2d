"""The project's own promises: dependencies listed twice agree, the API is curated, docs match code."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

import murmur_analysis as ma
from murmur_analysis.tables.schema import markdown
from murmur_analysis.ui.cli import build_parser

REPO = Path(__file__).resolve().parent.parent

# conda-forge names of PyPI packages whose names differ.
CONDA_NAMES = {"duckdb": "python-duckdb", "dask[dataframe]": "dask"}


def _split(requirement: str) -> tuple[str, str]:
    match = re.fullmatch(r"([A-Za-z0-9_.\-\[\]]+)\s*(.*)", requirement.strip())
    assert match, requirement
    return match.group(1).lower(), match.group(2).replace(" ", "")


def test_environment_yml_lists_the_same_dependencies_as_pyproject() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *(d for deps in project["optional-dependencies"].values() for d in deps)]
    expected = {CONDA_NAMES.get(name, name): spec for name, spec in map(_split, wanted)}
    conda: dict[str, str] = {}
    lines = (REPO / "environment.yml").read_text().splitlines()
    start = lines.index("dependencies:")
    for raw in lines[start + 1 :]:
        item = raw.strip()
        if not item.startswith("- "):
            continue
        name, spec = _split(item[2:])
        if name in ("python", "pip"):
            continue
        conda[name] = spec
    assert conda == expected


def test_python_floor_is_the_same_in_both_files() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11"
    assert "  - python>=3.11" in (REPO / "environment.yml").read_text().splitlines()


def test_public_api_is_curated_and_sorted() -> None:
    assert ma.__all__ == sorted(ma.__all__)
    for name in ma.__all__:
        assert hasattr(ma, name), name
    public = {n for n in dir(ma) if not n.startswith("_") and not isinstance(getattr(ma, n), types.ModuleType)}
    assert public - set(ma.__all__) - {"annotations"} == set()


def test_the_root_holds_the_public_face_and_every_folder_is_a_layer() -> None:
    package = REPO / "murmur_analysis"
    root_modules = sorted(p.name for p in package.glob("*.py"))
    assert len(root_modules) <= 15, root_modules
    contract = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    layers = {n.strip().removeprefix("murmur_analysis.") for entry in contract["layers"] for n in entry.split("|")}
    folders = {p.parent.name for p in package.glob("*/__init__.py")}
    assert folders <= layers, f"folders outside the layer contract: {sorted(folders - layers)}"
    assert {p.removesuffix(".py") for p in root_modules} - {"__init__"} <= layers
    layout = (REPO / "README.md").read_text().split("## Layout", 1)[1].split("\n## ", 1)[0]
    for folder in folders:
        assert f"  {folder}/" in layout, f"the README's Layout section does not show {folder}/"


def test_source_specific_names_are_their_sources_and_re_exported() -> None:
    from murmur_analysis.sources import litany, murmur

    assert (ma.walk, ma.RecordReader, ma.read_messages) == (murmur.walk, murmur.RecordReader, murmur.read_messages)
    assert ma.assemble_commit is litany.assemble_commit


def test_every_exception_derives_from_one_base() -> None:
    errors = [getattr(ma, n) for n in ma.__all__ if n.endswith("Error")]
    assert errors and all(issubclass(e, ma.MurmurAnalysisError) for e in errors)
    doc = sys.modules["murmur_analysis.errors"].__doc__ or ""
    for e in errors:
        assert e.__name__ in doc, f"{e.__name__} is not drawn in errors.py's tree"


def test_tables_doc_is_generated_from_the_schemas() -> None:
    assert (REPO / "docs" / "tables.md").read_text() == markdown(), "regenerate docs/tables.md from schema.markdown()"


def test_every_cli_command_is_documented_in_the_readme() -> None:
    readme = (REPO / "README.md").read_text()
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in commands:
        assert f"murmur-analysis {name}" in readme, f"README does not document `murmur-analysis {name}`"


@pytest.mark.parametrize("command", ["summary", "report", "diagnostics", "export", "sql", "page", "cache", "sources"])
def test_each_command_has_helpful_help(command: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "murmur_analysis.ui.cli", command, "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "usage: murmur-analysis " + command in out
    assert len(out.splitlines()) >= 4


def test_readme_leads_with_the_two_commands() -> None:
    head = (REPO / "README.md").read_text()[:1500]
    assert "make run" in head and "make test" in head


def test_library_code_does_not_print() -> None:
    for path in (REPO / "murmur_analysis").rglob("*.py"):
        if path.name == "cli.py":
            continue
        assert not re.search(r"^\s*print\(", path.read_text(), re.M), path


MAX_FUNCTION_LINES = 100


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method below ``tree``, nested ones included, by qualified name."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + node.name, node
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def test_no_function_is_over_100_lines() -> None:
    offenders = []
    for path in sorted((REPO / "murmur_analysis").rglob("*.py")):
        for name, node in _functions(ast.parse(path.read_text(), str(path))):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno} {name} ({lines} lines)")
    assert not offenders, f"functions over {MAX_FUNCTION_LINES} lines: " + "; ".join(offenders)


def test_import_loads_no_heavy_dependency() -> None:
    # pandas, pyarrow, numpy and the engine load when a name that needs them is first used.
    code = ("import sys, murmur_analysis as ma; heavy = {'pandas', 'pyarrow', 'numpy', 'matplotlib', 'duckdb', "
            "'murmur_analysis.engine._native'}; print(sorted(heavy & set(sys.modules))); ma.Corpus; "
            "print(sorted({'pandas', 'pyarrow'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == "['pyarrow']"  # a name that needs Arrow brings it; the corpus module imports no pandas itself


def _allocator_options(env: dict[str, str], toolkit: bool = True) -> str:
    """What pyarrow's mimalloc prints of its options in a fresh process importing the toolkit (or not), then Arrow."""
    code = ("import murmur_analysis; " if toolkit else "") + "import pyarrow as pa; pa.nulls(1, pa.int64())"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**env, "MIMALLOC_VERBOSE": "1"})
    return found.stderr


def test_importing_the_toolkit_first_keeps_arrow_off_huge_pages() -> None:
    # mimalloc reads MIMALLOC_ALLOW_THP once, when pyarrow loads (core/allocator.py): the import sets it first.
    env = {k: v for k, v in os.environ.items() if k != "MIMALLOC_ALLOW_THP"}
    assert "option 'allow_thp': 0" in _allocator_options(env)
    assert "option 'allow_thp': 1" in _allocator_options({**env, "MIMALLOC_ALLOW_THP": "1"})  # the user's word stands
    # and without the toolkit, mimalloc's own default is huge pages (what the setting changes)
    assert "option 'allow_thp': 1" in _allocator_options(env, toolkit=False)
