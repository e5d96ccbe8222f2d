"""Growth rows agree with the rest: litany context tokens from the steps' responses, murmur compaction sizes."""

from __future__ import annotations

from pathlib import Path

import murmur_analysis as ma

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "samples"


def test_context_tokens_come_from_the_sealed_responses() -> None:
    corpus = ma.load(SAMPLES / "litany")
    cid = "20260420T080000Z-0d0c5173"
    growth = [r for r in corpus.tables["growth"].to_pylist() if r["conversation_id"] == cid]
    usage = [r for r in corpus.tables["usage"].to_pylist() if r["conversation_id"] == cid]
    # the five responses: input_total + output (no reasoning reported), by hand from response.json
    assert [(r["seq"], r["input_total_tokens"], r["output_tokens"]) for r in usage] == [
        (2, 1601, 30), (4, 1602, 30), (6, 1603, 30), (8, 1604, 30), (10, 1720, 12)]
    # a state holds the responses at or before its last entry: the last one's prompt plus output
    assert [r["context_tokens"] for r in growth] == [
        None, None, 1631, 1631, 1632, 1632, 1633, 1633, 1634, 1634, 1732]


def test_every_litany_state_with_a_response_has_context() -> None:
    corpus = ma.load(SAMPLES / "litany")
    usage = corpus.tables["usage"].to_pylist()
    seqs = {(r["conversation_id"]) for r in usage if r["seq"] is not None and r["input_total_tokens"] is not None}
    for r in corpus.tables["growth"].to_pylist():
        if r["conversation_id"] in seqs and r["position"] == max(
                g["position"] for g in corpus.tables["growth"].to_pylist()
                if g["conversation_id"] == r["conversation_id"]):
            assert r["context_tokens"] is not None, r


def test_a_murmur_compaction_row_has_the_size_at_its_message() -> None:
    corpus = ma.load(SAMPLES / "murmur")
    rows = [r for r in corpus.tables["growth"].to_pylist() if r["conversation_id"] == "support-bot/ctx-billing"]
    [compaction] = [r for r in rows if r["event"] == "compaction"]
    [at] = [r for r in rows if r["event"] == "message" and r["position"] == compaction["position"]]
    assert (compaction["messages"], compaction["chars"]) == (at["messages"], at["chars"]) == (7, 421)
