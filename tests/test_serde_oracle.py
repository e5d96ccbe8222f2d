"""The toolkit against serde_json itself, line for line.

murmur decides what a record line is with ``serde_json::from_str::<Value>`` plus "an object with a
string ``role``", and lowers ``content`` with serde's ``to_string``. The oracle in
``tests/serde_oracle`` is that code built against the real serde_json; every test here writes a
record, asks the oracle, and compares the toolkit's public API (``read_messages`` walked page by
page, ``load``) with it. Hand-picked edge cases first, then generated records and byte-level
mutations of valid lines (``make fuzz`` runs the generated ones much longer).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serde_oracle_client import Oracle, compare

_counter = itertools.count()


def _record(root: Path, data: bytes) -> Path:
    folder = root / f"rec{next(_counter)}" / "ctx"
    folder.mkdir(parents=True)
    path = folder / "conversation.jsonl"
    path.write_bytes(data)
    return path


def _msg(content: str, role: str = '"user"', extra: str = "") -> bytes:
    text = '{"content":' + content + ',"id":"msg_0190a1b2c3d47000a1b2c3d4e5f60718","role":' + role + extra + "}"
    return text.encode()


def _nest(depth: int) -> str:
    return "[" * depth + "]" * depth


# Each case: one record's bytes. A message line around the interesting value keeps the question
# "is this line a message, and what content does it serve?".
EDGE_CASES: dict[str, bytes] = {
    "plain": _msg('[{"text":"hi","type":"text"}]') + b"\n",
    # serde_json's recursion limit: the line nests one level more than its content.
    **{f"depth {d}": _msg(_nest(d - 1)) + b"\n" for d in (126, 127, 128, 129, 130, 255, 300, 1100)},
    "NaN": _msg("NaN") + b"\n",
    "Infinity": _msg("[Infinity,-Infinity]") + b"\n",
    "trailing comma array": _msg("[1,2,]") + b"\n",
    "trailing comma object": b'{"role":"user","content":1,}\n',
    "1e400": _msg("1e400") + b"\n",
    "-1e400": _msg("-1e400") + b"\n",
    "1e-400": _msg("[1e-400,-1e-400]") + b"\n",
    "-0": _msg("-0") + b"\n",
    "-0 in list": _msg("[-0,0,-0.0,0.0]") + b"\n",
    "1e21": _msg("[1e21,1E21,1e+21,1e20,1e16,1e15,123e18]") + b"\n",
    "1.0": _msg("[1.0,1.5,100.0,2e0,1E2]") + b"\n",
    "small floats": _msg("[0.0001,0.00001,0.000001,1e-7,5e-324,2.2250738585072014e-308]") + b"\n",
    "max float": _msg("[1.7976931348623157e308,1.7976931348623158e308,1.8e308]") + b"\n",
    "u64 max": _msg("[18446744073709551615,18446744073709551616]") + b"\n",
    "i64 min": _msg("[-9223372036854775808,-9223372036854775809]") + b"\n",
    "huge int": _msg("123456789012345678901234567890123456789") + b"\n",
    "long mantissa": _msg(
        "[0.1234567890123456789012345,3.141592653589793238462643383279,1.00000000000000011102230246251565]"
    ) + b"\n",
    "round-trip hard floats": _msg(
        "[2.2250738585072011e-308,9007199254740993,9007199254740993.0,4.35e-15,1.2345678901234567e-30]"
    ) + b"\n",
    "many digits then exponent": _msg("[123456789012345678901234567890e-20,0.000000000000000000000000000012345e40]")
    + b"\n",
    "long integer, then a fraction": _msg("[18446744073709551617.5,18446744073709551617.6,1844674407370955161.5]")
    + b"\n",
    "long integer, then a bare dot": _msg("123456789012345678901234.") + b"\n",
    "exponent overflow": _msg("[0e2147483648,1e-2147483649,-0e99999999999]") + b"\n" + _msg("1e2147483648") + b"\n",
    "lone high surrogate": _msg('"\\ud800"') + b"\n",
    "lone low surrogate": _msg('"\\udc00"') + b"\n",
    "surrogate pair": _msg('"\\ud83d\\ude00"') + b"\n",
    "reversed pair": _msg('"\\ude00\\ud83d"') + b"\n",
    "high then escape": _msg('"\\ud800\\n"') + b"\n",
    "escaped controls": _msg('"\\u0000\\u0001\\b\\f\\n\\r\\t\\u001f\\u007f\\u0080\\u2028\\/"') + b"\n",
    "raw control char": _msg('"a\x01b"') + b"\n",
    "raw tab": _msg('"a\tb"') + b"\n",
    "raw DEL": _msg('"a\x7fb"') + b"\n",
    "u0000": _msg('"\\u0000"') + b"\n",
    "unicode escapes": _msg('"\\u00e9\\u4e2d\\uFFFF\\uFEFF"') + b"\n",
    "raw unicode": _msg('"é中😀\u2028\u2029"') + b"\n",
    "bad escape": _msg('"\\x41"') + b"\n",
    "BOM": b"\xef\xbb\xbf" + _msg("1") + b"\n",
    "BOM on line 2": _msg("1") + b"\n\xef\xbb\xbf" + _msg("2") + b"\n",
    "trailing content": _msg("1") + b" 2\n",
    "trailing object": _msg("1") + b"{}\n",
    "trailing whitespace": _msg("1") + b" \t \r\n",
    "leading whitespace": b" \t" + _msg("1") + b"\n",
    "duplicate keys": b'{"role":"user","content":1,"content":2,"id":"a","id":"b"}\n',
    "duplicate role non-string last": b'{"role":"user","role":5,"content":1}\n',
    "duplicate role string last": b'{"role":5,"role":"user","content":1}\n',
    "nested duplicate keys": _msg('{"b":1,"a":2,"b":3}') + b"\n",
    "role number": b'{"role":1,"content":1}\n',
    "role null": b'{"role":null,"content":1}\n',
    "role array": b'{"role":["user"],"content":1}\n',
    "role empty": b'{"role":"","content":1}\n',
    "not an object": b'["role","user"]\n"role"\n1\nnull\n',
    "no content": b'{"role":"user"}\n',
    "null content": b'{"role":"user","content":null}\n',
    "tool envelope": b'{"role":"tool","content":[{"text":"ok","type":"text"}],"tool_call_id":"c1","is_error":false}\n',
    "tool no fields": b'{"role":"tool"}\n',
    "tool odd fields": b'{"role":"tool","content":1e21,"tool_call_id":7,"is_error":"yes"}\n',
    "id and source_id types": b'{"role":"user","content":1,"id":5,"source_id":"s"}\n'
    b'{"role":"user","content":1,"id":"x","source_id":[1]}\n',
    "key order": b'{"z":1,"role":"user","content":{"zeta":1,"alpha":2,"\xc3\xa9":3,"Z":4,"a":5,'
    b'"\xf0\x9f\x98\x80":6,"\xef\xbf\xbf":7}}\n',
    "CRLF": _msg("1") + b"\r\n" + _msg("2") + b"\r\n",
    "CR CR LF": _msg("1") + b"\r\r\n",
    "bare CR inside": _msg("1") + b"\r" + _msg("2") + b"\n",
    "CR only last": _msg("1") + b"\r",
    "whitespace lines": b"\n \n\t\n\r\n\x0b\n\x0c\n" + _msg("1") + b"\n",
    "unicode whitespace lines": "\u00a0\n\u2028\n\u3000\n\u0085\n\x1c\n\x1f\n\u180e\n\ufeff\n".encode()
    + _msg("1")
    + b"\n",
    "empty file": b"",
    "only newlines": b"\n\n\n",
    "unterminated last message": _msg("1") + b"\n" + _msg("2"),
    "unterminated last garbage": _msg("1") + b'\n{"role":"us',
    "invalid UTF-8 in a message": _msg('"\xff"') + b"\n",
    "invalid UTF-8 on a later line": _msg("1") + b"\n" + _msg("2") + b"\n\xc3\x28\n",
    "invalid UTF-8 in the unterminated tail": _msg("1") + b"\n\xe2\x82",
    "UTF-8 surrogate bytes": _msg('"\xed\xa0\x80"') + b"\n",
    "overlong UTF-8": _msg('"\xc0\xaf"') + b"\n",
    "header": b'{"capsule":"c","created_ms":1756400000000,"type":"murmur.record"}\n' + _msg("1") + b"\n",
    "header truncated": b'{"capsule":"c","created_ms":1,"truncated":{"at_ms":2,"dropped":5,"last_dropped_id":"msg_1",'
    b'"oldest_surviving_id":"msg_2"},"type":"murmur.record"}\n' + _msg("1") + b"\n",
    "header escaped type": b'{"capsule":"c","created_ms":1,"type":"murmur\\u002erecord"}\n' + _msg("1") + b"\n",
    "header created_ms negative": b'{"capsule":"c","created_ms":-1,"type":"murmur.record"}\n' + _msg("1") + b"\n",
    "header created_ms float": b'{"capsule":"c","created_ms":1.0,"type":"murmur.record"}\n' + _msg("1") + b"\n",
    "header as array": b'["murmur.record","c",1]\n' + _msg("1") + b"\n",
    "header bad marker": b'{"capsule":"c","created_ms":1,"truncated":{"dropped":5},"type":"murmur.record"}\n'
    + _msg("1")
    + b"\n",
    "header on line 2": _msg("1") + b'\n{"capsule":"c","created_ms":1,"type":"murmur.record"}\n',
    "header after blank line": b'\n{"capsule":"c","created_ms":1,"type":"murmur.record"}\n' + _msg("1") + b"\n",
    "header with role": b'{"capsule":"c","created_ms":1,"role":"user","type":"murmur.record"}\n',
    "header with a non-string role": b'{"capsule":"c","created_ms":1,"role":5,"type":"murmur.record"}\n'
    + _msg("1")
    + b"\n",
    "header with a null marker": b'{"capsule":"c","created_ms":1,"truncated":null,"type":"murmur.record"}\n'
    + _msg("1")
    + b"\n",
    "header marker as array": b'{"capsule":"c","created_ms":1,"truncated":[5,"msg_2","msg_1",2],'
    b'"type":"murmur.record"}\n'
    + _msg("1")
    + b"\n",
    "header marker negative": b'{"capsule":"c","created_ms":1,"truncated":{"at_ms":2,"dropped":-5,'
    b'"last_dropped_id":"a","oldest_surviving_id":"b"},"type":"murmur.record"}\n' + _msg("1") + b"\n",
    "header created_ms over u64": b'{"capsule":"c","created_ms":18446744073709551616,"type":"murmur.record"}\n'
    + _msg("1")
    + b"\n",
    "header duplicate field": b'{"capsule":"c","capsule":"d","created_ms":1,"type":"murmur.record"}\n'
    + _msg("1")
    + b"\n",
    "comment": b"// hi\n" + _msg("1") + b"\n",
    "single quotes": b"{'role':'user','content':1}\n",
    "leading zero": _msg("01") + b"\n",
    "plus number": _msg("+1") + b"\n",
    "dot number": _msg("[.5]") + b"\n",
    "number dot": _msg("[5.]") + b"\n",
    "hex number": _msg("0x10") + b"\n",
    "true false null": _msg("[true,false,null]") + b"\n",
    "uppercase literals": _msg("True") + b"\n",
    "nul byte outside string": _msg("1") + b"\x00\n",
    "105 messages": b"".join(_msg(str(i)) + b"\n" for i in range(105)),
    # Lines read one after another by one parser: each line is still decided alone.
    "a message split over two lines": b'{"role":"user",\n"content":1}\n' + _msg("2") + b"\n",
    "an unfinished message between messages": _msg("1") + b'\n{"role":"user","content":[\n' + _msg("2") + b"\n",
    "a string left open at the line's end": _msg('"abc') + b"\n" + _msg('"d"') + b"\n",
    "two messages on one line, then one": _msg("1") + _msg("2") + b"\n" + _msg("3") + b"\n",
    "a number line, then a message": _msg("1") + b"\n12\n-3.5e2 \n" + _msg("2") + b"\n",
    "escapes on consecutive lines": _msg('"a\\nb"') + b"\n" + _msg('"\\ud800"') + b"\n" + _msg('"c\\td\\u00e9"')
    + b"\n" + _msg('"\\\\"') + b"\n",
    "blank lines of other spaces between messages": _msg("1") + "\n\u00a0\n \t\n\u3000".encode() + _msg("2")
    + b"\n" + _msg("3") + b"\n",
}


@pytest.mark.parametrize("name", list(EDGE_CASES))
def test_edge_case_matches_serde_json(name: str, serde_oracle: Oracle, tmp_path: Path) -> None:
    path = _record(tmp_path, EDGE_CASES[name])
    assert compare(serde_oracle, path) == []


def test_oracle_is_serde_json(serde_oracle: Oracle, tmp_path: Path) -> None:
    """The oracle really applies serde's rules (so a passing comparison means something)."""
    path = _record(tmp_path, _msg("[1e21,-0,18446744073709551616]") + b"\n" + _msg(_nest(128)) + b"\n\xef\xbb\xbf{}\n")
    lines, end = serde_oracle.verdicts(path)
    assert [row["verdict"] for row in lines] == ["message", "skipped", "skipped"]
    assert lines[0]["content"] == "[1e21,-0.0,1.8446744073709552e19]"
    assert end == {"end": True, "total": 1, "error": None}
    _, end = serde_oracle.verdicts(_record(tmp_path, b"\xff\n"))
    assert end["error"] == "stream did not contain valid UTF-8"


# ------------------------------------------------------------------------------ generated records

_SPACE = st.sampled_from(["", "", "", " ", "\t", "\r", "  ", "\n"])
_NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.from_regex(r"\A-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,25})?([eE][-+]?[0-9]{1,3})?\Z"),
    st.sampled_from(["-0", "-0.0", "1e21", "1e400", "-1e400", "1e-400", "NaN", "Infinity", "01", "1.", ".5", "+1"]),
)
_ESCAPES = st.one_of(
    st.sampled_from(['\\"', "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u0000", "\\ud800", "\\udfff",
                     "\\ud83d\\ude00", "\\x", "\\'"]),
    st.integers(0, 0xFFFF).map(lambda c: f"\\u{c:04x}"),
    st.integers(0, 0xFFFF).map(lambda c: f"\\u{c:04X}"),
)
_STRING_PIECES = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_characters='"\\\n'), max_size=6),
    _ESCAPES,
    st.sampled_from(["\x00", "\x01", "\x1f", "\x7f", "\u2028", "\ufeff", "\r"]),
)
_STRINGS = st.lists(_STRING_PIECES, max_size=4).map(lambda parts: '"' + "".join(parts) + '"')
_KEYS = st.one_of(st.sampled_from(['"role"', '"content"', '"id"', '"type"', '"text"', '"a"', '"b"']), _STRINGS)


def _join(items: list[str], trailing: bool, space: str) -> str:
    return (space + "," + space).join(items) + ("," if trailing and items else "")


_VALUES = st.recursive(
    st.one_of(_NUMBERS, _STRINGS, st.sampled_from(["true", "false", "null"])),
    lambda inner: st.one_of(
        st.builds(lambda xs, t, s: "[" + s + _join(xs, t, s) + s + "]",
                  st.lists(inner, max_size=4), st.sampled_from([False] * 9 + [True]), _SPACE),
        st.builds(lambda kv, t, s: "{" + s + _join([k + s + ":" + s + v for k, v in kv], t, s) + s + "}",
                  st.lists(st.tuples(_KEYS, inner), max_size=4), st.sampled_from([False] * 9 + [True]), _SPACE),
        st.integers(100, 140).map(_nest),
    ),
    max_leaves=12,
)
_ROLES = st.one_of(st.sampled_from(['"user"', '"assistant"', '"tool"', '"system"']), _STRINGS, _VALUES)


@st.composite
def _message_line(draw: st.DrawFn) -> str:
    fields = [('"role"', draw(_ROLES))]
    if draw(st.booleans()):
        fields.append(('"content"', draw(_VALUES)))
    for key in ('"id"', '"source_id"', '"tool_call_id"', '"is_error"'):
        if draw(st.integers(0, 3)) == 0:
            fields.append((key, draw(st.one_of(_STRINGS, _VALUES))))
    fields.extend(draw(st.lists(st.tuples(_KEYS, _VALUES), max_size=2)))
    fields = draw(st.permutations(fields))
    space = draw(_SPACE)
    return draw(_SPACE) + "{" + _join([k + ":" + space + v for k, v in fields], False, space) + "}" + draw(_SPACE)


_LINES = st.one_of(
    _message_line(),
    _message_line(),
    _VALUES,
    st.sampled_from(["", " ", "\t", "\u00a0", "\x1c", "\u3000", "\ufeff", '{"role":"us']),
)
_ENDINGS = st.sampled_from(["\n"] * 6 + ["\r\n", "\r\r\n", "\n\n"])


@st.composite
def _record_bytes(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.tuples(_LINES, _ENDINGS), min_size=1, max_size=6))
    text = "".join(line + end for line, end in lines)
    if draw(st.booleans()):
        text = text.rstrip("\n")  # an unterminated last line
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf"])) + data[at:]
    return data


def _scaled(examples: int) -> int:
    """``examples`` for ``make test``; the profile's (larger) count under ``make fuzz``."""
    return max(examples, settings.default.max_examples)


_TOKENS = st.one_of(
    st.from_regex(r"\A-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,30})?([eE][-+]?[0-9]{1,4})?\Z"),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(-(2**80), 2**80).map(str),
)


@settings(max_examples=_scaled(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokens=st.lists(_TOKENS, min_size=1, max_size=40))
def test_numbers_read_and_written_as_serde_json_does(tokens: list[str], serde_oracle: Oracle, tmp_path: Path) -> None:
    path = _record(tmp_path, b"".join(_msg(t) + b"\n" for t in tokens))
    assert compare(serde_oracle, path, load=False) == []


_SETTINGS = settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], max_examples=_scaled(150)
)


@_SETTINGS
@given(data=_record_bytes(), limit=st.integers(1, 7))
def test_generated_records_match_serde_json(data: bytes, limit: int, serde_oracle: Oracle, tmp_path: Path) -> None:
    path = _record(tmp_path, data)
    assert compare(serde_oracle, path, limit=limit, load=False) == []


@_SETTINGS
@given(data=_record_bytes())
def test_generated_records_load_as_serde_json_reads_them(data: bytes, serde_oracle: Oracle, tmp_path: Path) -> None:
    path = _record(tmp_path, data)
    assert compare(serde_oracle, path) == []


_SEEDS = [
    b'{"content":[{"text":"Summarize today\'s changes.","type":"text"}],'
    b'"id":"msg_01a04900754b7183b66c11e744612e2d","role":"user"}',
    b'{"content":[{"text":"Looking.","type":"text"},{"id":"call_1","input":{"path":".","n":1.5e-7},"name":"ls",'
    b'"type":"tool_call"}],"id":"msg_01a0490075617000a1b2c3d4e5f60718","role":"assistant"}',
    b'{"content":[{"text":"a.txt\\nb.txt \\u00e9\\ud83d\\ude00","type":"text"}],'
    b'"id":"msg_01a04900758c7000a1b2c3d4e5f60719",'
    b'"is_error":false,"role":"tool","tool_call_id":"call_1"}',
    b'{"capsule":"c","created_ms":1756400000000,"truncated":{"at_ms":1,"dropped":5,"last_dropped_id":"msg_1",'
    b'"oldest_surviving_id":"msg_2"},"type":"murmur.record"}',
]
_BYTES = st.one_of(st.binary(min_size=1, max_size=3), st.sampled_from(
    [b'"', b"\\", b"{", b"}", b"[", b"]", b",", b":", b"-0", b"e", b"E+", b"1e400", b"\\u", b"\\ud800", b"\r", b"\n",
     b" ", b"\x00", b"\xff", b"\xc3", b"NaN", b",]", b"[[[[", b"\xef\xbb\xbf", b'"role":', b"9" * 25])
)


@st.composite
def _mutated_record(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.sampled_from(_SEEDS), min_size=1, max_size=4))
    out = []
    for line in lines:
        for _ in range(draw(st.integers(0, 3))):
            at = draw(st.integers(0, len(line)))
            op = draw(st.sampled_from(["insert", "delete", "replace", "truncate", "dup"]))
            if op == "insert":
                line = line[:at] + draw(_BYTES) + line[at:]
            elif op == "delete":
                line = line[:at] + line[at + draw(st.integers(1, 4)) :]
            elif op == "replace":
                line = line[:at] + draw(_BYTES) + line[at + 1 :]
            elif op == "truncate":
                line = line[:at]
            else:
                end = draw(st.integers(at, len(line)))
                line = line[:end] + line[at:end] + line[end:]
        out.append(line)
    return b"\n".join(out) + draw(st.sampled_from([b"\n", b"", b"\r\n"]))


@_SETTINGS
@given(data=_mutated_record(), limit=st.integers(1, 5))
def test_mutated_records_match_serde_json(data: bytes, limit: int, serde_oracle: Oracle, tmp_path: Path) -> None:
    path = _record(tmp_path, data)
    assert compare(serde_oracle, path, limit=limit, load=False) == []
