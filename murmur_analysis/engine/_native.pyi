# Types of the native decode engine (native/src/lib.rs).
from typing import Any, Literal, TypedDict

from murmur_analysis.core.wire import BlockRules

class Buffer:
    """The engine's vector, viewed in place through the buffer protocol (read-only)."""

    def __buffer__(self, flags: int, /) -> memoryview: ...
    def __len__(self) -> int: ...

#: An Arrow column's buffers as the engine hands them over: validity bitmap and values.
IntColumn = tuple[Buffer, Buffer]
#: A string column's buffers: validity bitmap, int32 offsets and UTF-8 data.
StrColumn = tuple[Buffer, Buffer, Buffer]

#: The scan's string columns, by key.
StrKey = Literal["id", "role", "source_id", "kinds", "text", "reasoning_text", "ev_id", "ev_name", "pair_call_id",
                 "pair_kind", "pair_tool_name", "pair_status", "pair_input_text", "pair_result_text"]
#: The scan's nullable integer columns, by key.
IntKey = Literal["created_ms", "created_us", "ev_error", "ev_chars", "ev_bytes", "pair_called_seq", "pair_result_seq",
                 "pair_is_error", "pair_result_chars", "pair_input_bytes"]

class ScannedGroup(TypedDict):
    """Records :func:`scan_records` scanned, joined: their columns once, and where each record's are.

    Record ``i``'s message rows are ``row_starts[i]:row_starts[i + 1]`` of the row columns, its
    tool events ``event_starts[i]:...`` of the ``ev_`` columns and its pairing rows
    ``pair_starts[i]:...`` of the ``pair_`` columns (int64 buffers of ``records + 1``). Values
    that name a row, event or pairing row (``ev_row``, ``ev_text_at``, line numbers) are the
    record's own; ``kinds_offsets`` runs over the group. The lists hold one item per record.
    """

    records: int
    row_starts: Buffer
    event_starts: Buffer
    pair_starts: Buffer
    line: Buffer
    created_ms: IntColumn
    created_us: IntColumn
    id: StrColumn
    role: StrColumn
    source_id: StrColumn
    n_blocks: Buffer
    text_chars: Buffer
    kinds_offsets: Buffer
    kinds: StrColumn
    text: StrColumn
    reasoning_text: StrColumn
    ev_row: Buffer
    ev_call: Buffer
    ev_id: StrColumn
    ev_name: StrColumn
    ev_error: IntColumn
    ev_chars: IntColumn
    ev_bytes: IntColumn
    ev_text_at: Buffer
    pair_call_id: StrColumn
    pair_tool_name: StrColumn
    pair_kind: StrColumn
    pair_status: StrColumn
    pair_called_seq: IntColumn
    pair_result_seq: IntColumn
    pair_is_error: IntColumn
    pair_result_chars: IntColumn
    pair_input_bytes: IntColumn
    pair_input_text: StrColumn
    pair_result_text: StrColumn
    lines: list[int]
    diagnostics: list[list[tuple[int, int]]]
    title: list[str | None]
    header: list[bytes | None]
    error: list[str | None]
    pair_summary: list[tuple[int, int, list[str]]]
    pair_state: list[PairState]

class PairColumns(TypedDict):
    """:meth:`Pairer.finish`: the rows (then one per answer to a row before a resumed walk) and counts."""

    call_id: list[str]
    tool_name: list[str | None]
    kind: list[Literal["client", "server"]]
    called_seq: list[int | None]
    result_seq: list[int | None]
    called_message: list[int | None]
    result_message: list[int | None]
    status: list[Literal["ok", "error", "unanswered", "orphan_result", "duplicate_result"]]
    is_error: list[bool | None]
    input: list[int | None]
    result_chars: list[int | None]
    input_bytes: list[int | None]
    input_text: list[int | None]  #: each text's index as fed
    result_text: list[int | None]
    summary: tuple[int, int, list[str]]
    answered: list[int]
    exact: bool

BLOCK: int

def decide_line(line: bytes, first: bool) -> int: ...
def read_files(paths: list[bytes]) -> list[bytes | None]: ...
def parse(line: bytes) -> Any: ...
def header(line: bytes) -> dict[str, Any] | None: ...
def lower(line: bytes) -> tuple[str, str, str | None, str | None]: ...
def uuid7_field(id: str) -> int | None: ...
def scan_records(
    paths: list[bytes],
    spec: BlockRules,
    text: bool,
    block_bytes: int | None = None,
    part_bytes: int | None = None,
) -> list[ScannedGroup]: ...
def messages(data: bytes, first: bool) -> tuple[list[tuple[int, Any]], list[tuple[int, int]]]: ...
def to_json(value: Any) -> str: ...
def lower_value(value: dict[str, Any]) -> tuple[str, str, str | None, str | None]: ...
def message_runs(sides: list[str], index: int, side: str | None) -> list[int]: ...

class PairState:
    def __init__(self) -> None: ...
    @staticmethod
    def from_bytes(data: bytes) -> PairState: ...
    def to_bytes(self) -> bytes: ...
    @property
    def rows(self) -> int: ...
    @property
    def runs(self) -> tuple[int, str | None]: ...

class Pairer:
    def __init__(self, state: PairState | None = None) -> None: ...
    def feed(
        self,
        positions: list[int],
        messages: list[int],
        call: list[bool],
        kind: list[int],
        ids: list[str],
        names: list[str | None],
        errors: list[bool | None],
        chars: list[int | None],
        input_bytes: list[int | None],
        inputs: list[int | None] | None,
        texts: list[int | None] | None,
    ) -> None: ...
    def dropped_orphans(self) -> list[str]: ...
    def finish(self) -> PairColumns: ...
    @staticmethod
    def finish_arrow_many(walks: list[Pairer]) -> dict[str, Any]: ...
    def save(self, index: int, side: str | None) -> PairState: ...

def index_lines(
    data: bytes | bytearray, limit: int, base: int, first: bool
) -> tuple[bytes, bytes, list[tuple[int, bool]], tuple[int, int] | None, int, int, bool]: ...

def index_coherent(starts: memoryview, ends: memoryview, skipped: memoryview, size: int) -> bool: ...

# A group of files a line-delimited format read, joined as records are (a ScannedGroup's layout):
# ``files``; ``row_starts`` and ``event_starts``; ``line``; the format's columns (``line_columns``:
# IntColumn, then StrColumn, or a list of each file's StrColumn where they are too large to join);
# ``kinds_offsets``, ``kinds``; the ``ev_`` columns; per file ``lines``, ``end``, ``size``,
# ``diagnostics`` and ``error``.
def scan_lines(
    format: str, paths: list[bytes], starts: list[tuple[int, int]], text: bool, rules: BlockRules | None = None
) -> list[dict[str, Any]]: ...
def scan_data(
    format: str, datas: list[bytes], text: bool, first_lines: list[int] | None = None,
    rules: BlockRules | None = None,
) -> list[dict[str, Any]]: ...
def line_columns(format: str) -> tuple[list[str], list[str]]: ...
def codex_blocks(lines: list[bytes]) -> list[list[tuple[Any, ...]] | None]: ...
def git_log(
    data: bytes, end: int, pending: bytes | None, before: int
) -> tuple[list[str], list[int], list[tuple[str, ...]], list[tuple[int, bytes, str, str, str]], bytes | None]: ...
