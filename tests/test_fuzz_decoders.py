"""Fuzzing the FlexiGPT and dispatch decoders and the assembly core (Hypothesis).

Each decoder test takes a real file of the runtime's format (the bundled samples) and changes
it: values anywhere in the document replaced by arbitrary JSON (wrong types, huge numbers, lone
surrogates, nesting), keys removed. Whatever comes in, a load raises nothing, and its tables
hold the invariants every corpus holds. The assembly test feeds entries of every block kind
with colliding ids. ``make test`` runs a few hundred examples; ``make fuzz`` runs many more
(``HYPOTHESIS_PROFILE=fuzz``).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import murmur_analysis as ma
from murmur_analysis import assemble, pair_tools, transcript
from murmur_analysis.core import model as m
from murmur_analysis.core.handoff import Conversation
from murmur_analysis.errors import SourceError
from murmur_analysis.tables.frames import FrameBuilder
from murmur_analysis.tables.schema import TABLES, schema

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "samples"


def _parses(path: Path) -> bool:
    try:
        json.loads(path.read_text())
    except ValueError:
        return False
    return True


FLEXI = [p for p in sorted((SAMPLES / "flexigpt").rglob("*.json")) if _parses(p)]
DISPATCH = [p for p in sorted((SAMPLES / "dispatch").rglob("*.json")) if _parses(p)]
STATUSES = {"ok", "error", "unanswered", "orphan_result", "duplicate_result", "unknown"}

keys = st.sampled_from(["role", "content", "messages", "id", "kind", "usage", "history", "type", "text",
                        "inputTokensTotal", "outputTokens", "callID", "tool_calls", "is_error", "events"])
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
    st.sampled_from(["\ud800", "user", "assistant", "tool", "2026-01-01T00:00:00Z", "v1", "text"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(keys | st.text(max_size=6), inner, max_size=4)),
    max_leaves=12,
)

Path_ = tuple[Any, ...]


def paths(value: Any, here: Path_ = ()) -> list[Path_]:
    """Every location in a JSON document."""
    found = [here]
    if isinstance(value, dict):
        for k, v in value.items():
            found += paths(v, (*here, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += paths(v, (*here, i))
    return found


def mutate(doc: Any, where: Path_, new: Any, delete: bool) -> Any:
    if not where:
        return new
    head, rest = where[0], where[1:]
    if isinstance(doc, dict):
        out = dict(doc)
        if delete and not rest:
            out.pop(head, None)
        else:
            out[head] = mutate(doc[head], rest, new, delete)
        return out
    out_list = list(doc)
    if delete and not rest:
        del out_list[head]
    else:
        out_list[head] = mutate(doc[head], rest, new, delete)
    return out_list


@st.composite
def mutated(draw: st.DrawFn, seeds: list[Path]) -> tuple[Path, str]:
    """A seed file and its text after a few random changes."""
    seed = draw(st.sampled_from(seeds))
    doc = json.loads(seed.read_text())
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        where = draw(st.sampled_from(paths(doc)))
        doc = mutate(doc, where, draw(json_values), draw(st.booleans()))
    text = json.dumps(doc)  # Python's encoder: big integers and lone surrogates as written
    if draw(st.integers(min_value=0, max_value=9)) == 0:  # now and then, a file cut short
        text = text[: draw(st.integers(min_value=0, max_value=len(text)))]
    return seed, text


def check_corpus(corpus: ma.Corpus) -> None:
    """What every corpus holds, whatever its input."""
    for name in TABLES:
        assert corpus.tables[name].schema.equals(schema(name)), name
    messages = Counter(zip(*(corpus.tables["messages"][c].to_pylist() for c in ("source", "conversation_id")),
                           strict=True))
    calls = corpus.tables["tool_calls"].to_pylist()
    assert {c["status"] for c in calls} <= STATUSES
    made = Counter((c["source"], c["conversation_id"]) for c in calls if c["called_seq"] is not None)
    for conv in corpus.tables["conversations"].to_pylist():
        key = (conv["source"], conv["conversation_id"])
        assert conv["messages"] == messages[key]
        assert conv["tool_calls"] == made[key]
    assert len(set(corpus.tables["conversations"]["conversation_id"].to_pylist())) == corpus.tables[
        "conversations"].num_rows


def load_one(tmp: Path, relative: Path, text: str, source: str) -> ma.Corpus:
    target = tmp / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8", errors="surrogatepass")
    return ma.load(tmp / relative.parts[0], source=source)


def load_mutated(tmp_path_factory: Any, case: tuple[Path, str], source: str) -> ma.Corpus:
    """The changed file, in its place under a copy of its sample's layout, loaded and checked."""
    seed, text = case
    relative = Path("root") / seed.relative_to(SAMPLES / source)
    corpus = load_one(tmp_path_factory.mktemp(source), relative, text, source)
    check_corpus(corpus)
    return corpus


fuzz = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@fuzz
@given(mutated(FLEXI))
def test_flexigpt_decoder_takes_any_change_to_a_real_file(tmp_path_factory: Any, case: tuple[Path, str]) -> None:
    corpus = load_mutated(tmp_path_factory, case, "flexigpt")
    try:
        doc = json.loads(case[1])
    except ValueError:
        doc = None
    convs = corpus.tables["conversations"].num_rows
    assert convs + corpus.tables["diagnostics"].num_rows >= 1  # read, or said why not
    if convs and isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        assert corpus.tables["messages"].num_rows == len(doc["messages"])  # one row per message, whatever it is


@fuzz
@given(mutated(DISPATCH))
def test_dispatch_decoder_takes_any_change_to_a_real_file(tmp_path_factory: Any, case: tuple[Path, str]) -> None:
    load_mutated(tmp_path_factory, case, "dispatch")


# ------------------------------------------------------------------------------ assembly core

ids = st.sampled_from(["a", "b", "c", "", "toolu_1", "\u00e9"])
blocks = st.one_of(
    st.builds(m.Text, st.text(max_size=5)),
    st.builds(m.Thinking, st.text(max_size=5)),
    st.builds(m.RedactedThinking, st.text(max_size=5)),
    st.builds(lambda i, n, v: m.ToolUse(i, n, v), ids, st.sampled_from(["bash", "ls"]), json_values),
    st.builds(lambda i, c, e: m.ToolResult(i, c, e), ids,
              st.none() | st.lists(st.builds(m.Text, st.text(max_size=3)), max_size=2).map(tuple),
              st.none() | st.booleans()),
    st.builds(lambda i, v: m.ServerToolUse(i, "web_search", v), ids, json_values),
    st.builds(lambda i, c: m.ServerToolResult("web_search_tool_result", i, c), ids, json_values),
    st.builds(m.Image, json_values),
    st.builds(m.Unknown, json_values),
)
entries = st.lists(
    st.builds(lambda p, s, b: m.Entry(p, s, tuple(b)), st.integers(min_value=-3, max_value=30),
              st.sampled_from(["user", "assistant", "tool", "system", "developer"]), st.lists(blocks, max_size=4)),
    max_size=20,
)


def tables_of(conv: Conversation) -> dict[str, pa.Table]:
    builder = FrameBuilder()
    builder.add(conv)
    return builder.finish()


def _invalid_unicode(value: Any) -> bool:
    """Whether a string inside ``value`` (entries, blocks, JSON values) holds a lone surrogate."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_invalid_unicode(k) or _invalid_unicode(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_invalid_unicode(v) for v in value)
    if dataclasses.is_dataclass(value):
        return any(_invalid_unicode(getattr(value, f.name)) for f in dataclasses.fields(value))
    return False


@fuzz
@given(entries)
def test_assembly_core_holds_its_invariants_on_any_entries(items: list[m.Entry]) -> None:
    assembled = assemble(items)
    roles = [m.role for m in assembled.messages]
    assert all(a != b for a, b in itertools.pairwise(roles))
    kept = [b for m in assembled.messages for b in m.blocks]
    raw = [b for m in transcript(items) for b in m.blocks]
    assert len(raw) - len(kept) == len(assembled.dropped_orphans)
    calls = pair_tools(items)
    assert {c.status for c in calls} <= STATUSES
    dropped = Counter(c.call_id for c in calls if c.status == "orphan_result" and c.kind == "client")
    assert dropped == Counter(assembled.dropped_orphans)
    try:
        listed = tables_of(Conversation("x", "c", items))
    except SourceError as err:  # a source that hands a lone surrogate is told which conversation held it
        assert _invalid_unicode(items) and "handed conversation c a string that is not valid Unicode" in str(err)
        return
    ordered = sorted(items, key=lambda e: e.position)
    streamed = tables_of(Conversation("x", "c", iter(ordered)))
    for name in TABLES:
        assert listed[name].equals(streamed[name]), name
    conv = listed["conversations"].to_pylist()[0]
    assert conv["messages"] == len(items)
    assert conv["orphans"] == len(assembled.dropped_orphans)


def test_a_lone_surrogate_from_a_source_is_an_error_naming_its_conversation() -> None:
    # Found by the fuzz test above: a block whose type was "\ud800" raised pyarrow's UnicodeEncodeError.
    for block in (m.Text("ok \ud800"), m.Unknown({"type": "\ud800"})):
        with pytest.raises(SourceError) as raised:
            tables_of(Conversation("plugin", "conv-1", [m.Entry(0, "user", (block,))]))
        assert str(raised.value).startswith("the plugin source handed conversation conv-1 a string that is not "
                                            "valid Unicode ('\\ud800': surrogates not allowed)")


def test_a_schema_version_that_is_not_a_string_is_an_unknown_schema(tmp_path: Path) -> None:
    # Found by the fuzz test above: a list as schemaVersion raised TypeError (unhashable).
    seed = next(p for p in FLEXI if "Latest_Go" in p.name)
    doc = json.loads(seed.read_text())
    doc["schemaVersion"] = []
    corpus = load_one(tmp_path, Path("store") / seed.relative_to(SAMPLES / "flexigpt"), json.dumps(doc), "flexigpt")
    assert corpus.tables["diagnostics"]["kind"].to_pylist() == ["unknown_schema"]
