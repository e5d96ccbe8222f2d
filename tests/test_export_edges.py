"""The export's edges: what it may touch, what a glob over it reads, and a damaged or full folder."""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any
from unittest import mock

import duckdb
import orjson
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from murmur_home import T0, home_with, msg, record, settle
from murmur_lines import append

import murmur_analysis as ma
from murmur_analysis.corpus import read_parquet
from murmur_analysis.export import export

CLI = [sys.executable, "-m", "murmur_analysis.ui.cli"]


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` (links not followed) with a digest of its bytes, and every folder."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_dir():
            out[rel] = "folder"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "120"})


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def table_rows(out: Path) -> dict[str, int]:
    return {name: t.num_rows for name, t in read_parquet(out).tables.items()}


# ---------------------------------------------------------------------------------- what is ours


def test_exporting_a_murmur_home_into_itself_is_refused_and_touches_nothing(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    before = tree(home)
    line = one_line_error(cli("export", home, "--out", home))
    assert "is the input" in line
    with pytest.raises(ma.ExportError, match="is the input"):
        ma.export_parquet(home, out=home)
    assert tree(home) == before


def test_an_output_inside_an_input_or_holding_one_is_refused(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    before = tree(home)
    assert "is inside the input" in one_line_error(cli("export", home, "--out", home / "conversations" / "out"))
    assert tree(home) == before
    out = tmp_path / "out"
    export(home, out=out)
    inner = out / "inputs"
    record(inner, "bot", "ctx-x", [msg("user", T0, n=0)])
    with pytest.raises(ma.ExportError, match="inside the output folder"):
        export(inner, out=out)
    assert (inner / "conversations" / "bot" / "ctx-x" / "conversation.jsonl").is_file()


@pytest.mark.parametrize("name", ["messages", "steps", "usage", "conversations", "growth", "diagnostics"])
def test_a_folder_named_like_a_table_in_a_folder_that_is_not_an_export_is_never_moved(tmp_path: Path,
                                                                                      name: str) -> None:
    out = tmp_path / "workspace"
    (out / name).mkdir(parents=True)
    (out / name / "thesis.txt").write_text("three years of work")
    before = tree(out)
    line = one_line_error(cli("export", home_with(tmp_path), "--out", out))
    assert "is not empty and holds no murmur-analysis export" in line
    corpus = ma.load(home_with(tmp_path))
    with pytest.raises(ma.ExportError, match="holds no murmur-analysis export"):
        corpus.to_parquet(out)
    assert tree(out) == before


def test_an_empty_out_is_a_usage_error(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    proc = subprocess.run([*CLI, "export", str(home), "--out", ""], capture_output=True, text=True, cwd=tmp_path,
                          timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--out" in proc.stderr
    with pytest.raises(ma.ExportError, match="empty path"):
        ma.export_parquet(home, out="")
    with pytest.raises(ma.ExportError, match="empty path"):
        ma.load(home).to_parquet("")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


def test_the_users_files_in_an_export_folder_survive_every_export(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    out = tmp_path / "out"
    export(home, out=out)
    (out / "notes").mkdir()
    (out / "notes" / "findings.md").write_text("keep me")
    (out / "query.sql").write_text("select 1")
    current = (out / ".export" / "current").resolve()
    (current / "messages" / "mine.txt").write_text("put inside the export by hand")
    append(home / "conversations" / "bot" / "ctx-0" / "conversation.jsonl", [msg("assistant", T0 + 50, n=50)])
    export(home, out=out, incremental=False)
    assert (out / "notes" / "findings.md").read_text() == "keep me"
    assert (out / "query.sql").read_text() == "select 1"
    assert (current / "messages" / "mine.txt").read_text() == "put inside the export by hand"
    assert not list(current.rglob("*.parquet"))  # the replaced export's own files are gone


def test_something_of_the_users_where_a_table_link_goes_is_refused_and_the_export_stays(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    out = tmp_path / "out"
    export(home, out=out)
    rows = table_rows(out)
    (out / "usage").unlink()
    (out / "usage").mkdir()
    (out / "usage" / "budget.csv").write_text("month,usd\n")
    line = one_line_error(cli("export", home, "--out", out))
    assert "usage" in line and "in the way" in line
    assert (out / "usage" / "budget.csv").read_text() == "month,usd\n"
    assert table_rows(out) == rows


def test_a_folder_holding_someone_elses_dot_export_is_not_taken_for_an_export(tmp_path: Path) -> None:
    out = tmp_path / "site"
    (out / ".export").mkdir(parents=True)
    (out / ".export" / "staging-1-abc").mkdir()
    (out / ".export" / "staging-1-abc" / "part-1.parquet").write_bytes(b"the user's")
    before = tree(out)
    with pytest.raises(ma.ExportError, match="holds no murmur-analysis export"):
        export(home_with(tmp_path), out=out)
    assert tree(out) == before


def test_a_manifest_that_names_files_outside_its_export_removes_none_of_them(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    out = tmp_path / "out"
    export(home, out=out)
    victim = tmp_path / "precious.txt"
    victim.write_text("not the export's")
    manifest_path = (out / ".export" / "current" / "manifest.json").resolve()
    manifest = orjson.loads(manifest_path.read_bytes())
    manifest["tables"]["messages"]["files"].append({"path": "../../../precious.txt", "rows": 0, "source": None})
    manifest_path.write_bytes(orjson.dumps(manifest))
    export(home, out=out)
    assert victim.read_text() == "not the export's"


# ---------------------------------------------------------------------------------- globs


def _changed_twice(tmp_path: Path) -> Path:
    home = home_with(tmp_path)
    out = tmp_path / "out"
    export(home, out=out)
    append(home / "conversations" / "bot" / "ctx-1" / "conversation.jsonl", [msg("assistant", T0 + 70, n=70)])
    export(home, out=out)
    return out


def test_a_recursive_glob_over_the_export_reads_every_row_once(tmp_path: Path) -> None:
    out = _changed_twice(tmp_path)
    total = sum(table_rows(out).values())
    glob = str(out / "**" / "*.parquet")
    got = duckdb.sql(f"select count(*) from read_parquet('{glob}', union_by_name=true)").fetchall()[0]
    assert got == (total,)
    assert ds.dataset(out, format="parquet", partitioning="hive").count_rows() == total
    messages = duckdb.sql(f"select count(*) from read_parquet('{out}/messages/**/*.parquet')").fetchall()[0]
    assert messages == (table_rows(out)["messages"],)


# ---------------------------------------------------------------------------------- the export's own files


def _fifo_at(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def test_a_fifo_manifest_neither_hangs_a_read_nor_the_next_export(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    out = tmp_path / "out"
    export(home, out=out)
    _fifo_at((out / ".export" / "current" / "manifest.json").resolve())
    script = textwrap.dedent(f"""
        import murmur_analysis as ma
        try:
            ma.read_parquet({str(out)!r})
        except ma.ExportError as err:
            print("refused:", err)
        result = ma.export_parquet({str(home)!r}, out={str(out)!r})
        print("exported", result.generation, ma.read_parquet({str(out)!r}).tables["messages"].num_rows)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("refused:") and "manifest" in lines[0]
    assert lines[1] == "exported 2 12"


def test_a_fifo_where_the_manifests_link_goes_is_refused_without_hanging(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    out = tmp_path / "out"
    export(home, out=out)
    (out / "_manifest.json").unlink()
    os.mkfifo(out / "_manifest.json")
    assert "in the way" in one_line_error(cli("export", home, "--out", out))


# ---------------------------------------------------------------------------------- damaged exports


def _part_of(out: Path, conversation: str) -> Path:
    for path in (out / ".export" / "current" / "messages").rglob("*.parquet"):
        if conversation in pq.read_table(path, columns=["conversation_id"])["conversation_id"].to_pylist():
            return path.resolve()
    raise AssertionError(conversation)


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _rows(table: Any) -> Counter[str]:
    return Counter(orjson.dumps(r, default=str, option=orjson.OPT_SORT_KEYS).decode() for r in table.to_pylist())


def _assert_fresh(out: Path, home: Path) -> None:
    """The export holds the rows a fresh load gives (an incremental export may order them otherwise)."""
    exported, loaded = read_parquet(out).tables, ma.load(home).tables
    for name, table in loaded.items():
        assert _rows(exported[name]) == _rows(table), name


def test_a_truncated_part_file_is_written_again_not_carried(tmp_path: Path) -> None:
    home = home_with(tmp_path, n=2)
    settle(home)
    out = tmp_path / "out"
    export(home, out=out, batch_conversations=1)
    _truncate(_part_of(out, "bot/ctx-0"))
    with pytest.raises(ma.ExportError, match=r"part-.*\.parquet.*damaged") as err:
        read_parquet(out)
    assert err.value.hint is not None and "export again" in err.value.hint
    proc = cli("export", home, "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "damaged" in proc.stderr and "read again from the input" in proc.stderr
    _assert_fresh(out, home)
    again = export(home, out=out)  # repaired: nothing is damaged now, nothing read
    assert again.damaged == [] and again.conversations_read == 0


def test_a_damaged_file_whose_conversation_changed_exports_without_a_crash(tmp_path: Path) -> None:
    home = home_with(tmp_path, n=2)
    settle(home)
    out = tmp_path / "out"
    export(home, out=out, batch_conversations=2)
    _truncate(_part_of(out, "bot/ctx-1"))
    append(home / "conversations" / "bot" / "ctx-1" / "conversation.jsonl", [msg("assistant", T0 + 90, n=90)])
    result = export(home, out=out)
    assert len(result.damaged) == 1
    _assert_fresh(out, home)


def test_a_same_size_edit_of_a_part_file_with_its_times_put_back_is_found(tmp_path: Path) -> None:
    home = home_with(tmp_path, n=2)
    settle(home)
    out = tmp_path / "out"
    export(home, out=out, batch_conversations=1)
    part = _part_of(out, "bot/ctx-0")
    st = os.stat(part)
    data = bytearray(part.read_bytes())
    data[len(data) // 3] ^= 0xFF
    part.write_bytes(bytes(data))
    os.utime(part, ns=(st.st_atime_ns, st.st_mtime_ns))
    result = export(home, out=out)
    assert [why for _, why in result.damaged] == ["its bytes changed"]
    _assert_fresh(out, home)


def test_reading_an_export_of_another_schema_version_says_what_to_do(tmp_path: Path) -> None:
    out = tmp_path / "out"
    export(home_with(tmp_path), out=out)
    manifest_path = (out / ".export" / "current" / "manifest.json").resolve()
    manifest = orjson.loads(manifest_path.read_bytes())
    manifest["schema_version"] = 1
    manifest_path.write_bytes(orjson.dumps(manifest))
    with pytest.raises(ma.ExportError, match="schema version 1") as err:
        read_parquet(out)
    assert err.value.hint is not None and "incremental=False" in err.value.hint
    assert err.value.cli_hint is not None and "--full" in err.value.cli_hint


def test_a_file_that_is_not_parquet_is_an_export_error_naming_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    export(home_with(tmp_path), out=out)
    manifest_path = (out / ".export" / "current" / "manifest.json").resolve()
    manifest = orjson.loads(manifest_path.read_bytes())
    first = manifest["tables"]["messages"]["files"][0]
    part = manifest_path.parent / first["path"]
    part.write_bytes(b"x" * first["bytes"])  # the recorded size, not Parquet
    with pytest.raises(ma.ExportError, match=str(part.name)):
        read_parquet(out)


# ---------------------------------------------------------------------------------- a full disk


def _no_room(real: Any, kind: int) -> Any:
    def mkdir(self: Path, *args: Any, **kwargs: Any) -> None:
        if self.parent.name.startswith("staging-"):  # a table's folder in the export being written
            raise OSError(kind, os.strerror(kind), str(self))
        real(self, *args, **kwargs)

    return mkdir


@pytest.mark.parametrize("kind", [errno.ENOSPC, errno.EDQUOT])
def test_out_of_inodes_is_one_line_and_the_previous_export_stays(tmp_path: Path, kind: int,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from murmur_analysis.ui import cli

    home = home_with(tmp_path)
    out = tmp_path / "out"
    export(home, out=out)
    before = table_rows(out)
    append(home / "conversations" / "bot" / "ctx-0" / "conversation.jsonl", [msg("assistant", T0 + 90, n=90)])
    with mock.patch.object(Path, "mkdir", _no_room(Path.mkdir, kind)):
        code = cli.main(["export", str(home), "--out", str(out), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert table_rows(out) == before
    assert not [p for p in (out / ".export").iterdir() if p.name.startswith("staging-")]


def test_a_real_file_system_out_of_inodes_leaves_the_previous_export(tmp_path: Path) -> None:
    """On a tmpfs with few inodes (a mount namespace of its own), the export fails in one line."""
    home = home_with(tmp_path, n=6)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    read = f"import murmur_analysis as ma; print(ma.read_parquet('{mnt}/out').tables['messages'].num_rows)"
    script = textwrap.dedent(f"""
        set -e
        mount -t tmpfs -o size=64m,nr_inodes=4096 tmpfs {mnt}
        {sys.executable} -m murmur_analysis.ui.cli export {home} --out {mnt}/out -q >/dev/null
        for r in 0 1 2 3 4 5; do
          printf '%s\\n' '{orjson.dumps(msg("assistant", T0 + 99, n=99)).decode()}' \\
            >> {home}/conversations/bot/ctx-$r/conversation.jsonl
        done
        used=$(df --output=iused {mnt} | tail -1)
        for spare in 1 2 3 4 5 6 7 8 12 16; do
          mount -o remount,nr_inodes=$((used + spare)) {mnt}
          set +e
          {sys.executable} -m murmur_analysis.ui.cli export {home} --out {mnt}/out --full -q 2>{tmp_path}/err-$spare
          echo "exit $?"
          set -e
          {sys.executable} -c "{read}"
        done
    """)
    prefix = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-rm"]
    proc = subprocess.run([*prefix, "sh", "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["exit", "2", "24"] * 10, proc.stdout  # each time: refused, the old export read
    for spare in (1, 2, 3, 4, 5, 6, 7, 8, 12, 16):
        err = (tmp_path / f"err-{spare}").read_text()
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, (spare, err)


def test_links_planted_where_the_export_writes_its_own_files_are_never_written_through(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    out = tmp_path / "out"
    export(home, out=out)
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    control = out / ".export"
    (control / "murmur-analysis").unlink()
    (control / "murmur-analysis").symlink_to(victim)  # the marker
    generation = (control / "current").resolve()
    (generation / "stamps.json").unlink()
    (generation / "stamps.json").symlink_to(victim)  # what the next export checks kept files by
    export(home, out=out)
    assert victim.read_text() == "untouched"
    assert not (control / "murmur-analysis").is_symlink()
