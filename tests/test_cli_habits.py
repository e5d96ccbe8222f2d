"""The command line speaks its own words and filters a mixed folder to one runtime."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from terminal import run

import murmur_analysis as ma

CLI = [sys.executable, "-m", "murmur_analysis.ui.cli"]
API_WORDS = ("source=", "ma.", "prices=", "list_sources")






def test_error_hints_name_flags_not_the_api(samples: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing any source reads\n")
    cases = {
        ("report", "daily", tmp_path): ["--source NAME", "`murmur-analysis sources`"],
        ("report", "daily", samples / "flexigpt", "--source", "litany"): ["litany", "drop --source"],
        ("summary", samples, "--prices", tmp_path / "nope.csv"): ["--prices FILE"],
    }
    for args, said in cases.items():
        err = run(*args, code=2).stderr
        assert err.startswith("murmur-analysis: error: ") and err.count("\n") == 1, err
        assert all(words in err for words in said), err
        assert not any(api in err for api in API_WORDS), err
    # A diagnostics row the command line shows says how to add a price there too.
    shown = run("diagnostics", samples).stdout
    assert "--prices FILE" in shown and "ma.load" not in shown


def test_the_api_keeps_its_own_words(samples: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing any source reads\n")
    with pytest.raises(ma.NoSourceError) as nothing:
        ma.load(tmp_path)
    assert "source=" in (nothing.value.hint or "") and "ma.list_sources()" in (nothing.value.hint or "")
    assert nothing.value.cli_hint and "--source NAME" in nothing.value.cli_hint
    with pytest.raises(ma.PriceError) as prices:
        ma.load(samples / "flexigpt", prices=tmp_path / "nope.csv")
    assert "prices=" in (prices.value.hint or "") and "--prices FILE" in (prices.value.cli_hint or "")
    with pytest.raises(ma.SourceError) as forced:
        ma.load(samples / "flexigpt", source="litany")
    assert "source=" in (forced.value.hint or "") and "--source" in (forced.value.cli_hint or "")


@pytest.mark.parametrize("name", ["murmur", "litany", "flexigpt", "dispatch"])
def test_source_reads_only_its_runtime_from_a_mixed_folder(samples: Path, corpus: ma.Corpus, name: str) -> None:
    sessions = json.loads(run("report", "session", samples, "--source", name, "--json").stdout)["sessions"]
    conv = corpus.conversations
    expected = sorted(conv.loc[conv["source"] == name, "conversation_id"])
    assert sorted(s["conversation_id"] for s in sessions) == expected and expected
    assert {s["source"] for s in sessions} == {name}
    alone = ma.load(samples, source=name)  # the API reads the same
    assert sorted(alone.conversations["conversation_id"]) == expected
    assert set(alone.usage["source"].dropna()) <= {name}


def test_source_still_forces_a_path_it_does_not_recognise(tmp_path: Path, samples: Path) -> None:
    # A FlexiGPT conversation under a name its detection does not claim is read when asked for.
    one = sorted((samples / "flexigpt" / "conversations_v1").rglob("*Latest_Go_release.json"))[0]
    odd = tmp_path / "export.data"
    odd.write_bytes(one.read_bytes())
    with pytest.raises(ma.NoSourceError):
        ma.load(odd)
    assert len(ma.load(odd, source="flexigpt").conversations) == 1


def _home_without_traces(home: Path) -> Path:
    from murmur_home import T0, header, msg, record

    for ctx in ("ctx-a", "ctx-b"):
        record(home, "bot", ctx, [header(), msg("user", T0), msg("assistant", T0 + 1000)])
    return home


def test_a_murmur_home_without_traces_says_where_usage_lives(tmp_path: Path) -> None:
    home = _home_without_traces(tmp_path / "home")
    done = run("report", "daily", home)
    assert done.stdout.strip() == "no daily rows"
    [note] = done.stderr.splitlines()
    assert "session trace" in note and "--sessions DIR" in note and str(home) in note
    assert not any(api in note for api in API_WORDS)
    summary = run("summary", home)
    assert summary.stderr.count("--sessions DIR") == 1
    run("report", "daily", home, "--strict", code=1)  # a row like any other: the numbers are incomplete
    shown = json.loads(run("diagnostics", home, "--json").stdout)["diagnostics"]
    assert [(d["source"], d["path"]) for d in shown if d["kind"] == "no_session_traces"] == [("murmur", str(home))]


def test_no_session_traces_row_once_per_home_and_never_with_traces(tmp_path: Path, samples: Path) -> None:
    home = _home_without_traces(tmp_path / "home")
    records = sorted(home.glob("conversations/*/*/conversation.jsonl"))
    twice = ma.load(*records)  # two targets of one home: one row
    kinds = twice.diagnostics["kind"].tolist()
    assert kinds.count("no_session_traces") == 1
    assert twice.diagnostics.loc[twice.diagnostics["kind"] == "no_session_traces", "path"].tolist() == [str(home)]
    other = _home_without_traces(tmp_path / "other")
    assert ma.load(home, other).diagnostics["kind"].tolist().count("no_session_traces") == 2
    # Traces found under the home, or given: no row, and no note.
    assert "no_session_traces" not in set(ma.load(samples / "murmur").diagnostics["kind"])
    given = ma.load(home, options={"murmur": {"sessions": [samples / "murmur" / "sessions"]}})
    assert "no_session_traces" not in set(given.diagnostics["kind"])
    assert "--sessions" not in run("report", "daily", samples / "murmur").stderr
    # Sessions given that hold no trace: that path's no_trace row, and the home's row.
    empty = tmp_path / "empty-workdir"
    empty.mkdir()
    missing = ma.load(home, options={"murmur": {"sessions": [empty]}}).diagnostics["kind"].tolist()
    assert missing.count("no_trace") == 1 and missing.count("no_session_traces") == 1
