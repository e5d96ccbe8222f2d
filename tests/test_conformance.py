"""One test body, run against every source: built-ins and the example plugin.

For each source's sample: every table has its declared schema; every conversation pages newest
first through the cursor core, each entry exactly once, at several page sizes; assembly never
sends a result before its call, keeps or drops every result, and drops exactly the orphans the
pairing walk names.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import murmur_analysis as ma
from murmur_analysis.algorithms.cursor import entry_message
from murmur_analysis.core.model import ToolResult, ToolUse
from murmur_analysis.sources import BUILTIN, registry
from murmur_analysis.tables.schema import SOURCE_TABLES, TABLES, schema

REPO = Path(__file__).resolve().parent.parent
PLUGIN = "plaintext"
LIMITS = (1, 2, 3, 7, 100)


def sample_path(name: str) -> Path | None:
    """Where the sample of source ``name`` lives (``None`` when it does not exist yet)."""
    if name == PLUGIN:
        try:
            from murmur_analysis_example_plugin import SAMPLE
        except ImportError:
            return None
        return SAMPLE
    path = REPO / "data" / "samples" / name
    return path if path.exists() else None


def declared_schemas() -> dict[str, pa.Schema]:
    """Every table's declared schema: the core tables, then the sources' own."""
    return {t: schema(t) for t in (*TABLES, *SOURCE_TABLES)}


@pytest.mark.parametrize("name", [*BUILTIN, PLUGIN])
def test_source_conforms(name: str) -> None:
    assert name in registry(), f"source {name!r} is not registered (a built-in or the example plugin is missing)"
    path = sample_path(name)
    assert path is not None, f"no sample for {name!r} (data/samples/{name}/ or the plugin's own)"
    corpus = ma.load(path, source=name)

    declared = declared_schemas()
    for table_name, table in corpus.tables.items():
        assert table_name in declared, f"{name}: table {table_name!r} has no declared schema"
        assert table.schema == declared[table_name], f"{name}: {table_name} schema differs from its declaration"
        frame = corpus.frame(table_name)
        assert list(frame.columns) == declared[table_name].names

    ids = corpus.conversation_ids()
    assert ids, f"{name}: the sample holds no conversation"
    assert len(set(ids)) == len(ids)
    assert corpus.tables["conversations"].num_rows == len(ids)
    per_conversation = corpus.messages.groupby("conversation_id").size().to_dict()

    for source, cid in ids:
        assert source == name
        handle = corpus.conversation(cid, source=source)
        entries = handle.entries
        assert per_conversation.get(cid, 0) == len(entries)
        positions = [e.position for e in entries]
        assert positions == sorted(positions)

        expected = [entry_message(e) for e in reversed(entries)]
        for limit in LIMITS:
            seen: list[ma.PageMessage] = []
            cursor: str | None = None
            pages = 0
            while True:
                page = handle.read_messages(cursor, limit)
                assert page.total == len(entries)
                assert 0 < len(page.messages) <= limit or len(entries) == 0
                seen.extend(page.messages)
                pages += 1
                if page.next_cursor is None:
                    break
                cursor = page.next_cursor
            assert seen == expected, f"{name}/{cid}: walk at limit {limit} is not every entry once, newest first"
            assert pages == max(1, -(-len(entries) // limit))

        asm = handle.assemble()
        called: set[str] = set()
        kept = 0
        for message in asm.messages:
            called.update(b.id for b in message.blocks if isinstance(b, ToolUse))
            for block in message.blocks:
                if isinstance(block, ToolResult):
                    assert block.tool_use_id in called, f"{name}/{cid}: result {block.tool_use_id} before its call"
                    kept += 1
        for left, right in zip(asm.messages, asm.messages[1:], strict=False):
            assert left.role != right.role
        results = sum(isinstance(b, ToolResult) for m in handle.transcript() for b in m.blocks)
        assert kept + len(asm.dropped_orphans) == results
        orphans = [c.call_id for c in handle.tool_calls() if c.status == "orphan_result" and c.kind == "client"]
        assert orphans == asm.dropped_orphans
