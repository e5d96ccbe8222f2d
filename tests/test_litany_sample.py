"""The bundled litany sample (data/samples/litany/): exact counts, declared dtypes, paging, rebuild."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import murmur_analysis as ma
from murmur_analysis.sources.litany.git import GitRepo
from murmur_analysis.tables.schema import TABLES, schema

PLANNER = "20260422T090000Z-3f2a9c1e"
CHILD = PLANNER + "-7b01"
MIGRATOR = "20260421T150000Z-c0ffee00"
LEGACY = "20260420T080000Z-0d0c5173"


@pytest.fixture(scope="module")
def corpus(samples: Path) -> ma.Corpus:
    return ma.load(samples / "litany")


def test_every_table_has_its_declared_schema(corpus: ma.Corpus) -> None:
    for name in TABLES:
        assert corpus.tables[name].schema == schema(name), name
        frame = getattr(corpus, name)
        assert list(frame.columns) == [c.name for c in TABLES[name]]
        assert [str(frame[c.name].dtype.pyarrow_dtype) for c in TABLES[name]] == [str(c.type) for c in TABLES[name]]


def test_exact_counts(corpus: ma.Corpus) -> None:
    assert {k: v.num_rows for k, v in corpus.tables.items()} == {
        "messages": 73, "tool_calls": 32, "usage": 32, "orphans": 13, "growth": 101, "steps": 31,
        "conversations": 4, "diagnostics": 2,
    }
    c = corpus.conversations.set_index("conversation_id")
    assert c["messages"].to_dict() == {MIGRATOR: 12, PLANNER: 23, CHILD: 28, LEGACY: 10}
    assert c["tool_calls"].to_dict() == {MIGRATOR: 6, PLANNER: 10, CHILD: 11, LEGACY: 4}
    assert c["tool_errors"].to_dict() == {MIGRATOR: 0, PLANNER: 1, CHILD: 1, LEGACY: 0}
    assert c["title"].to_dict() == {MIGRATOR: "schema migrator", PLANNER: "auth planner", CHILD: "token signer",
                                    LEGACY: "docs writer"}
    assert corpus.growth.groupby("conversation_id").size().to_dict() == {LEGACY: 11, MIGRATOR: 21, PLANNER: 31,
                                                                          CHILD: 38}
    assert corpus.steps.groupby("agent_id").size().to_dict() == {LEGACY: 5, MIGRATOR: 6, PLANNER: 11, CHILD: 9}


def test_counters_past_999_sort_numerically_and_hyphenated_model_ids_survive(corpus: ma.Corpus) -> None:
    m = corpus.messages
    mig = m[m["conversation_id"] == MIGRATOR]
    assert list(mig["seq"]) == [995, 996, 997, 998, 999, 1000, 1002, 1003, 1004, 1005, 1006, 1007]
    assert set(mig.loc[mig["role"] == "assistant", "model"]) == {"gemini-2.5-pro"}
    assert set(m.loc[m["conversation_id"] == PLANNER, "model"].dropna()) == {"claude-fable-5"}
    [diag, unpriced] = corpus.diagnostics.itertuples()
    assert diag.kind == "bad_entry" and diag.path.endswith(":messages/1001-tool.json")
    assert (unpriced.source, unpriced.kind, unpriced.path) == ("pricing", "unpriced_model", "claude-haiku-4")
    calls = corpus.tool_calls
    assert calls.loc[(calls["conversation_id"] == MIGRATOR) & (calls["status"] == "unanswered"), "call_id"].tolist() \
        == ["call_m3"]


def test_the_recorded_orphan_matches_assembly_at_every_step(corpus: ma.Corpus) -> None:
    o = corpus.orphans
    assert set(o["conversation_id"]) == {CHILD} and set(o["tool_use_id"]) == {"call_c3"}
    rec = o[o["found_by"] == "record"]
    asm = o[o["found_by"] == "assembly"]
    assert list(rec["step"]) == [4, 5, 6, 7, 8, 9]
    assert list(asm["step"].fillna(0)) == [0, 4, 5, 6, 7, 8, 9]
    assert sorted(zip(rec["step"], rec["commit"], strict=True)) == sorted(
        zip(asm["step"].dropna(), asm.loc[asm["step"].notna(), "commit"], strict=True))
    growth = corpus.growth[corpus.growth["conversation_id"] == CHILD]
    assert list(growth["orphans"])[-1] == 1 and list(growth["orphans"])[:12] == [0] * 12


def test_usage_retry_and_spend(corpus: ma.Corpus) -> None:
    u = corpus.usage
    assert set(u["found_in"]) == {"response"}
    retried = u[u["sealed"] == False]  # noqa: E712
    assert len(retried) == 1 and retried.iloc[0]["conversation_id"] == PLANNER
    assert retried.iloc[0]["attempt"] == 1 and retried.iloc[0]["input_total_tokens"] == 2308
    assert retried["output_tokens"].isna().all()  # the failed attempt never reported its output
    legacy = u[u["conversation_id"] == LEGACY]
    # pre-provenance records: no provider row; claude-haiku-4 -> Anthropic: the cache slices are added
    assert legacy["provider"].isna().all()
    assert list(legacy["input_total_tokens"]) == [1601, 1602, 1603, 1604, 1720]
    child = u[u["conversation_id"] == CHILD]
    assert list(child["input_total_tokens"])[:2] == [3100, 3400]  # OpenAI: cached slices already inside
    assert list(child["reasoning_tokens"])[:2] == [128, 64] and list(child["output_tokens"])[:2] == [240, 90]


def test_conversation_handles_page_through_the_cursor_core(corpus: ma.Corpus) -> None:
    handle = corpus.conversation(MIGRATOR)
    page = handle.read_messages(limit=5)
    assert page.total == 12 and page.next_cursor == "mc_7"
    assert [m.id for m in page.messages] == ["1007-tool.json", "1006-gemini-2.5-pro.json", "1005-tool.json",
                                             "1004-gemini-2.5-pro.json", "1003-tool.json"]
    seen = []
    cursor = None
    while True:
        page = handle.read_messages(cursor, limit=5)
        seen += [m.id for m in page.messages]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert len(seen) == 12 and seen[-1] == "995-operator.md"
    assert handle.assemble().dropped_orphans == []


def test_assemble_commit_on_the_sample(samples: Path) -> None:
    ws = samples / "litany" / "auth-refactor"
    assert ma.assemble_commit(ws, f"agents/{CHILD}").dropped_orphans == ["call_c3"]
    assert ma.assemble_commit(ws, f"agents/{PLANNER}~30").messages == []


def test_the_sample_rebuilds_to_the_same_commits(tmp_path: Path, samples: Path) -> None:
    sys.path.insert(0, str(samples))
    import build_litany

    build_litany.build(tmp_path)
    for ws in ("auth-refactor", "docs-site"):
        built = GitRepo(tmp_path / "litany" / ws / "repo.git").refs()
        committed = GitRepo(samples / "litany" / ws / "repo.git").refs()
        assert built == committed
        for meta in sorted((samples / "litany" / ws / "steps").rglob("*.json")):
            rel = meta.relative_to(samples / "litany")
            assert (tmp_path / "litany" / rel).read_bytes() == meta.read_bytes(), rel
