"""Cost from genai-prices and user prices, checked against hand-computed answers."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import murmur_analysis as ma
from murmur_analysis.core.handoff import Conversation, Summary, UsageRow
from murmur_analysis.core.model import Entry, Text, Usage
from murmur_analysis.core.pricing import Pricer, price_data_version, price_tables, sum_costs
from murmur_analysis.tables.frames import FrameBuilder, to_pandas

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def anthropic(uncached: int, read: int | None, write: int | None, output: int | None) -> Usage:
    return Usage.normalize(input_tokens=uncached, cache_read_tokens=read, cache_write_tokens=write,
                           output_tokens=output, cache_in_input=False, reasoning_in_output=False)


def openai(prompt: int, read: int | None, output: int, reasoning: int | None) -> Usage:
    return Usage.normalize(input_tokens=prompt, cache_read_tokens=read, output_tokens=output,
                           reasoning_tokens=reasoning, cache_in_input=True, reasoning_in_output=True)


def conversation(cid: str, rows: list[UsageRow]) -> Conversation:
    return Conversation("test", cid, [Entry(1, "user", (Text("hi"),), created_at=T0)],
                        summary=Summary(usage=tuple(rows)))


def tables(*convs: Conversation, prices: ma.pricing.Prices | None = None) -> dict[str, pa.Table]:
    builder = FrameBuilder()
    for conv in convs:
        builder.add(conv)
    return price_tables(builder.finish(), prices)


MINE = {"my-model": {"input_mtok": 2, "output_mtok": 10, "cache_read_mtok": "0.5", "cache_write_mtok": 4}}


def test_user_prices_price_each_slice_by_hand() -> None:
    # 1000 uncached + 3000 read + 500 written, 200 out: 1000*2 + 3000*0.5 + 500*4 + 200*10 = 7500 / 1e6
    row = UsageRow(anthropic(1000, 3000, 500, 200), model="my-model", created_at=T0)
    usage = to_pandas(tables(conversation("c", [row]), prices=MINE)["usage"]).iloc[0]
    assert usage.input_cost_usd == pytest.approx(0.002)
    assert usage.cache_read_cost_usd == pytest.approx(0.0015)
    assert usage.cache_write_cost_usd == pytest.approx(0.002)
    assert usage.output_cost_usd == pytest.approx(0.002)
    assert usage.cost_usd == pytest.approx(0.0075)


def test_reasoning_is_priced_as_output_and_an_unreported_slice_is_inside_its_counter() -> None:
    # OpenAI-style: 4000 prompt of which 1000 cached, 300 output of which 100 reasoning.
    # genai-prices sees input 4000 (cache read 1000), output 300: 3000*2 + 1000*0.5 + 300*10 = 9500.
    row = UsageRow(openai(4000, 1000, 300, 100), model="my-model")
    usage = to_pandas(tables(conversation("c", [row]), prices=MINE)["usage"]).iloc[0]
    assert usage.cost_usd == pytest.approx(0.0095)
    assert usage.output_cost_usd == pytest.approx(0.003)
    assert usage.cache_write_cost_usd is pd_na()  # not reported: null, not $0


def pd_na() -> object:
    import pandas as pd

    return pd.NA


def test_a_user_price_without_cache_rates_prices_cached_tokens_as_input() -> None:
    # genai-prices' rule: a slice with no price of its own is priced as the counter holding it.
    row = UsageRow(anthropic(1000, 3000, None, 100), model="plain")
    usage = to_pandas(tables(conversation("c", [row]), prices={"plain": {"input_mtok": 1, "output_mtok": 5}})
                      ["usage"]).iloc[0]
    assert usage.cost_usd == pytest.approx((4000 * 1 + 100 * 5) / 1e6)
    assert usage.cache_read_cost_usd == pytest.approx(3000 / 1e6)


def test_genai_prices_table_by_hand() -> None:
    # genai-prices 0.2.3: claude-sonnet-4-5 $3 input, $3.75 cache write, $0.30 cache read, $15 output
    row = UsageRow(anthropic(412, 0, 2980, 96), model="claude-sonnet-4-5", provider="anthropic", created_at=T0)
    usage = to_pandas(tables(conversation("c", [row]))["usage"]).iloc[0]
    assert usage.cost_usd == pytest.approx((412 * 3 + 2980 * 3.75 + 96 * 15) / 1e6)


def test_a_long_prompt_is_priced_at_its_tier() -> None:
    # genai-prices 0.2.3: gemini-2.5-pro above 200,000 prompt tokens: $2.50 input, $0.25 cached, $15 output.
    big = UsageRow(openai(250_000, 50_000, 1000, None), model="gemini-2.5-pro", provider="google", created_at=T0)
    small = UsageRow(openai(200_000, 0, 1000, None), model="gemini-2.5-pro", provider="google", created_at=T0)
    usage = to_pandas(tables(conversation("c", [big, small]))["usage"])
    assert usage.cost_usd[0] == pytest.approx((200_000 * 2.5 + 50_000 * 0.25 + 1000 * 15) / 1e6)
    assert usage.cost_usd[1] == pytest.approx((200_000 * 1.25 + 1000 * 10) / 1e6)


def test_unknown_models_are_null_with_one_diagnostic_per_model() -> None:
    rows = [UsageRow(anthropic(10, 0, 0, 1), model="no-such-model-9") for _ in range(3)]
    out = tables(conversation("a", rows[:2]), conversation("b", rows[2:]),
                 conversation("c", [UsageRow(anthropic(10, 0, 0, 1), model="my-model")]), prices=MINE)
    usage = to_pandas(out["usage"])
    assert usage.cost_usd.isna().tolist() == [True, True, True, False]
    diag = to_pandas(out["diagnostics"])
    assert diag[["source", "path", "kind"]].values.tolist() == [["pricing", "no-such-model-9", "unpriced_model"]]
    conv = to_pandas(out["conversations"]).set_index("conversation_id")
    assert conv.loc["a", "cost_usd"] is pd_na() and conv.loc["a", "unpriced_responses"] == 2
    assert conv.loc["c", "cost_usd"] == pytest.approx((10 * 2 + 10) / 1e6)


def test_conversation_cost_is_the_sum_of_known_costs_and_counts_the_unknown() -> None:
    rows = [UsageRow(anthropic(1000, None, None, 100), model="my-model"),
            UsageRow(anthropic(2000, None, None, 0), model="my-model"),
            UsageRow(anthropic(500, None, None, None), model="my-model")]  # output unknown: cost unknown
    out = tables(conversation("c", rows), conversation("empty", []), prices=MINE)
    conv = to_pandas(out["conversations"]).set_index("conversation_id")
    assert conv.loc["c", "cost_usd"] == pytest.approx((3000 * 2 + 100 * 10) / 1e6)
    assert conv.loc["c", "unpriced_responses"] == 1
    assert conv.loc["empty", "cost_usd"] is pd_na()
    assert sum_costs([None, None]) == (None, 2) and sum_costs([]) == (None, 0)


def test_user_prices_from_csv_override_the_table(tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    path.write_text("model,input_mtok,output_mtok,cache_read_mtok\nclaude-sonnet-4-5,1,2,\n")
    row = UsageRow(anthropic(1000, 1000, None, 1000), model="claude-sonnet-4-5", provider="anthropic")
    usage = to_pandas(tables(conversation("c", [row]), prices=path)["usage"]).iloc[0]
    assert usage.cost_usd == pytest.approx((2000 * 1 + 1000 * 2) / 1e6)
    assert price_data_version(path) != price_data_version() == f"genai-prices {_genai_version()}"


def _genai_version() -> str:
    from importlib.metadata import version

    return version("genai-prices")


@pytest.mark.parametrize("prices, message", [
    ({"m": {"input_mtok": 1}}, "needs a model id, input_mtok and output_mtok"),
    ({"m": {"input_mtok": 1, "output_mtok": 2, "inptu_mtok": 3}}, "unknown price key"),
    ({"m": {"input_mtok": "cheap", "output_mtok": 2}}, "not a number"),
    ("/no/such/prices.csv", "no price file"),
])
def test_unreadable_prices_are_refused(prices: ma.pricing.Prices, message: str) -> None:
    with pytest.raises(ma.PriceError, match=message):
        Pricer(prices)


def test_a_provider_prefix_or_a_recorded_provider_picks_the_price() -> None:
    pricer = Pricer()
    assert pricer.rates("anthropic/claude-sonnet-4-5", None, T0, 10) == pricer.rates("claude-sonnet-4-5", None, T0, 10)
    assert pricer.rates("claude-sonnet-4-5", "nobody-knows-me", T0, 10) is not None  # unknown provider: model decides
    assert pricer.rates("claude-sonnet-4-5", "openai", T0, 10) is None  # a known provider must price it


MODELS = ["gpt-4.1", "gpt-5-mini", "o3", "gemini-2.5-pro", "gemini-2.5-flash", "claude-sonnet-4-5",
          "claude-haiku-4-5", "claude-opus-4-1", "deepseek-chat", "mistral-large-latest"]


@given(
    model=st.sampled_from(MODELS),
    uncached=st.integers(0, 400_000),
    read=st.integers(0, 300_000),
    write=st.integers(0, 50_000),
    output=st.integers(0, 50_000),
    reasoning=st.integers(0, 20_000),
)
def test_every_row_costs_what_genai_prices_says(
    model: str, uncached: int, read: int, write: int, output: int, reasoning: int
) -> None:
    from genai_prices import Usage as GenaiUsage
    from genai_prices import calc_price

    rates = Pricer().rates(model, None, T0, uncached + read + write)
    assert rates is not None
    mine = (uncached * rates.input + read * rates.cache_read + write * rates.cache_write + output * rates.output
            + reasoning * rates.reasoning + rates.fee)
    theirs = calc_price(GenaiUsage(input_tokens=uncached + read + write, cache_read_tokens=read,
                                   cache_write_tokens=write, output_tokens=output + reasoning,
                                   output_reasoning_tokens=reasoning), model, genai_request_timestamp=T0)
    assert mine == Decimal(theirs.total_price)


def test_every_sample_response_is_priced_or_named(samples: Path) -> None:
    corpus = ma.load(samples)
    usage = corpus.usage
    unpriced = set(corpus.diagnostics.loc[corpus.diagnostics.kind == "unpriced_model", "path"])
    priced_models = set(usage.loc[usage.cost_usd.notna(), "model"])
    assert unpriced and not unpriced & priced_models
    no_counters = usage.input_total_tokens.isna() | usage.output_tokens.isna()
    assert (usage.cost_usd.isna() == (usage.model.isin(unpriced) | no_counters)).all()
    assert corpus.price_data_version == price_data_version()


row_strategy = st.tuples(st.sampled_from(MODELS), st.integers(0, 400_000), st.integers(0, 300_000),
                         st.integers(0, 50_000), st.integers(0, 50_000), st.integers(0, 20_000))


@given(rows=st.lists(row_strategy, min_size=1, max_size=12))
def test_a_usage_table_costs_what_genai_prices_says_row_by_row(
    rows: list[tuple[str, int, int, int, int, int]],
) -> None:
    from genai_prices import Usage as GenaiUsage
    from genai_prices import calc_price

    # Every slice beside the others (cache and reasoning reported apart), as normalized counters keep them.
    usage_rows = [UsageRow(Usage.normalize(input_tokens=u, cache_read_tokens=r, cache_write_tokens=w, output_tokens=o,
                                           reasoning_tokens=z, cache_in_input=False, reasoning_in_output=False),
                           model=m, created_at=T0) for m, u, r, w, o, z in rows]
    costs = tables(conversation("c", usage_rows))["usage"].column("cost_usd").to_pylist()
    for (m, u, r, w, o, z), mine in zip(rows, costs, strict=True):
        theirs = calc_price(GenaiUsage(input_tokens=u + r + w, cache_read_tokens=r, cache_write_tokens=w,
                                       output_tokens=o + z, output_reasoning_tokens=z), m, genai_request_timestamp=T0)
        assert mine == pytest.approx(float(theirs.total_price), rel=1e-12, abs=1e-15)


#: Models whose price changed on a date (priced once per day) and by time of day (per response).
CHANGING = ["o3", "deepseek-chat"]
CHANGE = datetime(2025, 6, 10, tzinfo=UTC)  # o3: 10/40 to 2/8 per million


@given(rows=st.lists(st.tuples(st.sampled_from(CHANGING), st.integers(-3 * 86_400, 3 * 86_400), st.integers(0, 9_000),
                               st.integers(0, 9_000)), min_size=1, max_size=30))
def test_a_price_that_changed_is_the_one_in_force_at_each_response(rows: list[tuple[str, int, int, int]]) -> None:
    """Responses days around a price change, and at every hour (off-peak prices): each costs what
    genai-prices says at its own time, however many responses share a day."""
    from datetime import timedelta

    from genai_prices import Usage as GenaiUsage
    from genai_prices import calc_price

    times = [CHANGE + timedelta(seconds=s) for _, s, _, _ in rows]
    usage_rows = [UsageRow(Usage.normalize(input_tokens=u, output_tokens=o, cache_in_input=False,
                                           reasoning_in_output=False), model=m, created_at=t)
                  for (m, _, u, o), t in zip(rows, times, strict=True)]
    costs = tables(conversation("c", usage_rows))["usage"].column("cost_usd").to_pylist()
    for (m, _, u, o), t, mine in zip(rows, times, costs, strict=True):
        theirs = calc_price(GenaiUsage(input_tokens=u, output_tokens=o), m, genai_request_timestamp=t)
        assert mine == pytest.approx(float(theirs.total_price), rel=1e-12, abs=1e-15)


# -- price files as spreadsheets write them ---------------------------------------------------------

def flexigpt_store(root: Path, model: str = "my-model") -> Path:
    from test_flexigpt import store_file
    from test_tokens_flexigpt import conversation, usage

    store_file(root, conversation("openairesponses", model, {"usage": usage(1000, 0, 1000, 100, 0)}))
    return root


HEADER = "model,input_mtok,output_mtok\r\n"  # Excel ends lines with CRLF


def test_a_price_file_with_excels_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    path.write_bytes(b"\xef\xbb\xbf" + (HEADER + "My-Model,2,10\r\n").encode())
    corpus = ma.load(flexigpt_store(tmp_path / "in"), prices=path)
    assert corpus.usage["cost_usd"].tolist() == [pytest.approx((1000 * 2 + 100 * 10) / 1e6)]
    assert corpus.price_data_version == price_data_version({"my-model": {"input_mtok": 2, "output_mtok": 10}})


def test_a_price_file_that_is_not_utf8_is_refused_with_where_and_how(tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    text = HEADER + "my-model,2,10\r\ncafé-model,1,1\r\n"
    path.write_bytes(text.encode("latin-1"))
    offset = text.index("é")  # every character before it is one byte
    with pytest.raises(ma.PriceError, match=rf"not UTF-8 text: byte 0xe9 at offset {offset} \(line 3\)") as err:
        ma.load(flexigpt_store(tmp_path / "in"), prices=path)
    assert str(path) in str(err.value) and err.value.hint is not None and "UTF-8" in err.value.hint
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("latin-1"))  # behind a BOM the offset is still the file's
    with pytest.raises(ma.PriceError, match=f"at offset {offset + 3} "):
        Pricer(path)


def test_a_model_priced_twice_is_refused_naming_both_rows(tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    path.write_text(HEADER + "my-model,2,10\r\nother,1,1\r\nMY-MODEL,20,100\r\n", newline="")
    with pytest.raises(ma.PriceError, match="'MY-MODEL' is priced twice: line 2 and line 4") as err:
        ma.load(flexigpt_store(tmp_path / "in"), prices=path)
    assert str(path) in str(err.value)
    with pytest.raises(ma.PriceError, match="priced twice: key 'my-model' and key 'My-Model'"):
        Pricer({"my-model": {"input_mtok": 2, "output_mtok": 10}, "My-Model": {"input_mtok": 20, "output_mtok": 100}})


@pytest.mark.parametrize("content, message", [
    ((HEADER + "café-model,1,1\r\n").encode("latin-1"),
     f"is not UTF-8 text: byte 0xe9 at offset {len(HEADER) + 3} (line 2)"),
    ((HEADER + "my-model,2,10\r\nmy-model,20,100\r\n").encode(), "'my-model' is priced twice: line 2 and line 3"),
], ids=["latin-1", "twice"])
def test_the_command_line_refuses_an_unreadable_price_file_in_one_line(
    tmp_path: Path, content: bytes, message: str
) -> None:
    import subprocess
    import sys

    path = tmp_path / "prices.csv"
    path.write_bytes(content)
    for command in (["report", "models"], ["summary"]):
        done = subprocess.run([sys.executable, "-m", "murmur_analysis.ui.cli", *command,
                               str(flexigpt_store(tmp_path / "in")), "--prices", str(path), "-q"],
                              capture_output=True, text=True)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"murmur-analysis: error: {path}")
        assert message in done.stderr and "Traceback" not in done.stderr


def test_the_command_line_reads_a_price_file_with_a_byte_order_mark(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    path = tmp_path / "prices.csv"
    path.write_bytes(b"\xef\xbb\xbf" + (HEADER + "my-model,2,10\r\n").encode())
    done = subprocess.run([sys.executable, "-m", "murmur_analysis.ui.cli", "report", "models",
                           str(flexigpt_store(tmp_path / "in")), "--prices", str(path), "--json", "-q"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["totals"]["cost_usd"] == pytest.approx((1000 * 2 + 100 * 10) / 1e6)


@given(st.lists(st.tuples(st.sampled_from([None, "gpt-4o", "claude-opus-4-5", "m"]),
                          st.sampled_from([None, "openai", "anthropic"])), max_size=40))
def test_usage_rows_are_priced_by_model_and_provider_each_once(pairs: list[tuple[str | None, str | None]]) -> None:
    """Each (model, provider) of a usage table, nulls included, with its rows in order, in order of first appearance."""
    from murmur_analysis.core.pricing import _by_model

    usage = pa.table({"model": pa.array([m for m, _ in pairs], pa.string()),
                      "provider": pa.array([p for _, p in pairs], pa.string())})
    expected: dict[tuple[str | None, str | None], list[int]] = {}
    for row, pair in enumerate(pairs):
        expected.setdefault(pair, []).append(row)
    assert [((m, p), rows.tolist()) for m, p, rows in _by_model(usage)] == list(expected.items())
