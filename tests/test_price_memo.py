"""Prices remembered between processes: the same costs as genai-prices, without importing it again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from murmur_analysis.core import cache
from murmur_analysis.core.handoff import Conversation, Summary, UsageRow
from murmur_analysis.core.model import Entry, Text, Usage
from murmur_analysis.core.price_memo import PriceMemo
from murmur_analysis.core.pricing import Pricer, price_tables
from murmur_analysis.tables.frames import FrameBuilder
from murmur_analysis.ui.cli import main

T0 = datetime(2025, 6, 10, tzinfo=UTC)  # o3's price changed that day
#: A price by date (o3), by time of day (deepseek-chat), with a long-context tier (claude-sonnet-4-5),
#: one price at every time (gpt-4o), and no price at all.
MODELS = ["o3", "deepseek-chat", "claude-sonnet-4-5", "gpt-4o", "no-such-model-anywhere"]

row_strategy = st.tuples(st.sampled_from(MODELS), st.one_of(st.none(), st.integers(-3 * 86_400, 3 * 86_400)),
                         st.integers(0, 400_000), st.integers(0, 9_000))


def usage_table(rows: list[tuple[str, int | None, int, int]]) -> dict[str, pa.Table]:
    usage_rows = [UsageRow(Usage.normalize(input_tokens=u, output_tokens=o, cache_in_input=False,
                                           reasoning_in_output=False),
                           model=m, created_at=None if s is None else T0 + timedelta(seconds=s))
                  for m, s, u, o in rows]
    builder = FrameBuilder()
    builder.add(Conversation("test", "c", [Entry(1, "user", (Text("hi"),), created_at=T0)],
                             summary=Summary(usage=tuple(usage_rows))))
    return builder.finish()


def costs(tables: dict[str, pa.Table], pricer: Pricer) -> tuple[list[object], list[str]]:
    priced = price_tables(tables, pricer)
    return priced["usage"].column("cost_usd").to_pylist(), priced["diagnostics"].column("detail").to_pylist()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(row_strategy, min_size=1, max_size=25))
def test_remembered_prices_cost_what_genai_prices_says(rows: list[tuple[str, int | None, int, int]],
                                                       tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    tables = usage_table(rows)
    asked = costs(tables, Pricer(remember=False))
    first = costs(tables, Pricer())  # learns
    again = costs(tables, Pricer())  # answers from what was learned (a new Pricer reads the file)
    assert first == asked and again == asked


SCRIPT = """
import json, sys
from datetime import UTC, datetime, timedelta
from murmur_analysis.core.handoff import Conversation, Summary, UsageRow
from murmur_analysis.core.model import Entry, Text, Usage
from murmur_analysis.core.pricing import Pricer, price_tables
from murmur_analysis.tables.frames import FrameBuilder

t0 = datetime(2025, 6, 10, tzinfo=UTC)
rows = [UsageRow(Usage.normalize(input_tokens=1000 * k, output_tokens=100, cache_in_input=False,
                                 reasoning_in_output=False), model=m, created_at=t0 + timedelta(days=k))
        for k, m in enumerate(["o3", "o3", "claude-sonnet-4-5", "gpt-4o", "no-such-model-anywhere"])]
builder = FrameBuilder()
builder.add(Conversation("test", "c", [Entry(1, "user", (Text("hi"),))], summary=Summary(usage=tuple(rows))))
priced = price_tables(builder.finish(), Pricer())
print(json.dumps({"costs": priced["usage"].column("cost_usd").to_pylist(),
                  "diagnostics": priced["diagnostics"].column("kind").to_pylist(),
                  "imported": "genai_prices" in sys.modules}))
"""


def run_fresh(env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True)
    out: dict[str, object] = json.loads(done.stdout)
    return out


def test_a_later_process_prices_the_same_without_importing_genai_prices(tmp_path: Path) -> None:
    env = {**os.environ, cache.ENV: str(tmp_path / "cache")}
    first = run_fresh(env)
    second = run_fresh(env)
    assert first["imported"] is True and second["imported"] is False
    assert second["costs"] == first["costs"] and second["diagnostics"] == first["diagnostics"] == ["unpriced_model"]
    assert first["costs"][-1] is None and all(c is not None for c in first["costs"][:-1])  # type: ignore[index]

    # A memo nobody holding the key wrote (here: the same bytes, changed) is never read: genai-prices is asked.
    [memo] = (tmp_path / "cache" / cache.PRICES_DIR).glob("*.prices")
    data = bytearray(memo.read_bytes())
    data[data.index(b'"priced":false')  + len(b'"priced":')] = ord("t")  # the unpriced model made priced
    memo.write_bytes(bytes(data))
    forged = run_fresh(env)
    assert forged["imported"] is True and forged["costs"] == first["costs"]
    assert forged["diagnostics"] == ["unpriced_model"]
    assert run_fresh(env)["imported"] is False  # written again, whole and signed


def test_another_versions_answers_are_not_taken(tmp_path: Path) -> None:
    folder = tmp_path / "prices"
    memo = PriceMemo("0.0.1", folder)
    memo.remember("gpt-4o", None, "2026-01-01", [[None, "1", "0", "0", "0", "2", "2", "0"]])
    assert memo.save()
    assert PriceMemo("0.0.1", folder).tiers("gpt-4o", None, "2026-01-01") is not None
    assert PriceMemo("0.0.2", folder).tiers("gpt-4o", None, "2026-01-01") is None
    other = PriceMemo("0.0.2", folder)
    other.path.write_bytes(PriceMemo("0.0.1", folder).path.read_bytes())  # the right key, the wrong version
    assert PriceMemo("0.0.2", folder).priced("gpt-4o", None) is None


def test_a_memo_without_a_key_of_this_user_is_neither_read_nor_written(tmp_path: Path) -> None:
    folder = tmp_path / "prices"
    folder.mkdir()
    (folder / cache.KEY_NAME).symlink_to(tmp_path / "elsewhere")  # a link is never a key
    memo = PriceMemo("0.0.1", folder)
    memo.remember_unpriced("x", None)
    assert memo.save() is False and not memo.path.exists()


def test_cache_info_counts_and_clear_removes_remembered_prices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "user-cache"
    monkeypatch.setenv(cache.ENV, str(root))
    root.mkdir()
    (root / "keep.txt").write_text("not ours")
    (root / cache.PRICES_DIR).mkdir()
    (root / cache.PRICES_DIR / "notes.txt").write_text("not ours either")
    costs(usage_table([("gpt-4o", 0, 10, 10)]), Pricer())
    assert cache.cache_info().prices == 1
    assert main(["cache", "info"]) == 0
    assert "prices   1" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "removed 2 file(s)" in capsys.readouterr().out  # the memo and the key that signed it
    assert cache.cache_info().prices == 0
    assert (root / "keep.txt").read_text() == "not ours"
    assert (root / cache.PRICES_DIR / "notes.txt").read_text() == "not ours either"  # only the toolkit's own files go
