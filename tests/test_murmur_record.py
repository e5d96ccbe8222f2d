"""murmur's line rules: one decision, made by serde_json, the same on every path that reads a line."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from murmur_lines import line

from murmur_analysis.core.serde import lower, lower_value
from murmur_analysis.sources.murmur.record import LineKind, decide, parse

# Pieces that move a line across serde_json's rules: escapes (lone surrogates among them),
# numbers at and beyond f64's range, nesting, trailing commas and content, a BOM, control bytes.
FRAGMENTS = ['\\ud800', '\\udc00', '\\ud83d\\ude00', '\\u0000', '\\x', '1e308', '1e309', '-0', '18446744073709551616',
             '1.5e-400', 'NaN', 'Infinity', ',', ']', '}', '[', '{', '"', '\\"', '\\\\', '\ufeff', '\x01', '\t', ' ',
             '[' * 130 + ']' * 130, 'true', 'null', '"role":"user"', '"role":1', ':']

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)
messages = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"])}, optional={
    "content": json_values, "id": st.text(max_size=8), "tool_call_id": json_values, "is_error": json_values,
    "source_id": json_values})


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    text = line(draw(messages))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 2))
        text = text[:at] + draw(st.sampled_from(FRAGMENTS)) + text[at + cut:]
    return text.encode("utf-8", "surrogatepass")


def _serde_value_says(raw: bytes) -> LineKind:
    try:
        value: Any = parse(raw)
    except ValueError:
        return LineKind.NOT_MESSAGE
    return LineKind.MESSAGE if isinstance(value, dict) and isinstance(value.get("role"), str) else LineKind.NOT_MESSAGE


@settings(max_examples=600, deadline=None)
@given(mutated())
def test_the_scans_borrowing_reader_accepts_exactly_what_value_accepts(raw: bytes) -> None:
    # decide() reads through a borrowing tree, parse() through serde_json::Value: same parser calls.
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        assert decide(raw) is LineKind.BAD_UTF8
        return
    if not raw.decode("utf-8").strip():
        return
    assert decide(raw) is _serde_value_says(raw)
    if decide(raw) is LineKind.MESSAGE:
        assert lower(raw) == lower_value(parse(raw))


def test_serde_json_rules_at_their_edges() -> None:
    def kind(body: str) -> LineKind:
        return decide(('{"role":"user","content":' + body + "}").encode())

    assert kind("[" * 126 + "]" * 126) is LineKind.MESSAGE
    assert kind("[" * 127 + "]" * 127) is LineKind.NOT_MESSAGE  # a 128th level of nesting
    assert kind("1.7976931348623157e308") is LineKind.MESSAGE
    assert kind("1e309") is LineKind.NOT_MESSAGE  # beyond f64
    assert kind('"\\ud800"') is LineKind.NOT_MESSAGE  # a lone surrogate
    assert kind("[1,]") is LineKind.NOT_MESSAGE
    assert kind("NaN") is LineKind.NOT_MESSAGE
    assert kind('"a\tb"') is LineKind.NOT_MESSAGE  # a raw control character in a string
    assert decide(b'\xef\xbb\xbf{"role":"user"}') is LineKind.NOT_MESSAGE  # a BOM
    assert decide(b'{"role":"user"} x') is LineKind.NOT_MESSAGE  # content after the value
    assert decide(b'{"role":"user","role":2}') is LineKind.NOT_MESSAGE  # the last duplicate wins
    assert decide(b'{"role":2,"role":"user"}') is LineKind.MESSAGE
    assert decide(b"\xff") is LineKind.BAD_UTF8
    assert decide(b" \t ") is LineKind.BLANK
    lowered = lower(b'{"role":"user","content":[1e21,-0,12345678901234567890123]}')
    assert lowered[1] == "[1e21,-0.0,1.2345678901234568e22]"


@settings(max_examples=25, deadline=None)
@given(st.lists(st.one_of(mutated(), st.just(b""), st.just(b"\r")), max_size=30), st.sampled_from([7, 64, 500]))
def test_the_record_readers_index_is_the_same_at_any_read_size(lines: list[bytes], chunk: int) -> None:
    # Reads start at line starts; a line longer than a read is read whole; pages and reports agree.
    import tempfile
    from pathlib import Path

    import pytest

    from murmur_analysis.errors import ReadMessagesError
    from murmur_analysis.sources.murmur import reader as murmur_reader

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "conversation.jsonl"
        path.write_bytes(b"\n".join(lines))

        def page() -> Any:
            try:
                got = murmur_reader.RecordReader().read_messages(path, limit=100)
            except ReadMessagesError as err:
                return str(err)
            return got.total, got.messages, [(r.line, r.kind) for r in got.reports]

        whole = page()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(murmur_reader, "_CHUNK", chunk)
            assert page() == whole
