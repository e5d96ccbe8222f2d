"""Invariants of the one normalization rule, for any counters a provider may report."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from murmur_analysis.core.model import Usage
from murmur_analysis.core.providers import Family, accounting
from murmur_analysis.core.values import read_counter

counter = st.none() | st.integers(min_value=0, max_value=10**7)
families: st.SearchStrategy[Family] = st.sampled_from(["anthropic", "openai", "google"])


@given(families, counter, counter, counter, counter, counter, counter, st.booleans())
def test_normalized_counters_add_up_or_say_why_not(
    family: Family, prompt: int | None, output: int | None, read: int | None, write: int | None,
    total: int | None, reasoning: int | None, reasoning_in_output: bool,
) -> None:
    acct = accounting(family)
    u = Usage.normalize(input_tokens=prompt, output_tokens=output, cache_read_tokens=read, cache_write_tokens=write,
                        input_total_tokens=total, reasoning_tokens=reasoning, cache_in_input=acct.cache_in_input,
                        reasoning_in_output=reasoning_in_output, cache_write_slice=acct.cache_write_slice)
    for value in (u.input_tokens, u.output_tokens, u.input_total_tokens):
        assert value is None or value >= 0  # nothing negative, and nothing clamped to hide it
    if u.input_tokens is not None and u.input_total_tokens is not None:
        assert u.input_tokens + (read or 0) + (write or 0) == u.input_total_tokens
    if output is not None and reasoning is not None and reasoning_in_output:
        assert (u.output_tokens is not None and u.output_tokens + reasoning == output) or (
            u.output_tokens is None and u.problems)
    elif output is not None:
        assert u.output_tokens == output  # a split served beside the output is never taken off it
    if u.input_tokens is None and u.input_total_tokens is not None and read is not None and (
            write is not None or not acct.cache_write_slice) and not u.problems:
        raise AssertionError("the uncached rest was knowable but left null without a reason")
    assert (u.provider_input_tokens, u.provider_output_tokens) == (prompt, output)


@given(st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5), st.booleans()))
def test_a_counter_is_read_or_reported(value: object) -> None:
    problems: list[str] = []
    got = read_counter(value, "n", problems)
    if got is not None:
        assert type(value) is int and got == value and 0 <= got < 2**63 and not problems
    else:
        assert (value is None) == (not problems)
